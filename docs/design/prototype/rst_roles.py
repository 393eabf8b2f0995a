"""Prototype griffe extension: our docstrings use Sphinx roles (:func:`x`); mkdocstrings renders
Markdown, where they show as ':func:x'. Rewrite each to an autorefs cross-reference, resolved
like Sphinx (relative to the docstring's scope), so a target that does not exist fails
``mkdocs build --strict``."""

import re

import griffe

ROLE = re.compile(r":(?:func|class|mod|data|meth|attr|exc|obj):`(~?)([\w.]+)(?:\(\))?`")


def full_path(obj, name: str) -> str:
    head, _, rest = name.lstrip(".").partition(".")  # ".x": Sphinx's "x, searched upwards"
    for scope in (obj, obj.parent, obj.module, obj.module.parent):
        try:
            return scope.resolve(head) + ("." + rest if rest else "")
        except (griffe.NameResolutionError, AttributeError, ValueError):
            continue
    return name  # already absolute, or broken: autorefs reports it


def rewrite(obj) -> None:
    def link(match):
        target = full_path(obj, match.group(2))
        shown = match.group(2).split(".")[-1] if match.group(1) else match.group(2)
        return f"[`{shown}`][{target}]"

    if obj.docstring:
        obj.docstring.value = ROLE.sub(link, obj.docstring.value)
    for member in obj.members.values():
        if not member.is_alias:
            rewrite(member)


class SphinxRoles(griffe.Extension):
    def on_package(self, *, pkg, **kwargs):  # once the whole package is loaded, so names resolve
        rewrite(pkg)
