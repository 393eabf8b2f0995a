"""Reading lmms-eval output folders of *wrapped* tasks (issue 27) into a trial table.

A wrapped task is an lmms-eval task run under an SCEval condition, named
``<base>__<condition id>__var<k>`` (``worldsense__single_noise_v50__var1``). lmms-eval writes, per
model folder, ``<date>_results.json`` (the base task's own aggregate per wrapped task, under
``results[<wrapped name>]["<metric>,none"]``) and ``<date>_samples_<wrapped name>.jsonl``: one
line per doc, holding every value the base ``process_results`` returned (the metric's per-doc
*items*) plus ``faultline_trial``, a :class:`~sceval_plugin.sceval_trial.WrappedTrial` entry.

:func:`read_wrapped_runs` returns a :class:`WrappedRuns`: the trial table (one row per doc of
each wrapped task and model), the items of each metric aligned with it, the aggregates
lmms-eval reported, and the unwrapped base task's aggregates when the same folders hold a run of
it (the report shows "base task vs clean": the effect of wrapping itself).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from faultline_eval.core.model_names import ModelNames
from faultline_eval.core.run_logs import ReportError, find_sample_files, results_for, sample_lines
from faultline_eval.core.trial import TrialEntryError
from sceval_plugin.sceval_trial import WRAPPED_TRIAL_KEY, WrappedTrial

__all__ = [
    "TRIAL_KEY",
    "WRAPPED_GLOB",
    "WrappedRuns",
    "wrapped_sample_files",
    "split_wrapped_name",
    "condition_cell",
    "option_count",
    "read_wrapped_runs",
]

#: The per-sample line's field holding the wrapped trial entry (Contract C of issue 27).
TRIAL_KEY = WRAPPED_TRIAL_KEY
#: The per-sample logs of wrapped tasks: ``<date>_samples_<base>__<condition>__var<k>.jsonl``.
WRAPPED_GLOB = "*_samples_*__*__var*.jsonl"
_WRAPPED_NAME = re.compile(r"^(?P<base>.+?)__(?P<condition>.+)__var(?P<variant>\d+)$")
#: Trial-table columns, in order.
COLUMNS = (
    "model",
    "task",
    "base_task",
    "condition_id",
    "variant",
    "doc_id",
    "sample_id",
    "unit",
    "score",
    "correct",
    "invalid",
    "not_applicable",
    "n_options",
    "target",
    "adapter",
    "seed_scheme",
)
#: An option line of a rendered prompt: ``A. text``, ``(A) text``, ``A) text``, ``A: text``.
_OPTION_LINE = re.compile(r"^\s*\(?([A-Z])(?:\)|\.|:)\s", re.M)


@dataclass(frozen=True)
class WrappedRuns:
    """What the wrapped logs under some folders hold.

    ``trials``: one row per (model, wrapped task, doc) with :data:`COLUMNS`. ``items``: per
    (model, wrapped task, metric), the metric's per-doc items in the order of that task's rows
    in ``trials`` (None where a doc's line has no value for the metric: MME logs each doc under
    one of its two metrics). ``values``: lmms-eval's aggregate per (model, task, base_task,
    condition_id, variant, metric), with ``higher_is_better`` as results.json states it.
    ``unwrapped``: the base task's own aggregate per (model, base_task, metric), when run.
    ``notes``: what was read around (repeated runs). ``logs``: the per-sample log read per
    (model, wrapped task), the latest of a task run twice (the viewer reads its lines).
    ``no_score``: (model, base_task, metric) that results.json reports with no value: the base
    aggregation returned none (air_bench's ``submission`` writes a submission file instead)."""

    trials: pd.DataFrame
    items: dict[tuple[str, str, str], list[Any]]
    values: pd.DataFrame
    unwrapped: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    logs: dict[tuple[str, str], Path] = field(default_factory=dict)
    no_score: frozenset[tuple[str, str, str]] = frozenset()


def wrapped_sample_files(run_dirs: Sequence[str | Path]) -> list[Path]:
    """Every wrapped task's per-sample log under ``run_dirs`` (empty: none; a folder that does not
    exist holds none: the reader that needs it says so)."""
    files: list[Path] = []
    for run in map(Path, run_dirs):
        if not run.exists():
            continue
        found = sorted(run.rglob(WRAPPED_GLOB)) if run.is_dir() else [run]
        files += [f for f in found if split_wrapped_name(_task_of(f)) is not None]
    return files


def _task_of(samples_file: Path) -> str:
    return samples_file.name.split("_samples_", 1)[1].removesuffix(".jsonl")


def split_wrapped_name(task: str) -> tuple[str, str, int] | None:
    """(base task, condition id, variant) of ``<base>__<condition>__var<k>``; None for another name."""
    m = _WRAPPED_NAME.match(task)
    return (m["base"], m["condition"], int(m["variant"])) if m else None


def condition_cell(base: str, condition_id: str) -> str:
    """The name of one condition of a base task over its variants, ``<base>__<condition>`` (the
    tag a user runs, ``worldsense__single_noise_v50``): the cell the report's trial links name and
    the viewer's page of those trials."""
    return f"{base}__{condition_id}"


def option_count(prompt: str) -> int | None:
    """How many lettered options (``A.``/``(A)``/``A)``/``A:`` at a line start, from A on in
    order) the prompt the model got lists; None when fewer than two. The trial entry carries no
    option count, so the audit's chance rate is read from what the model was shown."""
    letters = _OPTION_LINE.findall(prompt or "")
    count = 0
    for letter in letters:
        if letter == chr(ord("A") + count):
            count += 1
        elif letter == "A":  # a second list (an example in the instructions): start over
            count = 1
    return count if count >= 2 else None


@functools.cache
def _results(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: not a readable results JSON ({exc})") from None


def _metric_values(results: dict[str, Any], task: str, where: Path | None) -> dict[str, tuple[float, bool | None]]:
    """metric -> (aggregate, higher_is_better) of ``task`` in a results JSON (filter ``none``)."""
    found = results.get("results", {}).get(task)
    if found is None:
        raise ReportError(f"{where}: no results for task {task!r} (was the run interrupted before it finished?)")
    higher = results.get("higher_is_better", {}).get(task, {})
    out = {}
    for key, value in found.items():
        metric, _, filter_name = key.partition(",")
        if filter_name != "none" or metric.endswith("_stderr") or not isinstance(value, (int, float)):
            continue
        out[metric] = (float(value), higher.get(metric))
    return out


def _no_score_metrics(results: dict[str, Any], task: str) -> list[str]:
    """The metrics of ``task`` a results JSON reports with no value (filter ``none``): lmms-eval
    writes what the aggregation returned, null for one that returns nothing."""
    found = results.get("results", {}).get(task) or {}
    return [key.partition(",")[0] for key, value in found.items() if value is None and key.endswith(",none")]


def _read_log(
    path: Path, model: str, task: str, metrics: Sequence[str], *, error_rate: bool = False
) -> tuple[list[dict], dict[str, list]]:
    """The trial rows and per-metric items of one wrapped per-sample log. ``error_rate``: the task
    reports a metric where lower is better, so no trial is a right/wrong verdict (``correct``
    None, as :meth:`WrappedTrial.correct_of` writes it now; logs written before it said 1 for a WER of 1)."""
    rows: list[dict] = []
    items: dict[str, list] = {m: [] for m in metrics}
    base, condition, variant = split_wrapped_name(task) or ("", "", 0)
    for where, sample in sample_lines(path):
        entry = sample.get(TRIAL_KEY)
        if not isinstance(entry, dict):
            raise ReportError(f"{where}: no {TRIAL_KEY} entry; is {task} a task `faultline wrap` generated?")
        try:
            trial = WrappedTrial.from_json(entry, f"{where}: {TRIAL_KEY}")
        except TrialEntryError as exc:
            raise ReportError(str(exc)) from None
        if (trial.base_task, trial.condition_id, trial.variant) != (base, condition, variant):
            raise ReportError(
                f"{where}: the trial says {trial.base_task}/{trial.condition_id}/var{trial.variant}, "
                f"the file name {task}"
            )
        rows.append(
            {
                "model": model,
                "task": task,
                "base_task": trial.base_task,
                "condition_id": trial.condition_id,
                "variant": trial.variant,
                "doc_id": trial.doc_id,
                "sample_id": trial.sample_id,
                "unit": trial.unit,
                "score": trial.score,
                "correct": None if error_rate else trial.correct,
                "invalid": trial.invalid,
                "not_applicable": trial.not_applicable,
                "n_options": option_count(sample.get("input") if isinstance(sample.get("input"), str) else ""),
                "target": sample.get("target") if isinstance(sample.get("target"), str) else None,
                "adapter": trial.adapter,
                "seed_scheme": trial.seed_scheme,
            }
        )
        for metric in metrics:
            items[metric].append(sample.get(metric))
    return rows, items


#: The unwrapped base task run on the wrapped tasks' data (``faultline wrap`` writes it beside them).
UNWRAPPED_SUFFIX = "__unwrapped"


def _unwrapped(results_files: set[Path], bases: set[str], names: ModelNames) -> pd.DataFrame:
    """The base tasks' own aggregates in the same folders' results: ``<base>__unwrapped`` (the
    base on the wrapped tasks' data), else a run of ``<base>`` under its own name."""
    rows = []
    for path in sorted(results_files):
        results = _results(path)
        model = names.of(path)
        reported = set(results.get("results", {}))
        for base in sorted(bases):
            for task in (base, base + UNWRAPPED_SUFFIX):
                if task not in reported:
                    continue
                for metric, (value, _) in _metric_values(results, task, path).items():
                    rows.append(
                        {"model": model, "base_task": base, "metric": metric, "value": value, "file": str(path)}
                        | {"same_data": task != base}
                    )
    frame = pd.DataFrame(rows, columns=["model", "base_task", "metric", "value", "file", "same_data"])
    # the run on the wrapped tasks' own data wins over one under the base's name, then the latest file
    frame = frame.sort_values("same_data", kind="stable").drop(columns="same_data")
    return frame.drop_duplicates(["model", "base_task", "metric"], keep="last").reset_index(drop=True)


def read_wrapped_runs(run_dirs: Sequence[str | Path]) -> WrappedRuns:
    """The wrapped runs under ``run_dirs`` (see :class:`WrappedRuns`). A task run twice for one
    model (two dates) keeps its latest log, with a note; a log without its results JSON, a line
    without a trial entry or a trial that contradicts its file name is an error naming it."""
    files = wrapped_sample_files(run_dirs) or find_sample_files(
        run_dirs, pattern=WRAPPED_GLOB, benchmark="wrapped-task", tasks="`faultline wrap`"
    )
    names = ModelNames.under(run_dirs)
    latest: dict[tuple[str, str], Path] = {}
    notes: list[str] = []
    for path in files:  # sorted: a later date sorts later within a folder
        model = names.of(results_for(path), path.parent.name)
        key = (model, _task_of(path))
        if key in latest:
            notes.append(f"{key[1]} of {model} was run more than once: kept {path.name}, left out {latest[key].name}")
        latest[key] = path
    rows: list[dict] = []
    items: dict[tuple[str, str, str], list[Any]] = {}
    values = []
    no_score: set[tuple[str, str, str]] = set()
    for (model, task), path in sorted(latest.items()):
        results_file = results_for(path)
        if results_file is None:
            raise ReportError(f"{path}: no results JSON beside it ({path.name.split('_samples_')[0]}_results.json)")
        base, condition, variant = split_wrapped_name(task) or ("", "", 0)
        reported = _metric_values(_results(results_file), task, results_file)
        no_score |= {(model, base, metric) for metric in _no_score_metrics(_results(results_file), task)}
        for metric, (value, higher) in reported.items():
            values.append(
                {
                    "model": model,
                    "task": task,
                    "base_task": base,
                    "condition_id": condition,
                    "variant": variant,
                    "metric": metric,
                    "value": value,
                    "higher_is_better": higher,
                }
            )
        error_rate = any(higher is False for _, higher in reported.values())
        log_rows, log_items = _read_log(path, model, task, list(reported), error_rate=error_rate)
        rows += log_rows
        items.update({(model, task, metric): values_ for metric, values_ in log_items.items()})
    trials = pd.DataFrame(rows, columns=list(COLUMNS))
    bases = set(trials["base_task"])
    results_files = {r for f in files if (r := results_for(f)) is not None}
    results_files |= {p for run in map(Path, run_dirs) if run.is_dir() for p in run.rglob("*_results.json")}
    unwrapped = _unwrapped(results_files, bases, names)
    return WrappedRuns(trials, items, pd.DataFrame(values), unwrapped, notes, latest, frozenset(no_score))
