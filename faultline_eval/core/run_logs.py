"""Reading lmms-eval output folders, whichever benchmark wrote them.

An output folder (``lmms-eval eval ... --log_samples --output_path OUT/``) holds
``<timestamp>_results.json`` and one ``<timestamp>_samples_<task>.jsonl`` per task, possibly
under a model subfolder. Each JSONL line is one document: lmms-eval's own fields, every metric
value the task's ``process_results`` returned (a trial entry, :mod:`faultline_eval.core.trial`,
for the variant metrics) and the task's full record (``sceval_record``, ``c3po_record``), which
lmms-eval writes as a JSON object or, for some values, as a Python ``repr`` string.

This module finds the logs and decodes one line's record or trial entry; each benchmark's report
reader turns them into its trial table, its models named by :mod:`faultline_eval.core.model_names`.
"""

from __future__ import annotations

import ast
import json
import warnings
from collections.abc import Iterator, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from faultline_eval.core.store import write_atomic
from faultline_eval.core.trial import T, TrialEntryError

__all__ = [
    "CHECKPOINT_ARGS",
    "ReportError",
    "model_label",
    "results_for",
    "run_info_for",
    "versions_for",
    "write_run_info",
    "VERSIONED_PACKAGES",
    "find_sample_files",
    "record_from_line",
    "sample_lines",
    "parse_record",
    "trial_from_line",
]


#: Model arguments naming the checkpoint that a model's name adds (the first one given).
CHECKPOINT_ARGS = ("pretrained", "model_version", "model", "model_name", "model_id")


class ReportError(ValueError):
    """The report cannot be built from these folders; the message says why."""


def model_label(results_file: Path | None, fallback: str | None) -> str:
    """Deprecated since 0.3 (0.2's name of a run's model, kept for plugins that import it): use
    :class:`faultline_eval.core.model_names.ModelNames`, which also tells apart runs of one
    ``--model`` that differ in another argument, and reads ``label=``. This is 0.2's reading:
    ``model`` from the run's results JSON, plus its checkpoint when model_args name one."""
    warnings.warn(
        "faultline_eval.core.run_logs.model_label is deprecated; use "
        "faultline_eval.core.model_names.ModelNames(results_files).of(results_file, fallback)",
        DeprecationWarning,
        stacklevel=2,
    )
    if results_file is None or not results_file.is_file():
        return fallback or "unknown"
    config = json.loads(results_file.read_text()).get("config", {})
    model = config.get("model") or fallback or "unknown"
    args = config.get("model_args") or ""
    if isinstance(args, dict):
        args = ",".join(f"{k}={v}" for k, v in args.items())
    for part in str(args).split(","):
        key, _, value = part.partition("=")
        if key.strip() in CHECKPOINT_ARGS and value:
            return f"{model}:{value.strip()}"
    return str(model)


def results_for(samples_file: Path) -> Path | None:
    """The ``<timestamp>_results.json`` written with a ``<timestamp>_samples_<task>.jsonl``, if any."""
    prefix = samples_file.name.split("_samples_", 1)[0]
    candidate = samples_file.with_name(f"{prefix}_results.json")
    return candidate if candidate.is_file() else None


#: The packages whose versions each run records beside its results JSON (lmms-eval's results name only its own).
#: The file a budgeted run (``faultline-eval --budget``) keeps beside its round folders: JSON with
#: ``complete`` (every trial of its cells has run). Reports refuse logs under it while it is partial.
BUDGET_MARKER = "budgeted_run.json"

VERSIONED_PACKAGES = ("faultline-eval", "lmms-eval", "torch", "torchvision", "transformers")


def run_info_for(results_file: Path) -> Path:
    """The ``<timestamp>_run_info.json`` beside a ``<timestamp>_results.json`` (:func:`write_run_info`)."""
    return results_file.with_name(results_file.name.replace("_results.json", "_run_info.json"))


def versions_for(results_file: Path) -> Path:
    """The ``<timestamp>_versions.json`` that ``faultline-eval`` wrote before ``_run_info.json``
    held the versions (read by the viewer for older runs; no longer written)."""
    return results_file.with_name(results_file.name.replace("_results.json", "_versions.json"))


