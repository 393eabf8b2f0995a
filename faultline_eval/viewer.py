"""Deprecated since 0.3, removed in 0.4: 0.2's path of :mod:`faultline_app.viewer` (the results viewer's package).

The command lines and the viewer moved to the top-level package :mod:`faultline_app`, the floor above the
benchmarks (issue 37). Every name still resolves, to the same object, with a ``DeprecationWarning``
naming the import to use.
"""

from faultline_app import viewer
from faultline_eval.core.moved_modules import moved_module

__getattr__, __dir__, __all__ = moved_module(__name__, viewer)
