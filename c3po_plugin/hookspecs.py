"""The whole plugin contract of C3PO.

A plugin is any module (or object) with functions marked ``@hookimpl``. Third parties publish
one through an entry point in the ``c3po`` group::

    [options.entry_points]
    c3po =
        my_templates = my_package.c3po_templates

The 25 templates of the paper are registered through exactly these hooks, by the modules
``c3po_plugin.templates``, ``c3po_plugin.construction.specs`` (their generation specs) and
``c3po_plugin.construction.synthesize`` (the synthesis backends).
Implementations may accept a subset of a hook's arguments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:  # pragma: no cover
    from c3po_plugin.construction.specs import SpecRegistry
    from c3po_plugin.construction.synthesize import SynthesisRegistry
    from c3po_plugin.templates import TemplateRegistry

PROJECT = "c3po"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def c3po_register_templates(registry: TemplateRegistry) -> None:
    """Add templates to ``registry`` with ``registry.add(Template(...))``.

    A template's id and name must be new (a clash names both plugins); each template becomes an
    lmms-eval task ``c3po_<snake name>`` and joins its category and tier tasks. Return value is
    ignored.
    """


@hookspec
def c3po_register_generation_specs(registry: SpecRegistry) -> None:
    """Add the benchmark-construction spec (paper App. G) of your templates with
    ``registry.add(GenerationSpec(...))`` (:mod:`c3po_plugin.construction.specs`), so ``c3po build`` can
    generate items for them. Optional: a template without a spec is listed and skipped by the
    build. ``aliases`` (other ids, e.g. the paper's ``D_T1_001``) are accepted wherever a
    template id is. Return value is ignored.
    """


@hookspec
def c3po_register_synthesis_backends(registry: SynthesisRegistry) -> None:
    """Add media synthesis backends for ``c3po build synthesize`` with
    ``registry.add(kind, name, factory)``: ``kind`` is ``speech``, ``sfx`` or ``image``;
    ``factory(model=None)`` returns an object with

    - speech: ``speak(text, style, *, key) -> (wave float32, sample_rate)``
    - sfx: ``sound(prompt, duration_s, *, key) -> (wave float32, sample_rate)``
    - image: ``draw(caption, *, key) -> uint8 array (H, W, 3)``

    ``key`` is the sample id (seed anything random from it); ``model`` is what follows the
    name in a ``name:model`` spec. The built-ins (``espeak``, ``procedural``, ``caption-card``,
    ``qwen3-tts``, ``audioldm2``, ``diffusers``) register through this hook too
    (:mod:`c3po_plugin.construction.synthesize`).
    """
