"""Deprecated since 0.3, removed in 0.4: 0.1's path of :mod:`sceval_plugin.construction.converters`.

Every name still resolves, to the same object, with a ``DeprecationWarning`` naming the import to use:
:mod:`sceval_plugin.api` for a name of the plugin API, else :mod:`sceval_plugin.construction.converters`.
"""

from faultline_eval.core.moved_modules import moved_module
from sceval_plugin import api
from sceval_plugin.construction import converters

__getattr__, __dir__, __all__ = moved_module(__name__, converters, api=api)
