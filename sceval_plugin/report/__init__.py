"""``sceval report``: every number of the SCEval protocol from lmms-eval output folders.

Reads the per-sample logs of one or many models, computes the protocol's numbers with
:mod:`sceval_plugin.metrics`, and writes tables (Markdown, CSV, LaTeX), PNG figures and one
JSON file with every number.
"""

from __future__ import annotations

import functools
import multiprocessing
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from faultline_eval.core.report_writer import Report, Section, write_report
from faultline_eval.core.stats import B_DEFAULT, SEED_DEFAULT
from faultline_eval.core.tables import Table, json_records
from sceval_plugin.metrics.diagnostics import DiagnosticOptions
from sceval_plugin.metrics.protocol import (
    LEFT_OUT_REASONS,
    ConditionInfo,
    Numbers,
    catalogue_info,
    compute,
    leave_out_incomparable,
    left_out_notes,
)
from sceval_plugin.report import diagnostics_section as diagnostics
from sceval_plugin.report import no_option_section as no_option
from sceval_plugin.report import probe_section as probes
from sceval_plugin.report import protocol_section as protocol
from sceval_plugin.report.audit_section import audit_section
from sceval_plugin.report.published_section import DEFAULT_REFERENCE, published_section
from sceval_plugin.report.reader import SAMPLES_GLOB, ReportError, read_runs
from sceval_plugin.report.task_metric_section import task_metric_section, wrapped_head
from sceval_plugin.report.wrapped_reader import read_wrapped_runs, wrapped_sample_files

T = TypeVar("T")

__all__ = ["COHORTS", "ReportError", "build_report", "select_cohort", "wrapped_sections"]


def _info_with_unknowns(trials: pd.DataFrame, info: dict[str, ConditionInfo]) -> dict[str, ConditionInfo]:
    unknown = sorted(set(map(str, trials["condition_id"].unique())) - set(info))
    if unknown:
        raise ReportError(
            f"conditions not in the installed catalogue: {', '.join(unknown[:5])}"
            f"{' ...' if len(unknown) > 5 else ''}; install the plugin that defines them"
        )
    return info


COHORTS = ("gold_preserved", "stress", "all")
#: The story first: where each model breaks (figures), then the headline tables.
OPEN_FIRST = (
    "severity_curves.png",
    "drop_heatmap.png",
    "joint_scatter.png",
    "single_modality_s70.md",
    "panel.md",
    "joint.md",
    "diagnostics.md",
)


def select_cohort(trials: pd.DataFrame, cohort: str, notes: list[str]) -> pd.DataFrame:
    """The trials of one cohort (Appendix D, G.7). ``gold_preserved`` (default): the paper's
    headline cohort, every trial not run on a stress-only cell (an annotation manifest marked the
    cell interpretable but not preserving the original gold); ``stress``: only those, for the
    descriptive stress-test tables; ``all``: both together. Clean trials are in every cohort, so
    drops under ``stress`` are measured against the same clean baseline."""
    if cohort not in COHORTS:
        raise ReportError(f"unknown cohort {cohort!r}: use one of {', '.join(COHORTS)}")
    # an optional column (EXTRA_COLUMNS): a trial table without it has no stress-only trials
    stress = (trials["cohort"] == "stress_only").to_numpy() if "cohort" in trials else np.zeros(len(trials), bool)
    if cohort == "all" or not stress.any() and cohort == "gold_preserved":
        return trials
    if cohort == "gold_preserved":
        notes.append(
            f"{int(stress.sum())} stress-only trial(s) (cells that do not preserve the original gold) "
            "are left out of every table: see them with --cohort stress"
        )
        return trials[~stress].reset_index(drop=True)
    if not stress.any():
        raise ReportError(
            "--cohort stress: the logs hold no stress-only trials (runs with an SCEVAL_MANIFEST "
            "whose cells are interpretable but not gold-preserving)"
        )
    clean = trials["condition_id"].isin(["clean"]).to_numpy()
    return trials[stress | clean].reset_index(drop=True)


#: Work handed to :func:`_aside`'s process, by key: set while the process forks, so the work's
#: arguments (the trial table) are inherited rather than pickled.
_aside_work: dict[int, Callable[[], Any]] = {}


def _run_aside(key: int) -> Any:
    return _aside_work[key]()


