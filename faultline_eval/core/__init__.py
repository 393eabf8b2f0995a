"""The core both benchmarks stand on, and that imports neither (layer 1 of ``docs/architecture.md``).

One implementation of each shared mechanism: the plugin host and registry, media I/O and limits,
the one crash-safe store, the decode cache, telemetry, the request lifecycle, the typed trial
record and log reading, statistics and agreement, and the table and figure writers. Import the
module you need (``from faultline_eval.core import store``); this package imports nothing itself,
so using one piece never loads the others.
"""
