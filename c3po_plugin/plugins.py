"""C3PO's plugin host: the built-in templates and synthesis backends first, then every ``c3po``
entry point."""

from __future__ import annotations

import pluggy

from c3po_plugin import hookspecs
from c3po_plugin.c3po_environment import C3PO_DISABLE_PLUGIN_AUTOLOAD, C3PO_STRICT_PLUGINS
from faultline_eval.core.plugin_host import PluginHost

BUILTIN_PLUGINS = ("c3po_plugin.templates", "c3po_plugin.construction.specs", "c3po_plugin.construction.synthesize")
HOST = PluginHost(hookspecs.PROJECT, hookspecs, BUILTIN_PLUGINS, C3PO_DISABLE_PLUGIN_AUTOLOAD, C3PO_STRICT_PLUGINS)


def plugin_manager() -> pluggy.PluginManager:
    """C3PO's pluggy manager: ``plugin_manager().register(module)`` does what a ``c3po`` entry point
    does (as :func:`sceval_plugin.plugins.plugin_manager` for SCEval)."""
    return HOST.manager
