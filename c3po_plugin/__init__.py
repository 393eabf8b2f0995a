"""C3PO: cross-modal composition and counterfactual-conflict evaluation, as an lmms-eval plugin.

Plugins import what they use from :mod:`c3po_plugin.api` (the hooks: :mod:`c3po_plugin.hookspecs`);
:data:`hookimpl` and :class:`Template` stay importable from here too, as 0.1 documented. Grading: :func:`faultline_eval.judges.matching.exact_match`,
then a judge (:mod:`faultline_eval.judges`).
"""

from c3po_plugin.hookspecs import hookimpl
from c3po_plugin.templates import Template

__all__ = ["Template", "hookimpl"]
