"""``sceval prompt-subset``: a model's G.6 prompt-robustness subset chosen from its logged runs.

Reading the logs and the accuracy per cell (eq. 3) are the report's; the rule that chooses the
cells (:func:`sceval_plugin.prompt_subset.choose_bases`), the subset file and the tasks it
generates are the library's (:mod:`sceval_plugin.prompt_subset`, a plugin that the task layer
loads at start-up, so it stays free of the trial table).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sceval_plugin.conditions import PROMPT_ROBUSTNESS_VARIANTS, catalogue
from sceval_plugin.eval_prompts import PROMPT_VARIANTS
from sceval_plugin.metrics.protocol import catalogue_info, per_sample
from sceval_plugin.prompt_subset import SubsetError, choose_bases, group_name, read_subsets, task_names, write_subset
from sceval_plugin.report.reader import read_runs

__all__ = ["model_accuracy", "subset_from_runs"]


def model_accuracy(trials, model: str) -> dict[str, float]:
    """Condition id -> accuracy (eq. 3: mean over samples of each one's mean over valid variants)."""
    mine = trials[trials["model"].astype(str) == model]
    samples = per_sample(mine)
    return samples.groupby(samples["condition_id"].astype(str))["score"].mean().to_dict()


def subset_from_runs(
    run_dirs: Sequence[str | Path], model: str | None = None, prompts: Sequence[str] = PROMPT_ROBUSTNESS_VARIANTS
) -> dict:
    """Choose ``model``'s subset from the logs under ``run_dirs`` (the only model there when
    None) and write its file; returns the model, chosen cells, their accuracy, notes, the file
    and the group's task names."""
    unknown = [p for p in prompts if p not in PROMPT_VARIANTS or p in ("json", "no_option")]
    if unknown or not prompts:
        raise SubsetError(f"prompt variants {unknown or list(prompts)}: choose among cot, open")
    trials, _ = read_runs(run_dirs, progress=False)
    models = sorted(set(map(str, trials["model"])))
    if model is None and len(models) != 1:
        raise SubsetError(f"the logs hold {len(models)} models ({', '.join(models)}); name one with --model")
    model = model or models[0]
    if model not in models:
        raise SubsetError(f"no trials of model {model!r} in the logs; they hold {', '.join(models)}")
    info = catalogue_info()
    standard = {cid: c for cid, c in info.items() if catalogue().get(cid).prompt == "json"}
    accuracy = model_accuracy(trials, model)
    chosen, notes = choose_bases(accuracy, standard)
    if set(chosen) <= {"clean"}:
        raise SubsetError(f"model {model!r}: the logs hold no single-modality or joint cell to choose from")
    path = write_subset(model, chosen, prompts, run_dirs, accuracy)
    catalogue.cache_clear()  # the new file adds conditions
    subset = next(s for s in read_subsets() if s["path"] == path)
    return {
        "model": model,
        "cells": chosen,
        "accuracy": {cid: accuracy[cid] for cid in chosen.values()},
        "notes": notes,
        "path": path,
        "group": group_name(model),
        "tasks": task_names(subset, catalogue()),
    }
