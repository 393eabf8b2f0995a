"""faultline-eval: where omni-modal models break.

The distribution installs three importable packages: :mod:`sceval_plugin` (SCEval: structure
corruption), :mod:`c3po_plugin` (C3PO: cross-modal composition) and this one, which carries the
repository's ``tasks/`` and ``model_wrappers/`` folders as ``faultline_eval.tasks`` and
``faultline_eval.model_wrappers``.
"""

from importlib.metadata import version as _version

__version__ = _version("faultline-eval")
