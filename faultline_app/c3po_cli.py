"""``c3po``: the C3PO command line.

c3po templates                               the template registry
c3po check [SOURCE]                          validate items and probe media, list every problem
c3po tasks tasks/c3po [--write]              check or regenerate the task folder
c3po judge RUN_DIR... --judge SPEC -o verdicts.jsonl
                                             re-grade finished runs with another judge
c3po judge-agreement A.jsonl B.jsonl         agreement and Cohen's kappa of two judges per model
c3po report RUN_DIR... -o OUT/ [--verdicts FILE]
c3po build {select,generate,classify,synthesize,audit,sample,import-answers,export,all,status} BUILD_DIR
                                             build a new C3PO benchmark from base media (paper §3.1)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from c3po_plugin.construction import pipeline
from c3po_plugin.construction.ledger import format_reports
from c3po_plugin.construction.sample import import_answers
from c3po_plugin.construction.select import POOL
from c3po_plugin.construction.settings import DEFAULTS, PAPER_AUDITOR, PAPER_MODELS, ROLE_ENV
from c3po_plugin.construction.specs import registry as specs
from c3po_plugin.data.records import check_media
from c3po_plugin.data.sources import load_source, media_paths
from c3po_plugin.templates import registry
from faultline_app.viewer import add_html_arguments, check_html_arguments, write_report_site
from faultline_eval.core.intake import check_command
from faultline_eval.core.preflight import (
    FILE_TO_WRITE,
    FOLDER_TO_WRITE,
    INPUT_FILE,
    ITEMS_SOURCE,
    RUN_FOLDER,
    PathRule,
    path_rules,
)
from faultline_eval.core.run_status import add_failure_rate_argument, command_main
from faultline_eval.judges import make_judge
from faultline_eval.tasks.c3po_configs import out_of_date, write_task_files


def cmd_templates(args: argparse.Namespace) -> int:
    rows = [("id", "paper id", "name", "category", "tier", "base", "modalities", "paper n", "task")]
    for t in registry():
        spec = specs().find(t.id)
        rows.append(
            (
                t.id,
                spec.paper_id if spec else "-",
                t.name,
                t.category.upper(),
                str(t.tier),
                t.base_modality,
                "+".join(m for m in ("video", "audio", "image", "text") if m in t.modalities),
                "" if t.paper_count is None else str(t.paper_count),
                t.task_name,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    if args.logic:
        for t in registry():
            print(f"\n{t.id} {t.name}: {t.logical_form}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    return check_command(load_source(args.source), check_media, media_paths)


def cmd_tasks(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    if args.write:
        print(f"wrote {len(write_task_files(folder, registry()))} files to {folder}")
        return 0
    drift = out_of_date(folder, registry())
    for name in drift:
        print(f"out of date: {folder / name}")
    return 1 if drift else 0


def cmd_judge(args: argparse.Namespace) -> int:
    # heavy: pandas and scipy (the trial tables); `c3po --help` and the light commands start without them
    from c3po_plugin.report.verdict_files import regrade

    judge = make_judge(args.judge)
    counts = regrade(args.runs, judge, args.output)
    print(
        f"{judge.judge_id}: {counts['trials']} trials ({counts['unanswered']} without an answer) and "
        f"{counts['human']} human answers: {counts['exact_match']} by exact match, {counts['yes']} YES, "
        f"{counts['no']} NO, {counts['errors']} judge errors -> {args.output}"
    )
    return 0


def cmd_agreement(args: argparse.Namespace) -> int:
    # heavy: pandas and scipy (the trial tables); `c3po --help` and the light commands start without them
    from c3po_plugin.report.verdict_files import agreement

    result = agreement(args.a, args.b, include_exact=args.include_exact)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0 if result["compared"] else 1
    print(
        f"{result['judge_a']} vs {result['judge_b']}: {result['compared']} trials decided by both judges"
        + (" (exact matches counted as YES by both)" if result["include_exact"] else "")
    )
    width = max([len(r["model"]) for r in result["per_model"]] + [5])
    print(f"  {'model'.ljust(width)}  trials  agreement  kappa  (A/B: YES/YES YES/NO NO/YES NO/NO)")
    for r in result["per_model"]:
        c = r["confusion"]
        print(
            f"  {r['model'].ljust(width)}  {r['compared']:6d}  {r['agreement']:9.3f}  {r['kappa']:5.2f}  "
            f"({c['YES/YES']} {c['YES/NO']} {c['NO/YES']} {c['NO/NO']})"
        )
    kappa, agree = result["kappa"], result["agreement"]
    print(
        f"across {result['models']} evaluated model(s) (Human left out): agreement mean {agree['mean']:.3f}; "
        f"kappa mean {kappa['mean']:.2f}, min {kappa['min']:.2f}, max {kappa['max']:.2f}"
    )
    pooled = result["pooled"]
    print(f"pooled over every trial: agreement {pooled['agreement']:.3f}, kappa {pooled['kappa']:.2f}")
    print(
        f"left out: {'' if result['include_exact'] else str(result['exact_match_trials']) + ' exact-match trials, '}"
        f"{result['either_failed']} with a judge error, {result['only_in_a']} only in A, {result['only_in_b']} only in B"
    )
    return 0 if result["compared"] else 1


def cmd_report(args: argparse.Namespace) -> int:
    # heavy: pandas and scipy (the trial tables); `c3po --help` and the light commands start without them
    from c3po_plugin.report import build_report

    done = build_report(args.runs, args.output, b=args.bootstrap, seed=args.seed, verdicts=args.verdicts)
    print(done["summary"])
    if args.html:
        write_report_site(args, "c3po")
    return 0


BUILD_HELP = """Build a C3PO benchmark from your own base media (paper §3.1, App. A-E, G, I).

