"""``sceval``: the SCEval command line.

sceval operators                         list operators and their severity tables
sceval check [SOURCE]                    validate items and decode media, list every problem
sceval corrupt photo.png --op noise --severity 70 -o noisy.png
sceval corrupt clip.mp4 --grid -o clip-grid.png
sceval corrupt --text "Which shape moves?" --op word_shuffle --severity 50
sceval corrupt --probes temporal --sample demo-count-03 -o probes.png   mechanism probes on one item
sceval demo -o demo_out/                 contact sheets for a built-in synthetic sample
sceval prompt-subset RUN_DIR --model M   the G.6 prompt-robustness cells from M's own results
sceval serve-limits --tasks T            the --limit-mm-per-prompt a vLLM server needs for tasks T
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from faultline_app.viewer import add_html_arguments, check_html_arguments, write_report_site
from faultline_eval.core import decode_cache, media
from faultline_eval.core.flag_spellings import add_argument
from faultline_eval.core.intake import check_command, read_text
from faultline_eval.core.preflight import (
    FOLDER_TO_WRITE,
    INPUT_FILE,
    ITEMS_SOURCE,
    RUN_FOLDER,
    PathRule,
    path_rules,
)
from faultline_eval.core.run_status import command_main
from faultline_eval.core.settings import SCEVAL_DECODE_CACHE_GB
from faultline_eval.model_wrappers.openai_client import FRAMES_AS, mm_counts
from faultline_eval.tasks import wrapped_media
from faultline_eval.tasks.sceval_configs import is_builtin, out_of_date, write_task_files
from sceval_plugin import operators
from sceval_plugin import probe_conditions as probes
from sceval_plugin.audit_options import add_audit_options, audit_options
from sceval_plugin.conditions import catalogue
from sceval_plugin.construction.cli import add_build_parser
from sceval_plugin.contact_sheet import grid, probe_sheet
from sceval_plugin.data.records import check_media
from sceval_plugin.data.sceval_published import DEFAULT_REFERENCE
from sceval_plugin.data.sources import load_source, media_paths
from sceval_plugin.demo_sample import make_demo_sample
from sceval_plugin.operators import SEVERITIES
from sceval_plugin.sceval_environment import SCEVAL_WRAPPED_MEDIA_GB
from sceval_plugin.smoke import run_smoke, verdict


def _load(args: argparse.Namespace) -> tuple[str, Any, str, list[str]]:
    """(modality, data, default output stem, notes) for the CLI input."""
    if args.text is not None:
        return "text", args.text, "text", []
    if args.input is None:
        raise SystemExit("sceval corrupt: give an INPUT file or --text")
    path = Path(args.input)
    suffix = path.suffix.lower()
    if suffix in media.IMAGE_SUFFIXES:
        image, notes = media.read_image(path)
        return "vision", image, path.stem, notes
    if suffix in media.VIDEO_SUFFIXES:
        frames, times, notes = media.read_video_frames(
            path, fps=args.fps, max_frames=args.max_frames, sampling=args.frame_sampling
        )
        note = f"{path.name}: {len(frames)} frames at " + ", ".join(f"{t:.2f}s" for t in times)
        return "vision", frames, path.stem, [*notes, note]
    if suffix in media.AUDIO_SUFFIXES:
        wave, _, notes = media.read_audio(path)
        return "audio", wave, path.stem, notes
    if suffix == ".txt":
        return "text", read_text(path).strip(), path.stem, []
    kinds = media.IMAGE_SUFFIXES + media.VIDEO_SUFFIXES + media.AUDIO_SUFFIXES + (".txt",)
    raise media.MediaError(f"{path}: unsupported file type {suffix!r}; supported: {' '.join(kinds)}")


def _write(modality: str, data: Any, out: Path, *, is_clip: bool) -> str:
    if modality == "text":
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(data + "\n", encoding="utf-8")
        return str(out)
    if modality == "audio":
        return str(media.write_audio(out, data))
    if is_clip:
        written = media.write_frames(out, data)
        return f"{out}/ ({len(written)} PNG frames)"
    return str(media.write_image(out, data))


def cmd_probe_sheet(args: argparse.Namespace) -> int:
    """``sceval corrupt --probes FAMILY|all --sample ID``: the probe contact sheet of one item."""
    source = load_source(args.source)
    items = {it.sample_id: it for it in source.items}
    sample = args.sample or next(iter(items))
    if sample not in items:
        raise SystemExit(f"sceval corrupt: no sample {sample!r} in {source.spec}")
    wanted = [
        c
        for c in catalogue()
        if c.probe is not None and args.probes in ("all", probes.get(c.probe.name).family, c.probe.name)
    ]
    if not wanted:
        raise SystemExit(
            f"sceval corrupt: --probes {args.probes!r} names no probe family or probe "
            f"(families: {', '.join(probes.PROBE_FAMILIES)})"
        )
    sheet = probe_sheet(
        items[sample],
        wanted,
        probes.DonorPicker(source.items),
        title=f"SCEval probes ({args.probes}) on {sample} from {source.spec}",
    )
    out = Path(args.output or f"{sample}.probes-{args.probes}.png")
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out)
    print(f"wrote {out} ({sheet.width}x{sheet.height}, {len(wanted)} probe conditions)")
    return 0


def cmd_corrupt(args: argparse.Namespace) -> int:
    if args.probes:
        return cmd_probe_sheet(args)
    modality, data, stem, notes = _load(args)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    key = args.key or (Path(args.input).name if args.input else "text")
    if args.grid:
        names = args.ops.split(",") if args.ops else None
        sheet = grid(data, modality, names=names, variant=args.variant, key=key, title=f"{stem}  (key={key})")
        out = Path(args.output or f"{stem}.grid.png")
        out.parent.mkdir(parents=True, exist_ok=True)
        sheet.save(out)
        print(f"wrote {out} ({sheet.width}x{sheet.height})")
        return 0
    if not args.op or args.severity is None:
        raise SystemExit("sceval corrupt: give --op and --severity, or --grid")
    spec = operators.get(args.op)
    if spec.modality != modality:
        raise SystemExit(f"sceval corrupt: {args.op!r} is a {spec.modality} operator but the input is {modality}")
    result = operators.apply(args.op, data, severity=args.severity, variant=args.variant, key=key)
    label = f"{args.op} severity={args.severity} ({spec.table.parameter} = {spec.parameter(args.severity):g}) variant={args.variant} key={key}"
    if spec.stochastic:
        label += f" seed-scheme={operators.seed_scheme()}"
    if modality == "text" and not args.output:
        print(f"# {label}", file=sys.stderr)
        print(result)
        return 0
    is_clip = modality == "vision" and result.ndim == 4
    suffix = {"text": ".txt", "audio": ".wav", "vision": "" if is_clip else ".png"}[modality]
    out = Path(args.output or f"{stem}.{args.op}-s{args.severity}-v{args.variant}{suffix}")
    print(f"{label}\nwrote {_write(modality, result, out, is_clip=is_clip)}")
    return 0


def cmd_operators(args: argparse.Namespace) -> int:
    print(f"{'operator':<16}{'modality':<8}{'variants':>9}  parameter: " + " / ".join(map(str, SEVERITIES)))
    for modality in operators.MODALITIES:
        for name in operators.names(modality):
            spec = operators.get(name)
            values = " / ".join(f"{spec.parameter(s):g}" for s in SEVERITIES)
            print(f"{name:<16}{modality:<8}{spec.variants:>9}  {spec.table.parameter}: {values}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    sample = make_demo_sample()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    media.write_frames(out / "clean_frames", sample.frames)
    media.write_audio(out / "clean_audio.wav", sample.audio)
    (out / "question.txt").write_text(sample.question + "\n", encoding="utf-8")
    for modality, data in (("vision", sample.frames), ("audio", sample.audio), ("text", sample.question)):
        path = out / f"{modality}_grid.png"
        grid(data, modality, key=sample.key, title=f"SCEval {modality} operators on {sample.key}").save(path)
        print(f"wrote {path}")
    print(f"clean media in {out}/clean_frames, {out}/clean_audio.wav, {out}/question.txt")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    return check_command(load_source(args.source), check_media, media_paths)


def cmd_conditions(args: argparse.Namespace) -> int:
    rows = [c for c in catalogue() if args.block in (None, c.block)]
    table = [("condition id", "task", "block", "operators@severity / control / probe", "variants", "notes")]
    for c in rows:
        ops = (
            ", ".join(f"{x.operator}@{x.severity}" for x in c.corruptions)
            or c.control
            or (c.probe and f"{c.probe.name}={c.probe.parameter}")
            or "-"
        )
        notes = ", ".join(
            filter(
                None,
                [
                    c.role,
                    *c.suites,
                    c.prompt_id if c.prompt != "json" else "",
                    f"order {c.option_order}" if c.block == "option_order" else "",
                    *(f"alias {a}" for a in c.aliases),
                ],
            )
        )
        table.append((c.id, c.task_name, c.block, ops, str(c.variants), notes))
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[5])
    print(f"{len(rows)} condition(s)")
    return 0


def cmd_tasks(args: argparse.Namespace) -> int:
    conditions = [c for c in catalogue() if is_builtin(c)]
    folder = Path(args.folder)
    if args.write:
        written = write_task_files(folder, conditions)
        print(f"wrote {len(written)} files to {folder}")
        return 0
    drift = out_of_date(folder, conditions)
    for name in drift:
        print(f"out of date: {folder / name}")
    return 1 if drift else 0


def _confidence_values(text: str) -> dict[str, float]:
    """``low=0.25,medium=0.5,high=0.9`` -> a level -> probability mapping."""
    values = {}
    for part in text.split(","):
        level, _, value = part.partition("=")
        try:
            values[level.strip().lower()] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected LEVEL=PROBABILITY pairs, got {part!r}") from None
        if not 0 <= values[level.strip().lower()] <= 1:
            raise argparse.ArgumentTypeError(f"{part!r}: a probability is between 0 and 1")
    return values


def cmd_report(args: argparse.Namespace) -> int:
    # heavy: pandas and scipy (the trial tables); `sceval --help` and the light commands start without them
    from sceval_plugin.metrics.diagnostics import DiagnosticOptions
    from sceval_plugin.metrics.protocol import catalogue_info  # heavy: as above
    from sceval_plugin.report import build_report  # heavy: as above
    from sceval_plugin.report.diagnostics_section import read_families, read_humans  # heavy: as above

    options = DiagnosticOptions(
        families=read_families(args.families) if args.families else None,
        human_trials=read_humans(args.humans, catalogue_info()) if args.humans else None,
        shared_fraction=args.shared_hard,
        variant_ddof=0 if args.variant_std == "population" else 1,
        by_source=args.by_source,
        trust_reading=args.trust_reading,
        holm_families=args.holm_families,
        **({"confidence_values": args.confidence_values} if args.confidence_values else {}),
    )
    done = build_report(
        args.runs,
        args.output,
        b=args.bootstrap,
        seed=args.seed,
        delta_single=args.delta_single,
        model_pairs=not args.no_model_pairs,
        progress=not args.quiet,
        options=options,
        figures=not args.no_figures,
        cohort=args.cohort,
        strict=args.strict,
        audit=audit_options(args),
        robustness_reference=args.robustness_reference,
    )
    for note in done["notes"]:
        print(f"note: {note}", file=sys.stderr)
    left_out = done["left_out"]
    print(
        f"{done['trials']} trials of {len(done['models'])} model(s) in {done['seconds']:.1f} s; wrote "
        f"{len(done['written'])} files to {args.output}"
        + (
            f"; left out {int(left_out['trials'].sum())} trial(s) of "
            f"{', '.join(sorted(set(left_out['condition_id'])))} (see the notes and report.json's left_out)"
            if len(left_out)
            else ""
        )
    )
    if args.html:
        write_report_site(args, "sceval")
    return 0


def cmd_prompt_subset(args: argparse.Namespace) -> int:
    # heavy: pandas and scipy (the trial tables); `sceval --help` and the light commands start without them
    from sceval_plugin.report.prompt_subset_choice import subset_from_runs

    done = subset_from_runs(args.runs, args.model, [p.strip() for p in args.prompts.split(",") if p.strip()])
    for note in done["notes"]:
        print(f"note: {note}", file=sys.stderr)
    for role, cid in done["cells"].items():
        print(f"{role:<14} {cid:<44} accuracy {100 * done['accuracy'][cid]:.1f}%")
    print(f"wrote {done['path']}")
    print(f"run it with: lmms-eval --tasks {done['group']} ...  (tasks: {','.join(done['tasks'])})")
    return 0


#: What ``sceval serve-limits`` counts per request.
MODALITIES = ("image", "video", "audio")


def needed_limits(
    tasks: list[str], *, frames_as: str = "images", limit: int | None = None
) -> dict[str, collections.Counter]:
    """Per task (groups expanded), the most images, videos and audio clips one request sends;
    ``limit`` counts only the first ``limit`` requests of each task.

    vLLM refuses (HTTP 400) a request with more images, videos or audio clips than the server's
    ``--limit-mm-per-prompt`` allows (a modality it does not name allows 999,
    ``vllm/config/multimodal.py``), and sizes its profiling run by those limits. How many of each a
    request carries depends on the task and the item: 8 frames and one clip on SCEval's clean
    items, 16 on a video under ``probe_frame_budget_16``, one more frame under the appended-frame
    distractor, a C3PO tier-3/4 item's frames plus its picture; with ``frames_as=video`` the frames
    of a video are one video and pictures stay images. So the limits are counted, not guessed:
    every request of the tasks is built as lmms-eval builds it (the task's ``doc_to_messages`` on
    the configured source) and counted as ``sceval_openai`` sends it (:func:`mm_counts`)."""
    # heavy: lmms-eval's task index takes seconds to import; only this command needs it
    import lmms_eval.models  # noqa: F401  (loads our entry point, which adds the SCEval and C3PO tasks)
    from lmms_eval.evaluator_utils import get_task_list
    from lmms_eval.tasks import TaskManager, get_task_dict

    if frames_as not in FRAMES_AS:
        raise ValueError(f"frames_as={frames_as!r} is not one of {', '.join(FRAMES_AS)}")
    found = {}
    for output in get_task_list(get_task_dict(tasks, TaskManager("ERROR"), task_type="chat")):
        most: collections.Counter = collections.Counter(dict.fromkeys(MODALITIES, 0))
        for index, doc in enumerate(output.task.eval_docs):
            if limit is not None and index >= limit:
                break
            for modality, count in mm_counts(output.task.doc_to_messages(doc), frames_as).items():
                most[modality] = max(most[modality], count)
        found[output.task_name] = most
    return found


def limit_flag(found: dict[str, collections.Counter]) -> str:
    """The ``--limit-mm-per-prompt`` argument allowing every request: each modality's maximum
    (0 for one no request sends, so vLLM reserves nothing for it)."""
    most = {m: max((c[m] for c in found.values()), default=0) for m in MODALITIES}
    return f"--limit-mm-per-prompt '{json.dumps(most)}'"


def cmd_serve_limits(args: argparse.Namespace) -> int:
    """``sceval serve-limits``: the ``--limit-mm-per-prompt`` a vLLM server needs for a run's tasks."""
    from lmms_eval.utils import simple_parse_args_string  # heavy: imports lmms-eval

    frames_as = str(simple_parse_args_string(args.model_args).get("frames_as", "images")).strip().lower()
    found = needed_limits([t for t in args.tasks.split(",") if t], frames_as=frames_as, limit=args.limit)
    width = max(len(name) for name in found)
    for name, most in found.items():
        print(f"{name:<{width}}  " + "  ".join(f"{m} {most[m]}" for m in MODALITIES))
    print(limit_flag(found))
    return 0


