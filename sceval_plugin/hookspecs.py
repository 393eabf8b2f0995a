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
    from sceval_plugin.conditions import ConditionRegistry
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


@hookspec
def sceval_register_conditions(registry: ConditionRegistry) -> None:
    """Add evaluation conditions to ``registry``; each becomes an lmms-eval task.

    Call ``registry.add(Condition(...))`` (see :mod:`sceval_plugin.conditions`). Operators a
    condition names must be registered (by any plugin); its id must be new, and its task name
    ``sceval_<id>`` and aliases must not clash. Return value is ignored.
    """
