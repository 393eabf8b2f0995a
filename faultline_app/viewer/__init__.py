"""The browsable results: a static site of every sample with its media, answer and verdict.

    faultline view demo_out/        (the site in demo_out/view/, with the reports in demo_out/report/ and
                                     demo_out/c3po-report/ when there; -o, --sceval-report, --c3po-report name others)
    sceval report demo_out/ -o R --html        (writes R/html/, SCEval only)
    c3po report demo_out/ -o R --html          (writes R/html/, C3PO only)

The site opens from disk (``file://``) or any static host: no server, no network, relative
paths only. It is fed by the reports' own trial tables, and every shown trial's media are
regenerated from its record by the benchmark's renderer (see :mod:`.sceval`, :mod:`.c3po`, and
:mod:`.wrapped` for runs of wrapped lmms-eval tasks);
the size budget (:mod:`.budget`) picks which trials get media.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from faultline_app.viewer.budget import Budget, media_counts
from faultline_eval.core.preflight import (
    FOLDER_TO_WRITE,
    INPUT_FILE,
    ITEMS_SOURCE,
    REPORT_FOLDER,
    RUN_FOLDER,
    path_rules,
)

# The commands import this module to build their parsers; writing a site (pandas, scipy) is imported when one is written.
__all__ = ["write_site", "add_parser", "add_html_arguments", "check_html_arguments"]


def write_site(run_dirs: Sequence[str | Path], out: str | Path, **options) -> dict:
    """:func:`faultline_app.viewer.runs_site.write_site`: the site for the logs under ``run_dirs``."""
    # heavy: pandas and scipy (the reports' trial tables); the commands build their parsers without them
    from faultline_app.viewer.runs_site import write_site as write

    return write(run_dirs, out, **options)


def _budget(text: str):
    """``--html-budget``, checked while the arguments are parsed (before a report is built)."""
    try:
        return Budget.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_html_arguments(
    parser: argparse.ArgumentParser, benchmarks: Sequence[str] = ("sceval", "c3po"), *, switch: bool = False
) -> None:
    """The budget and source options every viewer-writing command takes; ``switch``: also
    ``--html``, the report commands' flag that writes the site (see :func:`check_html_arguments`)."""
    if switch:
        parser.add_argument(
            "--html", action="store_true", help="also write a browsable site of the samples to OUTPUT/html/"
        )
    parser.add_argument(
        "--html-budget",
        type=_budget,
        metavar="SPEC",
        help="which trials get media: 'all' (every trial, no size cap), or per_cell=N (default 4 per model and "
        "cell; 'all'), wrong_only, max_mb=M (default 100), e.g. per_cell=3,wrong_only,max_mb=50",
    )
    for name in benchmarks:
        source = parser.add_argument(
            f"--{name}-source",
            metavar="SOURCE",
            help=f"the {name} items to regenerate media from, when they moved since the run (default: "
            "the logged source; the items must be the run's)",
        )
        path_rules(source, ITEMS_SOURCE)


