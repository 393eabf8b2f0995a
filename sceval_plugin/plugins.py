"""Loading plugins: the built-ins first, then every entry point of the project's group.

Built-in modules are registered exactly like third-party ones, so every run of the test suite
goes through the same path a third-party package takes. :class:`PluginHost` serves both
protocols: SCEval (group ``sceval``, this module's functions) and C3PO (group ``c3po``, see
:mod:`c3po_plugin.plugins`).
"""

from __future__ import annotations

import functools
import importlib
import os
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, Callable, Iterator, Sequence

import pluggy

from sceval_plugin import hookspecs


class PluginError(RuntimeError):
    """A plugin could not be loaded, or two plugins claim the same name."""


class PluginHost:
    """One pluggy project: its hook specifications, built-in plugins and entry-point group.

    Set the environment variable named by ``disable_env`` to load only the built-ins.
    """

    def __init__(self, project: str, specs: ModuleType, builtins: Sequence[str], disable_env: str) -> None:
        self.project, self.specs, self.builtins, self.disable_env = project, specs, tuple(builtins), disable_env
        self._entry_points: dict[str, Any] = {}

    @functools.cached_property
    def manager(self) -> pluggy.PluginManager:
        """The process-wide plugin manager (built once; entry points are read at first use)."""
        pm = pluggy.PluginManager(self.project)
        pm.add_hookspecs(self.specs)
        for module_name in self.builtins:
            pm.register(importlib.import_module(module_name), name=module_name)
        if not os.environ.get(self.disable_env):
            for ep in entry_points(group=self.project):
                if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
                    continue
                try:
                    plugin = ep.load()
                except Exception as exc:  # the plugin's own import error, re-raised with its name
                    raise PluginError(
                        f"{self.project} plugin {self.describe(ep.name, ep)} failed to import "
                        f"{ep.value!r}: {type(exc).__name__}: {exc}"
                    ) from exc
                pm.register(plugin, name=ep.name)
                self._entry_points[ep.name] = ep
        pm.check_pending()  # a misspelled @hookimpl fails loudly instead of doing nothing
        return pm

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
            args = {name: kwargs[name] for name in impl.argnames}
            yield impl.plugin_name, functools.partial(impl.function, **args)

    def fill_registry(self, hook_name: str, registry: Any, what: str) -> Any:
        """Run every plugin's ``hook_name(registry=...)``, telling the registry who is adding
        what (its ``_plugin``), so clashes and failures name the plugin responsible."""
        for plugin_name, call in self.call_per_plugin(hook_name, registry=registry):
            registry._plugin = self.describe(plugin_name)
            try:
                call()
            except PluginError:
                raise
            except Exception as exc:
                raise PluginError(
                    f"plugin {registry._plugin} failed while registering {what}: {type(exc).__name__}: {exc}"
                ) from exc
        registry._plugin = "<direct>"
        return registry


ENTRY_POINT_GROUP = hookspecs.PROJECT
DISABLE_AUTOLOAD_ENV = "SCEVAL_DISABLE_PLUGIN_AUTOLOAD"
BUILTIN_PLUGINS = (
    "sceval_plugin.operators.text",
    "sceval_plugin.operators.vision",
    "sceval_plugin.operators.audio",
    "sceval_plugin.conditions",
)
HOST = PluginHost(hookspecs.PROJECT, hookspecs, BUILTIN_PLUGINS, DISABLE_AUTOLOAD_ENV)


def plugin_manager() -> pluggy.PluginManager:
    return HOST.manager


describe = HOST.describe
call_per_plugin = HOST.call_per_plugin
fill_registry = HOST.fill_registry
