"""Loading SCEval plugins: the built-ins first, then every ``sceval`` entry point.

Built-in modules are registered exactly like third-party ones, so every run of the test suite
goes through the same path a third-party package takes.
"""

from __future__ import annotations

import functools
import importlib
import os
from importlib.metadata import entry_points
from typing import Any, Callable, Iterator

import pluggy

from sceval_plugin import hookspecs

ENTRY_POINT_GROUP = "sceval"
DISABLE_AUTOLOAD_ENV = "SCEVAL_DISABLE_PLUGIN_AUTOLOAD"

BUILTIN_PLUGINS = (
    "sceval_plugin.operators.text",
    "sceval_plugin.operators.vision",
    "sceval_plugin.operators.audio",
    "sceval_plugin.conditions",
)


class PluginError(RuntimeError):
    """A plugin could not be loaded, or two plugins claim the same name."""


@functools.lru_cache(maxsize=None)
def plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager (built once; entry points are read at first use).

    Set ``SCEVAL_DISABLE_PLUGIN_AUTOLOAD=1`` to load only the built-ins.
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for module_name in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(module_name), name=module_name)
    if not os.environ.get(DISABLE_AUTOLOAD_ENV):
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
                continue
            try:
                plugin = ep.load()
            except Exception as exc:  # the plugin's own import error, re-raised with its name
                raise PluginError(
                    f"sceval plugin {describe(ep.name, ep)} failed to import "
                    f"{ep.value!r}: {type(exc).__name__}: {exc}"
                ) from exc
            pm.register(plugin, name=ep.name)
            _ENTRY_POINTS[ep.name] = ep
    pm.check_pending()  # a misspelled @hookimpl fails loudly instead of doing nothing
    return pm


_ENTRY_POINTS: dict[str, Any] = {}


def describe(plugin_name: str, ep: Any = None) -> str:
    """A human name for a plugin: the entry point and the distribution that ships it."""
    ep = ep if ep is not None else _ENTRY_POINTS.get(plugin_name)
    dist = getattr(ep, "dist", None) if ep is not None else None
    if dist is None:
        return f"{plugin_name!r} (built in)" if plugin_name in BUILTIN_PLUGINS else repr(plugin_name)
    return f"{plugin_name!r} (distribution {dist.name} {dist.version})"


def fill_registry(hook_name: str, registry: Any, what: str) -> Any:
    """Run every plugin's ``hook_name(registry=...)``, telling the registry who is adding what
    (its ``_plugin``), so clashes and failures name the plugin responsible."""
    for plugin_name, call in call_per_plugin(hook_name, registry=registry):
        registry._plugin = describe(plugin_name)
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


def call_per_plugin(hook_name: str, **kwargs: Any) -> Iterator[tuple[str, Callable[[], Any]]]:
    """Yield ``(plugin_name, call)`` for each implementation of a hook, in registration order.

    Unlike calling the hook as a whole, this tells the caller which plugin it is about to run,
    so a registry can name both sides of a clash and blame the right plugin for an error.
    Implementations get only the arguments they ask for.
    """
    hook: pluggy.HookCaller = getattr(plugin_manager().hook, hook_name)
    for impl in hook.get_hookimpls():  # registration order (pluggy itself calls them last-first)
        args = {name: kwargs[name] for name in impl.argnames}
        yield impl.plugin_name, functools.partial(impl.function, **args)
