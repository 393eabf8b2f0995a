"""Deprecated since 0.3, removed in 0.4: the old path of :mod:`sceval_plugin.base_task` (a wrapped task's base task).

The base task's YAML, config and metric aggregations are SCEval's wrapping library, which the SCEval report
reads; they moved to ``sceval_plugin`` so that the report no longer imports the harness folder (issue 37).
Every name still resolves, to the same object, with a ``DeprecationWarning`` naming the import to use.
"""

from faultline_eval.core.moved_modules import moved_module
from sceval_plugin import base_task

__getattr__, __dir__, __all__ = moved_module(__name__, base_task)
