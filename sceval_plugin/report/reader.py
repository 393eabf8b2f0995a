"""Reading lmms-eval output folders of SCEval tasks into one trial table.

The folders are found by :mod:`faultline_eval.core.run_logs`, their models named by
:mod:`faultline_eval.core.model_names`. Each
per-sample line carries the trial entry (:class:`sceval_plugin.sceval_trial.SCEvalTrial`, schema
2, or schema 1's single-letter keys) under ``sceval_accuracy``, and the full record under
``sceval_record``. A log holds hundreds of thousands of lines with few distinct entries, so a
file is read as bytes: one regex pass finds each line's entry (the records are not decoded),
and each distinct entry is decoded once. A log without entries (older or hand-made) is read
through its records.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from faultline_eval.core.model_names import ModelNames
from faultline_eval.core.run_logs import ReportError, find_sample_files, record_from_line, results_for
from faultline_eval.core.trial import SCHEMA_VERSION
from sceval_plugin.metrics.protocol import TRIAL_COLUMNS
from sceval_plugin.sceval_trial import SCEvalTrial

__all__ = [
    "SAMPLES_GLOB",
    "RECORD_KEY",
    "ENTRY_KEY",
    "ReportError",
    "sample_files",
    "read_record",
    "read_runs",
    "in_processes",
]

T = TypeVar("T")

SAMPLES_GLOB = "*_samples_sceval_*.jsonl"
#: The per-sample line's field holding the full trial record (as c3po's reader has it).
RECORD_KEY = "sceval_record"
#: The per-sample line's field holding the trial entry (every variant metric holds the same).
ENTRY_KEY = "sceval_accuracy"
#: Record fields with one value per log (one task run), read from its first and last lines.
PER_LOG = ("condition_id", "prompt_id", "dataset", "seed_scheme", "probe_readings")
#: Trial-table columns beyond TRIAL_COLUMNS, read when the logs carry them (missing in older logs).
EXTRA_COLUMNS = (
    "confidence",
    "source",
    "donor",
    "follows_donor",
    "donor_key_map",
    "seed_scheme",
    "cohort",
    "probe_readings",
)
#: Trial-table column -> trial field, for the entry's fields with few distinct values.
ENTRY_COLUMNS = {
    "invalid": "invalid",
    "answer": "answer_key",
    "not_applicable": "not_applicable",
    "confidence": "confidence",
    "source": "source",
    "donor": "donor",
    "follows_donor": "follows_donor_key",
    "donor_key_map": "donor_key_map",
    "cohort": "cohort",
}

_ENTRY_AT = f'"{ENTRY_KEY}": '.encode()
#: A JSON string token, "unrolled" (runs of plain bytes, then one escape at a time): the same
#: tokens as "(?:[^"\\]|\\.)*" at a fraction of the regex engine's steps per byte.
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
_FIELD = rb'"[a-z_]+": (?:null|true|false|-?\d+|' + _STRING + rb")"
#: A flat trial entry of either schema: (schema version or None for 1, sample id token, other fields).
_ENTRY = re.compile(
    rb'\{(?:"schema_version": (\d+), "sample_id"|"s"): (' + _STRING + rb"), (" + _FIELD + rb"(?:, " + _FIELD + rb")*)\}"
)
#: The fields after an entry's sample id, as :data:`_ENTRY` matches them.
_FIELDS = re.compile(_FIELD + rb"(?:, " + _FIELD + rb")*")
#: How an entry of this schema begins, up to its sample id's opening quote.
_COMMON_ENTRY = f'{{"schema_version": {SCHEMA_VERSION}, "sample_id": "'.encode()
_COMMON_VERSION = str(SCHEMA_VERSION).encode()


def sample_files(run_dirs: Sequence[str | Path]) -> list[Path]:
    """Every SCEval per-sample log under ``run_dirs``."""
    return find_sample_files(run_dirs, pattern=SAMPLES_GLOB, benchmark="SCEval", tasks="sceval_*")


def read_record(line: str, where: str) -> dict:
    """The full trial record of one per-sample line; ``where`` names the line in the error."""
    return record_from_line(line, RECORD_KEY, where)


# --- one file -----------------------------------------------------------------------------------


def _common_entry(data: bytes, start: int, checked: dict[bytes, bytes]) -> tuple[bytes, bytes, int] | None:
    """The entry at ``start`` when it is the common one (this schema, a sample id without
    escapes), cut out by byte searches: (sample-id token, signature, end), the same tokens as
    :data:`_ENTRY`'s; None for any other entry. Its fields are checked by :data:`_FIELDS` once
    per distinct value (``checked``: a log repeats a few hundred), not per line."""
    if not data.startswith(_COMMON_ENTRY, start):
        return None
    opening = start + len(_COMMON_ENTRY) - 1  # the sample id's quotes
    closing = data.find(b'"', opening + 1)
    if closing < 0 or not data.startswith(b", ", closing + 1) or data.find(b"\\", opening, closing) >= 0:
        return None
    brace = data.find(b"}", closing)
    fields = data[closing + 3 : brace]
    signature = checked.get(fields)
    if signature is None and brace > 0 and _FIELDS.fullmatch(fields):
        signature = checked[fields] = _COMMON_VERSION + b"|" + fields
    return None if signature is None else (data[opening : closing + 1], signature, brace + 1)


def _entry_tokens(data: bytes) -> tuple[list, list] | None:
    """Per line, the raw sample-id token and the rest of the entry (its schema version first);
    None unless every line has an entry. Only each entry is read (:func:`_common_entry`, else
    :data:`_ENTRY`): the rest of a line is skipped with a newline search."""
    samples, signatures = [], []
    find, match, skip = data.find, _ENTRY.match, len(_ENTRY_AT)
    checked: dict[bytes, bytes] = {}
    pos, end = 0, len(data)
    while pos < end:
        at = find(_ENTRY_AT, pos)
        if at < 0 or find(b"\n", pos, at) >= 0:  # this line has no trial entry
            return None
        common = _common_entry(data, at + skip, checked)
        if common is None:
            m = match(data, at + skip)
            if m is None:
                return None
            version, sample, fields = m.groups()
            common = (sample, (version or b"1") + b"|" + fields, m.end())
        samples.append(common[0]), signatures.append(common[1])
        pos = find(b"\n", common[2]) + 1 or end
    return samples, signatures


def _record_tokens(records: Iterable[dict]) -> tuple[list, list]:
    """The same tokens from full records (a log without trial entries)."""
    samples, signatures = [], []
    for record in records:
        entry = SCEvalTrial.from_record(record).to_json()
        samples.append(json.dumps(entry.pop("sample_id")).encode())
        del entry["schema_version"]
        signatures.append(f"{SCHEMA_VERSION}|".encode() + json.dumps(entry)[1:-1].encode())
    return samples, signatures


def _decode_signature(token: bytes) -> SCEvalTrial:
    """The trial of one distinct entry token (its sample id left empty)."""
    version, _, fields = token.partition(b"|")
    entry = json.loads(b"{" + fields + b"}")
    if version == b"1":
        entry["s"] = ""
    else:
        entry.update(schema_version=int(version), sample_id="")
    return SCEvalTrial.from_json(entry)


def _log_constants(path: str, data: bytes, end: int) -> dict:
    """The model and :data:`PER_LOG` of a log, from its first and last records (which must agree)."""
    first_end = data.find(b"\n", 0, end)
    first = read_record(data[: first_end if first_end >= 0 else end].decode("utf-8"), f"{path}:first line")
    last = read_record(data[data.rfind(b"\n", 0, end) + 1 : end].decode("utf-8"), f"{path}:last line")
    for name in PER_LOG:
        if first.get(name) != last.get(name):
            raise ReportError(f"{path}: {name} changes within one log ({first.get(name)!r} vs {last.get(name)!r})")
    return {k: first.get(k) for k in ("model", *PER_LOG)}


def _parse_file(path: str) -> tuple[str, dict, tuple]:
    """One per-sample log: its constants (:func:`_log_constants`) and, per line, the sample id
    and the rest of the trial entry as raw tokens, factorised (codes, distinct tokens)."""
    data = Path(path).read_bytes()
    end = len(data)  # only the first and last lines are decoded: the file can be megabytes (not copied to strip it)
    while end and data[end - 1] in b"\n\r ":
        end -= 1
    if end == 0:
        return path, {}, ((np.zeros(0, np.int32), []), (np.zeros(0, np.int32), []))
    constants = _log_constants(path, data, end)
    tokens = _entry_tokens(data)
    if tokens is None:  # an older or hand-made log: decode every record
        tokens = _record_tokens(
            read_record(line.decode("utf-8"), f"{path}:line {i + 1}")
            for i, line in enumerate(data.split(b"\n"))
            if line.strip()
        )
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


# --- the trial table ----------------------------------------------------------------------------


def in_processes(fn: Callable[[str], T], paths: Sequence[str], workers: int | None = None) -> Iterator[T]:
    """``fn`` of every path, in order: in worker processes when there are several (each log is
    parsed on its own, so the cores share the work), in this one otherwise."""
    workers = workers or min(len(paths), os.cpu_count() or 1)
    if workers < 2 or len(paths) < 2:
        yield from map(fn, paths)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(fn, paths, chunksize=max(1, len(paths) // (8 * workers)))


def _parse_files(files: list[Path], workers: int | None, progress: bool) -> dict[str, tuple[dict, tuple]]:
    """:func:`_parse_file` of every file, in worker processes when there are several."""
    parsed = {}
    with tqdm(total=len(files), desc="reading logs", unit="file", disable=not progress) as bar:
        for path, constants, columns in in_processes(_parse_file, [str(f) for f in files], workers):
            parsed[path] = (constants, columns)
            bar.update()
    return parsed


def _categorical(values: list, codes: np.ndarray, categories: list | None = None) -> pd.Categorical:
    """``values[codes]`` as a categorical (None missing); categories sorted unless given."""
    categories = sorted({v for v in values if v is not None}) if categories is None else categories
    lookup = np.array([categories.index(v) if v is not None else -1 for v in values], dtype=np.int64)
    return pd.Categorical.from_codes(lookup[codes], categories=categories)


def _log_columns(kept: list[tuple[dict, str]], counts: np.ndarray) -> dict[str, pd.Categorical]:
    """The per-log columns (model and :data:`PER_LOG`), each file's value repeated per line."""
    per_file = {
        "model": [label if label != "unknown" else (constants.get("model") or "unknown") for constants, label in kept],
        **{name: [constants.get(name) for constants, _ in kept] for name in PER_LOG},
    }
    file_codes = np.repeat(np.arange(len(kept)), counts)
    return {
        name: _categorical(values, file_codes, list(dict.fromkeys(v for v in values if v is not None)))
        for name, values in per_file.items()
    }


