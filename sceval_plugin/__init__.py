"""SCEval: structure-corruption evaluation of omni-modal models, as an lmms-eval plugin.

Third-party plugins import :data:`hookimpl` from here; the contract is
:mod:`sceval_plugin.hookspecs`.
"""

from faultline_eval.core.offline import OFFLINE_DEFAULTS, use_offline_defaults
from sceval_plugin.hookspecs import hookimpl

__all__ = ["OFFLINE_DEFAULTS", "hookimpl", "use_offline_defaults"]
