"""C3PO: cross-modal composition and counterfactual-conflict evaluation, as an lmms-eval plugin.

Plugins import what they use from :mod:`c3po_plugin.api` (the hooks: :mod:`c3po_plugin.hookspecs`);
:data:`hookimpl` and :class:`Template` stay importable from here too, as 0.1 documented. Grading: :func:`faultline_eval.judges.matching.exact_match`,
then a judge (:mod:`faultline_eval.judges`). Importing the package registers its trial kind
(:mod:`c3po_plugin.c3po_trial`) with the core.
"""

from c3po_plugin import (
    c3po_environment,  # noqa: F401  declares C3PO's settings in the core's table
    c3po_trial,  # noqa: F401  registers C3PO's trial kind with the core
)
from c3po_plugin.hookspecs import hookimpl
from c3po_plugin.templates import Template

__all__ = ["Template", "hookimpl"]