def _aside(work: Callable[[], T], *, worth_it: bool) -> Future[T]:
    """``work()`` computed in a forked process while this one goes on (only its result is
    pickled, back), for sections that need nothing the rest computes: after the logs are read
    the second core is otherwise idle. Unless ``worth_it``, computed here at once."""
    if not worth_it:
        done: Future[T] = Future()
        done.set_result(work())
        return done
    key = id(work)
    _aside_work[key] = work
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
    try:
        return pool.submit(_run_aside, key)  # the process forks here, before the work is dropped below
    finally:
        del _aside_work[key]
        pool.shutdown(wait=False)  # it ends when the work is done


def _numbers(trials: pd.DataFrame, info: dict[str, ConditionInfo], **options: Any) -> Numbers:
    """:func:`compute` with ``options`` as given; bad input is a :class:`ReportError` (one line, exit 2)."""
    try:
        return compute(trials, info, **options)
    except ValueError as exc:
        raise ReportError(str(exc)) from exc


def wrapped_sections(
    run_dirs: Sequence[str | Path], *, b: int, seed: int, figures: bool, audit: Mapping[str, Any] | None = None
) -> tuple[list[Section], dict[str, Any]]:
    """The report of wrapped lmms-eval tasks (issue 27) under ``run_dirs``: the task's own metrics
    per condition (:mod:`~sceval_plugin.report.task_metric_section`) and the modality-necessity
    audit (:mod:`~sceval_plugin.report.audit_section`; ``audit``: its ``answerable_at`` and
    ``per_pair``, as ``faultline audit`` takes them); and report.json's head."""
    runs = read_wrapped_runs(run_dirs)
    try:
        sections = [
            task_metric_section(runs, b=b, seed=seed, figures=figures),
            audit_section(runs, figures=figures, **(audit or {})),
        ]
    except ValueError as exc:
        raise ReportError(str(exc)) from exc
    return sections, wrapped_head(runs, run_dirs, b=b, seed=seed)


def _wrapped_subreport(
    run_dirs: Sequence[str | Path], *, b: int, seed: int, figures: bool, audit: Mapping[str, Any] | None
) -> Section:
    sections, head = wrapped_sections(run_dirs, b=b, seed=seed, figures=figures, audit=audit)
    return Section(subreports={"wrapped": Report(head, sections)})


def _left_out_section(left_out: pd.DataFrame, *, strict: bool) -> Section:
    """The trials left out of every table (:func:`leave_out_incomparable`), by model and
    condition with the reason: a table (when any) and report.json's ``left_out``."""
    shown = left_out.assign(why=left_out["reason"].map(LEFT_OUT_REASONS))
    return Section(
        tables=[
            Table(
                "left_out",
                "Trials left out of every table, by model and condition, and why (sceval report --strict "
                "refuses such logs instead)",
                shown,
                left_out,
                trial_links=[[None] * len(shown.columns)] * len(shown),  # not in the trial table the viewer reads
            )
        ]
        if len(left_out)
        else [],
        numbers={"left_out": json_records(left_out), "settings": {"strict": strict}},
        title="Left out",
    )


#: ``left_out`` of a report that left nothing out (the columns of ``leave_out_incomparable``'s table).
_NOTHING_LEFT_OUT = pd.DataFrame(columns=["model", "condition_id", "reason", "trials"])


def _has_sceval_logs(run_dirs: Sequence[str | Path]) -> bool:
    return any(Path(r).is_file() or next(Path(r).rglob(SAMPLES_GLOB), None) is not None for r in run_dirs)


def _build_wrapped_report(
    run_dirs: Sequence[str | Path], out: Path, *, b: int, seed: int, figures: bool, audit: Mapping[str, Any] | None
) -> dict:
    start = time.perf_counter()
    sections, head = wrapped_sections(run_dirs, b=b, seed=seed, figures=figures, audit=audit)
    report = Report(head, sections)
    written = write_report(out, report, figure_workers=2)
    return {
        "written": [str(p) for p in written],
        "notes": report.notes,
        "trials": head["counts"]["trials"],
        "models": head["counts"]["models"],
        "seconds": time.perf_counter() - start,
        "left_out": _NOTHING_LEFT_OUT.copy(),  # wrapped tasks carry no re-read probes (same shape as build_report's)
    }


