"""``sceval prompt-subset``: a model's G.6 prompt-robustness subset chosen from its logged runs.

Reading the logs is the report's job (:func:`sceval_plugin.report.reader.read_runs`); choosing
the cells and generating their tasks is the library's (:mod:`sceval_plugin.prompt_subset`, which
the task layer also reads at start-up), so this module only joins the two.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from sceval_plugin.conditions import PROMPT_ROBUSTNESS_VARIANTS
from sceval_plugin.prompt_subset import subset_from_trials
from sceval_plugin.report.reader import read_runs

__all__ = ["subset_from_runs"]


def subset_from_runs(run_dirs: Sequence[str | Path], model: str | None = None,
                     prompts: Sequence[str] = PROMPT_ROBUSTNESS_VARIANTS) -> dict:
    """Choose ``model``'s subset from the logs under ``run_dirs`` (the only model there when
    None) and write its file: :func:`sceval_plugin.prompt_subset.subset_from_trials`."""
    trials, _ = read_runs(run_dirs, progress=False)
    return subset_from_trials(trials, run_dirs, model, prompts)