def check_html_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse a viewer option given without ``--html`` (it would be silently ignored)."""
    if getattr(args, "html", None) is not False:  # not a report command, or --html given
        return
    given = [
        f"--{name.replace('_', '-')}"
        for name in ("html_budget", "sceval_source", "c3po_source")
        if getattr(args, name, None) is not None
    ]
    if given:
        parser.error(
            f"{', '.join(given)} only applies with --html (the site is written only then): add --html "
            f"or drop {', '.join(given)}"
        )


def print_summary(done: dict) -> None:
    for note in done["notes"]:
        print(f"note: {note}")
    for s in done["sections"]:
        print(f"{s['title']}: {media_counts(s)}")
    print(f"viewer in {done['out']}/index.html: {done['bytes'] / 1e6:.1f} MB, {done['seconds']:.1f} s")


def write_report_site(args: argparse.Namespace, benchmark: str) -> None:
    """``sceval report ... --html`` / ``c3po report ... --html``: the site in ``REPORT/html/``."""
    report = {f"{benchmark}_report": args.output, f"{benchmark}_source": getattr(args, f"{benchmark}_source")}
    done = write_site(
        args.runs,
        Path(args.output) / "html",
        budget=args.html_budget,
        benchmarks=(benchmark, "wrapped") if benchmark == "sceval" else (benchmark,),  # its report has both
        verdicts=getattr(args, "verdicts", None),
        **report,
    )
    print_summary(done)


#: Where ``faultline view RUN`` looks for the reports of RUN when none is named, and where it
#: writes the site without ``-o`` (a folder no report, run or docs build writes).
FOUND_REPORTS = {"sceval": "report", "c3po": "c3po-report"}
DEFAULT_OUTPUT = "view"


def found_report(runs: Sequence[str], benchmark: str) -> Path | None:
    """``RUN/report`` (SCEval) or ``RUN/c3po-report`` (C3PO) of a single run folder, when it holds a report."""
    if len(runs) != 1:
        return None
    folder = Path(runs[0]) / FOUND_REPORTS[benchmark]
    return folder if (folder / "report.json").is_file() else None


def _run(args: argparse.Namespace) -> int:
    if args.output is None and len(args.runs) != 1:
        raise SystemExit(
            f"faultline view: error: {len(args.runs)} run folders and no -o: name the site's folder with -o "
            f"(only a single RUN has a default, RUN/{DEFAULT_OUTPUT}/)"
        )
    output = args.output or str(Path(args.runs[0]) / DEFAULT_OUTPUT)
    reports = {}
    for benchmark in FOUND_REPORTS:
        given = getattr(args, f"{benchmark}_report")
        reports[benchmark] = given or found_report(args.runs, benchmark)
        if given is None and reports[benchmark] is not None:
            print(f"using the {benchmark} report found in {reports[benchmark]}")
    done = write_site(
        args.runs,
        output,
        budget=args.html_budget,
        sceval_report=reports["sceval"],
        c3po_report=reports["c3po"],
        verdicts=args.verdicts,
        sceval_source=args.sceval_source,
        c3po_source=args.c3po_source,
        compare=args.compare,
    )
    print_summary(done)
    return 0


def add_parser(sub) -> None:
    view = sub.add_parser("view", help="a static site of every sample with its media, answer and verdict")
    path_rules(
        view.add_argument(
            "runs", nargs="+", help="lmms-eval --output_path folders (SCEval, C3PO and/or wrapped-task logs)"
        ),
        RUN_FOLDER,
    )
    path_rules(
        view.add_argument(
            "-o",
            "--output",
            help=f"folder for the site (open its index.html; default with one RUN: RUN/{DEFAULT_OUTPUT}/)",
        ),
        FOLDER_TO_WRITE,
    )
    path_rules(
        view.add_argument(
            "--sceval-report",
            metavar="DIR",
            help="an `sceval report` folder: its tables and figures (and those of wrapped tasks, in it or its "
            "wrapped/; default with one RUN: RUN/report/ when it holds a report)",
        ),
        REPORT_FOLDER,
    )
    path_rules(
        view.add_argument(
            "--c3po-report",
            metavar="DIR",
            help="a `c3po report` folder: its tables and figures (default with one RUN: RUN/c3po-report/ when it "
            "holds a report)",
        ),
        REPORT_FOLDER,
    )
    view.add_argument(
        "--compare",
        action="store_true",
        help="RUNS are two folders, A and B (two models, or two runs of one model): each is read alone and "
        "the site gets compare pages (A right/B wrong, cells changed by the report's paired test); "
        "without it, a benchmark with exactly two models gets them too",
    )
    path_rules(
        view.add_argument("--verdicts", help="C3PO verdict file (from `c3po judge`) to grade with, as `c3po report`"),
        INPUT_FILE,
    )
    add_html_arguments(view)
    view.set_defaults(func=_run)
