"""The C3PO tasks' settings, read from the environment in one place, once per process.

lmms-eval gives a task's functions no configuration of their own (a task is one YAML file run in
one process), so the C3PO tasks are configured by environment variables; :func:`task_settings`
reads and checks them all the first time a task needs one, so a bad value fails before any
model call and the rest of the task code takes plain values.

* ``C3PO_RUNS``: how many times each item is asked (default 1); rows aggregate like SCEval's
  variants (mean over a sample's runs, then over samples).
* ``C3PO_JUDGE``: the judge that grades what exact match does not decide (default
  ``embedding``; see :func:`faultline_eval.judges.make_judge`).

The data source (``C3PO_SOURCE``, ``C3PO_ON_BAD_INPUT``) is read by
:mod:`c3po_plugin.data.sources`, the verdict cache (``C3PO_VERDICT_CACHE``) by
:func:`faultline_eval.judges.open_cache`: the library reads its own settings.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass

from c3po_plugin.c3po_environment import C3PO_RUNS
from c3po_plugin.data.sources import SourceError
from faultline_eval.core.settings import C3PO_JUDGE
from faultline_eval.judges import DEFAULT_JUDGE


@dataclass(frozen=True)
class TaskSettings:
    """What the environment says about a C3PO run."""

    runs: int = 1
    judge: str = DEFAULT_JUDGE

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> TaskSettings:
        """The settings ``environ`` gives, checked (a bad value raises :class:`SourceError`)."""
        runs = C3PO_RUNS.get(environ)
        if not runs.isdigit() or int(runs) < 1:
            raise SourceError(f"{C3PO_RUNS.name}={runs!r}: expected a positive integer")
        return cls(runs=int(runs), judge=C3PO_JUDGE.get(environ))


@functools.lru_cache(maxsize=1)
def task_settings() -> TaskSettings:
    """This process's settings (read on first use)."""
    return TaskSettings.from_environment()
