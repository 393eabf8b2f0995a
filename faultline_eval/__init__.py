"""faultline-eval: where omni-modal models break.

The distribution installs four importable packages: :mod:`sceval_plugin` (SCEval: structure
corruption), :mod:`c3po_plugin` (C3PO: cross-modal composition), :mod:`faultline_app` (the command
lines and the viewer) and this one: the ground floor (``core``, ``judges``) and, under its name, the
lmms-eval bindings ``faultline_eval.tasks`` and ``faultline_eval.model_wrappers``, which the repository
keeps in its top-level folders ``tasks/`` and ``model_wrappers/``. In a checkout, ``faultline_eval/tasks``
and ``faultline_eval/model_wrappers`` are symbolic links to those folders; an installed copy holds them
as ordinary folders (setup.cfg's ``package_dir``). Either way each module has one import path.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

try:
    __version__ = _version("faultline-eval")
except PackageNotFoundError:  # a checkout that was never installed
    __version__ = "0+unknown"
