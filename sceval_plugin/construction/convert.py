"""``sceval build convert``: local copies of source benchmarks -> SCEval items (paper App. D).

Each source is converted by a :class:`Converter`, a plugin registered through the
``sceval_register_converters`` hook (:mod:`sceval_plugin.hookspecs`); the built-ins
(:mod:`sceval_plugin.construction.converters`: ``social_iq2``, ``omni_bench``, ``valor``, and ``items``
for a folder already in the unified schema) register
exactly like a third party's. ``sceval build convert BUILD social_iq2=/data/siq2 ...`` writes,
per source, ``BUILD/converted/<source>/``::

    items.jsonl     one unified row per converted example (:mod:`sceval_plugin.data.records`);
                    the folder is a normal source: SCEVAL_SOURCE=BUILD/converted/<source>
    media/          the example's media, in the protocol's form (below)
    problems.jsonl  every example that could not be converted: {source_ref, sample_id, reason, detail}
    summary.json    {source, converter, license, examples, converted, rejected}

**The normalised record** (App. D, "Source pool and initial candidate construction"): every
row's ``hidden`` (never shown to a model) carries ``source_ref`` (the back-pointer: source,
split and example id), ``visual_kind`` (``image``: one picture; ``video``: a clip or a frame
sequence), ``modalities`` (availability
flags, measured here on the decoded media: ``text`` = a non-empty question, ``visual`` = the
frames are not flat: some frame varies over its pixels in some channel, standard deviation above
:data:`FLAT_FRAME_STD`, so a frame of one colour, grey or red alike, is no evidence), ``audio`` = the waveform is not silent, peak above
:data:`SILENCE_PEAK`), ``evidence_modality`` (what the source says the question needs, else
``unknown``), ``source_meta`` (the rest of the source example) and ``license``.

**Media** (App. F.2): a video keeps its clip (copied byte for byte when the whole clip is used;
cut and re-encoded when the example names a window); the tasks sample it at 1 fps, at most 8
frames uniformly over the whole clip (:func:`faultline_eval.core.media.sample_times`). Audio is
written as a 16 kHz mono WAV whose first sample is at the clip's start, the time of the first
extracted frame, so the clean audio-visual offset is zero (to within one video frame); its
duration is kept as the source has it. Every row is validated with the tasks' own reader and
its media decoded in full before it is written; a failure is a problem, never a silent drop.

Converting the same copy twice writes the same bytes: the output folder is rebuilt whole,
rows and problems keep the converter's order and JSON is written with sorted keys.
"""

from __future__ import annotations

import functools
import json
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from faultline_eval.core.intake import media_reason, read_text
from faultline_eval.core.preflight import PathRule, check_existing_path, path_rules
from faultline_eval.core.registry import PluginError, Registry, UnknownNameError
from faultline_eval.core.run_status import TaskOutcome, report
from faultline_eval.core.store import write_atomic
from sceval_plugin.data.records import OmniItem, RecordError, check_media, item_from_row
from sceval_plugin.plugins import fill_registry

#: Peak amplitude (full scale 1.0) at or under which an audio track counts as absent (-80 dBFS).
SILENCE_PEAK = 1e-4
#: Per-channel standard deviation over a frame's pixels (0-255 scale) at or under which the frame
#: counts as flat: one colour, up to the noise a codec adds to it.
FLAT_FRAME_STD = 1.0
EVIDENCE_MODALITIES = (
    "text",
    "visual",
    "audio",
    "audio+visual",
    "text+visual",
    "text+audio",
    "text+audio+visual",
    "unknown",
)


class BuildError(RuntimeError):
    """A build stage cannot run; the message names the source, file or field."""


@dataclass(frozen=True)
class Rejected:
    """A source example that cannot become an SCEval item: its back-pointer and why."""

    source_ref: str
    reason: str  # a short category, e.g. missing_video, no_audio_track, bad_answer_index
    detail: str = ""
    sample_id: str | None = None


@dataclass(frozen=True)
class Converter:
    """How to turn a local copy of one source benchmark into unified rows.

    ``convert(root, out)`` yields a row (media written under ``out / "media"``, paths relative
    to ``out``) or a :class:`Rejected` per source example. A row's ``hidden.source_ref`` is
    required; ``hidden.evidence_modality`` defaults to the converter's ``evidence_modality``.
    """

    name: str
    convert: Callable[[Path, Path], Iterable[Mapping[str, Any] | Rejected]]
    license: str
    description: str = ""
    evidence_modality: str = "unknown"
    #: Local copies known by name (``items=demo``): name -> folder.
    named_copies: Mapping[str, Path] = field(default_factory=dict)
    plugin: str = ""


