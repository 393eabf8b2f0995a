"""Sphinx roles in our docstrings (``:func:`x```), turned into Markdown links for the site.

Our docstrings are Sphinx-flavoured prose; mkdocstrings renders Markdown, where a role would show
as ":func:x". Each role becomes a cross-reference that mkdocs-autorefs resolves, decided by
what its target is:

- an object of ours that exists: an *optional* reference — a link when some page documents it
  (the API pages of ``docs/public-api.md``), else plain code (an internal module, a private name);
- an object outside our packages (``numpy.random.Generator``, ``ast.literal_eval``, a builtin): plain code,
  since the site is built offline, without other projects' inventories;
- a name of ours that does not exist, or a name that resolves nowhere and is no builtin (a typo, a
  module that moved): a *required* reference, so ``mkdocs build --strict`` fails and names it.

A reStructuredText literal block (``text::`` and an indented block) becomes Markdown's.

Used by the griffe extension (API pages, names resolved by griffe) and by the generated pages
(hooks, trial schema, settings: names resolved at run time), so both follow one rule.
"""

from __future__ import annotations

import builtins
import html
import importlib
import re
import types
from collections.abc import Callable

#: The packages whose names must exist. ``tasks``/``model_wrappers`` are installed as
#: ``faultline_eval.tasks``/``faultline_eval.model_wrappers``.
OUR_PACKAGES = ("sceval_plugin", "c3po_plugin", "faultline_eval", "faultline_app")

#: ``:role:`~name()```: the ``~`` (show the last part only) and the target.
ROLE = re.compile(r":(?:func|class|mod|data|meth|attr|exc|obj):`(~?)([\w.]+?)(?:\(\))?`")


#: reStructuredText's "text::" before an indented literal block (Markdown: "text:" and the block).
LITERAL_BLOCK = re.compile(r"::\n\n")


def runtime_exists(path: str) -> bool:
    """Whether ``path`` names a module or an attribute of one, by importing it."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            return False
        return True
    return False


def is_ours(path: str) -> bool:
    return path.split(".")[0] in OUR_PACKAGES


def reference(shown: str, name: str, target: str | None, exists: bool) -> str:
    """The Markdown for the role ``name``, resolved to ``target`` (None: not resolved), which
    ``exists`` or not; see the module docstring for the rule."""
    if target is None:  # a builtin, another project's dotted name, or a name that does not exist
        if hasattr(builtins, name) or (not is_ours(name) and runtime_exists(name)):
            return f"`{shown}`"
        return f"[`{shown}`][{name}]"
    if not is_ours(target):
        return f"`{shown}`"
    if exists:
        return f'<autoref identifier="{html.escape(target)}" optional><code>{html.escape(shown)}</code></autoref>'
    return f"[`{shown}`][{target}]"


def rewrite(text: str, resolve: Callable[[str], str | None], exists: Callable[[str], bool] = runtime_exists) -> str:
    """``text`` with every role replaced by :func:`reference`. ``resolve`` turns a role's
    (possibly relative) name into a full path, or None where it cannot; ``exists`` says whether
    a full path of ours exists."""

    def one(match: re.Match[str]) -> str:
        tilde, name = match.groups()
        name = name.lstrip(".")
        shown = name.split(".")[-1] if tilde else name
        target = resolve(name)
        return reference(shown, name, target, target is not None and is_ours(target) and exists(target))

    return LITERAL_BLOCK.sub(":\n\n", ROLE.sub(one, text))


def module_resolver(module_name: str, scope: str = "") -> Callable[[str], str | None]:
    """Resolve names as Sphinx would inside the module ``module_name`` (for the generated pages),
    or inside its class ``scope``: a name the class or module defines or imports, an absolute name
    of ours, else None."""
    module = importlib.import_module(module_name)

    def resolve(name: str) -> str | None:
        head, _, rest = name.partition(".")
        if scope and hasattr(getattr(module, scope), head):
            full = f"{module_name}.{scope}.{head}"
        elif (obj := getattr(module, head, None)) is None:
            return name if is_ours(name) else None
        elif isinstance(obj, types.ModuleType):
            full = obj.__name__
        elif getattr(obj, "__module__", None) and getattr(obj, "__qualname__", None):
            full = f"{obj.__module__}.{obj.__qualname__}"
        else:  # a constant: documented where this module has it
            full = f"{module_name}.{head}"
        return f"{full}.{rest}" if rest else full

    return resolve
