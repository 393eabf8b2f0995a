"""Deprecated since 0.3, removed in 0.4: 0.1's name of :mod:`c3po_plugin.construction`.

The modules 0.1 documented (the generation specs, the synthesis backends' registry, each stage's
``run_<stage>``, the pipeline and the ledger) are kept here; each warns, naming the import to use
(:mod:`c3po_plugin.api` for a plugin).
"""
