"""C³PO's plugin API: every name a plugin needs, in one module that stays put.

Import everything a C³PO plugin uses from here, never from the module that defines it today
(``from c3po_plugin.api import Template, hookimpl``). A plugin is a module whose functions are marked
:data:`hookimpl`, named by an entry point in group ``c3po`` (:data:`ENTRY_POINT_GROUP`); the hooks
are :mod:`c3po_plugin.hookspecs`.

**Stability**: the names of ``__all__`` stay, here, across minor versions; one that changes warns
for one minor version first (``DeprecationWarning``, and the changelog). The defining modules are
internal: issue 26 moved ``c3po_plugin.build`` to ``c3po_plugin.construction`` (its 0.1 paths warn
until 0.4). The policy: ``docs/public-api.md``.

What is here, by hook:

- all hooks: :data:`hookimpl`, :data:`ENTRY_POINT_GROUP`, :func:`plugin_manager` (register a module
  by hand, as the entry point does), and the registries' base :class:`Registry`, the protocol
  :class:`PluginRegistry` and the errors :class:`PluginError`, :class:`UnknownNameError`;
- ``c3po_register_templates``, whose ``registry`` is a :class:`TemplateRegistry`: :class:`Template`, :data:`CATEGORIES`,
  :data:`TIERS`, :data:`MODALITIES`, :func:`template_registry`;
- ``c3po_register_generation_specs``, whose ``registry`` is a :class:`SpecRegistry`: :class:`GenerationSpec`,
  :data:`TAGS` (the selection tags), :data:`MATCH_KEYS` (a selection filter's machine keys),
  :func:`spec_registry`;
- ``c3po_register_synthesis_backends``, whose ``registry`` is a :class:`BackendRegistry`: the protocols a factory's
  object meets, :class:`SpeechBackend`, :class:`SoundBackend`, :class:`ImageBackend`;
  :data:`SYNTHESIS_KINDS`, :class:`SynthesisRegistry` (what ``registry`` is),
  :func:`synthesis_registry`;
- reading what runs wrote (no hook): the trial type :class:`C3POTrial` (one per-sample entry, read with
  ``from_json``, schema 1 or 2).

Each ``*_registry()`` is the registry filled by every installed plugin (built once per process).
"""

from __future__ import annotations

from c3po_plugin.c3po_trial import C3POTrial
from c3po_plugin.construction.selection_filter import MATCH_KEYS
from c3po_plugin.construction.specs import TAGS, GenerationSpec, SpecRegistry
from c3po_plugin.construction.specs import registry as spec_registry
from c3po_plugin.construction.synthesize import KINDS as SYNTHESIS_KINDS
from c3po_plugin.construction.synthesize import SynthesisRegistry
from c3po_plugin.construction.synthesize import registry as synthesis_registry
from c3po_plugin.hookspecs import PROJECT as ENTRY_POINT_GROUP
from c3po_plugin.hookspecs import BackendRegistry, ImageBackend, SoundBackend, SpeechBackend, hookimpl
from c3po_plugin.plugins import plugin_manager
from c3po_plugin.templates import CATEGORIES, MODALITIES, TIERS, Template, TemplateRegistry
from c3po_plugin.templates import registry as template_registry
from faultline_eval.core.registry import PluginError, PluginRegistry, Registry, UnknownNameError

__all__ = [
    # every hook
    "ENTRY_POINT_GROUP",
    "PluginError",
    "PluginRegistry",
    "Registry",
    "UnknownNameError",
    "hookimpl",
    "plugin_manager",
    # c3po_register_templates
    "CATEGORIES",
    "MODALITIES",
    "TIERS",
    "Template",
    "TemplateRegistry",
    "template_registry",
    # c3po_register_generation_specs
    "MATCH_KEYS",
    "TAGS",
    "GenerationSpec",
    "SpecRegistry",
    "spec_registry",
    # c3po_register_synthesis_backends
    "SYNTHESIS_KINDS",
    "BackendRegistry",
    "ImageBackend",
    "SoundBackend",
    "SpeechBackend",
    "SynthesisRegistry",
    "synthesis_registry",
    # the trials runs write
    "C3POTrial",
]
