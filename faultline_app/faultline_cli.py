"""``faultline``: one command over the project's tools.

    faultline eval --model sceval_reference --tasks sceval_panel --output_path out/   (= faultline-eval)

Each subcommand is a module in :data:`COMMANDS` exposing ``add_parser(sub)``, which adds
its parser with ``set_defaults(func=...)``; ``func(args)`` returns the exit status.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from c3po_plugin.mechanistic import cli as probe_cli
from faultline_app import share, viewer
from faultline_app.eval_cli import main as evaluate
from faultline_eval.core.flag_spellings import add_argument
from faultline_eval.core.preflight import FOLDER_TO_WRITE, RUN_FOLDER, check_existing_path, path_rules
from faultline_eval.core.run_status import command_main
from faultline_eval.model_wrappers.tiny_checkpoints import BUILDERS as TINY_CHECKPOINTS
from sceval_plugin.audit_options import add_audit_options, audit_options

# subcommand -> module with add_parser(sub); `eval` is forwarded whole to faultline-eval.
COMMANDS = {"probe": probe_cli, "view": viewer, "export": share}


def add_audit_parser(sub) -> None:
    """``faultline audit RUN... -o DIR [--min-models K]``: the modality-necessity audit of wrapped
    lmms-eval tasks (issue 27; ``sceval_plugin.report.audit_section``)."""
    audit = sub.add_parser(
        "audit",
        help="which items of a wrapped benchmark stay answerable without its audio, vision or text",
        description="Reads lmms-eval output folders of <base>__{clean,missing_*,shortcut_*}__var0 runs and writes "
        "audit_shares (table; each row states its metric's kind and what answerable means, and what could not be "
        "scored is a row with the reason), audit_items.csv (items answered with a modality removed by >= K models), "
        "audit_per_item.csv and audit_stacked.png/pdf.",
    )
    path_rules(
        audit.add_argument("runs", nargs="+", help="lmms-eval --output_path folders of wrapped tasks (any models)"),
        RUN_FOLDER,
    )
    path_rules(audit.add_argument("-o", "--output", required=True, help="folder for the audit"), FOLDER_TO_WRITE)
    audit.add_argument(
        "--min-models", type=int, metavar="K", help="list items answered under a control by >= K models (default: all)"
    )
    audit.add_argument("--no-figures", action="store_true", help="tables only")
    add_audit_options(audit)

    def run(args: argparse.Namespace) -> int:
        # heavy: pandas and matplotlib come with the report modules
        from sceval_plugin.report.audit_section import audit_report

        done = audit_report(
            args.runs,
            args.output,
            min_models=args.min_models,
            figures=not args.no_figures,
            **audit_options(args),
        )
        for note in done["notes"]:
            print(f"note: {note}", file=sys.stderr)
        print(f"wrote {len(done['written'])} files to {args.output}")
        return 0

    audit.set_defaults(func=run)


def add_tiny_model_parser(sub) -> None:
    """``faultline tiny-model {qwen2_5_omni,qwen3_omni} OUT``: write a tiny random checkpoint
    (:mod:`faultline_eval.model_wrappers.tiny_checkpoints`) to try the pipeline on a CPU."""
    parser = sub.add_parser(
        "tiny-model",
        help="write a tiny random Qwen-Omni checkpoint (answers are noise) to try the pipeline on a CPU",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Builds, offline, a tiny randomly initialised checkpoint: the real transformers model,\n"
        "processor and tokenizer classes with a few small layers (thinker only, no talker), under 1 MB,\n"
        "in about 10 s. Its answers are noise: it is for trying evaluations and the mechanistic probes\n"
        "on a CPU (the tests use it too). Load it with --model faultline_VARIANT.",
        epilog="""examples:
  faultline tiny-model qwen2_5_omni tiny-qwen-omni
  lmms-eval --model faultline_qwen2_5_omni --model_args pretrained=tiny-qwen-omni,device=cpu \\
      --tasks sceval_clean --limit 2 --gen_kwargs max_new_tokens=8
  faultline probe all --model faultline_qwen2_5_omni \\
      --model-args pretrained=tiny-qwen-omni,device=cpu,attn_implementation=eager \\
      --tasks c3po_ic_t1 --limit 2 --max-new-tokens 4 --output-path probes/tiny""",
    )
    parser.add_argument(
        "variant",
        choices=sorted(TINY_CHECKPOINTS),
        metavar="VARIANT",
        help="the model family; --model faultline_VARIANT loads it",
    )
    path_rules(
        parser.add_argument("out", type=Path, metavar="OUT", help="a new or empty folder for the checkpoint"),
        FOLDER_TO_WRITE,
    )

    def run(args: argparse.Namespace) -> int:
        out: Path = args.out  # a folder that can be written (checked before the command runs)
        if any(out.iterdir()):
            raise ValueError(f"tiny-model: OUT {out} is not empty; remove it or give a new folder")
        TINY_CHECKPOINTS[args.variant](out)
        print(f"wrote a tiny random faultline_{args.variant} checkpoint to {out} (its answers are noise)")
        return 0

    parser.set_defaults(func=run)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="faultline",
        description="faultline-eval: where omni-modal models break. "
        "`faultline eval ...` runs lmms-eval's evaluation (as faultline-eval).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser(
        "eval", help="lmms-eval's evaluation with an honest exit status (faultline-eval's flags)", add_help=False
    )
    add_wrap_parser(sub)
    for module in COMMANDS.values():
        module.add_parser(sub)
    add_audit_parser(sub)
    add_tiny_model_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["eval"]:
        return evaluate(argv[1:])
    return command_main("faultline", build_parser, argv)


def add_wrap_parser(sub) -> None:
    """``faultline wrap TASK... [--suite S] [--conditions ...] [--write] [--data TASK=PATH] [--include-path DIR]
    [--frames F]``:
    list (and write) lmms-eval tasks wrapped with SCEval conditions (issue 27;
    :func:`faultline_eval.tasks.wrap_configs.wrap`)."""
    parser = sub.add_parser(
        "wrap",
        help="wrap lmms-eval tasks with SCEval conditions: list or write <task>__<condition>__var<k>",
        description="Lists the wrapped task names (run them with --tasks <task>__<condition> or "
        "<task>__<suite>) and the conditions that do not apply to each task, and why. lmms-eval runs "
        "also write missing names on request; --write writes them now.",
    )
    parser.add_argument(
        "tasks",
        nargs="+",
        metavar="TASK",
        help="lmms-eval task names: built-in (worldsense, mme, ...) or defined under --include_path",
    )
    parser.add_argument(
        "--suite", action="append", default=[], help="SCEval tag whose conditions to wrap (default: sceval_panel)"
    )
    parser.add_argument("--conditions", nargs="+", default=[], metavar="ID", help="SCEval condition ids or aliases")
    parser.add_argument("--write", action="store_true", help="write the task files (else only list them)")
    parser.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="TASK=PATH",
        help="a local copy of TASK's dataset to read: a save_to_disk folder, a hub-layout folder (parquet, json "
        "or csv, with its README's configs or a folder per config) or one data file (docs/how-to/wrap-a-task.md)",
    )
    add_argument(  # lmms-eval's spelling parses too
        parser,
        "--include-path",
        old=["--include_path"],
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of your own task YAMLs (what lmms-eval's --include_path gets); repeat for several",
    )
    parser.add_argument(
        "--frames",
        choices=("source", "sceval_grid"),
        default=None,
        help="how a video file is handed to the model: every frame of the source at its own rate and size, "
        "corrupted (source; the default, so a model sampling frames itself sees what the base task gives it), "
        "or SCEval's frame grid (sceval_grid: 1 frame/s, at most 8). Recorded in the folder's manifest and "
        "each trial; default: as the folder has it, else source",
    )

    def run(args: argparse.Namespace) -> int:
        try:
            data = dict(entry.split("=", 1) for entry in args.data)
        except ValueError:
            raise SystemExit(f"faultline wrap: --data takes TASK=PATH, got {args.data}") from None
        for task, path in data.items():  # every local copy, before any task is indexed
            check_existing_path(path, f"--data {task}=PATH", kind="file_or_folder")
        for folder in args.include_path:
            check_existing_path(folder, "--include-path", kind="folder")
        from faultline_eval.tasks import wrap_configs  # heavy: the condition catalogue and the adapters

        try:
            conditions = wrap_configs.requested_conditions(args.suite, args.conditions)
            plans = wrap_configs.wrap(
                args.tasks,
                conditions,
                write_files=args.write,
                data=data,
                include_paths=args.include_path,
                frames=args.frames,
            )
        except (KeyError, ValueError, OSError) as exc:  # unknown names, unreadable copies, a bad --frames
            print(f"faultline wrap: error: {exc}", file=sys.stderr)
            return 1
        for plan in plans:
            names = [n for ns in plan.tasks.values() for n in ns]
            print(
                f"{plan.base} ({plan.adapter}): {len(plan.tasks)} conditions, {len(names)} tasks"
                + (f", written to {plan.folder}" if plan.written else "")
            )
            for suite in args.suite if plan.tasks else ():
                print(f"  --tasks {plan.base}__{suite} runs the {suite} conditions that apply")
            for condition, tasks in plan.tasks.items():
                print(f"  {plan.base}__{condition}: {' '.join(tasks)}")
            if plan.tasks:
                print(f"  the base task on the same data (the report's base row): {plan.unwrapped}")
            for condition, reason in plan.not_applied.items():
                print(f"  not applied: {condition}: {reason}")
        return 0

    parser.set_defaults(func=run)


if __name__ == "__main__":
    sys.exit(main())
