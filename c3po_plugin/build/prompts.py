"""Deprecated since 0.3, removed in 0.4: 0.1's path of :mod:`c3po_plugin.construction.stage_prompts`.

Every name still resolves, to the same object, with a ``DeprecationWarning`` naming the import to use:
:mod:`c3po_plugin.api` for a name of the plugin API, else :mod:`c3po_plugin.construction.stage_prompts`.
"""

from c3po_plugin import api
from c3po_plugin.construction import stage_prompts
from faultline_eval.core.moved_modules import moved_module

__getattr__, __dir__, __all__ = moved_module(__name__, stage_prompts, api=api)