def _entry_columns(codes: np.ndarray, tokens: list[bytes]) -> dict[str, object]:
    """The trial columns of the entries, each distinct entry decoded once."""
    trials = [_decode_signature(t) for t in tokens]
    columns: dict[str, object] = {
        "variant": np.array([t.variant for t in trials], dtype=np.int16)[codes],
        "correct": np.array([np.nan if t.correct is None else float(t.correct) for t in trials])[codes],
        "n_options": np.array([t.n_options for t in trials], dtype=np.int8)[codes],
    }
    for column, field in ENTRY_COLUMNS.items():
        columns[column] = _categorical([getattr(t, field) for t in trials], codes)
    return columns


def _latest_only(trials: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The table without repeated trials (files are in path order: the latest log's kept), and a note."""
    duplicated = trials.duplicated(["model", "condition_id", "sample_id", "variant"], keep="last")
    if not duplicated.any():
        return trials, []
    return trials[~duplicated].reset_index(drop=True), [
        f"{int(duplicated.sum())} repeated trial(s) (the same model, condition, sample and variant in several logs): "
        "kept the one from the latest log"
    ]


def read_runs(
    run_dirs: Sequence[str | Path], *, workers: int | None = None, progress: bool = True
) -> tuple[pd.DataFrame, list[str]]:
    """The trial table of every SCEval per-sample log under ``run_dirs`` (columns
    :data:`~sceval_plugin.metrics.protocol.TRIAL_COLUMNS` and :data:`EXTRA_COLUMNS`), and notes
    (repeated trials). Logs read again unchanged in the same process (``sceval report --html``:
    the report, then its site) are not parsed again: the table comes from :data:`_last_read`, copied."""
    files = sample_files(run_dirs)
    names = ModelNames.under(run_dirs)
    key = (_identity(files), tuple(sorted(names.names.items())))
    if key not in _last_read:
        _last_read.clear()  # the last table only: a report and its site read the same logs one after the other
        _last_read[key] = _read_files(files, names, workers, progress)
    trials, notes = _last_read[key]
    return trials.copy(), list(notes)


#: The last trial table :func:`read_runs` read, by :func:`_identity` of its logs and their models' names.
_last_read: dict[tuple, tuple[pd.DataFrame, list[str]]] = {}


def _identity(files: list[Path]) -> tuple:
    """The logs and the results files that label their models, as they are now (path, size, time)."""
    results = sorted({str(r) for f in files if (r := results_for(f)) is not None})
    return tuple((p, (st := os.stat(p)).st_size, st.st_mtime_ns) for p in [*map(str, files), *results])


def _read_files(
    files: list[Path], names: ModelNames, workers: int | None, progress: bool
) -> tuple[pd.DataFrame, list[str]]:
    """:func:`read_runs` of the logs ``files``, their models named by ``names``."""
    parsed = _parse_files(files, workers, progress)
    kept = [(parsed[str(f)], names.of(results_for(f))) for f in files if len(parsed[str(f)][1][0][0])]
    if not kept:
        raise ReportError("the per-sample logs are empty")
    counts = np.array([len(samples[0]) for (_, (samples, _)), _ in kept])
    data = _log_columns([(constants, label) for (constants, _), label in kept], counts)
    codes, uniques = _merge([samples for (_, (samples, _)), _ in kept])
    data["sample_id"] = pd.Categorical.from_codes(codes, categories=[json.loads(u) for u in uniques])
    data.update(_entry_columns(*_merge([signatures for (_, (_, signatures)), _ in kept])))
    return _latest_only(pd.DataFrame(data)[list(TRIAL_COLUMNS) + list(EXTRA_COLUMNS)])
