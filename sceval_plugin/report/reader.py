"""Reading lmms-eval output folders: results JSON and per-sample JSONL of SCEval tasks."""

from __future__ import annotations

import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from sceval_plugin.metrics.protocol import TRIAL_COLUMNS

SAMPLES_GLOB = "*_samples_sceval_*.jsonl"
_KEY = '"sceval_record": '


class ReportError(ValueError):
    """The report cannot be built from these folders; the message says why."""


def model_label(results_file: Path | None, fallback: str | None) -> str:
    """``model`` from the run's results JSON, plus its checkpoint when model_args name one."""
    if results_file is not None and results_file.is_file():
        config = json.loads(results_file.read_text()).get("config", {})
        model = config.get("model") or fallback or "unknown"
        args = config.get("model_args") or ""
        if isinstance(args, dict):
            args = ",".join(f"{k}={v}" for k, v in args.items())
        for part in str(args).split(","):
            key, _, value = part.partition("=")
            if key.strip() in ("pretrained", "model_version", "model", "model_name", "model_id") and value:
                return f"{model}:{value.strip()}"
        return str(model)
    return fallback or "unknown"


def _results_for(samples_file: Path) -> Path | None:
    prefix = samples_file.name.split("_samples_", 1)[0]
    candidate = samples_file.with_name(f"{prefix}_results.json")
    return candidate if candidate.is_file() else None


def _parse_file(path: str) -> tuple[str, list[tuple]]:
    decoder = json.JSONDecoder()
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            at = line.find(_KEY)
            try:
                record = decoder.raw_decode(line, at + len(_KEY))[0] if at >= 0 else json.loads(line)["sceval_record"]
            except (json.JSONDecodeError, KeyError) as exc:
                raise ReportError(f"{path}:{number}: not an SCEval per-sample record ({exc})") from None
            correct = record.get("correct")
            rows.append((record.get("model"), record["condition_id"], record["sample_id"], record["variant"],
                         np.nan if correct is None else float(correct), record.get("invalid"),
                         record.get("n_options") or 4, record.get("prompt_id"), record.get("dataset"),
                         record.get("parsed_answer_original_key")))
    return path, rows


def find_sample_files(run_dirs: Sequence[str | Path]) -> list[Path]:
    files: list[Path] = []
    for run in run_dirs:
        run = Path(run)
        if not run.exists():
            raise ReportError(f"{run}: no such folder")
        found = sorted(run.rglob(SAMPLES_GLOB)) if run.is_dir() else [run]
        if not found:
            raise ReportError(f"{run}: holds no SCEval per-sample logs ({SAMPLES_GLOB}); run lmms-eval on "
                              "sceval_* tasks with --log_samples --output_path")
        files += found
    return files


def read_runs(run_dirs: Sequence[str | Path], *, workers: int | None = None, progress: bool = True) -> tuple[pd.DataFrame, list[str]]:
    """The trial table of every SCEval per-sample log under ``run_dirs``, and notes (duplicates)."""
    files = find_sample_files(run_dirs)
    labels = {str(f): model_label(_results_for(f), None) for f in files}
    workers = workers or min(len(files), os.cpu_count() or 1)
    chunks: dict[str, list[tuple]] = {}
    bar = tqdm(total=len(files), desc="reading logs", unit="file", disable=not progress)
    if workers > 1 and len(files) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for path, rows in pool.map(_parse_file, map(str, files), chunksize=max(1, len(files) // (8 * workers))):
                chunks[path] = rows
                bar.update()
    else:
        for f in files:
            path, rows = _parse_file(str(f))
            chunks[path] = rows
            bar.update()
    bar.close()
    frames = []
    for order, f in enumerate(files):
        rows = chunks[str(f)]
        frame = pd.DataFrame(rows, columns=list(TRIAL_COLUMNS))
        label = labels[str(f)]
        if label != "unknown":
            frame["model"] = label
        frame["model"] = frame["model"].fillna("unknown")
        frame["_file"] = order
        frames.append(frame)
    trials = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(TRIAL_COLUMNS))
    notes = []
    key = ["model", "condition_id", "sample_id", "variant"]
    duplicated = trials.duplicated(key, keep="last")
    if duplicated.any():
        notes.append(f"{int(duplicated.sum())} repeated trial(s) (the same model, condition, sample and variant in "
                     "several logs): kept the one from the latest log")
        trials = trials[~duplicated]
    trials = trials.drop(columns="_file").reset_index(drop=True)
    for column in ("model", "condition_id", "sample_id", "prompt_id", "dataset"):
        trials[column] = trials[column].astype("category")
    return trials, notes
