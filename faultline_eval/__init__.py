"""faultline-eval: where omni-modal models break.

The distribution installs three importable packages: :mod:`sceval_plugin` (SCEval: structure
corruption), :mod:`c3po_plugin` (C3PO: cross-modal composition) and this one, which carries the
repository's ``tasks/`` and ``model_wrappers/`` folders as ``faultline_eval.tasks`` and
``faultline_eval.model_wrappers``.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version
from pathlib import Path

_checkout = Path(__file__).resolve().parent.parent
if (_checkout / "setup.cfg").is_file() and (_checkout / "model_wrappers").is_dir():
    # Imported from a source checkout (the current directory is on sys.path, e.g. under
    # `python -m lmms_eval`): there tasks/ and model_wrappers/ sit beside this folder, not in it.
    __path__.append(str(_checkout))

try:
    __version__ = _version("faultline-eval")
except PackageNotFoundError:  # a checkout that was never installed
    __version__ = "0+unknown"
