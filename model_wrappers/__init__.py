"""Adapters over lmms-eval's own model loaders, and the offline reference model.

Imported as ``faultline_eval.model_wrappers``, its only name (``faultline_eval/model_wrappers`` links to
this folder in a checkout and holds it when installed); models are registered with lmms-eval through
the ``lmms_eval.models`` entry point.
"""

# One import path per module (issue 37): from a checkout's root `model_wrappers` would also import, as a second copy.
if __name__ != "faultline_eval.model_wrappers":
    raise ImportError(
        f"import faultline_eval.model_wrappers, not {__name__}: the folder model_wrappers/ is the package faultline_eval.model_wrappers"
    )
