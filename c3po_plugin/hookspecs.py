"""The whole plugin contract of C3PO.

A plugin is any module (or object) with functions marked ``@hookimpl``. Third parties publish
one through an entry point in the ``c3po`` group::

    [options.entry_points]
    c3po =
        my_templates = my_package.c3po_templates

The 25 templates of the paper are registered through exactly these hooks, by the modules
``c3po_plugin.templates`` and ``c3po_plugin.build.specs`` (their generation specs).
Implementations may accept a subset of a hook's arguments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:  # pragma: no cover
    from c3po_plugin.build.specs import SpecRegistry
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
    ``registry.add(GenerationSpec(...))`` (:mod:`c3po_plugin.build.specs`), so ``c3po build`` can
    generate items for them. Optional: a template without a spec is listed and skipped by the
    build. ``aliases`` (other ids, e.g. the paper's ``D_T1_001``) are accepted wherever a
    template id is. Return value is ignored.
    """
