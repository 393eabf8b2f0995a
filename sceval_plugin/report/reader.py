"""Reading lmms-eval output folders: results JSON and per-sample JSONL of SCEval tasks."""

from __future__ import annotations

import functools
import json
import os
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from sceval_plugin.metrics.protocol import TRIAL_COLUMNS

SAMPLES_GLOB = "*_samples_sceval_*.jsonl"
#: The per-sample line's field holding the full trial record (as c3po's reader has it).
RECORD_KEY = "sceval_record"
#: How that field starts in a line lmms-eval wrote: the record is decoded from there, not the whole line.
RECORD_MARKER = f'"{RECORD_KEY}": '


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


def results_for(samples_file: Path) -> Path | None:
    """The ``<timestamp>_results.json`` written with a ``<timestamp>_samples_<task>.jsonl``, if any."""
    prefix = samples_file.name.split("_samples_", 1)[0]
    candidate = samples_file.with_name(f"{prefix}_results.json")
    return candidate if candidate.is_file() else None


# The small trial entry our process_results writes into every line (see tasks/sceval_task.py):
# the sample id, then the rest ("v", "c", "i", "a", "n", then optional one-letter fields: the
# stated confidence "f", the item's source "o", "u", why a control or probe did not apply (the trial
# is unscored), and a probe's donor "d", the key following the donor's gold "r" and the donor-to-item
# key map "m"), whose few distinct values are decoded once.
_TRIAL_KEY = b'"sceval_accuracy": {"s": '
_STRING = rb'"(?:[^"\\]|\\.)*"'
_TRIAL = re.compile(rb'(' + _STRING + rb'), ("v": \d+, "c": (?:null|0|1), "i": (?:null|"[a-z_]+"), '
                    rb'"a": (?:null|' + _STRING + rb'), "n": \d+(?:, "[a-z]": (?:null|' + _STRING + rb'))*)\}')
#: Record fields with one value per log (one task run), read from its first and last lines.
PER_LOG = ("condition_id", "prompt_id", "dataset", "seed_scheme", "probe_readings")
#: Trial-table columns beyond TRIAL_COLUMNS, read when the logs carry them (missing in older logs).
EXTRA_COLUMNS = ("confidence", "source", "donor", "follows_donor", "donor_key_map", "seed_scheme", "cohort",
                 "probe_readings")


def _trial_tokens(data: bytes) -> tuple[list, list] | None:
    """Per line, the raw sample-id token and trial-fields token; None unless every line has one.
    Only the start of each line is searched: the rest is skipped with a newline search."""
    samples, signatures = [], []
    find, match, skip = data.find, _TRIAL.match, len(_TRIAL_KEY)
    pos, end = 0, len(data)
    while pos < end:
        at = find(_TRIAL_KEY, pos)
        m = match(data, at + skip) if at >= 0 else None
        if m is None or find(b"\n", pos, at) >= 0:  # this line has no trial entry
            return None
        samples.append(m.group(1)), signatures.append(m.group(2))
        pos = find(b"\n", m.end()) + 1 or end
    return samples, signatures


def _signature(record: dict) -> bytes:
    """A full record's trial fields in the trial entry's own form (for logs without one)."""
    return json.dumps({"v": record["variant"], "c": record.get("correct"), "i": record.get("invalid"),
                       "a": record.get("parsed_answer_original_key"), "n": record.get("n_options") or 4,
                       "f": record.get("confidence"), "o": record.get("source"),
                       "u": record.get("control_not_applicable") or (record.get("probe") or {}).get("not_applicable"),
                       "d": (record.get("probe") or {}).get("donor"),
                       "r": (record.get("probe") or {}).get("follows_donor_key"),
                       "m": (record.get("probe") or {}).get("donor_key_map"),
                       "k": record.get("cohort") if record.get("cohort") == "stress_only" else None})[1:-1].encode()


def read_record(line: str, where: str) -> dict:
    """The full trial record of one per-sample line (decoded from :data:`RECORD_MARKER` on, so
    the rest of a long line is not parsed); ``where`` names the line in the error."""
    at = line.find(RECORD_MARKER)
    try:
        return json.JSONDecoder().raw_decode(line, at + len(RECORD_MARKER))[0] if at >= 0 else json.loads(line)[RECORD_KEY]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ReportError(f"{where}: not an SCEval per-sample record ({exc})") from None


def _parse_file(path: str) -> tuple[str, dict, tuple]:
    """One per-sample log: its constants (model and :data:`PER_LOG`: one value per task run, from
    the first and last records) and, per line, the sample id and trial fields as raw JSON tokens,
    found by one regex pass over the file (the records themselves are not decoded)."""
    data = Path(path).read_bytes()

    def record(line: bytes, where: str) -> dict:
        return read_record(line.decode("utf-8"), f"{path}:{where}")

    end = len(data)  # slice out the first and last lines only: the file can be megabytes
    while data[end - 1: end] in (b"\n", b"\r", b" "):
        end -= 1
    if end == 0:
        return path, {}, ((np.zeros(0, np.int32), []), (np.zeros(0, np.int32), []))
    first_end = data.find(b"\n", 0, end)
    first = record(data[: first_end if first_end >= 0 else end], "first line")
    last = record(data[data.rfind(b"\n", 0, end) + 1: end], "last line")
    for name in PER_LOG:
        if first.get(name) != last.get(name):
            raise ReportError(f"{path}: {name} changes within one log ({first.get(name)!r} vs {last.get(name)!r})")
    constants = {k: first.get(k) for k in ("model", *PER_LOG)}
    tokens = _trial_tokens(data)
    if tokens is None:  # an older or hand-made log: decode every record
        records = [record(line, f"line {i + 1}") for i, line in enumerate(data.split(b"\n")) if line.strip()]
        tokens = ([json.dumps(r["sample_id"]).encode() for r in records], [_signature(r) for r in records])
    return path, constants, (_factorize(tokens[0]), _factorize(tokens[1]))


