"""Deprecated since 0.3, removed in 0.4: the old path of :mod:`faultline_eval.model_wrappers.reference_c3po_build`.

``c3po_build_reference``, the offline stand-in for ``c3po build``'s models, is an lmms-eval model class
registered through our entry point: it moved to the harness folder beside the other reference models, so
that construction no longer imports it (issue 37). Every name still resolves, to the same object, with a
``DeprecationWarning`` naming the import to use.
"""

from faultline_eval.core.moved_modules import moved_module
from faultline_eval.model_wrappers import reference_c3po_build

__getattr__, __dir__, __all__ = moved_module(__name__, reference_c3po_build)
