"""SCEval's plugin host: the built-in operators, conditions, probes and converters first, then every
``sceval`` entry point (the mechanism: :mod:`faultline_eval.core.plugin_host`)."""

from __future__ import annotations

import pluggy

from faultline_eval.core.plugin_host import DEBUG_ENV, PluginError, PluginHost, SkippedPlugin, env_flag
from sceval_plugin import hookspecs
from sceval_plugin.sceval_environment import SCEVAL_DISABLE_PLUGIN_AUTOLOAD, SCEVAL_STRICT_PLUGINS

__all__ = [
    "DEBUG_ENV",
    "HOST",
    "PluginError",
    "SkippedPlugin",
    "call_per_plugin",
    "describe",
    "env_flag",
    "fill_registry",
    "plugin_manager",
]


ENTRY_POINT_GROUP = hookspecs.PROJECT
BUILTIN_PLUGINS = (
    "sceval_plugin.operators.text",
    "sceval_plugin.operators.vision",
    "sceval_plugin.operators.audio",
    "sceval_plugin.conditions",
    "sceval_plugin.probe_conditions",
    "sceval_plugin.no_option_control",
    "sceval_plugin.prompt_subset",
    "sceval_plugin.construction.converters",
    "sceval_plugin.task_adapters",
)
#: Built-ins whose conditions come from files written at run time (``sceval prompt-subset``):
#: their task files are generated in the cache, like a third party's, not committed.
GENERATED_PLUGINS = ("sceval_plugin.prompt_subset",)
HOST = PluginHost(hookspecs.PROJECT, hookspecs, BUILTIN_PLUGINS, SCEVAL_DISABLE_PLUGIN_AUTOLOAD, SCEVAL_STRICT_PLUGINS)


def plugin_manager() -> pluggy.PluginManager:
    return HOST.manager


describe = HOST.describe
call_per_plugin = HOST.call_per_plugin
fill_registry = HOST.fill_registry