def _factorize(tokens) -> tuple[np.ndarray, list]:
    """(codes, distinct tokens): a file's few hundred distinct tokens travel, not its lines."""
    index: dict = {}
    codes = np.fromiter((index.setdefault(t, len(index)) for t in tokens), dtype=np.int32, count=len(tokens))
    return codes, list(index)


def _merge(parts: list[tuple[np.ndarray, list]]) -> tuple[np.ndarray, list]:
    """Concatenate per-file factorisations into one (codes, distinct tokens)."""
    index: dict = {}
    codes = []
    for local_codes, local_uniques in parts:
        remap = np.array([index.setdefault(u, len(index)) for u in local_uniques], dtype=np.int32)
        codes.append(remap[local_codes] if len(remap) else local_codes)
    return np.concatenate(codes), list(index)


def find_sample_files(run_dirs: Sequence[str | Path], *, pattern: str = SAMPLES_GLOB, benchmark: str = "SCEval",
                      tasks: str = "sceval_*") -> list[Path]:
    """Every per-sample log matching ``pattern`` under each folder (a file is taken as given)."""
    files: list[Path] = []
    for run in run_dirs:
        run = Path(run)
        if not run.exists():
            raise ReportError(f"{run}: no such folder")
        found = sorted(run.rglob(pattern)) if run.is_dir() else [run]
        if not found:
            raise ReportError(f"{run}: holds no {benchmark} per-sample logs ({pattern}); run lmms-eval on "
                              f"{tasks} tasks with --log_samples --output_path")
        files += found
    return files


def read_runs(run_dirs: Sequence[str | Path], *, workers: int | None = None, progress: bool = True) -> tuple[pd.DataFrame, list[str]]:
    """The trial table of every SCEval per-sample log under ``run_dirs``, and notes (duplicates)."""
    files = find_sample_files(run_dirs)
    label_of = functools.lru_cache(maxsize=None)(lambda results: model_label(results, None))
    labels = {str(f): label_of(results_for(f)) for f in files}
    workers = workers or min(len(files), os.cpu_count() or 1)
    parsed: dict[str, tuple[dict, tuple]] = {}
    bar = tqdm(total=len(files), desc="reading logs", unit="file", disable=not progress)
    if workers > 1 and len(files) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for path, constants, columns in pool.map(_parse_file, map(str, files),
                                                     chunksize=max(1, len(files) // (8 * workers))):
                parsed[path] = (constants, columns)
                bar.update()
    else:
        for f in files:
            path, constants, columns = _parse_file(str(f))
            parsed[path] = (constants, columns)
            bar.update()
    bar.close()
    kept = [(parsed[str(f)], labels[str(f)]) for f in files if len(parsed[str(f)][1][0][0])]
    if not kept:
        raise ReportError("the per-sample logs are empty")
    counts = np.array([len(samples[0]) for (_, (samples, _)), _ in kept])
    per_file = {
        "model": [label if label != "unknown" else (constants.get("model") or "unknown")
                  for (constants, _), label in kept],
        **{name: [constants.get(name) for (constants, _), _ in kept] for name in PER_LOG},
    }
    data = {}
    for name, values in per_file.items():  # one value per file: categorical codes repeated per line
        categories = list(dict.fromkeys(v for v in values if v is not None))
        file_codes = np.array([categories.index(v) if v is not None else -1 for v in values], dtype=np.int32)
        data[name] = pd.Categorical.from_codes(np.repeat(file_codes, counts), categories=categories)
    codes, uniques = _merge([samples for (_, (samples, _)), _ in kept])
    data["sample_id"] = pd.Categorical.from_codes(codes, categories=[json.loads(u) for u in uniques])
    codes, uniques = _merge([signatures for (_, (_, signatures)), _ in kept])
    fields = [json.loads(b"{" + u + b"}") for u in uniques]
    data["variant"] = np.array([f["v"] for f in fields], dtype=np.int16)[codes]
    data["correct"] = np.array([np.nan if f["c"] is None else float(f["c"]) for f in fields])[codes]
    data["n_options"] = np.array([f["n"] for f in fields], dtype=np.int8)[codes]
    for name, key in (("invalid", "i"), ("answer", "a"), ("not_applicable", "u"), ("confidence", "f"),
                      ("source", "o"), ("donor", "d"), ("follows_donor", "r"), ("donor_key_map", "m"),
                      ("cohort", "k")):
        values = [f.get(key) for f in fields]
        categories = sorted({v for v in values if v is not None})
        lookup = np.array([categories.index(v) if v is not None else -1 for v in values], dtype=np.int64)
        data[name] = pd.Categorical.from_codes(lookup[codes], categories=categories)
    trials = pd.DataFrame(data)[list(TRIAL_COLUMNS) + list(EXTRA_COLUMNS)]
    notes = []
    key = ["model", "condition_id", "sample_id", "variant"]
    duplicated = trials.duplicated(key, keep="last")  # files are in path order: latest log last
    if duplicated.any():
        notes.append(f"{int(duplicated.sum())} repeated trial(s) (the same model, condition, sample and variant in "
                     "several logs): kept the one from the latest log")
        trials = trials[~duplicated].reset_index(drop=True)
    return trials, notes
