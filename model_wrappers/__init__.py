"""Adapters over lmms-eval's own model loaders, and the offline reference model.

Installed as ``faultline_eval.model_wrappers``; models are registered with lmms-eval through
the ``lmms_eval.models`` entry point.
"""
