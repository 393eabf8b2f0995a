"""The media stages of ``c3po build``: select, synthesize, sample, import-answers, export.

    c3po build select BUILD_DIR --pool demo|FOLDER|hf:DATASET [--templates IC01,CC05] [--per-template 100:250] [--seed 0]
    c3po build synthesize BUILD_DIR [--speech espeak] [--sfx procedural] [--image caption-card]
    c3po build sample BUILD_DIR [--per-bucket 25] [--annotators 3] [--seed 0]
    c3po build import-answers BUILD_DIR SHEET.csv...
    c3po build export BUILD_DIR [-o OUT] [--push-to-hub USER/NAME] [--no-figures]

Each prints the stage's counts as JSON; a stage can be rerun at any time (it skips what is done).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _templates(text: str | None) -> list[str] | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def _per_template(text: str) -> tuple[int, int]:
    low, _, high = text.partition(":")
    try:
        return (int(low), int(high or low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or MIN:MAX, got {text!r}") from None


def _print(counts: dict) -> int:
    print(json.dumps(counts, indent=2, sort_keys=True))
    return 0


def cmd_select(args: argparse.Namespace) -> int:
    from c3po_plugin.build.select import run_select

    return _print(run_select(args.build_dir, pool=args.pool, templates=_templates(args.templates),
                             per_template=args.per_template, seed=args.seed))


def cmd_synthesize(args: argparse.Namespace) -> int:
    from c3po_plugin.build.synthesize import run_synthesize

    return _print(run_synthesize(args.build_dir, speech=args.speech, sfx=args.sfx, image=args.image,
                                 templates=_templates(args.templates)))


def cmd_sample(args: argparse.Namespace) -> int:
    from c3po_plugin.build.sample import run_sample

    return _print(run_sample(args.build_dir, per_bucket=args.per_bucket, annotators=args.annotators, seed=args.seed,
                             templates=_templates(args.templates)))


def cmd_import_answers(args: argparse.Namespace) -> int:
    from c3po_plugin.build.sample import SheetError, import_answers

    status = 0
    for sheet in args.sheets:  # each sheet is all-or-nothing on its own
        try:
            print(json.dumps(import_answers(args.build_dir, sheet)))
        except SheetError as exc:
            print(f"error: {exc}")
            status = 1
    return status


def cmd_export(args: argparse.Namespace) -> int:
    from c3po_plugin.build.export import run_export

    return _print(run_export(args.build_dir, out=args.output, push_to_hub=args.push_to_hub,
                             templates=_templates(args.templates), figures=not args.no_figures))


def add_media_build_commands(build_sub: argparse._SubParsersAction) -> None:
    """Add the media stages to the ``c3po build`` subcommand's subparsers."""
    def stage(name: str, help: str, func) -> argparse.ArgumentParser:
        parser = build_sub.add_parser(name, help=help)
        parser.add_argument("build_dir", type=Path, help="the build directory")
        parser.set_defaults(func=func)
        return parser

    select = stage("select", "pick and process base media per template from a pool", cmd_select)
    select.add_argument("--pool", required=True, help="demo | a folder with annotations.jsonl/.csv | hf:<dataset>[@split]")
    select.add_argument("--templates", help="comma-separated template ids, names or paper ids (default: all)")
    select.add_argument("--per-template", type=_per_template, default=(100, 250), metavar="MIN:MAX",
                        help="candidates per template (default 100:250, App. B)")
    select.add_argument("--seed", type=int, default=0)

    synth = stage("synthesize", "make each generated sample's audio and image", cmd_synthesize)
    synth.add_argument("--speech", default="espeak", help="espeak (default) | qwen3-tts[:model]")
    synth.add_argument("--sfx", default="procedural", help="procedural (default) | audioldm2[:model]")
    synth.add_argument("--image", default="caption-card", help="caption-card (default) | diffusers[:model]")
    synth.add_argument("--templates")

    sample = stage("sample", "draw the human-evaluation sample (App. E) and write the annotator sheets", cmd_sample)
    sample.add_argument("--per-bucket", type=int, default=25)
    sample.add_argument("--annotators", type=int, default=3)
    sample.add_argument("--seed", type=int, default=0)
    sample.add_argument("--templates")

    answers = stage("import-answers", "read filled annotator sheets back as human answers", cmd_import_answers)
    answers.add_argument("sheets", nargs="+", type=Path)

    export = stage("export", "write the accepted items as a dataset, the funnel and the difficulty histogram",
                   cmd_export)
    export.add_argument("-o", "--output", type=Path, help="dataset folder (default BUILD_DIR/export)")
    export.add_argument("--push-to-hub", metavar="REPO_ID", help="also upload it as a Hub dataset (token from the env)")
    export.add_argument("--templates")
    export.add_argument("--no-figures", action="store_true")
