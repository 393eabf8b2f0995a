"""The browsable results: a static site of every sample with its media, answer and verdict.

    faultline view demo_out/ -o demo_out/html/ [--sceval-report R] [--c3po-report R] [--html-budget ...]
    sceval report demo_out/ -o R --html        (writes R/html/, SCEval only)
    c3po report demo_out/ -o R --html          (writes R/html/, C3PO only)

The site opens from disk (``file://``) or any static host: no server, no network, relative
paths only. It is fed by the reports' own trial tables, and every shown trial's media are
regenerated from its record by the benchmark's renderer (see :mod:`.sceval`, :mod:`.c3po`);
the size budget (:mod:`.budget`) picks which trials get media.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Sequence

__all__ = ["write_site", "add_parser", "add_html_arguments", "check_html_arguments"]  # imports are lazy: the CLIs build parsers fast


def _sceval_details(record: dict) -> list[tuple[str, object]]:
    probe = record.get("probe") or {}
    return [("parsed answer", record.get("parsed_answer")), ("gold", record.get("gold_key")),
            ("confidence", record.get("confidence")), ("latency (s)", _seconds(record.get("latency_s"))),
            ("retries", record.get("retries") or None), ("failure", record.get("failure_detail")),
            ("donor", probe.get("donor")), ("prompt", record.get("prompt_id"))]


def _c3po_details(record: dict) -> list[tuple[str, object]]:
    regrade = record.get("regrade") or {}
    return [("prediction", record.get("prediction")), ("gold", record.get("gold")),
            ("decided by", record.get("decided_by")), ("judge", record.get("judge_id")),
            ("judge verdict", record.get("judge_verdict")), ("judge rationale", record.get("judge_raw")),
            ("judge error", record.get("judge_error")), ("failure mode", record.get("failure_mode")),
            ("re-graded by", regrade.get("judge_id")), ("re-graded verdict", regrade.get("verdict")),
            ("re-grade note", regrade.get("error")), ("latency (s)", _seconds(record.get("latency_s"))),
            ("failure", record.get("failure_detail"))]


def _seconds(value) -> str | None:
    return None if value is None else f"{float(value):.3f}"


def _has_logs(runs, pattern: str) -> bool:
    from faultline_eval.core.run_logs import ReportError, find_sample_files

    try:
        return bool(find_sample_files(runs, pattern=pattern))
    except ReportError:
        return False


def write_site(run_dirs: Sequence[str | Path], out: str | Path, *, budget=None,
               benchmarks: Sequence[str] = ("sceval", "c3po"), sceval_report: str | Path | None = None,
               c3po_report: str | Path | None = None, verdicts: str | Path | None = None,
               sceval_source: str | None = None, c3po_source: str | None = None) -> dict:
    """Write the site for the logs under ``run_dirs`` into ``out``; a benchmark without logs
    there is left out (raises when none has any). ``budget`` is a
    :class:`~faultline_eval.viewer.budget.Budget` (default: its defaults). Returns a summary (sections, bytes, seconds)."""
    from c3po_plugin.report.reader import SAMPLES_GLOB as C3PO_GLOB
    from faultline_eval.viewer.budget import Budget
    from faultline_eval.viewer.site import Section, SiteWriter
    from sceval_plugin.report.reader import SAMPLES_GLOB as SCEVAL_GLOB
    from sceval_plugin.report.reader import ReportError

    start = time.perf_counter()
    writer = SiteWriter(Path(out), budget or Budget())
    if "sceval" in benchmarks and _has_logs(run_dirs, SCEVAL_GLOB):
        from faultline_eval.viewer import sceval

        rows, notes = sceval.read_rows(run_dirs)
        writer.write_section(Section("sceval", "SCEval", "condition", "variant", rows,
                                     lambda wanted: sceval.read_records(run_dirs, wanted),
                                     sceval.Renderer(sceval_source, notes), _sceval_details, notes,
                                     Path(sceval_report) if sceval_report else None))
    if "c3po" in benchmarks and _has_logs(run_dirs, C3PO_GLOB):
        from faultline_eval.viewer import c3po

        rows, notes = c3po.read_rows(run_dirs, verdicts)
        writer.write_section(Section("c3po", "C3PO", "template", "run", rows,
                                     lambda wanted: c3po.read_records(run_dirs, rows, wanted, verdicts),
                                     c3po.Renderer(c3po_source, notes), _c3po_details, notes,
                                     Path(c3po_report) if c3po_report else None))
    if not writer.summaries:
        raise ReportError(f"{', '.join(map(str, run_dirs))}: no {' or '.join(benchmarks)} per-sample logs to show; "
                          "run lmms-eval with --log_samples --output_path")
    return {**writer.finish(), "seconds": time.perf_counter() - start}


def _budget(text: str):
    """``--html-budget``, checked while the arguments are parsed (before a report is built)."""
    from faultline_eval.viewer.budget import Budget

    try:
        return Budget.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_html_arguments(parser: argparse.ArgumentParser, benchmarks: Sequence[str] = ("sceval", "c3po"), *,
                       switch: bool = False) -> None:
    """The budget and source options every viewer-writing command takes; ``switch``: also
    ``--html``, the report commands' flag that writes the site (see :func:`check_html_arguments`)."""
    if switch:
        parser.add_argument("--html", action="store_true",
                            help="also write a browsable site of the samples to OUTPUT/html/")
    parser.add_argument("--html-budget", type=_budget, metavar="SPEC",
                        help="which trials get media: per_cell=N (default 4 per model and cell; 'all'), wrong_only, "
                             "max_mb=M (default 100), e.g. per_cell=3,wrong_only,max_mb=50")
    for name in benchmarks:
        parser.add_argument(f"--{name}-source", metavar="SOURCE",
                            help=f"the {name} items to regenerate media from, when they moved since the run (default: "
                                 "the logged source; the items must be the run's)")


