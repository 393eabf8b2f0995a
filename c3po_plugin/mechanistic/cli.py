"""``faultline probe e1|e2|e3|all ...`` and ``faultline probe report OUT... -o REPORT``.

    faultline probe all --model faultline_qwen2_5_omni \\
        --model-args pretrained=Qwen/Qwen2.5-Omni-3B,attn_implementation=eager --tasks c3po_all \\
        --output-path probes/qwen3b [--limit N] [--references refs.jsonl]
    faultline probe report probes/qwen3b probes/minicpm -o probes/report [--verdicts eval_out/]

The flags were once snake_case (``--output_path``, ...); those spellings still work, with a
deprecation note (:mod:`faultline_eval.core.flag_spellings`).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from c3po_plugin.mechanistic.attention import MID_LAYERS_DEFAULT
from c3po_plugin.mechanistic.fidelity import MAX_NEW_TOKENS
from c3po_plugin.mechanistic.lemmas import LEMMATIZERS
from c3po_plugin.mechanistic.runner import PROBES, PROMPTS, run_probes
from faultline_eval.core.flag_spellings import add_argument
from faultline_eval.core.preflight import FOLDER_TO_WRITE, INPUT_FILE, RUN_FOLDER, PathRule, path_rules
from faultline_eval.core.run_status import TaskOutcome, add_failure_rate_argument, report
from faultline_eval.core.store import read_records


def _mid_layers(text: str) -> tuple[float, float]:
    try:
        low, high = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LOW:HIGH relative depths, e.g. 0.33:0.67, got {text!r}") from None
    if not 0 <= low <= high <= 1:
        raise argparse.ArgumentTypeError(f"need 0 <= LOW <= HIGH <= 1, got {text!r}")
    return low, high


def _probe(args: argparse.Namespace) -> int:
    probes = PROBES if args.probe == "all" else (args.probe,)
    summary = run_probes(
        probes,
        args.model,
        args.model_args,
        args.tasks.split(","),
        args.output_path,
        limit=args.limit,
        references=args.references,
        max_new_tokens=args.max_new_tokens,
        mid_layers=args.mid_layers,
        lemmatizer=args.lemmatizer,
        mask=[m for m in (args.mask or "").split(",") if m],
        lens_video=args.lens_video,
        prompt=args.prompt,
        include_defaults=args.include_defaults,
    )
    if summary["blocked"]:
        print(f"{args.model}: E1/E2 blocked: {summary['blocked']}")
    for probe, counts in summary["counts"].items():
        print(f"{probe}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return probe_status(args.output_path, summary["counts"], args.max_failure_rate)


def probe_status(output_path: str, probes, max_failure_rate: float) -> int:
    """The run's summary and exit status (faultline_eval.core.run_status) over each probe's records so
    far (resumed runs included): ``ok`` is an answer, ``error`` a failure; a ``no_reference``
    record (nothing to score against) is listed, not counted, and a probe with only those is
    left out of the exit status."""
    outcomes = []
    for probe in probes:
        # the store's reader: damaged lines named and skipped, a torn tail left for the next run
        records = read_records(Path(output_path) / f"{probe}.jsonl")
        failures = Counter(r["status"] for r in records if r["status"] != "ok")
        applicable = len(records) - failures["no_reference"]
        if applicable == 0:
            print(f"faultline probe: {probe}: {failures['no_reference']} doc(s) with no reference to score against")
            continue
        outcomes.append(
            TaskOutcome(
                f"probe {probe}",
                applicable,
                applicable - failures["error"],
                failures,
                failures["error"],
                next((r.get("detail", "") for r in records if r["status"] == "error"), ""),
            )
        )
    return report(outcomes, max_failure_rate, who="faultline probe")


def _report(args: argparse.Namespace) -> int:
    # heavy: pandas and scipy (the probe tables); `faultline --help` and the probe runs start without them
    from c3po_plugin.mechanistic.report import write_report

    written = write_report(args.runs, args.output, verdicts=args.verdicts)
    print(json.dumps(written["files"], indent=2))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "probe",
        help="mechanistic probes on open models: E1 attention, E2 logit lens, E3 caption fidelity (C3PO App. F)",
    )
    probes = parser.add_subparsers(dest="probe", required=True, metavar="PROBE")
    for name, help_text in (
        ("e1", "attention budget per modality and layer (eager attention)"),
        ("e2", "logit-lens latent recovery at audio/image positions"),
        ("e3", "caption fidelity: AUDIO/IMAGE description vs references"),
        ("all", "E1, E2 and E3"),
    ):
        p = probes.add_parser(name, help=help_text)
        p.add_argument("--model", required=True, help="our lmms-eval adapter id, e.g. faultline_qwen2_5_omni")
        add_argument(
            p,
            "--model-args",
            old=["--model_args"],
            default="",
            help="as for lmms-eval (E1 needs attn_implementation=eager)",
        )
        p.add_argument("--tasks", required=True, help="comma-separated C3PO or SCEval task names")
        path_rules(
            add_argument(
                p,
                "--output-path",
                old=["--output_path"],
                required=True,
                help="folder for <probe>.jsonl and run.json (resumable)",
            ),
            FOLDER_TO_WRITE,
        )
        p.add_argument("--limit", type=int, default=None, help="first N docs of each task")
        path_rules(
            p.add_argument(
                "--references", default=None, help="JSONL of {sample_id, transcript, image_description} for E2/E3"
            ),
            INPUT_FILE,
        )
        add_argument(
            p,
            "--max-new-tokens",
            old=["--max_new_tokens"],
            type=int,
            default=MAX_NEW_TOKENS,
            help="E1/E3 generation cap (128)",
        )
        add_argument(
            p,
            "--mid-layers",
            old=["--mid_layers"],
            type=_mid_layers,
            default=MID_LAYERS_DEFAULT,
            help="E1 middle-layer range as relative depths LOW:HIGH (default 0.33:0.67)",
        )
        p.add_argument(
            "--lemmatizer",
            choices=LEMMATIZERS,
            default="simplemma",
            help="E2/E3 content-word lemmatiser: simplemma (default), spacy (the paper's; needs "
            "en_core_web_sm) or rules (suffix rules)",
        )
        p.add_argument("--mask", default="", help="E1 ablation: modalities no query may attend to, e.g. audio")
        add_argument(
            p,
            "--lens-video",
            old=["--lens_video"],
            action="store_true",
            help="E2 also at video positions (masked by default)",
        )
        p.add_argument(
            "--prompt",
            choices=PROMPTS,
            default="describe",
            help="E1/E2 input: the AUDIO/IMAGE description prompt (the paper's E1) or the task's question",
        )
        add_argument(
            p,
            "--include-defaults",
            old=["--include_defaults"],
            action="store_true",
            help="also index lmms-eval's own tasks",
        )
        add_failure_rate_argument(p)
        p.set_defaults(func=_probe)
    report_parser = probes.add_parser("report", help="the paper's probe tables from one or more probe folders")
    path_rules(
        report_parser.add_argument("runs", nargs="+", help="probe output folders (one per model)"),
        PathRule("folder", holds="*.jsonl", what="probe records (e1.jsonl, e2.jsonl, e3.jsonl)"),
    )
    path_rules(report_parser.add_argument("-o", "--output", required=True, help="report folder"), FOLDER_TO_WRITE)
    path_rules(
        report_parser.add_argument(
            "--verdicts",
            nargs="*",
            default=None,
            help="lmms-eval C3PO output folders: judge correctness for the entropy-correctness tables",
        ),
        RUN_FOLDER,
    )
    report_parser.set_defaults(func=_report)
