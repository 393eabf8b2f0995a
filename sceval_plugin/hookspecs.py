"""The whole plugin contract of SCEval.

A plugin is any module (or object) with functions marked ``@hookimpl``. Third parties publish
one through an entry point in the ``sceval`` group::

    [options.entry_points]
    sceval =
        salt_pepper = my_package.sceval_ops

SCEval's own fourteen operators are registered through exactly the same hook, by the modules
``sceval_plugin.operators.text``, ``.vision`` and ``.audio``.

Implementations may accept a subset of a hook's arguments, so a hook can gain arguments later
without breaking existing plugins. Each ``registry`` is a :class:`faultline_eval.core.registry.Registry`
(the operators', conditions', probes', converters' and task adapters' own subclass, named in the
hook's signature; the converters' by its protocol, as construction is a layer above this module);
a hook needs only its ``add``. A plugin imports what it adds from
:mod:`sceval_plugin.api`, which also exports these types for the plugin's own annotations::

    from sceval_plugin.api import OperatorRegistry, hookimpl

    @hookimpl
    def sceval_register_operators(registry: OperatorRegistry) -> None: ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

from faultline_eval.core.registry import PluginRegistry

if TYPE_CHECKING:  # the hooks' argument types only (construction's, a layer above, by protocol)
    from sceval_plugin.conditions import ConditionRegistry
    from sceval_plugin.operators import OperatorRegistry
    from sceval_plugin.probe_conditions import ProbeRegistry
    from sceval_plugin.task_adapters import TaskAdapterRegistry

PROJECT = "sceval"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def sceval_register_operators(registry: OperatorRegistry) -> None:
    """Add corruption operators to ``registry``.

    Call ``registry.add(fn)`` for every function decorated with
    :func:`sceval_plugin.api.operator`. An operator name that another plugin already
    registered is an error naming both plugins. Return value is ignored.
    """


@hookspec
def sceval_register_conditions(registry: ConditionRegistry) -> None:
    """Add evaluation conditions to ``registry``; each becomes an lmms-eval task.

    Call ``registry.add(Condition(...))`` (:class:`sceval_plugin.api.Condition`;
    :func:`sceval_plugin.api.joint` builds a joint cell). Operators a condition names must be
    registered (by any plugin); its id must be new, and its task name ``sceval_<id>`` and aliases
    must not clash. Return value is ignored.
    """


@hookspec
def sceval_register_probes(registry: ProbeRegistry) -> None:
    """Add mechanism probes (App. G.9-G.11) to ``registry``; a condition runs one through
    ``Condition(..., block="probe", probe=ProbeCall(name, parameter))``.

    Call ``registry.add(fn)`` for every function decorated with :func:`sceval_plugin.api.probe`.
    A probe is ``fn(evidence, parameter, rng, donor) -> Evidence``: it gets what the model would
    be shown (:class:`sceval_plugin.api.Evidence`: question, context, frames, audio, the item),
    returns what it is shown instead, and raises :class:`sceval_plugin.api.NotApplicable`
    (a reason) when the item lacks what the probe needs; such trials are recorded, never dropped.

    **The donor argument.** A probe that needs a second item (a mismatch or a distractor) declares
    ``donor=<tier>`` (a tier name, or a function of the probe parameter giving one; tiers:
    :data:`sceval_plugin.api.DONOR_TIERS`). The renderer then passes ``donor``, an
    :class:`~sceval_plugin.api.OmniItem` chosen by the run's donor picker: a pure function
    of (sample id, probe, seed) over the dataset being run (see
    :class:`sceval_plugin.probe_conditions.DonorPicker`). A probe never reaches into the dataset itself; when
    no item of the dataset fits the tier, the trial is recorded as not applicable (``no_donor``).
    Probes without a donor tier get ``donor=None``.
    """


@hookspec
def sceval_register_converters(registry: PluginRegistry[Any]) -> None:
    """Add source-benchmark converters (``sceval build convert``) to ``registry`` (a
    :class:`sceval_plugin.api.ConverterRegistry`).

    Call ``registry.add(Converter(name, convert, license=..., description=...))`` (see
    :class:`sceval_plugin.api.Converter`). ``convert(root, out)`` reads a local copy of the source
    at ``root``, writes media under ``out / "media"`` and yields one unified row (a dict, media
    paths relative to ``out``) per example, or a :class:`~sceval_plugin.api.Rejected`
    (the example's back-pointer and why it cannot be converted). A name another plugin already
    registered is an error naming both plugins. Return value is ignored.
    """


@hookspec
def sceval_register_task_adapters(registry: TaskAdapterRegistry) -> None:
    """Add task adapters that say where an lmms-eval task's docs keep their question, context and
    id, and which modalities the task feeds, so SCEval conditions can wrap the task
    (``faultline wrap``; docs/design/wrap-any-task.md §6).

    Call ``registry.add(TaskAdapter(...))`` (:class:`sceval_plugin.api.TaskAdapter`). An adapter
    names the tasks it serves by fnmatch patterns (``"mvbench_*"``); an adapter name or pattern
    another plugin already registered is an error naming both plugins, and so is a task two
    plugins' patterns both match (when it is wrapped). Return value is ignored.
    """
