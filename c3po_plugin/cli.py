"""``c3po``: the C3PO command line.

    c3po templates                               the template registry
    c3po check [SOURCE]                          validate items and probe media, list every problem
    c3po tasks tasks/c3po [--write]              check or regenerate the task folder
    c3po judge RUN_DIR... --judge SPEC -o verdicts.jsonl
                                                 re-grade finished runs with another judge
    c3po judge-agreement A.jsonl B.jsonl         agreement and Cohen's kappa of two judges per model
    c3po report RUN_DIR... -o OUT/ [--verdicts FILE]
    c3po build STAGE BUILD_DIR ...               build a benchmark (select, synthesize, sample,
                                                 import-answers, export: c3po_plugin/build/cli_media.py)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from sceval_plugin import use_offline_defaults


def cmd_templates(args: argparse.Namespace) -> int:
    from c3po_plugin.templates import registry

    rows = [("id", "name", "category", "tier", "base", "modalities", "paper n", "task")]
    for t in registry():
        rows.append((t.id, t.name, t.category.upper(), str(t.tier), t.base_modality,
                     "+".join(m for m in ("video", "audio", "image", "text") if m in t.modalities),
                     "" if t.paper_count is None else str(t.paper_count), t.task_name))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    if args.logic:
        for t in registry():
            print(f"\n{t.id} {t.name}: {t.logical_form}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from c3po_plugin.data.records import check_media
    from c3po_plugin.data.sources import load_source, media_paths
    from sceval_plugin.data.intake import check_command

    return check_command(load_source(args.source), check_media, media_paths)


def cmd_tasks(args: argparse.Namespace) -> int:
    from c3po_plugin.taskgen import out_of_date, write_task_files
    from c3po_plugin.templates import registry

    folder = Path(args.folder)
    if args.write:
        print(f"wrote {len(write_task_files(folder, registry()))} files to {folder}")
        return 0
    drift = out_of_date(folder, registry())
    for name in drift:
        print(f"out of date: {folder / name}")
    return 1 if drift else 0


def cmd_judge(args: argparse.Namespace) -> int:
    from c3po_plugin.judges import make_judge
    from c3po_plugin.verdicts import regrade

    judge = make_judge(args.judge)
    counts = regrade(args.runs, judge, args.output)
    print(f"{judge.judge_id}: {counts['trials']} trials ({counts['unanswered']} without an answer) and "
          f"{counts['human']} human answers: {counts['exact_match']} by exact match, {counts['yes']} YES, "
          f"{counts['no']} NO, {counts['errors']} judge errors -> {args.output}")
    return 0


def cmd_agreement(args: argparse.Namespace) -> int:
    from c3po_plugin.verdicts import agreement

    result = agreement(args.a, args.b, include_exact=args.include_exact)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0 if result["compared"] else 1
    print(f"{result['judge_a']} vs {result['judge_b']}: {result['compared']} trials decided by both judges"
          + (" (exact matches counted as YES by both)" if result["include_exact"] else ""))
    width = max([len(r["model"]) for r in result["per_model"]] + [5])
    print(f"  {'model'.ljust(width)}  trials  agreement  kappa  (A/B: YES/YES YES/NO NO/YES NO/NO)")
    for r in result["per_model"]:
        c = r["confusion"]
        print(f"  {r['model'].ljust(width)}  {r['compared']:6d}  {r['agreement']:9.3f}  {r['kappa']:5.2f}  "
              f"({c['YES/YES']} {c['YES/NO']} {c['NO/YES']} {c['NO/NO']})")
    kappa, agree = result["kappa"], result["agreement"]
    print(f"across {result['models']} evaluated model(s) (Human left out): agreement mean {agree['mean']:.3f}; "
          f"kappa mean {kappa['mean']:.2f}, min {kappa['min']:.2f}, max {kappa['max']:.2f}")
    pooled = result["pooled"]
    print(f"pooled over every trial: agreement {pooled['agreement']:.3f}, kappa {pooled['kappa']:.2f}")
    print(f"left out: {'' if result['include_exact'] else str(result['exact_match_trials']) + ' exact-match trials, '}"
          f"{result['either_failed']} with a judge error, {result['only_in_a']} only in A, {result['only_in_b']} only in B")
    return 0 if result["compared"] else 1


def cmd_report(args: argparse.Namespace) -> int:
    from c3po_plugin.report import build_report

    done = build_report(args.runs, args.output, b=args.bootstrap, seed=args.seed, verdicts=args.verdicts)
    print(done["summary"])
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="c3po", description="C3PO: cross-modal composition and conflict.")
    sub = parser.add_subparsers(dest="command", required=True)

    templates = sub.add_parser("templates", help="list the registered templates")
    templates.add_argument("--logic", action="store_true", help="also print each template's logical form")
    templates.set_defaults(func=cmd_templates)

    check = sub.add_parser("check", help="validate a source's items and media; list every problem by sample")
    check.add_argument("source", nargs="?", help="demo, a folder, items.jsonl/.parquet or hf:... (default $C3PO_SOURCE)")
    check.set_defaults(func=cmd_check)

    tasks = sub.add_parser("tasks", help="check (default) or --write the generated lmms-eval task folder")
    tasks.add_argument("folder", help="e.g. tasks/c3po in a source checkout")
    tasks.add_argument("--write", action="store_true")
    tasks.set_defaults(func=cmd_tasks)

    judge = sub.add_parser("judge", help="re-grade finished runs with a judge; writes a verdict file")
    judge.add_argument("runs", nargs="+", help="lmms-eval --output_path folders")
    judge.add_argument("--judge", required=True,
                       help="embedding | exact | lmms:<model>[:<model_args>] | gemini:<model>[,base_url=...]")
    judge.add_argument("-o", "--output", required=True, help="verdict file (JSONL)")
    judge.set_defaults(func=cmd_judge)

    agree = sub.add_parser("judge-agreement", help="agreement rate and Cohen's kappa between two verdict files")
    agree.add_argument("a")
    agree.add_argument("b")
    agree.add_argument("--json", action="store_true")
    agree.add_argument("--include-exact", action="store_true",
                       help="count exact-match trials as YES by both judges (agreement on final grades)")
    agree.set_defaults(func=cmd_agreement)

    report = sub.add_parser("report", help="tables and plots from lmms-eval output folders")
    report.add_argument("runs", nargs="+", help="lmms-eval --output_path folders (several runs of a model average)")
    report.add_argument("-o", "--output", required=True, help="folder for the report")
    report.add_argument("--verdicts", help="grade with this verdict file (from `c3po judge`) instead")
    report.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
    report.add_argument("--seed", type=int, default=20261129)
    report.set_defaults(func=cmd_report)

    _add_build_command(sub)
    return parser


def _add_build_command(sub: argparse._SubParsersAction) -> None:
    """``c3po build <stage>``: the media stages come from :mod:`c3po_plugin.build.cli_media`."""
    from c3po_plugin.build.cli_media import add_media_build_commands

    build = sub.add_parser("build", help="build a C3PO benchmark from your own base media, stage by stage")
    stages = build.add_subparsers(dest="stage", required=True)
    add_media_build_commands(stages)


def main(argv: Sequence[str] | None = None) -> int:
    from sceval_plugin.cli import run_command

    use_offline_defaults()
    return run_command("c3po", build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