def cmd_smoke(args: argparse.Namespace) -> int:
    checks = run_smoke(args.model, args.model_args, limit=args.limit)
    width = max(len(c.name) for c in checks)
    for c in checks:
        print(f"{c.name:<{width}}  {'ok  ' if c.passed else 'FAIL'}  {c.detail}")
    result = verdict(checks)
    print(result)
    return 0 if result == "IFACE OK" else 1


def cmd_cache(args: argparse.Namespace) -> int:
    where, wrapped = decode_cache.folder(), wrapped_media.folder()
    if args.action == "clear":
        print(f"freed {decode_cache.clear() / 1e6:.1f} MB of decoded media in {where}")
        print(f"freed {wrapped_media.files.evict(0) / 1e6:.1f} MB of wrapped tasks' media in {wrapped}")
    else:
        limit = decode_cache.setting(SCEVAL_DECODE_CACHE_GB)
        print(
            f"{where}: {decode_cache.disk_usage() / 1e6:.1f} MB of decoded media "
            f"(limit {limit:g} GB, {SCEVAL_DECODE_CACHE_GB.name})"
        )
        limit = decode_cache.setting(SCEVAL_WRAPPED_MEDIA_GB)
        print(
            f"{wrapped}: {wrapped_media.files.usage() / 1e6:.1f} MB of wrapped tasks' media "
            f"(limit {limit:g} GB, {SCEVAL_WRAPPED_MEDIA_GB.name})"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sceval", description="SCEval: where omni-modal models break.")
    sub = parser.add_subparsers(dest="command", required=True)

    corrupt = sub.add_parser("corrupt", help="corrupt an image, video, audio clip or question")
    path_rules(
        corrupt.add_argument("input", nargs="?", help="PNG/JPEG image, MP4 video, WAV audio or .txt question"),
        INPUT_FILE,
    )
    corrupt.add_argument("--text", help="corrupt this question string instead of a file")
    corrupt.add_argument("--op", help="operator name (see `sceval operators`)")
    corrupt.add_argument(
        "--severity", type=int, choices=SEVERITIES, help="severity level of --op, one of %(choices)s (0: the identity)"
    )
    corrupt.add_argument(
        "--variant",
        type=int,
        default=0,
        help="variant index: with --key, seeds a stochastic operator (default %(default)s)",
    )
    corrupt.add_argument("--key", help="sample id that seeds the variant (default: the input's file name)")
    corrupt.add_argument("--grid", action="store_true", help="write a contact sheet: operators x severities")
    corrupt.add_argument("--ops", help="comma-separated operators for --grid (default: all of the modality)")
    corrupt.add_argument("--fps", type=float, default=media.FRAME_RATE, help="video frames per second to sample")
    corrupt.add_argument(
        "--max-frames", type=int, default=media.MAX_FRAMES, help="most video frames to sample (default %(default)s)"
    )
    corrupt.add_argument(
        "--frame-sampling",
        choices=media.FRAME_SAMPLINGS,
        help="frames of a clip longer than max-frames/fps seconds: spread over the whole clip "
        "(uniform, the paper's) or its head only (default $FAULTLINE_FRAME_SAMPLING or uniform)",
    )
    corrupt.add_argument(
        "--probes",
        metavar="FAMILY",
        help="contact sheet of the mechanism probes (a family, "
        "a probe, or all) on one item of --source: --sample ID (default: the first item)",
    )
    corrupt.add_argument("--sample", help="with --probes: the item's sample id")
    path_rules(
        corrupt.add_argument(
            "--source", help="with --probes: demo, a folder, items.jsonl, hf:... (default $SCEVAL_SOURCE)"
        ),
        ITEMS_SOURCE,
    )
    path_rules(
        corrupt.add_argument("-o", "--output", help="output file (folder of PNG frames for video)"),
        PathRule("output_to_write"),
    )
    corrupt.set_defaults(func=cmd_corrupt)

    ops = sub.add_parser("operators", help="list registered operators and their severity tables")
    ops.set_defaults(func=cmd_operators)

    check = sub.add_parser("check", help="validate a source's items and media; list every problem by sample")
    path_rules(
        check.add_argument(
            "source",
            nargs="?",
            help="demo, a folder, items.jsonl/.parquet, hf:... or lmms:... (default $SCEVAL_SOURCE)",
        ),
        ITEMS_SOURCE,
    )
    check.set_defaults(func=cmd_check)

    conditions = sub.add_parser("conditions", help="print the condition catalogue (id, task, block, operators)")
    conditions.add_argument("--block", help="only this block (clean, single, tv, ta, va, tva, missing, ...)")
    conditions.set_defaults(func=cmd_conditions)

    tasks = sub.add_parser("tasks", help="check (default) or --write the generated lmms-eval task folder")
    path_rules(
        tasks.add_argument("folder", help="e.g. tasks/sceval in a source checkout"),
        PathRule("folder_to_write", only_with="write"),
        PathRule("folder", unless="write"),
    )
    tasks.add_argument(
        "--write", action="store_true", help="write the task files (else list the out-of-date ones; exit 1 if any)"
    )
    tasks.set_defaults(func=cmd_tasks)

    report = sub.add_parser("report", help="tables, plots and statistics from lmms-eval output folders")
    path_rules(
        report.add_argument(
            "runs", nargs="+", help="lmms-eval --output_path folders (one per model, or many tasks in one)"
        ),
        RUN_FOLDER,
    )
    path_rules(report.add_argument("-o", "--output", required=True, help="folder for the report"), FOLDER_TO_WRITE)
    report.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
    report.add_argument(
        "--delta-single",
        choices=("modality", "operator"),
        default="modality",
        help="Δsingle baseline (eq. 6): the weakest observed single cell of each corrupted modality "
        "(default, the paper's C.2/C.3) or of each of the joint cell's own operators",
    )
    report.add_argument("--seed", type=int, default=20261129, help="bootstrap resampling seed (default %(default)s)")
    report.add_argument(
        "--cohort",
        choices=("gold_preserved", "stress", "all"),
        default="gold_preserved",
        help="trials of the gold-preserved cohort (default, the paper's headline), of stress-only "
        "cells (manifest: interpretable, original gold not preserved) with clean, or all",
    )
    report.add_argument("--no-model-pairs", action="store_true", help="skip model-vs-model comparisons")
    report.add_argument(
        "--robustness-reference",
        metavar="MODEL",
        default=DEFAULT_REFERENCE,
        help="the model normalised_robustness divides by (mCE = 100 for it): a model of the runs, or a "
        "published row of the paper (Table 6's, else Table 2's; default %(default)s)",
    )
    report.add_argument(
        "--no-figures",
        action="store_true",
        help="write tables and report.json only (a quick recompute; the notes list the figures skipped)",
    )
    report.add_argument("--quiet", action="store_true", help="no progress bar")
    report.add_argument(
        "--strict",
        action="store_true",
        help="refuse logs the report cannot pool with today's meaning (a probe run under its earlier "
        "reading, a condition the catalogue does not know) instead of leaving their trials out with a note",
    )

    add_audit_options(report)
    add_html_arguments(report, ("sceval",), switch=True)
    families = report.add_argument(
        "--families",
        metavar="FILE",
        help="model -> family (CSV model,family or JSON object): "
        "family means, per-modality drops, fault lines and gaps (Table 20)",
    )
    humans = report.add_argument(
        "--humans",
        metavar="PATH",
        help="human answers: a CSV/JSONL of per-item answers "
        "(sample_id, condition_id, correct or answer+gold, optional annotator) or an lmms-eval "
        "output folder of the humans' replies; adds the human reference (Tables 14/15)",
    )
    path_rules(families, INPUT_FILE)
    path_rules(humans, PathRule("file_or_folder"))
    report.add_argument(
        "--shared-hard",
        type=float,
        default=2 / 3,
        metavar="FRACTION",
        help="failure overlap: an item is shared-hard when at least this share of the models "
        "fail it (default 2/3, the paper's 10 of 15)",
    )
    report.add_argument(
        "--confidence-values",
        type=_confidence_values,
        metavar="LEVEL=P,...",
        help="probabilities of the stated confidence levels for ECE (default low=0.1667,medium=0.5,high=0.8333)",
    )
    report.add_argument(
        "--by-source",
        action="store_true",
        help="also write every table once per item source, under OUTPUT/by_source/<source>/",
    )
    report.add_argument(
        "--variant-std",
        choices=("sample", "population"),
        default="sample",
        help="seed stability: standard deviation over variants (default sample, n-1)",
    )
    report.add_argument(
        "--trust-reading",
        choices=("donor_gold", "donor_clean_answer"),
        default="donor_gold",
        help="trust bias T_m (G.9): the answer follows the replaced modality when it is the donor's "
        "gold answer (default) or the model's own clean answer to the donor item",
    )
    report.add_argument(
        "--holm-families",
        choices=("model", "pooled"),
        default="model",
        help="Holm correction family (§2.4 'inside one experimental block'): each model's comparisons "
        "of a block (default; a model's p does not depend on the others reported) or every model's "
        "pooled",
    )
    report.set_defaults(func=cmd_report)

    subset = sub.add_parser(
        "prompt-subset",
        help="choose the prompt-robustness cells (G.6) from one model's own "
        "results; writes an lmms-eval group of them under $SCEVAL_CACHE",
    )
    path_rules(
        subset.add_argument(
            "runs", nargs="+", help="lmms-eval --output_path folders of that model's standard-prompt runs"
        ),
        RUN_FOLDER,
    )
    subset.add_argument("--model", help="the model, as the report names it (default: the only one in the logs)")
    subset.add_argument("--prompts", default="cot,open", help="prompt variants to generate (default cot,open)")
    subset.set_defaults(func=cmd_prompt_subset)

    smoke = sub.add_parser("smoke", help="10-example interface check of a model (frames, audio, parser)")
    smoke.add_argument("--model", required=True, help="an lmms-eval model id, e.g. sceval_reference or qwen2_5_omni")
    add_argument(smoke, "--model-args", old=["--model_args"], default="", help="as for lmms-eval, e.g. pretrained=...")
    smoke.add_argument("--limit", type=int, default=10, help="examples per check task (default %(default)s)")
    smoke.set_defaults(func=cmd_smoke)

    limits = sub.add_parser(
        "serve-limits",
        help="the --limit-mm-per-prompt a vLLM server needs for these tasks "
        "(the most images, videos, audio clips one request sends)",
    )
    limits.add_argument("--tasks", required=True, help="lmms-eval tasks or groups, comma-separated, as for the run")
    add_argument(
        limits,
        "--model-args",
        old=["--model_args"],
        default="",
        help="sceval_openai's model args; frames_as=video counts a video's frames as one video",
    )
    limits.add_argument(
        "--limit",
        type=int,
        default=None,
        help="count only the first N requests of each task (default: all, as the run sends them)",
    )
    limits.set_defaults(func=cmd_serve_limits)

    cache = sub.add_parser(
        "cache",
        help="size of (info) or empty (clear) the media caches under $SCEVAL_CACHE (decoded media, wrapped tasks' media)",
    )
    cache.add_argument(
        "action",
        choices=("info", "clear"),
        nargs="?",
        default="info",
        help="info: print the caches' sizes and limits (default); clear: empty them",
    )
    cache.set_defaults(func=cmd_cache)

    demo = sub.add_parser("demo", help="contact sheets of every operator on a built-in synthetic sample")
    path_rules(
        demo.add_argument(
            "-o",
            "--output",
            default="sceval-demo",
            help="folder for the clean media and contact sheets (default %(default)s)",
        ),
        FOLDER_TO_WRITE,
    )
    demo.set_defaults(func=cmd_demo)

    add_build_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return command_main("sceval", build_parser, argv, check_html_arguments)


if __name__ == "__main__":
    sys.exit(main())
