"""Reading lmms-eval output folders of C3PO tasks into one trial table.

An output folder (``lmms-eval eval --tasks c3po_all --log_samples --output_path OUT/``) holds
``<timestamp>_results.json`` and one ``<timestamp>_samples_<task>.jsonl`` per task, possibly under
a model subfolder (found and labelled by :mod:`faultline_eval.core.run_logs`). Each JSONL line
carries our metric values: ``c3po_accuracy`` is the trial entry
(:class:`c3po_plugin.c3po_trial.C3POTrial`, schema 2, or schema 1's single-letter keys), and
``c3po_record`` the full record, which lmms-eval may log as a Python ``repr`` string.

Trial identity: (model, folder, sample, run index), the folder being the one that holds the
samples file. The same trial in two task files of one folder (``c3po_all`` and ``c3po_ic_t1``
logged together) is kept once; different folders of one model are repeated runs and all count.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from c3po_plugin.c3po_trial import C3POTrial
from c3po_plugin.templates import registry
from faultline_eval.core.identity import fingerprint_of
from faultline_eval.core.model_names import ModelNames
from faultline_eval.core.run_logs import (
    ReportError,
    find_sample_files,
    parse_record,
    results_for,
    sample_lines,
    trial_from_line,
)

SAMPLES_GLOB = "*_samples_c3po_*.jsonl"
ENTRY_KEY = "c3po_accuracy"
RECORD_KEY = "c3po_record"
#: Columns beyond :data:`c3po_plugin.metrics.TRIAL_COLUMNS`: provenance and what re-grading needs.
EXTRA_COLUMNS = (
    "model_name",
    "folder",
    "task",
    "prompt_id",
    "dataset",
    "judge_id",
    "prediction",
    "distractors",
    "question",
    "gold",
    "context",
    "human_answer",
)
TRIAL_KEY = ["model", "folder", "sample_id", "run"]


def sample_files(run_dirs: Sequence[str | Path]) -> list[Path]:
    """Every C3PO per-sample log under ``run_dirs``."""
    return find_sample_files(run_dirs, pattern=SAMPLES_GLOB, benchmark="C3PO", tasks="c3po_*")


def _category_tier(template_id: str, record: dict) -> tuple[str, int]:
    """From the installed registry; the record's own values for templates not installed here."""
    if template_id in registry():
        t = registry().get(template_id)
        return t.category, t.tier
    return str(record.get("category")), int(record.get("tier") or 0)


def _number(value: int | None) -> float:
    return np.nan if value is None else float(value)


def trial_row(line: dict, where: str, model: str, folder: str, task: str) -> dict:
    """One trial from one per-sample line: metrics from the entry, the rest from the record."""
    trial = trial_from_line(line, ENTRY_KEY, C3POTrial, where)
    record = parse_record(line.get(RECORD_KEY, {}), RECORD_KEY, where)
    category, tier = _category_tier(trial.template_id, record)
    return {
        "model": model,
        "sample_id": trial.sample_id,
        "template_id": trial.template_id,
        "category": category,
        "tier": tier,
        "run": int(trial.variant),
        "correct": _number(trial.correct),
        "invalid": trial.invalid,
        "exact": bool(trial.exact_match),
        "judged": bool(trial.judge_decided),
        "judge_error": bool(trial.judge_error),
        "failure_mode": trial.failure_mode,
        "human_correct": _number(trial.human_correct),
        "difficulty": record.get("difficulty"),
        "model_name": record.get("model"),
        "folder": folder,
        "task": task,
        "prompt_id": record.get("prompt_id"),
        "dataset": record.get("dataset"),
        "judge_id": record.get("judge_id"),
        "prediction": record.get("prediction"),
        "distractors": record.get("distractors") or {},
        "question": record.get("question"),
        "gold": record.get("gold"),
        "context": record.get("context") or "",
        "human_answer": record.get("human_answer"),
    }


def read_file(path: Path, names: ModelNames) -> list[dict]:
    """Every trial of one samples file, labelled with its model's name among ``names`` (from the
    results JSON; the record's model when there is none)."""
    task = path.name.split("_samples_", 1)[-1].removesuffix(".jsonl")
    rows: list[dict] = []
    label = None
    for where, line in sample_lines(path):
        if label is None:
            record = parse_record(line.get(RECORD_KEY, {}), RECORD_KEY, where)
            label = names.of(results_for(path), record.get("model"))
        rows.append(trial_row(line, where, label, str(path.parent), task))
    return rows


def check_fingerprints(trials: pd.DataFrame) -> None:
    """Refuse one model whose logs differ in prompt id or dataset fingerprint: its runs would not
    be repeated runs of one evaluation. The message names the values and a folder of each."""
    trials = trials.assign(fingerprint=trials["dataset"].map(fingerprint_of, na_action="ignore"))
    for column in ("prompt_id", "fingerprint"):  # the dataset by content, wherever each run found it
        seen = trials.dropna(subset=[column]).groupby(["model", column], sort=True)["folder"].first()
        for model, group in seen.groupby(level=0):
            if len(group) > 1:
                values = "; ".join(f"{value!r} (in {folder})" for (_, value), folder in group.items())
                raise ReportError(
                    f"model {model!r}: its logs mix {column} values {values}; report them separately "
                    "or re-run them with one prompt and dataset"
                )


def read_runs(run_dirs: Sequence[str | Path]) -> tuple[pd.DataFrame, list[str]]:
    """The trial table of every C3PO per-sample log under ``run_dirs`` (one row per trial,
    duplicates across task files removed) and notes on what was dropped."""
    files = sample_files(run_dirs)
    names = ModelNames.under(run_dirs)
    rows = [row for f in files for row in read_file(f, names)]
    if not rows:
        raise ReportError("the per-sample logs are empty")
    trials = pd.DataFrame(rows)
    check_fingerprints(trials)
    notes = []
    duplicated = trials.duplicated(TRIAL_KEY, keep="last")
    if duplicated.any():
        notes.append(
            f"{int(duplicated.sum())} repeated trial(s) (the same model, folder, sample and run in several "
            "task logs): kept one each"
        )
        trials = trials[~duplicated].reset_index(drop=True)
    return trials, notes