class UnknownConverterError(UnknownNameError, BuildError):
    """No plugin registered a converter of that name (a ``BuildError`` and a ``KeyError``)."""


class ConverterRegistry(Registry[Converter]):
    """Name -> :class:`Converter`, filled by ``sceval_register_converters`` hooks."""

    def __init__(self) -> None:
        super().__init__("converter", error=UnknownConverterError)

    def add(self, converter: Converter) -> Converter:
        """Register ``converter``; a clash, a bad name or an unknown evidence modality raises
        PluginError."""
        if not isinstance(converter, Converter):
            raise PluginError(
                f"plugin {self.plugin} tried to register {converter!r}, which is not a "
                "sceval_plugin.construction.convert.Converter"
            )
        if not converter.name.replace("_", "").isalnum():
            raise PluginError(f"converter name {converter.name!r} must be letters, digits and '_'")
        self.check_free(converter.name)  # a clash is named before the rest
        if converter.evidence_modality not in EVIDENCE_MODALITIES:
            raise PluginError(
                f"converter {converter.name!r}: evidence_modality must be one of "
                f"{EVIDENCE_MODALITIES}, got {converter.evidence_modality!r}"
            )
        return self.register(converter.name, replace(converter, plugin=self.plugin))


@functools.cache
def registry() -> ConverterRegistry:
    """Every installed plugin's converters (built once per process)."""
    return fill_registry("sceval_register_converters", ConverterRegistry(), "converters")


# --- converting one source -----------------------------------------------------------------------


def availability(item: OmniItem) -> dict[str, bool]:
    """The modality availability flags of a decoded item (see the module docstring)."""
    frames, wave = item.frames(), item.waveform()
    return {
        "text": bool(item.question.strip()),
        "visual": has_visual_evidence(frames),
        "audio": bool(wave.size and np.abs(wave).max() > SILENCE_PEAK),
    }


def has_visual_evidence(frames: np.ndarray) -> bool:
    """Whether some frame of ``(N, H, W, C)`` varies spatially in some channel. Flat frames of
    different colours (a blinking screen) carry no visual evidence either."""
    return any(bool((frame.reshape(-1, frame.shape[-1]).std(axis=0) > FLAT_FRAME_STD).any()) for frame in frames)


def _finished_row(row: Mapping[str, Any], converter: Converter, out: Path) -> dict:
    """The row validated and decoded with the tasks' reader, its normalised ``hidden`` filled in;
    raises :class:`RecordError` naming the sample and field."""
    row = dict(row)
    row["source"] = converter.name
    item = item_from_row(row, out)
    hidden = dict(item.hidden)
    if not isinstance(hidden.get("source_ref"), str) or not hidden["source_ref"]:
        raise RecordError(
            f"sample {item.sample_id!r}: field 'hidden.source_ref': the converter must give a back-pointer"
        )
    if not item.sample_id.startswith(f"{converter.name}-"):
        raise RecordError(f"sample {item.sample_id!r}: sample ids must read '{converter.name}-<id from the source>'")
    check_media(item)
    evidence = hidden.get("evidence_modality") or converter.evidence_modality
    if evidence not in EVIDENCE_MODALITIES:
        raise RecordError(
            f"sample {item.sample_id!r}: field 'hidden.evidence_modality': {evidence!r} is not one of "
            f"{EVIDENCE_MODALITIES}"
        )
    hidden.update(
        visual_kind="image" if item.visual_kind == "image" else "video",
        modalities=availability(item),
        evidence_modality=evidence,
        license=hidden.get("license") or converter.license,
        source_meta=hidden.get("source_meta") or {},
    )
    row["hidden"] = hidden
    return row


def _problem(rejected: Rejected) -> dict:
    return {
        "source_ref": rejected.source_ref,
        "sample_id": rejected.sample_id,
        "reason": rejected.reason,
        "detail": rejected.detail,
    }


def _converted(converter: Converter, root: Path, out: Path) -> Iterator[dict | Rejected]:
    """The converter's rows, each finished, or the problem that stopped it."""
    seen: set[str] = set()
    for made in converter.convert(root, out):
        if isinstance(made, Rejected):
            yield made
            continue
        hidden = made.get("hidden") if isinstance(made.get("hidden"), Mapping) else {}
        ref = str(hidden.get("source_ref") or made.get("sample_id") or "<no back-pointer>")
        sample_id = made.get("sample_id") if isinstance(made.get("sample_id"), str) else None
        if sample_id in seen:
            yield Rejected(ref, "duplicate_sample_id", f"sample {sample_id!r} was converted before", sample_id)
            continue
        try:
            row = _finished_row(made, converter, out)
        except RecordError as exc:
            yield Rejected(ref, media_reason(exc), str(exc), sample_id)
            continue
        seen.add(row["sample_id"])
        yield row