def check_html_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse a viewer option given without ``--html`` (it would be silently ignored)."""
    if getattr(args, "html", None) is not False:  # not a report command, or --html given
        return
    given = [f"--{name.replace('_', '-')}" for name in ("html_budget", "sceval_source", "c3po_source")
             if getattr(args, name, None) is not None]
    if given:
        parser.error(f"{', '.join(given)} only applies with --html (the site is written only then): add --html "
                     f"or drop {', '.join(given)}")


def print_summary(done: dict) -> None:
    for s in done["sections"]:
        print(f"{s['title']}: {s['trials']} trials, {s['shown']} shown with media on {s['samples']} sample pages")
    skipped = f", {done['media_skipped']} trial(s) without media (budget)" if done["media_skipped"] else ""
    print(f"viewer in {done['out']}/index.html: {done['bytes'] / 1e6:.1f} MB{skipped}, {done['seconds']:.1f} s")


def write_report_site(args: argparse.Namespace, benchmark: str) -> None:
    """``sceval report ... --html`` / ``c3po report ... --html``: the site in ``REPORT/html/``."""
    report = {f"{benchmark}_report": args.output, f"{benchmark}_source": getattr(args, f"{benchmark}_source")}
    done = write_site(args.runs, Path(args.output) / "html", budget=args.html_budget,
                      benchmarks=(benchmark,), verdicts=getattr(args, "verdicts", None), **report)
    print_summary(done)


def _run(args: argparse.Namespace) -> int:
    done = write_site(args.runs, args.output, budget=args.html_budget,
                      sceval_report=args.sceval_report, c3po_report=args.c3po_report, verdicts=args.verdicts,
                      sceval_source=args.sceval_source, c3po_source=args.c3po_source)
    print_summary(done)
    return 0


def add_parser(sub) -> None:
    view = sub.add_parser("view", help="a static site of every sample with its media, answer and verdict")
    view.add_argument("runs", nargs="+", help="lmms-eval --output_path folders (SCEval and/or C3PO logs)")
    view.add_argument("-o", "--output", required=True, help="folder for the site (open its index.html)")
    view.add_argument("--sceval-report", metavar="DIR", help="an `sceval report` folder: its tables and figures")
    view.add_argument("--c3po-report", metavar="DIR", help="a `c3po report` folder: its tables and figures")
    view.add_argument("--verdicts", help="C3PO verdict file (from `c3po judge`) to grade with, as `c3po report`")
    add_html_arguments(view)
    view.set_defaults(func=_run)
