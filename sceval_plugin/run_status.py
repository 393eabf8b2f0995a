"""Deprecated since 0.3, removed in 0.4: 0.1's path of :mod:`faultline_eval.core.run_status`.

Every name still resolves, to the same object, with a ``DeprecationWarning`` naming the import to use:
:mod:`sceval_plugin.api` for a name of the plugin API, else :mod:`faultline_eval.core.run_status`.
"""

from faultline_eval.core import run_status
from faultline_eval.core.moved_modules import moved_module
from sceval_plugin import api

__getattr__, __dir__, __all__ = moved_module(__name__, run_status, api=api)
