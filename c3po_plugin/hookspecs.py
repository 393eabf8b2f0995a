"""The whole plugin contract of C3PO.

A plugin is any module (or object) with functions marked ``@hookimpl``. Third parties publish
one through an entry point in the ``c3po`` group::

    [options.entry_points]
    c3po =
        my_templates = my_package.c3po_templates

The 25 templates of the paper are registered through exactly these hooks, by the modules
``c3po_plugin.templates``, ``c3po_plugin.construction.specs`` (their generation specs) and
``c3po_plugin.construction.synthesize`` (the synthesis backends).
Implementations may accept a subset of a hook's arguments. The templates' and specs' ``registry``
is a :class:`faultline_eval.core.registry.Registry`; a hook needs only its ``add``. A plugin imports
what it adds from :mod:`c3po_plugin.api`, which also exports the hooks' argument types and the
backend protocols below for the plugin's own annotations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

from faultline_eval.core.registry import PluginRegistry

if TYPE_CHECKING:  # the hooks' argument types only (construction's, a layer above, by protocol)
    import numpy as np

    from c3po_plugin.templates import TemplateRegistry

PROJECT = "c3po"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class BackendRegistry(Protocol):
    """What ``c3po_register_synthesis_backends`` offers a plugin (the hook's documentation)."""

    def add(self, kind: str, name: str, factory: Callable[..., Any]) -> object: ...


class SpeechBackend(Protocol):
    """What a ``speech`` backend's factory returns: a float32 wave and its sample rate."""

    def speak(self, text: str, style: str, *, key: str) -> tuple[np.ndarray, int]: ...


class SoundBackend(Protocol):
    """What an ``sfx`` backend's factory returns: a float32 wave and its sample rate."""

    def sound(self, prompt: str, duration_s: float, *, key: str) -> tuple[np.ndarray, int]: ...


class ImageBackend(Protocol):
    """What an ``image`` backend's factory returns: a uint8 array ``(H, W, 3)``."""

    def draw(self, caption: str, *, key: str) -> np.ndarray: ...


@hookspec
def c3po_register_templates(registry: TemplateRegistry) -> None:
    """Add templates to ``registry`` with ``registry.add(Template(...))`` (:class:`c3po_plugin.api.Template`).

    A template's id, name, task name and ``aliases`` (other ids, e.g. the paper's ``D_T1_001``,
    accepted wherever a template id is) must be new (a clash names both plugins); each template
    becomes an lmms-eval task ``c3po_<snake name>`` and joins its category and tier tasks. Return
    value is ignored.
    """


@hookspec
def c3po_register_generation_specs(registry: PluginRegistry[Any]) -> None:
    """Add the benchmark-construction spec (paper App. G) of your templates to ``registry`` (a
    :class:`c3po_plugin.api.SpecRegistry`) with ``registry.add(GenerationSpec(...))`` (:class:`c3po_plugin.api.GenerationSpec`), so ``c3po build`` can
    generate items for them. Optional: a template without a spec is listed and skipped by the
    build. ``aliases`` (other ids, e.g. the paper's ``D_T1_001``) are accepted by the build
    stages; give them to the ``Template`` too to have them accepted everywhere. Return value is
    ignored.
    """


@hookspec
def c3po_register_synthesis_backends(registry: BackendRegistry) -> None:
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