Every stage reads the ledgers of the stages before it in BUILD_DIR and appends to its own
(BUILD_DIR/ledger/<stage>.jsonl: ok / rejected with the reason / failed, retried when run again),
so each stage resumes after a kill and re-pays no finished model call. A rejection is final and
carried to later stages as a rejection with its reason; a failure is retried by the next run.
Every run ends with a summary per stage (items, ok, rejected by reason, failed by category with
the first error, waiting) and exits 1 when a stage's failed share is above --max-failure-rate.
Stages in order:

  select      pick 100-250 base media candidates per template from a pool, clip / mute / extract audio
  generate    the generator LLM writes each item (App. I prompt, JSON schema, temperature 1.0);
              rules enforced: fit score >= threshold, query <= 12 words, no banned meta-words
  classify    type each item's audio TTS or SFX, with an SFX prompt and a 1-10 s duration (App. B)
  synthesize  speech and sound effects (and images) for the items
  audit       an auditor model checks each item with its real media: four pillars + bypass tests,
              ACCEPT/REJECT, difficulty 1-10 (App. C)
  sample      the stratified human-evaluation sheet (App. E); import-answers reads it back
  export      a datasets dataset the C3PO tasks load (C3PO_SOURCE=...), funnel report, Fig. 7
  all         every stage in order;  status  the per-template table and each stage's cost

