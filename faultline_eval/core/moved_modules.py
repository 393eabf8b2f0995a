"""Old module paths that keep working, with a ``DeprecationWarning``, after their module moved.

Plugins and scripts import names from the module paths a release documented. When a module moves,
its old path stays for one minor version as a small module whose only content is a module-level
``__getattr__`` (PEP 562) made here: every name the new module has still resolves, to the very
same object (so a decorator or registry imported from the old path is the real one), and every
access warns, naming the import to use instead: the plugin API (``sceval_plugin.api``,
``c3po_plugin.api``) when the name is part of it, otherwise the module's new home::

    # sceval_plugin/probes.py (0.1's path of sceval_plugin.probe_conditions)
    from faultline_eval.core.moved_modules import moved_module
    from sceval_plugin import api, probe_conditions

    __getattr__, __dir__, __all__ = moved_module(__name__, probe_conditions, api=api)

The warning is a :class:`DeprecationWarning` attributed to the line that imports or reads the
name (``stacklevel=2``), so Python shows it in ``__main__`` and test runners show it in the
plugin's own tests; ``python -W error::DeprecationWarning`` turns each into an error, to find
them all.

A module that stays while some of its names move (the core's trial module, whose benchmark trial
types moved to their benchmarks) gets a ``__getattr__`` from :func:`moved_names`, which names
each new home by its module path: a module of the core may not import the benchmarks, so the
home is imported on first use (an import by name, as the plugin host imports plugins).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["DEPRECATED_SINCE", "REMOVED_IN", "moved_module", "moved_names"]

#: The release whose changelog announced the old paths as deprecated.
DEPRECATED_SINCE = "0.3"
#: The first release without them (one minor version later).
REMOVED_IN = "0.4"


def moved_module(
    old: str,
    new: ModuleType,
    *,
    api: ModuleType | None = None,
    elsewhere: Mapping[str, ModuleType] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The ``__getattr__``, ``__dir__`` and ``__all__`` of module ``old``, which moved to ``new``
    (``__all__``: what ``from old import *`` imports, each name with its warning).

    Args:
        old: the old module's name (its ``__name__``).
        new: the module it moved to.
        api: the plugin API module; a name it exports (under any name) is pointed to there.
        elsewhere: names that moved to another module than ``new`` (name -> that module).
    """
    homes = dict(elsewhere or {})

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):  # the import system's and tools' probes (__path__, __wrapped__): not ours
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        home = homes.get(name, new)
        if not hasattr(home, name):
            raise AttributeError(
                f"module {old!r} has no attribute {name!r} (the module moved to {new.__name__}, "
                f"which has no {name!r} either)"
            )
        value = getattr(home, name)
        warnings.warn(
            f"{old} is deprecated since {DEPRECATED_SINCE} and goes in {REMOVED_IN}: "
            f"use {_new_import(name, value, home, api)} instead of 'from {old} import {name}'",
            DeprecationWarning,
            stacklevel=2,
        )
        return value

    public = getattr(new, "__all__", None) or [n for n in vars(new) if not n.startswith("_")]
    names = sorted({*public, *homes})

    def __dir__() -> list[str]:
        return sorted({*(n for n in dir(new) if not n.startswith("_")), *homes})

    return __getattr__, __dir__, names


def moved_names(old: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of module ``old``, some of whose names moved: ``homes`` maps each moved
    name to its new module's path. Reading one imports that module, warns naming the import to use
    (the new package's plugin API, ``<package>.api``, when it exports the name) and returns the very
    object; any other unknown name is an ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        home = importlib.import_module(homes[name])  # a declared move: the path is named above
        try:
            api: ModuleType | None = importlib.import_module(f"{home.__name__.split('.')[0]}.api")
        except ModuleNotFoundError:  # a package without a plugin API: point to the module itself
            api = None
        value = getattr(home, name)
        warnings.warn(
            f"{old}.{name} is deprecated since {DEPRECATED_SINCE} and goes in {REMOVED_IN}: "
            f"use {_new_import(name, value, home, api)} instead of 'from {old} import {name}'",
            DeprecationWarning,
            stacklevel=2,
        )
        return value

    return __getattr__


def _new_import(name: str, value: object, home: ModuleType, api: ModuleType | None) -> str:
    """``'from sceval_plugin.api import probe'``: the API's name for ``value`` if it exports it
    (under ``name``, or under another name such as ``probe_registry``), else its new module's."""
    if api is not None:
        exported: list[str] = list(getattr(api, "__all__", ()))
        if name in exported and getattr(api, name) is value:
            return f"'from {api.__name__} import {name}'"
        if not isinstance(value, (str, int, float, tuple)):  # identity says nothing about small constants
            alias = next((n for n in exported if getattr(api, n) is value), None)
            if alias is not None:
                return f"'from {api.__name__} import {alias}'"
    return f"'from {home.__name__} import {name}'"
