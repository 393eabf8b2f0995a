"""lmms-eval task configurations for SCEval and C3PO.

Installed as ``faultline_eval.tasks`` (the folder keeps its design-card name, ``tasks/``, in
the repository) so that no generic top-level ``tasks`` module lands in site-packages. The task
YAML files are generated from the SCEval condition catalogue and the C3PO template registry;
:data:`TASKS_DIR` is the folder lmms-eval is pointed at.
"""

from pathlib import Path

TASKS_DIR = Path(__file__).resolve().parent
