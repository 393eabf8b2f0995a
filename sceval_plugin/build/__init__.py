"""Deprecated since 0.3, removed in 0.4: 0.1's name of :mod:`sceval_plugin.construction`.

Only the modules 0.1 documented for plugins and scripts are kept here (:mod:`.convert`,
:mod:`.converters`); each warns, naming the import to use (:mod:`sceval_plugin.api` for a plugin).
"""
