"""SCEval's plugin API: every name a plugin needs, in one module that stays put.

A plugin is a module with functions marked :data:`hookimpl`, named by an entry point in group
``sceval`` (:data:`ENTRY_POINT_GROUP`); the hooks are :mod:`sceval_plugin.hookspecs`. Import what a
plugin uses from here, never from the module that defines it today::

    from sceval_plugin.api import SeverityTable, hookimpl, operator

**Stability.** Every name in ``__all__`` keeps its name, its meaning and its import from
``sceval_plugin.api`` across minor versions. A name that changes is deprecated first: it keeps
working, with a ``DeprecationWarning`` naming its replacement, for one minor version, and the
changelog says so. The modules these names are defined in are internal and may move between
versions (issue 26 moved several; their 0.1 paths keep working, with a warning, until 0.4).

What is here, by hook:

- all hooks: :data:`hookimpl`, :data:`ENTRY_POINT_GROUP`, :func:`plugin_manager` (register a module
  by hand, as the entry point does), and the registries' base :class:`Registry`, the protocol
  :class:`PluginRegistry` and the errors :class:`PluginError`, :class:`UnknownNameError`;
- ``sceval_register_operators``, whose ``registry`` is a :class:`OperatorRegistry`: :func:`operator` (the decorator),
  :class:`SeverityTable`, :class:`OperatorSpec`, :data:`SEVERITIES`, :data:`CORRUPTING_SEVERITIES`,
  :data:`MODALITIES`, :data:`SAMPLE_RATE`, :func:`operator_registry`, :func:`apply_operator`,
  :class:`OperatorInputError`, :class:`OperatorContractError`, :class:`UnknownOperatorError`;
- ``sceval_register_conditions``, whose ``registry`` is a :class:`ConditionRegistry`: :class:`Condition`,
  :class:`Corruption`, :func:`joint`, :data:`BLOCKS`, :data:`CONTROLS`, :func:`condition_registry`;
- ``sceval_register_probes``, whose ``registry`` is a :class:`ProbeRegistry`: :func:`probe` (the decorator),
  :class:`ProbeSpec`, :class:`Evidence`, :class:`BareItem`, :class:`OmniItem` (a donor),
  :class:`NotApplicable`, :data:`NOT_APPLICABLE`, :class:`ProbeCall`, :func:`probe_condition`,
  :data:`PROBE_FAMILIES`, :data:`DONOR_TIERS`, :data:`PROBE_PARAMETERS`, :func:`probe_registry`,
  :func:`apply_probe`;
- ``sceval_register_converters``, whose ``registry`` is a :class:`ConverterRegistry`: :class:`Converter`,
  :class:`Rejected`, :data:`EVIDENCE_MODALITIES`, :func:`converter_registry`;
- ``sceval_register_task_adapters``, whose ``registry`` is a :class:`TaskAdapterRegistry`: :class:`TaskAdapter`,
  :data:`GENERIC_ADAPTER`, :func:`rotated_options`, :func:`adapter_for`, :func:`adapter_registry`;
- reading what runs wrote (no hook): the trial types :class:`SCEvalTrial` and :class:`WrappedTrial` (one
  per-sample entry each, read with ``from_json``, schema 1 or 2), :data:`STRESS_ONLY` (the stress-only
  cohort an entry names) and :data:`WRAPPED_TRIAL_KEY` (a wrapped task's entry key).

Each ``*_registry()`` is the registry filled by every installed plugin (built once per process);
the hook's ``registry`` argument is the same class while it is being filled.
"""

from __future__ import annotations

from faultline_eval.core.registry import PluginError, PluginRegistry, Registry, UnknownNameError
from sceval_plugin.conditions import BLOCKS, CONTROLS, Condition, ConditionRegistry, Corruption, joint
from sceval_plugin.conditions import catalogue as condition_registry
from sceval_plugin.construction.convert import EVIDENCE_MODALITIES, Converter, ConverterRegistry, Rejected
from sceval_plugin.construction.convert import registry as converter_registry
from sceval_plugin.data.records import OmniItem
from sceval_plugin.hookspecs import PROJECT as ENTRY_POINT_GROUP
from sceval_plugin.hookspecs import hookimpl
from sceval_plugin.operators import (
    CORRUPTING_SEVERITIES,
    MODALITIES,
    SAMPLE_RATE,
    SEVERITIES,
    OperatorContractError,
    OperatorInputError,
    OperatorRegistry,
    OperatorSpec,
    SeverityTable,
    UnknownOperatorError,
    operator,
)
from sceval_plugin.operators import apply as apply_operator
from sceval_plugin.operators import registry as operator_registry
from sceval_plugin.plugins import plugin_manager
from sceval_plugin.probe_conditions import (
    DONOR_TIERS,
    NOT_APPLICABLE,
    PROBE_FAMILIES,
    BareItem,
    Evidence,
    NotApplicable,
    ProbeCall,
    ProbeRegistry,
    ProbeSpec,
    probe,
    probe_condition,
)
from sceval_plugin.probe_conditions import PARAMETERS as PROBE_PARAMETERS
from sceval_plugin.probe_conditions import apply as apply_probe
from sceval_plugin.probe_conditions import registry as probe_registry
from sceval_plugin.sceval_trial import STRESS_ONLY, WRAPPED_TRIAL_KEY, SCEvalTrial, WrappedTrial
from sceval_plugin.task_adapters import GENERIC as GENERIC_ADAPTER
from sceval_plugin.task_adapters import TaskAdapter, TaskAdapterRegistry, adapter_for, rotated_options
from sceval_plugin.task_adapters import adapters as adapter_registry

__all__ = [
    # every hook
    "ENTRY_POINT_GROUP",
    "PluginError",
    "PluginRegistry",
    "Registry",
    "UnknownNameError",
    "hookimpl",
    "plugin_manager",
    # sceval_register_operators
    "CORRUPTING_SEVERITIES",
    "MODALITIES",
    "SAMPLE_RATE",
    "SEVERITIES",
    "OperatorContractError",
    "OperatorInputError",
    "OperatorRegistry",
    "OperatorSpec",
    "SeverityTable",
    "UnknownOperatorError",
    "apply_operator",
    "operator",
    "operator_registry",
    # sceval_register_conditions
    "BLOCKS",
    "CONTROLS",
    "Condition",
    "ConditionRegistry",
    "Corruption",
    "condition_registry",
    "joint",
    # sceval_register_probes
    "DONOR_TIERS",
    "NOT_APPLICABLE",
    "PROBE_FAMILIES",
    "PROBE_PARAMETERS",
    "BareItem",
    "Evidence",
    "NotApplicable",
    "OmniItem",
    "ProbeCall",
    "ProbeRegistry",
    "ProbeSpec",
    "apply_probe",
    "probe",
    "probe_condition",
    "probe_registry",
    # sceval_register_converters
    "EVIDENCE_MODALITIES",
    "Converter",
    "ConverterRegistry",
    "Rejected",
    "converter_registry",
    # sceval_register_task_adapters
    "GENERIC_ADAPTER",
    "TaskAdapter",
    "TaskAdapterRegistry",
    "adapter_for",
    "adapter_registry",
    "rotated_options",
    # the trials runs write
    "STRESS_ONLY",
    "WRAPPED_TRIAL_KEY",
    "SCEvalTrial",
    "WrappedTrial",
]
