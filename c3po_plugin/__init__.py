"""C3PO: cross-modal composition and conflict evaluation, as an lmms-eval plugin.

Templates, grading (exact match, then a judge) and the failure-mode report live here; they
reuse :mod:`sceval_plugin`'s statistics and report code.
"""