def build_report(
    run_dirs: Sequence[str | Path],
    out: str | Path,
    *,
    b: int = B_DEFAULT,
    seed: int = SEED_DEFAULT,
    model_pairs: bool = True,
    progress: bool = True,
    delta_single: str = "modality",
    options: DiagnosticOptions | None = None,
    figures: bool = True,
    cohort: str = "gold_preserved",
    strict: bool = False,
    audit: Mapping[str, Any] | None = None,
    robustness_reference: str = DEFAULT_REFERENCE,
) -> dict[str, Any]:
    """Read ``run_dirs``, compute, write everything under ``out``; returns a summary of what was written.
    Works on any subset of the catalogue: what the logs do not allow is listed in ``notes`` (and
    report.json), and a figure without data is skipped with its reason. Folders of wrapped
    lmms-eval tasks (``<base>__<condition>__var<k>``, issue 27) get their report
    (:func:`wrapped_sections`): on their own, or in the subfolder ``wrapped/`` beside SCEval's.
    Trials the report cannot pool with today's meaning (a probe's earlier reading, a condition
    the catalogue does not know) are left out of every table, named in the notes and in
    report.json's ``left_out`` (:func:`~sceval_plugin.metrics.protocol.leave_out_incomparable`);
    ``strict`` refuses such logs instead. ``audit``: the wrapped runs' audit reading
    (``answerable_at``, ``per_pair``; :func:`~sceval_plugin.report.audit_section.audit_section`).
    ``robustness_reference``: the model the normalised scores divide by (a model of the runs or a
    published row; :mod:`sceval_plugin.report.published_section`)."""
    start = time.perf_counter()
    wrapped = bool(wrapped_sample_files(run_dirs))
    if wrapped and not _has_sceval_logs(run_dirs):
        return _build_wrapped_report(run_dirs, Path(out), b=b, seed=seed, figures=figures, audit=audit)
    # a folder of wrapped runs only is the wrapped report's, not an SCEval folder without logs
    trials, notes = read_runs(
        [r for r in run_dirs if not wrapped or not Path(r).exists() or _has_sceval_logs([r])], progress=progress
    )
    trials = select_cohort(trials, cohort, notes)
    info = catalogue_info()
    left_out = _NOTHING_LEFT_OUT.copy()
    if not strict:  # strict: the checks below refuse them, naming each
        trials, left_out = leave_out_incomparable(trials, info)
        notes += left_out_notes(left_out)
        if trials.empty:
            raise ReportError("every trial of the logs is left out: " + " ".join(notes))
    info = _info_with_unknowns(trials, info)
    trials, no_option_trials = no_option.split_trials(trials, info)  # never in the headline tables (Table 33)
    if trials.empty:
        raise ReportError(
            "the logs hold only no-option trials; Table 35 compares them with the multiple-choice "
            "runs of the same conditions: run --tasks sceval_no_option, which includes both"
        )
    opts = options or DiagnosticOptions()
    # Table 35 reads the no-option logs again and needs no other number; the probes and the
    # diagnostics need the numbers only: each computed aside while this process computes the rest
    no_option_part = _aside(
        functools.partial(no_option.no_option_section, trials, info, run_dirs, no_option_trials, b=b, seed=seed),
        worth_it=bool(no_option_trials),
    )
    numbers = _numbers(
        trials,
        info,
        b=b,
        seed=seed,
        model_pairs=model_pairs,
        delta_single=delta_single,
        holm_families=opts.holm_families,
    )
    probes_part = _aside(
        functools.partial(
            probes.probes_section,
            numbers,
            trials,
            info,
            b=b,
            seed=seed,
            trust_reading=opts.trust_reading,
            confidence_values=opts.confidence_values,
            figures=figures,
        ),
        worth_it=True,
    )
    # the Appendix-C diagnostics (their own tables, and their entries in report.json): the numbers only, too
    diagnostics_part = _aside(
        functools.partial(
            diagnostics.diagnostics_section, numbers, trials, info, options, b=b, seed=seed, delta_single=delta_single
        ),
        worth_it=True,
    )
    ops = protocol.operator_names()
    report = Report(
        protocol.head(numbers, trials, run_dirs, b=b, seed=seed, delta_single=delta_single),
        [
            Section(notes=[*notes, *numbers.notes]),
            _left_out_section(left_out, strict=strict),
            protocol.figures_section(numbers, info, ops, drawn=figures),
            protocol.tables_section(numbers, info, ops, delta_single),
            published_section(numbers, trials, info, robustness_reference),
            diagnostics_part.result(),
            probes_part.result(),
            no_option_part.result(),
            *([_wrapped_subreport(run_dirs, b=b, seed=seed, figures=figures, audit=audit)] if wrapped else []),
        ],
        title="SCEval report",
        open_first=OPEN_FIRST,
    )
    # Figures take longest to render: draw them in other processes while the tables are written.
    written = write_report(Path(out), report, figure_workers=2)
    return {
        "written": [str(p) for p in written],
        "notes": report.notes,
        "trials": len(trials),
        "models": sorted(map(str, trials["model"].unique())),
        "left_out": left_out,
        "seconds": time.perf_counter() - start,
    }
