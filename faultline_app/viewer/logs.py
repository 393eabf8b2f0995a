"""What both benchmarks' viewer readers share: model labels, verdict words, data sources."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from faultline_app.viewer.budget import CORRECT
from faultline_eval.core.identity import matching_source
from faultline_eval.core.model_names import ModelNames
from faultline_eval.core.run_logs import results_for, run_info_for, versions_for


def label_for(names: ModelNames, samples_file: Path, record_model: str | None) -> str:
    """The model name the reports give this log's trials among ``names`` (results JSON first, then the record)."""
    label = names.of(results_for(samples_file))
    return label if label != "unknown" else (record_model or "unknown")


def verdict_of(correct, invalid, not_applicable=None) -> str:
    """One word per trial: correct, wrong, ``invalid: <category>``, not applicable or unscored."""
    if isinstance(not_applicable, str) and not_applicable:
        return "not applicable"
    if isinstance(invalid, str) and invalid:
        return f"invalid: {invalid}"
    if correct is None or (isinstance(correct, float) and math.isnan(correct)):
        return "unscored"
    return CORRECT if correct == 1 else "wrong"


def public_spec(dataset: str) -> str:
    """A logged data source as the site may name it: no folder of this machine (an absolute
    folder or file, also after ``hf:`` or ``lmms:<task>@``, is named by its last component)."""

    def name(part: str) -> str:
        return Path(part).name if part.startswith(("/", "~", "\\")) or Path(part).is_absolute() else part

    spec = str(dataset).rsplit("#", 1)[0]
    prefix, colon, rest = spec.partition(":") if spec.startswith(("hf:", "lmms:")) else ("", "", spec)
    head, at, tail = rest.partition("@") if prefix == "lmms" else (rest, "", "")
    return f"{prefix}{colon}{name(head)}{at}{name(tail) if at else ''}"


_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])(?:/|~/)[^\s:'\"()]+")


def without_paths(text: str) -> str:
    """``text`` (an error message, a note) with every absolute path cut to its last component."""
    return _ABSOLUTE_PATH.sub(lambda m: Path(m.group()).name or m.group(), str(text))


class SourceCache:
    """The data source of each logged ``dataset`` (``spec#fingerprint``), loaded once. The items
    must be the run's (the same content fingerprint, :mod:`faultline_eval.core.identity`), so the
    viewer never shows media the model did not receive; where they lie does not matter. Tried in
    order: ``override`` (the source option), else the logged spec and then ``current()`` (the
    benchmark's source setting), so a run copied with its data to another folder or machine is
    viewed there. ``notes`` collects what the user should know (a legacy fingerprint matched)."""

    def __init__(self, load, override: str | None = None, current=None, notes: list[str] | None = None):
        self.load, self.override, self.current, self.loaded = load, override, current, {}
        self.notes = [] if notes is None else notes

    def get(self, dataset: str):
        if dataset not in self.loaded:
            spec = str(dataset).rpartition("#")[0]
            specs = [self.override] if self.override else [spec, self.current() if self.current else None]
            try:
                source, note = matching_source(dataset, self._load, specs)
            except LookupError as exc:
                self.loaded[dataset] = LookupError(without_paths(str(exc)))
            else:
                self.loaded[dataset] = source
                if note:
                    self.notes.append(without_paths(note))
        found = self.loaded[dataset]
        if isinstance(found, LookupError):
            raise found
        return found

    def _load(self, spec: str):
        key = ("spec", spec)
        if key not in self.loaded:
            try:
                self.loaded[key] = self.load(spec)
            except Exception as exc:
                self.loaded[key] = exc
        if isinstance(self.loaded[key], Exception):
            raise self.loaded[key]
        return self.loaded[key]


def run_info(results_file: Path | None, samples_files: list[Path]) -> dict:
    """What a run panel shows of one run (one lmms-eval results JSON and its per-sample logs),
    read from what the run already wrote: the model, its arguments and backend, lmms-eval's
    version, the date, the seeds, the wall time, and the token and cost totals lmms-eval counted
    (``efficiency``, ``usage``). Versions the results do not name (faultline-eval, torch) and each
    model's request and token totals (``requests``) are read from
    :func:`~faultline_eval.core.run_logs.run_info_for` when the run wrote it (our lmms-eval plugin
    does, for every run with ``--output_path``; an older run's ``_versions.json`` gives the
    versions alone). Nothing here names a folder of this machine."""
    info: dict = {"logs": sorted({p.name for p in samples_files})}
    if results_file is None:
        return {**info, "run": "(no results JSON)"}
    try:
        results = json.loads(results_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return {**info, "run": results_file.name, "error": without_paths(f"{results_file.name}: {exc}")}
    config = results.get("config") or {}
    overall = (results.get("efficiency") or {}).get("overall") or {}
    versions = {"lmms-eval": results.get("lmms_eval_version")}
    written: dict = {}
    if run_info_for(results_file).is_file():
        written = json.loads(run_info_for(results_file).read_text(encoding="utf-8"))
    elif versions_for(results_file).is_file():
        written = {"versions": json.loads(versions_for(results_file).read_text(encoding="utf-8"))}
    versions.update(written.get("versions") or {})
    seeds = {k: config.get(k) for k in ("random_seed", "numpy_seed", "torch_seed") if config.get(k) is not None}
    return {
        **info,
        "run": results_file.name,
        "model": config.get("model"),
        "model_args": config.get("model_args") or "",
        "backend": config.get("model_backend"),
        "versions": {k: v for k, v in versions.items() if v},
        "date": results.get("date"),
        "seeds": seeds,
        "system_instruction": results.get("system_instruction"),
        "wall_s": results.get("total_evaluation_time_seconds"),
        "tokens": {
            k: overall.get(f"total_{k}_tokens") for k in ("input", "output") if overall.get(f"total_{k}_tokens")
        },
        "usage": results.get("usage") or {},
        "requests": written.get("requests") or {},
    }


def registry_order(cells: list[str], names: list[str]) -> list[str]:
    """``cells`` in the order of a registry's ``names`` (the catalogue's, the paper's); cells
    the registry does not know follow, sorted."""
    rank = {name: i for i, name in enumerate(names)}
    return sorted(cells, key=lambda c: (rank.get(c, len(rank)), c))
