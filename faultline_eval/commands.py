"""``faultline``: one command over the project's tools.

    faultline eval --model sceval_reference --tasks sceval_panel --output_path out/   (= faultline-eval)

Each subcommand is a module listed in :data:`COMMANDS` exposing ``add_parser(sub)``, which adds
its parser with ``set_defaults(func=...)``; ``func(args)`` returns the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from faultline_eval.cli import main as evaluate
from faultline_eval.core.offline import use_offline_defaults
from faultline_eval.core.run_status import run_command

# subcommand -> module with add_parser(sub); `eval` is forwarded whole to faultline-eval.
COMMANDS: dict[str, str] = {"probe": "c3po_plugin.mechanistic.cli", "view": "faultline_eval.viewer"}


def add_audit_parser(sub) -> None:
    """``faultline audit RUN... -o DIR [--min-models K]``: the modality-necessity audit of wrapped
    lmms-eval tasks (issue 27; ``sceval_plugin.report.audit_section``)."""
    audit = sub.add_parser(
        "audit",
        help="which items of a wrapped benchmark stay answerable without its audio, vision or text",
        description="Reads lmms-eval output folders of <base>__{clean,missing_*,shortcut_*}__var0 runs and writes "
        "audit_shares (table), audit_items.csv (items answered with a modality removed by >= K models), "
        "audit_per_item.csv and audit_stacked.png/pdf.",
    )
    audit.add_argument("runs", nargs="+", help="lmms-eval --output_path folders of wrapped tasks (any models)")
    audit.add_argument("-o", "--output", required=True, help="folder for the audit")
    audit.add_argument(
        "--min-models", type=int, metavar="K", help="list items answered under a control by >= K models (default: all)"
    )
    audit.add_argument("--no-figures", action="store_true", help="tables only")

    def run(args: argparse.Namespace) -> int:
        # heavy: pandas and matplotlib come with the report modules
        from sceval_plugin.report.audit_section import audit_report

        done = audit_report(args.runs, args.output, min_models=args.min_models, figures=not args.no_figures)
        for note in done["notes"]:
            print(f"note: {note}", file=sys.stderr)
        print(f"wrote {len(done['written'])} files to {args.output}")
        return 0

    audit.set_defaults(func=run)


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
    for module in COMMANDS.values():
        importlib.import_module(module).add_parser(sub)
    add_audit_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["eval"]:
        return evaluate(argv[1:])
    use_offline_defaults()
    return run_command("faultline", build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
