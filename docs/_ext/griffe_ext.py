"""griffe extensions for the API reference (``mkdocs.yml``: mkdocstrings' ``extensions``).

- :class:`InstalledNames`: ``tasks/`` and ``model_wrappers/`` are installed as
  ``faultline_eval.tasks`` and ``faultline_eval.model_wrappers`` (``setup.cfg``'s
  ``package_dir``), a mapping griffe, which reads the source tree, does not know. The extension
  loads them and grafts them onto ``faultline_eval``, so ``::: faultline_eval.tasks.wrap_configs``
  and references to ``faultline_eval.tasks.*`` resolve.
- :class:`SphinxRoles`: Sphinx roles in docstrings become links, or code where the target has no
  page (``sphinx_roles.py`` has the rule).
"""

from __future__ import annotations

import configparser
import sys
from pathlib import Path
from typing import Any

import griffe

sys.path.insert(0, str(Path(__file__).parent))  # griffe loads this file by path

import sphinx_roles

ROOT = Path(__file__).resolve().parents[2]


def installed_names() -> dict[str, str]:
    """``setup.cfg``'s ``package_dir`` remap: installed name -> folder in the repository."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    remap = {}
    for line in config["options"].get("package_dir", "").strip().splitlines():
        installed, _, folder = line.partition("=")
        remap[installed.strip()] = folder.strip()
    return remap


class InstalledNames(griffe.Extension):
    """Graft the remapped folders (``tasks`` -> ``faultline_eval.tasks``) onto their package."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        for installed, folder in installed_names().items():
            parent, _, name = installed.rpartition(".")
            if parent == pkg.path and name not in pkg.members:
                module = loader.load(folder)
                assert isinstance(module, griffe.Module)
                module.name = name
                pkg.set_member(name, module)


def full_path(obj: griffe.Object, name: str) -> str | None:
    """The full path of ``name`` as written in ``obj``'s docstring, resolved like Sphinx (the
    object, its parent, its module, the module's package), an absolute name of ours, else None."""
    head, _, rest = name.partition(".")
    scopes = (obj, obj.parent, obj.module, obj.module.parent)
    for scope in scopes:
        if scope is None:
            continue
        try:
            return scope.resolve(head) + ("." + rest if rest else "")
        except (griffe.NameResolutionError, AttributeError, ValueError):
            continue
    return name if sphinx_roles.is_ours(name) else None


def exists(obj: griffe.Object, path: str) -> bool:
    """Whether ``path`` is an object griffe loaded, or one Python can import."""
    try:
        obj.modules_collection.get_member(path)
        return True
    except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return sphinx_roles.runtime_exists(path)


def rewrite(obj: griffe.Object) -> None:
    if obj.docstring:
        obj.docstring.value = sphinx_roles.rewrite(
            obj.docstring.value, lambda name: full_path(obj, name), lambda path: exists(obj, path)
        )
    for member in obj.members.values():
        if not member.is_alias:
            rewrite(member)  # type: ignore[arg-type]


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles once a whole package is loaded (so names defined later resolve)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        grafted = set(installed_names().values())
        if pkg.name in grafted and pkg.parent is None:
            return  # rewritten with the package it is grafted onto, under its installed name
        rewrite(pkg)