def write_run_info(results_file: Path, requests: dict[str, dict[str, Any]]) -> Path:
    """Write :func:`run_info_for` ``results_file``: ``versions``, the installed versions of
    :data:`VERSIONED_PACKAGES` (one not installed is left out), and ``requests``, each model's
    request totals (:meth:`faultline_eval.core.request_lifecycle.Usage.summary`: sent, restored,
    generated, failures by category, text tokens in and out, media tokens by kind, latency).
    Written atomically, so a kill leaves the old file or the new one, never half of one."""
    found = {}
    for package in VERSIONED_PACKAGES:
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            continue
    path = run_info_for(results_file)
    write_atomic(path, json.dumps({"versions": found, "requests": requests}, indent=1))
    return path


def find_sample_files(
    run_dirs: Sequence[str | Path], *, pattern: str, benchmark: str = "matching", tasks: str = "the benchmark's"
) -> list[Path]:
    """Every per-sample log matching ``pattern`` under each folder (a file is taken as given);
    the error for a folder without one names the ``benchmark`` and its ``tasks``."""
    files: list[Path] = []
    for run in run_dirs:
        run = Path(run)
        if not run.exists():
            raise ReportError(f"{run}: no such folder")
        found = sorted(run.rglob(pattern)) if run.is_dir() else [run]
        if not found:
            raise ReportError(
                f"{run}: holds no {benchmark} per-sample logs ({pattern}); run lmms-eval on "
                f"{tasks} tasks with --log_samples --output_path"
            )
        for path in found:
            refuse_partial_budgeted(path)
        files += found
    return files


def refuse_partial_budgeted(path: Path) -> None:
    """A per-sample log of a budgeted run whose cells have not all run is a part of a cell, not a
    cell: a report over it would state budgeted numbers as if measured in full."""
    for folder in path.resolve().parents:
        marker = folder / BUDGET_MARKER
        if not marker.is_file():
            continue
        try:
            complete = bool(json.loads(marker.read_text(encoding="utf-8")).get("complete"))
        except (OSError, ValueError, AttributeError):
            complete = False
        if not complete:
            raise ReportError(
                f"{path}: part of a budgeted run ({marker}) whose cells did not all run: its numbers, each "
                f"with the requests it rests on and its interval, are in {folder / 'report.md'}; run the "
                "same faultline-eval command with --complete to finish the full protocol, then report it"
            )
        return


def sample_lines(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each non-blank line of a per-sample log, decoded, with ``path:line`` to name it in errors;
    a line that is not JSON is a :class:`ReportError` naming it."""
    with path.open(encoding="utf-8") as lines:
        for number, text in enumerate(lines, 1):
            if not text.strip():
                continue
            where = f"{path}:{number}"
            try:
                yield where, json.loads(text)
            except json.JSONDecodeError as exc:
                raise ReportError(f"{where}: not JSON ({exc.msg})") from None


def parse_record(value: Any, key: str, where: str) -> dict[str, Any]:
    """A record field's value: a dict already, or the Python repr lmms-eval wrote (read with
    :func:`ast.literal_eval`, never ``eval``)."""
    if isinstance(value, dict):
        return value
    try:
        record = ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError) as exc:
        raise ReportError(f"{where}: {key} is not a Python literal ({exc.__class__.__name__})") from None
    if not isinstance(record, dict):
        raise ReportError(f"{where}: {key} is not a dict")
    return record


def record_from_line(line: str, key: str, where: str) -> dict[str, Any]:
    """The full record (field ``key``) of one per-sample line. A line lmms-eval wrote is decoded
    from the field on, so the rest of a long line is not parsed; ``where`` names the line."""
    marker = f'"{key}": '
    at = line.find(marker)
    try:
        value = json.JSONDecoder().raw_decode(line, at + len(marker))[0] if at >= 0 else json.loads(line)[key]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ReportError(f"{where}: no {key} record ({exc})") from None
    return parse_record(value, key, where)


def trial_from_line(line: dict[str, Any], key: str, kind: type[T], where: str) -> T:
    """The trial entry under ``key`` of a decoded per-sample line, as ``kind`` (either schema)."""
    entry = line.get(key)
    if not isinstance(entry, dict):
        raise ReportError(f"{where}: no {key} trial entry; is this a {kind.BENCHMARK} per-sample log?")
    try:
        return kind.from_json(entry, f"{where}: {key}")
    except TrialEntryError as exc:
        raise ReportError(str(exc)) from None
