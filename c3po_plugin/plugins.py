"""C3PO's plugin host: the built-in templates and synthesis backends first, then every ``c3po``
entry point."""

from __future__ import annotations

from c3po_plugin import hookspecs
from faultline_eval.core.plugin_host import PluginHost
from faultline_eval.core.settings import C3PO_DISABLE_PLUGIN_AUTOLOAD, C3PO_STRICT_PLUGINS

BUILTIN_PLUGINS = ("c3po_plugin.templates", "c3po_plugin.construction.specs", "c3po_plugin.construction.synthesize")
HOST = PluginHost(hookspecs.PROJECT, hookspecs, BUILTIN_PLUGINS, C3PO_DISABLE_PLUGIN_AUTOLOAD, C3PO_STRICT_PLUGINS)
