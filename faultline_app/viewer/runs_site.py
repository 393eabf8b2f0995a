"""The site of the logs under some run folders: one section per benchmark that has logs there
(SCEval, C3PO, and runs of wrapped lmms-eval tasks), each trial's details and media
(:mod:`.sceval`, :mod:`.c3po`, :mod:`.wrapped`) within the size budget."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from c3po_plugin.report.reader import SAMPLES_GLOB as C3PO_GLOB
from faultline_app.viewer import c3po, sceval, wrapped
from faultline_app.viewer import compare as compare_views
from faultline_app.viewer.budget import Budget
from faultline_app.viewer.site import Section, SiteWriter
from faultline_eval.core.run_logs import ReportError, find_sample_files
from sceval_plugin.report.reader import SAMPLES_GLOB as SCEVAL_GLOB
from sceval_plugin.report.reader import read_runs
from sceval_plugin.report.wrapped_reader import wrapped_sample_files

__all__ = ["write_site"]


def _sceval_details(record: dict) -> list[tuple[str, object]]:
    probe = record.get("probe") or {}
    return [
        ("parsed answer", record.get("parsed_answer")),
        ("gold", record.get("gold_key")),
        ("confidence", record.get("confidence")),
        ("latency (s)", _seconds(record.get("latency_s"))),
        ("retries", record.get("retries") or None),
        ("failure", record.get("failure_detail")),
        ("donor", probe.get("donor")),
        ("prompt", record.get("prompt_id")),
    ]


def _c3po_details(record: dict) -> list[tuple[str, object]]:
    regrade = record.get("regrade") or {}
    return [
        ("prediction", record.get("prediction")),
        ("gold", record.get("gold")),
        ("decided by", record.get("decided_by")),
        ("judge", record.get("judge_id")),
        ("judge verdict", record.get("judge_verdict")),
        ("judge rationale", record.get("judge_raw")),
        ("judge error", record.get("judge_error")),
        ("failure mode", record.get("failure_mode")),
        ("re-graded by", regrade.get("judge_id")),
        ("re-graded verdict", regrade.get("verdict")),
        ("re-grade note", regrade.get("error")),
        ("latency (s)", _seconds(record.get("latency_s"))),
        ("failure", record.get("failure_detail")),
    ]


def _sceval_trials(run_dirs) -> tuple:
    return read_runs(run_dirs, progress=False)


def _seconds(value) -> str | None:
    return None if value is None else f"{float(value):.3f}"


def _has_logs(runs, pattern: str, every: bool = False) -> bool:
    """Whether ``runs`` hold such logs; ``every``: each of them (both sides of ``--compare``)."""
    if every:
        return all(_has_logs([run], pattern) for run in runs)
    try:
        return bool(find_sample_files(runs, pattern=pattern))
    except ReportError:
        return False


def _one_sided(benchmark: str, run_dirs: Sequence[str | Path], pattern: str) -> str:
    """Why ``--compare`` leaves out a benchmark whose logs only one side holds."""
    title = {"sceval": "SCEval", "c3po": "C3PO"}[benchmark]
    held = ["A" if i == 0 else "B" for i, run in enumerate(run_dirs) if _has_logs([run], pattern)]
    missing = "B" if held == ["A"] else "A"
    name = Path(run_dirs[0 if missing == "A" else 1]).name
    return (
        f"{title} left out: --compare shows a benchmark both folders hold, and {missing} ({name}) holds no "
        f"{title} per-sample logs: run {missing}'s model on the {title} tasks with --log_samples into that folder, "
        "or view the other folder without --compare"
    )


def wrapped_report_dir(sceval_report: str | Path | None) -> Path | None:
    """Where an ``sceval report`` folder keeps the report of wrapped tasks: its ``wrapped/``
    subfolder (beside SCEval's), or the folder itself when it reports wrapped runs alone."""
    if sceval_report is None:
        return None
    folder = Path(sceval_report)
    if (folder / wrapped.NAME).is_dir():
        return folder / wrapped.NAME
    found = [*folder.glob("task_metrics_*.md"), *folder.glob("audit_shares.md")]
    return folder if found else None


#: A section with its compare view's tests (None: no compare view).
_Tested = tuple[Section, Callable[[str, str], pd.DataFrame] | None]
_GLOBS = {"sceval": SCEVAL_GLOB, "c3po": C3PO_GLOB}


def _present(
    run_dirs: Sequence[str | Path], benchmarks: Sequence[str], compare: bool
) -> tuple[dict[str, bool], list[str]]:
    """({benchmark: shown}, site notes). With --compare a benchmark is shown when both sides hold
    its logs; one side's alone is named in a note, not dropped unsaid."""
    present = {name: name in benchmarks and _has_logs(run_dirs, glob, compare) for name, glob in _GLOBS.items()}
    notes = [
        _one_sided(name, run_dirs, glob)
        for name, glob in _GLOBS.items()
        if compare and name in benchmarks and not present[name] and any(_has_logs([run], glob) for run in run_dirs)
    ]
    return present, notes


def _sceval_section(sides: compare_views.Sides, source: str | None, report: str | Path | None) -> _Tested:
    rows, notes = sides.read_rows("sceval", sceval.read_rows)
    section = Section(
        "sceval",
        "SCEval",
        "condition",
        "variant",
        rows,
        lambda wanted: sides.read_records("sceval", lambda dirs, _, w: sceval.read_records(dirs, w), wanted),
        sceval.Renderer(source, notes),
        _sceval_details,
        notes,
        Path(report) if report else None,
    )
    return section, lambda a, b: compare_views.sceval_tests(sides.read_trials("sceval", _sceval_trials), a, b)


def _c3po_section(
    sides: compare_views.Sides, source: str | None, report: str | Path | None, verdicts: str | Path | None
) -> _Tested:
    c3po_rows, notes = sides.read_rows("c3po", lambda dirs: c3po.read_rows(dirs, verdicts))
    section = Section(
        "c3po",
        "C3PO",
        "template",
        "run",
        c3po_rows,
        lambda wanted: sides.read_records(
            "c3po",
            lambda dirs, side_rows, w: c3po.read_records(
                dirs, c3po_rows if side_rows is None else side_rows, w, verdicts
            ),
            wanted,
        ),
        c3po.Renderer(source, notes),
        _c3po_details,
        notes,
        Path(report) if report else None,
    )
    return section, lambda a, b: compare_views.c3po_tests(c3po_rows, a, b)


def _nav(sections: list[_Tested], pairs: dict[str, tuple[str, str] | None]) -> list[tuple[str, str]]:
    """Every page's top bar: the benchmarks shown, then their compare views."""
    nav = [(s.title, f"{s.name}/index.html") for s, _ in sections]
    return nav + [(f"{s.title}: A vs B", f"{s.name}/{compare_views.PAGE}") for s, _ in sections if pairs[s.name]]


def _write_section(
    writer: SiteWriter, tested: _Tested, pair: tuple[str, str] | None, wrapped_logs: wrapped.Logs | None
) -> None:
    """One benchmark's pages: its section, then its audit page (wrapped tasks) or compare view."""
    section, tests = tested
    if pair is not None:
        writer.overview_links[section.name] = [(compare_views.PAGE, f"compare A = {pair[0]} with B = {pair[1]}")]
    if section.name == wrapped.NAME and wrapped.audit_items(section.report_dir) is not None:
        writer.overview_links[section.name] = [(wrapped.AUDIT_PAGE, "the audit's items, each linked to its trials")]
    writer.write_section(section)
    if wrapped_logs is not None and section.name == wrapped.NAME:
        section.renderer.close()
        wrapped.write_audit_page(writer, section, wrapped_logs)
    if pair is not None:
        compare_views.write_compare(
            writer, section.name, section.title, section.cell_label, section.variant_label, pair, tests
        )


def write_site(
    run_dirs: Sequence[str | Path],
    out: str | Path,
    *,
    budget=None,
    benchmarks: Sequence[str] = ("sceval", "c3po", "wrapped"),
    sceval_report: str | Path | None = None,
    c3po_report: str | Path | None = None,
    verdicts: str | Path | None = None,
    sceval_source: str | None = None,
    c3po_source: str | None = None,
    compare: bool = False,
) -> dict:
    """Write the site for the logs under ``run_dirs`` into ``out``; a benchmark without logs
    there is left out (raises when none has any). ``budget`` is a
    :class:`~faultline_app.viewer.budget.Budget` (default: its defaults). ``compare``: the two
    ``run_dirs`` are the two sides of the compare views (:mod:`.compare`); without it a benchmark
    with exactly two models gets them. Returns a summary (sections, bytes, seconds)."""
    start = time.perf_counter()
    present, site_notes = _present(run_dirs, benchmarks, compare)
    sides = compare_views.Sides(run_dirs, split=compare)
    sections: list[_Tested] = []
    if present["sceval"]:
        sections.append(_sceval_section(sides, sceval_source, sceval_report))
    if present["c3po"]:
        sections.append(_c3po_section(sides, c3po_source, c3po_report, verdicts))
    wrapped_logs = None
    if "wrapped" in benchmarks and wrapped_sample_files(run_dirs):
        # read from every folder together (also under --compare, which compares SCEval and C3PO only)
        wrapped_logs = wrapped.Logs(run_dirs)
        sections.append((wrapped.section(wrapped_logs, wrapped_report_dir(sceval_report)), None))
    pairs = {s.name: sides.pair(s.name, s.rows) if tests is not None else None for s, tests in sections}
    writer = SiteWriter(Path(out), budget or Budget(), _nav(sections, pairs), site_notes)
    for tested in sections:
        _write_section(writer, tested, pairs[tested[0].name], wrapped_logs)
    if not writer.summaries:
        raise ReportError(
            "; ".join(site_notes)
            or f"{', '.join(map(str, run_dirs))}: no {' or '.join(benchmarks)} per-sample logs to show; "
            "run lmms-eval with --log_samples --output_path"
        )
    writer.media.close()
    return {**writer.finish(), "seconds": time.perf_counter() - start}
