"""Build a verified SCEval benchmark (paper §2.3, Appendix D, G.7; Tables 1, 24, 27).

``sceval build <stage> BUILD_DIR``: converters turn local copies of source benchmarks into
unified items, a seeded candidate pool is drawn from them, annotation rounds go out as sheets
and come back validated, agreement is measured, and the manifest and funnel that the tasks
consume (``SCEVAL_MANIFEST``) are written, then published as a ``datasets`` folder.

Each stage is a module of this package exposing ``add_parser(stages)``; :mod:`.cli` lists them.
"""
