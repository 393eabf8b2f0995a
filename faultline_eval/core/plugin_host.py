"""Loading plugins: the built-ins first, then every entry point of a project's group.

Built-in modules are registered exactly like third-party ones, so every run of the test suite
goes through the same path a third-party package takes. One :class:`PluginHost` per protocol:
SCEval (group ``sceval``, :mod:`sceval_plugin.plugins`) and C3PO (group ``c3po``,
:mod:`c3po_plugin.plugins`).

A third-party plugin that fails (it raises on import, has a malformed hook, registers a name
another plugin has, or an invalid spec) disables only itself: it is named in one line on
stderr (plugin, distribution, reason), its additions to the registry it failed in are undone,
it takes part in no later hook call, and everything else keeps working. Set the host's strict
variable (``SCEVAL_STRICT_PLUGINS=1``, ``C3PO_STRICT_PLUGINS=1``) to make that a hard error,
as a plugin author's CI should; ``FAULTLINE_DEBUG=1`` adds the traceback. A failing built-in
is always an error.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, TypeVar

import pluggy

from faultline_eval.core.registry import Fillable, PluginError
from faultline_eval.core.settings import FAULTLINE_DEBUG, Setting

__all__ = ["DEBUG_ENV", "PluginError", "PluginHost", "SkippedPlugin", "env_flag"]

DEBUG_ENV = FAULTLINE_DEBUG.name

AnyRegistry = TypeVar("AnyRegistry", bound=Fillable)


def env_flag(name: str) -> bool:
    """Whether the environment variable ``name`` is set to something other than ``""``/``0``."""
    return os.environ.get(name, "").strip() not in ("", "0")


@dataclass(frozen=True)
class SkippedPlugin:
    """A third-party plugin left out of this process, and why."""

    project: str
    plugin: str  # its description: entry-point name and distribution
    reason: str

    def __str__(self) -> str:
        return f"{self.project} plugin {self.plugin} skipped: {self.reason}"


class PluginHost:
    """One pluggy project: its hook specifications, built-in plugins and entry-point group.

    Switch on the setting ``disable_autoload`` to load only the built-ins, and ``strict`` to turn a
    skipped plugin into a :class:`PluginError`.
    """

    def __init__(
        self, project: str, specs: ModuleType, builtins: Sequence[str], disable_autoload: Setting, strict: Setting
    ) -> None:
        self.project, self.specs, self.builtins = project, specs, tuple(builtins)
        self.disable_autoload, self.strict = disable_autoload, strict
        self._entry_points: dict[str, Any] = {}
        #: Every plugin skipped so far, in the order it failed.
        self.skipped: list[SkippedPlugin] = []

    @functools.cached_property
    def manager(self) -> pluggy.PluginManager:
        """The process-wide plugin manager (built once; entry points are read at first use)."""
        pm = pluggy.PluginManager(self.project)
        pm.add_hookspecs(self.specs)
        for module_name in self.builtins:
            pm.register(importlib.import_module(module_name), name=module_name)
        pm.check_pending()
        if not self.disable_autoload.is_on():
            for ep in entry_points(group=self.project):
                if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
                    continue
                self._entry_points[ep.name] = ep
                try:
                    plugin = ep.load()
                except Exception as exc:  # the plugin's own import error, reported with its name
                    self.skip(pm, ep.name, f"failed to import {ep.value!r}: {type(exc).__name__}: {exc}", exc)
                    continue
                try:
                    pm.register(plugin, name=ep.name)
                    pm.check_pending()  # a misspelled @hookimpl fails loudly instead of doing nothing
                except Exception as exc:
                    self.skip(pm, ep.name, f"invalid hook implementation: {exc}", exc)
        return pm

    def skip(self, pm: pluggy.PluginManager, plugin_name: str, reason: str, exc: BaseException) -> None:
        """Leave a failing plugin out (named on stderr), or raise if it is a built-in or the
        host is strict."""
        skipped = SkippedPlugin(self.project, self.describe(plugin_name), reason)
        if plugin_name in self.builtins:
            raise PluginError(f"built-in {self.project} plugin {plugin_name!r} failed: {reason}") from exc
        if self.strict.is_on():
            raise PluginError(
                f"{self.project} plugin {skipped.plugin} failed: {reason} "
                f"({self.strict.name} is set, so this is an error)"
            ) from exc
        if pm.get_plugin(plugin_name) is not None:
            pm.unregister(name=plugin_name)
        pm.set_blocked(plugin_name)
        self.skipped.append(skipped)
        print(f"warning: {skipped}", file=sys.stderr)
        if FAULTLINE_DEBUG.is_on():
            traceback.print_exception(exc, file=sys.stderr)

    def describe(self, plugin_name: str, ep: Any = None) -> str:
        """A human name for a plugin: the entry point and the distribution that ships it."""
        ep = ep if ep is not None else self._entry_points.get(plugin_name)
        dist = getattr(ep, "dist", None) if ep is not None else None
        if dist is None:
            return f"{plugin_name!r} (built in)" if plugin_name in self.builtins else repr(plugin_name)
        return f"{plugin_name!r} (distribution {dist.name} {dist.version})"

    def call_per_plugin(self, hook_name: str, **kwargs: Any) -> Iterator[tuple[str, Callable[[], Any]]]:
        """Yield ``(plugin_name, call)`` for each implementation of a hook, in registration order.

        Unlike calling the hook as a whole, this tells the caller which plugin it is about to
        run, so a registry can name both sides of a clash and blame the right plugin for an
        error. Implementations get only the arguments they ask for.
        """
        hook: pluggy.HookCaller = getattr(self.manager.hook, hook_name)
        for impl in hook.get_hookimpls():  # registration order (pluggy itself calls them last-first)
            if self.manager.is_blocked(impl.plugin_name):  # skipped while this loop ran
                continue
            args = {name: kwargs[name] for name in impl.argnames}
            yield impl.plugin_name, functools.partial(impl.function, **args)

    def fill_registry(self, hook_name: str, registry: AnyRegistry, what: str) -> AnyRegistry:
        """Run every plugin's ``hook_name(registry=...)`` inside ``registry.adding_for(plugin)``
        (:mod:`faultline_eval.core.registry`), so clashes and failures name the plugin
        responsible. A plugin that fails has its additions undone and is skipped (see
        :meth:`skip`)."""
        for plugin_name, call in self.call_per_plugin(hook_name, registry=registry):
            try:
                with registry.adding_for(self.describe(plugin_name)):
                    call()
            except Exception as exc:
                reason = (
                    str(exc)
                    if isinstance(exc, PluginError)
                    else f"failed while registering {what}: {type(exc).__name__}: {exc}"
                )
                self.skip(self.manager, plugin_name, reason, exc)
        return registry
