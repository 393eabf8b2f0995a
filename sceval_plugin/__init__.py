"""SCEval: structure-corruption evaluation of omni-modal models, as an lmms-eval plugin.

Plugins import what they use from :mod:`sceval_plugin.api` (the hooks: :mod:`sceval_plugin.hookspecs`);
:data:`hookimpl` stays importable from here too, as 0.1 documented. Importing the package registers its
trial kinds (:mod:`sceval_plugin.sceval_trial`) with the core, so any reader of logs knows them.
"""

from faultline_eval.core.offline import OFFLINE_DEFAULTS, use_offline_defaults
from sceval_plugin import (
    sceval_environment,  # noqa: F401  declares SCEval's settings in the core's table
    sceval_trial,  # noqa: F401  registers SCEval's trial kinds with the core
)
from sceval_plugin.hookspecs import hookimpl

__all__ = ["OFFLINE_DEFAULTS", "hookimpl", "use_offline_defaults"]