Model specs (--generator, --classifier, --auditor): gemini:<model>[,base_url=...] (key from
GEMINI_API_KEY) or lmms:<model>,<model_args> (any lmms-eval model, e.g.
lmms:faultline_qwen3_omni,pretrained=Qwen/Qwen3-Omni-30B-A3B-Thinking). The auditor and audio
typer default to $C3PO_BUILD_AUDITOR / $C3PO_BUILD_CLASSIFIER, else the generator's model; an
auditor that is the generator's model is warned about (App. C audits with another model).
Settings a stage ran with are kept in BUILD_DIR/settings.json and reused by later runs.
"""


def cmd_build(args: argparse.Namespace) -> int:
    build_dir = Path(args.build_dir)
    templates = args.templates.split(",") if getattr(args, "templates", None) else None
    if args.stage == "status":
        print(pipeline.summary(build_dir, templates))
        print("\n" + format_reports(pipeline.stage_reports(build_dir, pipeline.STAGES, templates)))
        return 0
    if args.stage == "import-answers":
        print(import_answers(build_dir, args.sheet))
        return 0
    options = {k: v for k, v in vars(args).items() if k in BUILD_OPTIONS and v is not None}
    if args.stage == "all":
        pipeline.run_all(build_dir, templates=templates, **options)
        return pipeline.finish(build_dir, pipeline.STAGES, templates, args.max_failure_rate)
    wants = {
        "select": ("pool", "per_template", "seed"),
        "generate": ("generator", "fit_threshold", "concurrency"),
        "classify": ("classifier", "concurrency"),
        "synthesize": ("speech", "sfx", "image"),
        "audit": ("auditor", "concurrency"),
        "sample": ("per_bucket", "annotators", "seed"),
        "export": ("out", "push_to_hub"),
    }[args.stage]
    kwargs = {k: options[k] for k in wants if k in options}
    if args.stage not in ("sample", "export"):
        kwargs["templates"] = templates
    counts = pipeline.stage_function(args.stage)(build_dir, **kwargs)
    print(f"{args.stage}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if args.stage in pipeline.LLM_STAGES:
        print(pipeline.summary(build_dir, templates))
    return pipeline.finish(build_dir, (args.stage,), templates, args.max_failure_rate)


BUILD_OPTIONS = (
    "pool",
    "per_template",
    "seed",
    "generator",
    "fit_threshold",
    "concurrency",
    "classifier",
    "speech",
    "sfx",
    "image",
    "auditor",
    "per_bucket",
    "annotators",
    "out",
    "push_to_hub",
)


def _per_template(text: str) -> tuple[int, int]:
    """``MIN-MAX`` or ``MIN:MAX`` (or one number, both bounds) candidates per template."""
    match = re.fullmatch(r"\s*(\d+)\s*(?:[-:]\s*(\d+)\s*)?", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r}: use MIN-MAX or MIN:MAX, e.g. 100-250")
    low, high = int(match.group(1)), int(match.group(2) or match.group(1))
    if not 1 <= low <= high:
        raise argparse.ArgumentTypeError(f"{text!r}: need 1 <= MIN <= MAX")
    return low, high


def model_default(role: str) -> str:
    """What a build's ``--generator`` / ``--classifier`` / ``--auditor`` defaults to."""
    if role == "generator":
        return f"default: settings.json, else {DEFAULTS['generator']}"
    text = f"default: settings.json, else ${ROLE_ENV[role]}, else the generator's"
    if role == "auditor":
        return text + f" with a warning; the paper's: {PAPER_AUDITOR}"
    return text + f"; the paper used {PAPER_MODELS[role]}"


#: The ledger each stage reads: a stage run before it has nothing to work on (it would report 0 items and exit 0).
UPSTREAM = {
    "generate": "select",
    "classify": "generate",
    "synthesize": "classify",
    "audit": "synthesize",
    "sample": "audit",
    "export": "audit",
}


BUILD_DIR_HELP = {
    "select": "the build folder (created when missing)",
    "all": "the build folder (created when missing)",
    **{stage: f"the build folder, with the {upstream} ledger" for stage, upstream in UPSTREAM.items()},
}


def build_dir_rules(stage: str) -> tuple[PathRule, ...]:
    """What BUILD_DIR must be for ``stage``: ``select`` and ``all`` make it; a later stage needs
    the ledger of the stage before it; ``status`` and ``import-answers`` read an existing build."""
    if stage in ("select", "all"):
        return (FOLDER_TO_WRITE,)
    if stage in UPSTREAM:
        upstream = UPSTREAM[stage]
        ledger = PathRule(
            "folder", holds=f"ledger/{upstream}.jsonl", what=f"{upstream} ledger (run `c3po build {upstream}` first)"
        )
        return (ledger, FOLDER_TO_WRITE)
    return (PathRule("folder", holds="ledger/*.jsonl", what="build ledgers (is it a `c3po build` folder?)"),)


