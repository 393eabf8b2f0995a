"""The whole plugin contract of SCEval.

A plugin is any module (or object) with functions marked ``@hookimpl``. Third parties publish
one through an entry point in the ``sceval`` group::

    [options.entry_points]
    sceval =
        salt_pepper = my_package.sceval_ops

SCEval's own fourteen operators are registered through exactly the same hook, by the modules
``sceval_plugin.operators.text``, ``.vision`` and ``.audio``.

Implementations may accept a subset of a hook's arguments, so a hook can gain arguments later
without breaking existing plugins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:  # pragma: no cover
    from sceval_plugin.operators import OperatorRegistry

PROJECT = "sceval"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def sceval_register_operators(registry: OperatorRegistry) -> None:
    """Add corruption operators to ``registry``.

    Call ``registry.add(fn)`` for every function decorated with
    :func:`sceval_plugin.operators.operator`. An operator name that another plugin already
    registered is an error naming both plugins. Return value is ignored.
    """
