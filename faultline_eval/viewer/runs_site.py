"""The site of the logs under some run folders: one section per benchmark that has logs there,
each trial's details and media (:mod:`.sceval`, :mod:`.c3po`) within the size budget."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from c3po_plugin.report.reader import SAMPLES_GLOB as C3PO_GLOB
from faultline_eval.core.run_logs import ReportError, find_sample_files
from faultline_eval.viewer import c3po, sceval
from faultline_eval.viewer.budget import Budget
from faultline_eval.viewer.site import Section, SiteWriter
from sceval_plugin.report.reader import SAMPLES_GLOB as SCEVAL_GLOB

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


def _seconds(value) -> str | None:
    return None if value is None else f"{float(value):.3f}"


def _has_logs(runs, pattern: str) -> bool:
    try:
        return bool(find_sample_files(runs, pattern=pattern))
    except ReportError:
        return False


def write_site(
    run_dirs: Sequence[str | Path],
    out: str | Path,
    *,
    budget=None,
    benchmarks: Sequence[str] = ("sceval", "c3po"),
    sceval_report: str | Path | None = None,
    c3po_report: str | Path | None = None,
    verdicts: str | Path | None = None,
    sceval_source: str | None = None,
    c3po_source: str | None = None,
) -> dict:
    """Write the site for the logs under ``run_dirs`` into ``out``; a benchmark without logs
    there is left out (raises when none has any). ``budget`` is a
    :class:`~faultline_eval.viewer.budget.Budget` (default: its defaults). Returns a summary
    (sections, bytes, seconds)."""
    start = time.perf_counter()
    globs = {"sceval": SCEVAL_GLOB, "c3po": C3PO_GLOB}
    present = {name: name in benchmarks and _has_logs(run_dirs, glob) for name, glob in globs.items()}
    # every page's top bar: the benchmarks shown (further views append their entry here, before writing)
    nav = [(title, f"{name}/index.html") for name, title in (("sceval", "SCEval"), ("c3po", "C3PO")) if present[name]]
    writer = SiteWriter(Path(out), budget or Budget(), nav)
    if present["sceval"]:
        rows, notes = sceval.read_rows(run_dirs)
        writer.write_section(
            Section(
                "sceval",
                "SCEval",
                "condition",
                "variant",
                rows,
                lambda wanted: sceval.read_records(run_dirs, wanted),
                sceval.Renderer(sceval_source, notes),
                _sceval_details,
                notes,
                Path(sceval_report) if sceval_report else None,
            )
        )
    if present["c3po"]:
        rows, notes = c3po.read_rows(run_dirs, verdicts)
        writer.write_section(
            Section(
                "c3po",
                "C3PO",
                "template",
                "run",
                rows,
                lambda wanted: c3po.read_records(run_dirs, rows, wanted, verdicts),
                c3po.Renderer(c3po_source, notes),
                _c3po_details,
                notes,
                Path(c3po_report) if c3po_report else None,
            )
        )
    if not writer.summaries:
        raise ReportError(
            f"{', '.join(map(str, run_dirs))}: no {' or '.join(benchmarks)} per-sample logs to show; "
            "run lmms-eval with --log_samples --output_path"
        )
    return {**writer.finish(), "seconds": time.perf_counter() - start}