def read_jsonl(path: Path) -> list[dict]:
    """The objects of a JSON-lines file this package wrote ([] when it does not exist)."""
    return [json.loads(line) for line in read_text(path).splitlines() if line.strip()] if path.is_file() else []


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """One sorted-key JSON object per line (UTF-8): the same rows give the same bytes."""
    write_atomic(path, "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows))
    return path


def convert_source(name: str, root: str | Path, build_dir: str | Path) -> dict:
    """Convert the local copy at ``root`` with converter ``name`` into ``BUILD/converted/<name>``;
    returns the summary (also written as ``summary.json``)."""
    converter = registry().get(name)
    root = Path(converter.named_copies.get(str(root), Path(root).expanduser()))
    if not root.exists():
        raise BuildError(f"{name}: no local copy at {root}")
    out = Path(build_dir) / "converted" / name
    if out.exists():  # rebuilt whole, so converting twice gives the same bytes
        shutil.rmtree(out)
    (out / "media").mkdir(parents=True)
    rows, problems = [], []
    try:
        for made in _converted(converter, root, out):
            (problems.append(_problem(made)) if isinstance(made, Rejected) else rows.append(made))
    except (OSError, ValueError, KeyError, TypeError) as exc:  # a converter bug or an unreadable layout
        raise BuildError(
            f"converter {name!r} ({converter.plugin}) failed on {root}: {type(exc).__name__}: {exc}"
        ) from exc
    write_jsonl(out / "items.jsonl", rows)
    write_jsonl(out / "problems.jsonl", problems)
    summary = {
        "source": name,
        "converter": converter.plugin,
        "license": converter.license,
        "examples": len(rows) + len(problems),
        "converted": len(rows),
        "rejected": len(problems),
    }
    write_atomic(out / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


# --- command line --------------------------------------------------------------------------------


def _source_arg(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise ValueError(f"expected SOURCE=PATH, got {text!r}")
    return name, path


def cmd_convert(args) -> int:
    if args.list:
        for converter in registry():
            print(f"{converter.name:12} {converter.plugin}: {converter.description} (licence: {converter.license})")
        return 0
    if "=" in str(args.build_dir):
        raise SystemExit(f"sceval build convert: give BUILD_DIR before SOURCE=PATH (got {args.build_dir})")
    if not args.sources:
        raise SystemExit("sceval build convert: give SOURCE=PATH (sceval build convert --list shows the converters)")
    for name, path in args.sources:  # every converter and local copy, before the first conversion
        if str(path) not in registry().get(name).named_copies:
            check_existing_path(path, f"{name}=PATH", kind="file_or_folder")
    outcomes = []
    for name, path in args.sources:
        summary = convert_source(name, path, args.build_dir)
        where = Path(args.build_dir) / "converted" / name
        print(
            f"{name}: {summary['examples']} example(s), {summary['converted']} converted, "
            f"{summary['rejected']} problem(s) -> {where}"
            + (f" (see {where / 'problems.jsonl'})" if summary["rejected"] else "")
        )
        problems = read_jsonl(where / "problems.jsonl")
        # a rejected example is the source's filtering, listed but not a failure: only coverage 0 fails
        outcomes.append(
            TaskOutcome(
                name,
                summary["examples"],
                summary["converted"],
                Counter(p["reason"] for p in problems),
                unit="examples",
                done="converted",
                first_error=next((f"{p['source_ref']}: {p['detail'] or p['reason']}" for p in problems), ""),
            )
        )
    return report(outcomes, None, who="sceval build convert")


def add_parser(stages) -> None:
    parser = stages.add_parser(
        "convert",
        help="convert local copies of source benchmarks into SCEval items",
        description=__doc__.split("\n\n")[0],
    )
    path_rules(
        parser.add_argument(
            "build_dir",
            type=Path,
            metavar="BUILD_DIR",
            nargs="?",
            default=Path("."),
            help="the build folder; writes BUILD_DIR/converted/<source> (default: the current folder)",
        ),
        PathRule("folder_to_write", unless="list"),
    )
    parser.add_argument(
        "sources",
        nargs="*",
        type=_source_arg,
        metavar="SOURCE=PATH",
        help="a converter name and the local copy it reads, e.g. social_iq2=/data/siq2",
    )
    parser.add_argument("--list", action="store_true", help="list the registered converters and exit")
    parser.set_defaults(func=cmd_convert)
