"""C3PO: cross-modal composition and counterfactual-conflict evaluation, as an lmms-eval plugin.

Third-party template plugins import :data:`hookimpl` and :class:`Template` from here; the
contract is :mod:`c3po_plugin.hookspecs`. Grading: :func:`faultline_eval.judges.matching.exact_match`,
then a judge (:mod:`faultline_eval.judges`).
"""

from c3po_plugin.hookspecs import hookimpl
from c3po_plugin.templates import Template

__all__ = ["Template", "hookimpl"]