def add_build_parser(sub) -> None:
    build = sub.add_parser(
        "build",
        help="build a new C3PO benchmark from base media (c3po build -h)",
        description=BUILD_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    stages = build.add_subparsers(dest="stage", required=True)

    def stage(name: str, help: str, *, templates: bool = True) -> argparse.ArgumentParser:
        parser = stages.add_parser(name, help=help, description=help)
        path_rules(
            parser.add_argument("build_dir", help=BUILD_DIR_HELP.get(name, "the build folder")),
            *build_dir_rules(name),
        )
        if name not in ("status", "import-answers"):
            add_failure_rate_argument(parser)
        if templates:
            parser.add_argument(
                "--templates",
                help="comma-separated template ids, names or paper ids "
                "(IC02, InstructionalGapDetection, D_T1_001); default all",
            )
        parser.set_defaults(func=cmd_build)
        return parser

    def pool(parser, required: bool) -> None:
        path_rules(
            parser.add_argument("--pool", required=required, help="base media pool: a folder or a datasets dataset"),
            POOL,
        )
        parser.add_argument(
            "--per-template",
            type=_per_template,
            metavar="MIN-MAX",
            help="candidates per template, MIN-MAX or MIN:MAX (default 100-250, App. B)",
        )
        parser.add_argument("--seed", type=int, help="selection / sampling seed (default 0)")

    def model(parser, flag: str, what: str) -> None:
        parser.add_argument(
            f"--{flag}",
            help=f"{what} model spec: gemini:<model>[,base_url=...] or "
            f"lmms:<model>,<model_args> ({model_default(flag)})",
        )
        parser.add_argument("--concurrency", type=int, help="requests in flight (default 4)")

    def generate_options(parser) -> None:
        model(parser, "generator", "generator")
        parser.add_argument(
            "--fit-threshold",
            type=int,
            choices=range(1, 6),
            help="reject items whose fit score (#### S ####) is below this (default 3)",
        )

    def synth(parser) -> None:
        parser.add_argument("--speech", help="speech backend (default espeak)")
        parser.add_argument("--sfx", help="sound-effect backend (default procedural)")
        parser.add_argument("--image", help="image backend")

    def sampling(parser) -> None:
        parser.add_argument("--per-bucket", type=int, help="items per category x difficulty bucket (default 25)")
        parser.add_argument("--annotators", type=int, help="disjoint annotator subsets (default 3)")

    def export(parser) -> None:
        path_rules(
            parser.add_argument("--out", help="where the dataset goes (default BUILD_DIR/export)"), FOLDER_TO_WRITE
        )
        parser.add_argument("--push-to-hub", help="also push the dataset to this Hugging Face repo id")

    pool(stage("select", "pick base media candidates per template from a pool and process them"), True)
    generate_options(
        stage(
            "generate",
            "the generator LLM writes one item per candidate (App. I); rule breaks are rejected with the reason",
        )
    )
    model(
        stage("classify", "type each item's audio TTS or SFX (LLM; --classifier rules for the deterministic fallback)"),
        "classifier",
        "audio-typing",
    )
    synth(stage("synthesize", "synthesize each item's speech / sound effect / image"))
    model(
        stage("audit", "the auditor judges each item with its real media: ACCEPT/REJECT, difficulty 1-10"),
        "auditor",
        "auditor",
    )
    sampling_parser = stage("sample", "write the stratified human-evaluation sheet (App. E)", templates=False)
    sampling(sampling_parser)
    sampling_parser.add_argument("--seed", type=int, help="sampling seed (default 0)")
    answers = stage("import-answers", "read a filled human-evaluation sheet back into the items", templates=False)
    path_rules(answers.add_argument("sheet", help="the filled sheet (CSV)"), INPUT_FILE)
    export(
        stage(
            "export", "export accepted items as a datasets dataset, with the funnel report and Fig. 7", templates=False
        )
    )
    everything = stage("all", "run every stage in order (resumes a killed build)")
    pool(everything, False)
    generate_options(everything)
    everything.add_argument("--classifier", help=f"audio-typing model spec ({model_default('classifier')})")
    everything.add_argument("--auditor", help=f"auditor model spec ({model_default('auditor')})")
    synth(everything)
    sampling(everything)
    export(everything)
    stage("status", "print the per-template table and each LLM stage's cost")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="c3po", description="C3PO: cross-modal composition and conflict.")
    sub = parser.add_subparsers(dest="command", required=True)

    templates = sub.add_parser("templates", help="list the registered templates")
    templates.add_argument("--logic", action="store_true", help="also print each template's logical form")
    templates.set_defaults(func=cmd_templates)

    check = sub.add_parser("check", help="validate a source's items and media; list every problem by sample")
    path_rules(
        check.add_argument(
            "source", nargs="?", help="demo, a folder, items.jsonl/.parquet or hf:... (default $C3PO_SOURCE)"
        ),
        ITEMS_SOURCE,
    )
    check.set_defaults(func=cmd_check)

    tasks = sub.add_parser("tasks", help="check (default) or --write the generated lmms-eval task folder")
    path_rules(
        tasks.add_argument("folder", help="e.g. tasks/c3po in a source checkout"),
        PathRule("folder_to_write", only_with="write"),
        PathRule("folder", unless="write"),
    )
    tasks.add_argument(
        "--write", action="store_true", help="write the task files (else list the out-of-date ones; exit 1 if any)"
    )
    tasks.set_defaults(func=cmd_tasks)

    judge = sub.add_parser("judge", help="re-grade finished runs with a judge; writes a verdict file")
    path_rules(judge.add_argument("runs", nargs="+", help="lmms-eval --output_path folders"), RUN_FOLDER)
    judge.add_argument(
        "--judge", required=True, help="embedding | exact | lmms:<model>[:<model_args>] | gemini:<model>[,base_url=...]"
    )
    path_rules(judge.add_argument("-o", "--output", required=True, help="verdict file (JSONL)"), FILE_TO_WRITE)
    judge.set_defaults(func=cmd_judge)

    agree = sub.add_parser("judge-agreement", help="agreement rate and Cohen's kappa between two verdict files")
    path_rules(agree.add_argument("a", help="judge A's verdict file (JSONL, from `c3po judge`)"), INPUT_FILE)
    path_rules(agree.add_argument("b", help="judge B's verdict file (JSONL, from `c3po judge`)"), INPUT_FILE)
    agree.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    agree.add_argument(
        "--include-exact",
        action="store_true",
        help="count exact-match trials as YES by both judges (agreement on final grades)",
    )
    agree.set_defaults(func=cmd_agreement)

    report = sub.add_parser("report", help="tables and plots from lmms-eval output folders")
    path_rules(
        report.add_argument(
            "runs", nargs="+", help="lmms-eval --output_path folders (several runs of a model average)"
        ),
        RUN_FOLDER,
    )
    path_rules(report.add_argument("-o", "--output", required=True, help="folder for the report"), FOLDER_TO_WRITE)
    path_rules(
        report.add_argument("--verdicts", help="grade with this verdict file (from `c3po judge`) instead"),
        INPUT_FILE,
    )
    report.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
    report.add_argument("--seed", type=int, default=20261129, help="bootstrap resampling seed (default %(default)s)")

    add_html_arguments(report, ("c3po",), switch=True)
    report.set_defaults(func=cmd_report)
    add_build_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return command_main("c3po", build_parser, argv, check_html_arguments)


if __name__ == "__main__":
    sys.exit(main())
