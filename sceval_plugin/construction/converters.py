"""The built-in converters (``sceval build convert``): Social-IQ 2.0, OmniBench and VALOR.

Registered through ``sceval_register_converters`` like any plugin's. Each reads a local copy laid
out like the source's own release and yields unified rows or :class:`Rejected` examples, whose
``reason`` is one of :data:`REASONS`.

``social_iq2`` (the Social-IQ-2.0-Challenge release, ``siq2/`` or its parent)::

    qa/qa_train.json, qa_val.json, qa_test.json   JSON lines: qid, q, a0..a3, answer_idx, vid_name, ts
    video/<vid_name>.mp4                          the clip
    audio/wav/<vid_name>.wav (or audio/mp3/...)   its audio; without it, the clip's own audio track

  ``ts`` (``"start-end"`` seconds into the clip) is the window the question is about: a window
  covering the whole clip keeps the clip as it is; a shorter one cuts the video and the audio to
  it, so the first extracted frame and the first audio sample are both at ``start``. The test
  split ships no ``answer_idx``: its examples are ``missing_answer`` problems.

``omni_bench`` (the Hugging Face dataset ``m-a-p/OmniBench``: any ``*.parquet`` under the copy):
  columns ``index``, ``task type``, ``audio type``, ``question``, ``options``, ``answer`` (the
  option's text), ``image`` and ``audio`` (``{bytes, path}``), ``image content``, ``audio content``.
  Rows go through the same adapter as ``SCEVAL_SOURCE=lmms:omni_bench``; the task type is the
  item's ``category``; the two ``content`` columns (a caption and a transcript, text stand-ins
  that would leak the evidence) stay in ``hidden.source_meta``.

``valor`` (VALOR-32K style: ``*.json``/``*.jsonl`` at the top or under ``annotation(s)/``, clips
in ``videos/<video_id>.<ext>``, optional ``audios/<video_id>.wav``). Two forms are accepted:

- *caption* (VALOR-32K's ``desc_*.json``: ``video_id``, ``desc``): a caption-matching question,
  "which description matches what is seen and heard", with the clip's caption and three other
  clips' captions as options, picked and ordered by :func:`~sceval_plugin.construction.pool.order_key`
  (a pure function of the ids). The paper does not say how its VALOR questions were made; this
  is our construction, and a plugin can register another.
- *QA* (Valor32k-AVQA style: ``video_id``, ``question``, ``options``, ``correct_answer_idx`` or
  ``answer`` (index, letter or option text), optional ``id``, ``modality``, ``category``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from faultline_eval.core import media
from faultline_eval.core.intake import Problem, read_rows
from faultline_eval.core.media_processing import Plan, process, video_duration
from faultline_eval.core.record_fields import resolve_inside
from sceval_plugin import hookimpl
from sceval_plugin.construction.convert import Converter, Rejected
from sceval_plugin.construction.pool import order_key
from sceval_plugin.data.records import OPTION_KEYS, RecordError
from sceval_plugin.data.sources import DEMO_DIR, _omni_bench_row, undecoded_media

#: Why a source example is not converted (besides the tasks' own: record, media_unreadable, ...).
REASONS = (
    "missing_field",
    "missing_answer",
    "bad_answer_index",
    "missing_video",
    "missing_image",
    "no_audio_track",
    "bad_timestamp",
    "no_distractors",
)
#: A window within this many seconds of the clip's ends is the whole clip.
WINDOW_SLACK_S = 0.05
_TS = re.compile(r"\s*(\d+(?:\.\d+)?)\s*-\s*(\d+(?:\.\d+)?)\s*")

SOCIAL_IQ2_LICENSE = (
    "Social-IQ 2.0 (github.com/abwilf/Social-IQ-2.0-Challenge): code MIT; the questions and "
    "the YouTube clips: check the source's terms"
)
OMNI_BENCH_LICENSE = (
    "OmniBench (huggingface.co/datasets/m-a-p/OmniBench): no licence declared on the dataset "
    "card or repository; check the source's terms"
)
VALOR_LICENSE = (
    "VALOR-32K (github.com/TXH-mercury/VALOR): annotations MIT per the repository; the YouTube "
    "clips: check the source's terms"
)


# --- media shared by the video sources ------------------------------------------------------------


def has_audio_track(video: Path) -> bool:
    import av

    with av.open(str(video)) as container:
        return bool(container.streams.audio)


class ClipWriter:
    """Writes each (clip, window) once: the questions on one clip share its media files."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self._done: dict[tuple, dict[str, str]] = {}

    def __call__(
        self, name: str, video: Path, audio: Path | None, window: tuple[float, float] | None
    ) -> dict[str, str]:
        """``{"visual": ..., "audio": ...}`` paths relative to the output folder: the clip (copied
        when ``window`` is None or covers it, cut otherwise) and its audio as 16 kHz mono WAV over
        the same span (App. F.2). Raises :class:`~faultline_eval.core.media.MediaError`."""
        duration = video_duration(video)
        start, end = window or (0.0, None)
        whole = start <= WINDOW_SLACK_S and (end is None or duration is None or end >= duration - WINDOW_SLACK_S)
        plan = Plan() if whole else Plan(start_s=start, end_s=end)
        key = (str(video), str(audio), plan)
        if key not in self._done:
            folder = self.out / "media" / (name if whole else f"{name}@{start:g}-{end:g}")
            made = process(video, "video", "video", replace(plan, extract_audio=audio is None), folder)
            if audio is not None:
                made = process(audio, "audio", "audio", plan, folder)
            self._done[key] = {
                "visual": (folder / "video.mp4").relative_to(self.out).as_posix(),
                "audio": made.media["audio"].relative_to(self.out).as_posix(),
            }
        return self._done[key]


def _first(folder: Path, stem: str, suffixes: tuple[str, ...]) -> Path | None:
    return next((folder / f"{stem}{s}" for s in suffixes if (folder / f"{stem}{s}").is_file()), None)


def _clip_media(
    write: ClipWriter, ref: str, sample_id: str, name: str, video: Path | None, audio: Path | None, window=None
) -> dict[str, str] | Rejected:
    if video is None:
        return Rejected(ref, "missing_video", f"no clip {name}.* in the copy", sample_id)
    try:
        if audio is None and not has_audio_track(video):
            return Rejected(ref, "no_audio_track", f"{video}: no audio track and no separate audio file", sample_id)
        return write(name, video, audio, window)
    except media.MediaError as exc:
        return Rejected(ref, "media_unreadable", str(exc), sample_id)
    except Exception as exc:  # each decoder fails its own way; all are this example's problem
        return Rejected(ref, "media_unreadable", f"{video}: {type(exc).__name__}: {exc}", sample_id)


def _answer_index(value: Any, options: list[str]) -> int | None:
    """A 0-based answer index from an index, a letter or the option's text; None if unusable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < len(options) else None
    if isinstance(value, str):
        text = value.strip()
        if text.upper() in OPTION_KEYS[: len(options)]:
            return OPTION_KEYS.index(text.upper())
        if text.isdigit():
            return _answer_index(int(text), options)
        return options.index(text) if text in options else None
    return None


def _table_rows(path: Path, ref_prefix: str) -> Iterator[tuple[str, Mapping[str, Any] | Rejected]]:
    for where, row in read_rows(path):
        if isinstance(row, Problem):
            yield where, Rejected(f"{ref_prefix}/<{where}>", "record", row.detail)
        else:
            yield where, row


# --- Social-IQ 2.0 ---------------------------------------------------------------------------------


def convert_social_iq2(root: Path, out: Path) -> Iterator[dict | Rejected]:
    base = root / "siq2" if (root / "siq2" / "qa").is_dir() else root
    qa_files = sorted((base / "qa").glob("qa_*.json"))
    if not qa_files:
        raise FileNotFoundError(
            f"{root}: no qa/qa_*.json (Social-IQ 2.0 keeps siq2/qa/qa_train.json, qa_val.json, ...)"
        )
    write = ClipWriter(out)
    for path in qa_files:
        split = path.stem.removeprefix("qa_")
        for where, row in _table_rows(path, f"social_iq2/{split}"):
            yield row if isinstance(row, Rejected) else _social_iq2_item(row, split, where, base, write)


def _social_iq2_item(row: Mapping[str, Any], split: str, where: str, base: Path, write: ClipWriter) -> dict | Rejected:
    qid = row.get("qid")
    ref = f"social_iq2/{split}/{qid if isinstance(qid, str) else '<' + where + '>'}"
    sample_id = f"social_iq2-{qid}" if isinstance(qid, str) else None
    for name in ("qid", "q", "vid_name", "a0", "a1", "a2", "a3"):
        if not isinstance(row.get(name), str) or not row[name].strip():
            return Rejected(ref, "missing_field", f"{where}: field {name!r} missing or empty", sample_id)
    options = [row[f"a{i}"] for i in range(4)]
    if row.get("answer_idx") is None:
        return Rejected(
            ref, "missing_answer", f"{where}: no answer_idx (Social-IQ 2.0's test split ships none)", sample_id
        )
    gold = _answer_index(row["answer_idx"], options) if not isinstance(row["answer_idx"], str) else None
    if gold is None:
        return Rejected(ref, "bad_answer_index", f"{where}: answer_idx {row['answer_idx']!r} is not 0-3", sample_id)
    window = None
    if row.get("ts") not in (None, ""):
        match = _TS.fullmatch(str(row["ts"]))
        if not match or float(match[2]) <= float(match[1]):
            return Rejected(ref, "bad_timestamp", f"{where}: ts {row['ts']!r} is not 'start-end' seconds", sample_id)
        window = (float(match[1]), float(match[2]))
    vid = row["vid_name"]
    audio = _first(base / "audio" / "wav", vid, (".wav",)) or _first(base / "audio" / "mp3", vid, (".mp3",))
    files = _clip_media(write, ref, sample_id, vid, _first(base / "video", vid, media.VIDEO_SUFFIXES), audio, window)
    if isinstance(files, Rejected):
        return files
    return {
        "sample_id": sample_id,
        "question": row["q"],
        "options": options,
        "gold_key": OPTION_KEYS[gold],
        **files,
        "hidden": {
            "source_ref": ref,
            "source_meta": {
                "split": split,
                "qid": qid,
                "vid_name": vid,
                "ts": row.get("ts"),
                "window_s": window,
                "idx_types": row.get("idx_types"),
            },
        },
    }


# --- OmniBench ------------------------------------------------------------------------------------


def convert_omni_bench(root: Path, out: Path) -> Iterator[dict | Rejected]:
    import datasets

    files = sorted(root.rglob("*.parquet"))
    if not files:
        raise FileNotFoundError(f"{root}: no *.parquet (m-a-p/OmniBench keeps data/train-*.parquet)")
    table = undecoded_media(datasets.load_dataset("parquet", data_files=[str(f) for f in files], split="train"))
    for number, doc in enumerate(table):
        index = doc.get("index")
        if isinstance(index, bool) or not isinstance(index, int):
            yield Rejected(f"omni_bench/train/<row {number}>", "missing_field", f"row {number}: no integer 'index'")
            continue
        ref, sample_id = f"omni_bench/train/{index}", f"omni_bench-{index:05d}"
        options = list(doc.get("options") or [])
        if not (doc.get("image") or {}).get("bytes"):
            yield Rejected(ref, "missing_image", f"row {number}: no image bytes", sample_id)
        elif not (doc.get("audio") or {}).get("bytes"):
            yield Rejected(ref, "no_audio_track", f"row {number}: no audio bytes", sample_id)
        elif doc.get("answer") not in options:
            yield Rejected(
                ref,
                "bad_answer_index",
                f"row {number}: answer {doc.get('answer')!r} is not one of its options {options}",
                sample_id,
            )
        else:
            try:
                row = _omni_bench_row(index, doc, out / "media")
            except (RecordError, KeyError) as exc:
                yield Rejected(ref, "record", f"row {number}: {exc}", sample_id)
                continue
            row["visual"], row["audio"] = f"media/{row['visual']}", f"media/{row['audio']}"
            audio = out / row["audio"]
            try:  # the adapter keeps the source's rate; a built set holds the protocol's form
                media.write_audio(audio, media.read_audio(audio)[0])
            except media.MediaError as exc:
                yield Rejected(ref, "media_unreadable", str(exc), sample_id)
                continue
            row["category"] = doc.get("task type") or ""
            row["hidden"] = {
                "source_ref": ref,
                "source_meta": {
                    "index": index,
                    "task_type": doc.get("task type"),
                    "audio_type": doc.get("audio type"),
                    "image_content": doc.get("image content"),
                    "audio_content": doc.get("audio content"),
                },
            }
            yield row


# --- VALOR ----------------------------------------------------------------------------------------

CAPTION_QUESTION = "Which description matches what is seen and heard in the clip?"
_MODALITY = {"visual": "visual", "audio": "audio", "audio-visual": "audio+visual", "audiovisual": "audio+visual"}


def _valor_tables(root: Path) -> list[Path]:
    found = [
        p for pattern in ("*.json", "*.jsonl", "annotation*/*.json", "annotation*/*.jsonl") for p in root.glob(pattern)
    ]
    return sorted(set(found))


def _caption(entry: Mapping[str, Any]) -> str:
    value = entry.get("desc", entry.get("caption"))
    value = value[0] if isinstance(value, list) and value else value
    return value.strip() if isinstance(value, str) else ""


def convert_valor(root: Path, out: Path) -> Iterator[dict | Rejected]:
    tables = _valor_tables(root)
    if not tables:
        raise FileNotFoundError(f"{root}: no annotation *.json (VALOR-32K keeps desc_train.json, desc_test.json, ...)")
    entries: list[tuple[str, str, Mapping[str, Any] | Rejected]] = []
    for path in tables:
        split = path.stem.removeprefix("desc_")
        entries += [(split, where, row) for where, row in _table_rows(path, f"valor/{split}")]
    captions = {
        str(e["video_id"]): _caption(e)
        for _, _, e in entries
        if isinstance(e, Mapping) and "question" not in e and e.get("video_id") and _caption(e)
    }
    write = ClipWriter(out)
    for split, where, entry in entries:
        yield entry if isinstance(entry, Rejected) else _valor_item(entry, split, where, root, captions, write)


class _ValorQuestion(NamedTuple):
    """What a VALOR entry asks, before its media is written."""

    ref: str
    sample_id: str
    question: str
    options: list
    gold: int
    evidence: str
    meta: dict


def _valor_qa(entry: Mapping[str, Any], split: str, where: str, video_id: str) -> _ValorQuestion | Rejected:
    """A VALOR question entry (question, 2-4 options, answer index) as it stands."""
    qid = str(entry.get("id") or f"{video_id}_{where.rsplit(' ', 1)[-1]}")
    ref, sample_id = f"valor/{split}/{qid}", f"valor-{qid}"
    options = entry.get("options")
    if not isinstance(options, list) or not 2 <= len(options) <= 4 or not isinstance(entry["question"], str):
        return Rejected(ref, "missing_field", f"{where}: needs a question and 2-4 options", sample_id)
    answer = entry.get("correct_answer_idx", entry.get("answer_idx", entry.get("answer")))
    gold = _answer_index(answer, [str(o) for o in options])
    if gold is None:
        return Rejected(ref, "bad_answer_index", f"{where}: answer {answer!r} names none of the options", sample_id)
    evidence = _MODALITY.get(str(entry.get("modality", "")).lower(), "unknown")
    meta = {k: entry[k] for k in ("modality", "category", "caption", "quality_rating") if k in entry}
    return _ValorQuestion(ref, sample_id, entry["question"], options, gold, evidence, meta)


def _valor_caption_question(
    split: str, where: str, video_id: str, captions: dict[str, str]
) -> _ValorQuestion | Rejected:
    """A caption entry as a caption-matching question: its caption among up to three other clips' captions,
    picked and shuffled by a stable key."""
    ref, sample_id = f"valor/{split}/{video_id}", f"valor-{video_id}"
    gold_text = captions.get(video_id)
    if not gold_text:
        return Rejected(ref, "missing_field", f"{where}: no 'desc' caption", sample_id)
    others = sorted(
        (v for v, c in captions.items() if v != video_id and c != gold_text),
        key=lambda v: order_key("valor-distractor", video_id, v),
    )
    picked = list(dict.fromkeys(captions[v] for v in others))[:3]
    if not picked:
        return Rejected(ref, "no_distractors", "a caption question needs another clip's caption", sample_id)
    options = sorted([gold_text, *picked], key=lambda text: order_key("valor-option", video_id, text))
    return _ValorQuestion(
        ref, sample_id, CAPTION_QUESTION, options, options.index(gold_text), "audio+visual", {"caption_question": True}
    )


def _valor_clip(root: Path, write: ClipWriter, asked: _ValorQuestion, video_id: str) -> dict | Rejected:
    """The clip's video and audio (``videos/`` or ``video/``, ``audios/`` or ``audio/``) written for the item."""
    folder = next((root / d for d in ("videos", "video") if (root / d).is_dir()), root / "videos")
    audio = next((a for d in ("audios", "audio") if (a := _first(root / d, video_id, media.AUDIO_SUFFIXES))), None)
    video = _first(folder, video_id, media.VIDEO_SUFFIXES)
    return _clip_media(write, asked.ref, asked.sample_id, video_id, video, audio)


def _valor_item(
    entry: Mapping[str, Any], split: str, where: str, root: Path, captions: dict[str, str], write: ClipWriter
) -> dict | Rejected:
    video_id = entry.get("video_id")
    if not isinstance(video_id, str) or not video_id.strip():
        return Rejected(f"valor/{split}/<{where}>", "missing_field", f"{where}: no 'video_id'")
    asked = (
        _valor_qa(entry, split, where, video_id)
        if "question" in entry
        else _valor_caption_question(split, where, video_id, captions)
    )
    if isinstance(asked, Rejected):
        return asked
    files = _valor_clip(root, write, asked, video_id)
    if isinstance(files, Rejected):
        return files
    return {
        "sample_id": asked.sample_id,
        "question": asked.question,
        "options": [str(o) for o in asked.options],
        "gold_key": OPTION_KEYS[asked.gold],
        "category": str(entry.get("category") or ""),
        **files,
        "hidden": {
            "source_ref": asked.ref,
            "evidence_modality": asked.evidence,
            "source_meta": {"split": split, "video_id": video_id, **asked.meta},
        },
    }


# --- SCEval's own schema -------------------------------------------------------------------------


def convert_items(root: Path, out: Path) -> Iterator[dict | Rejected]:
    """A folder already in the unified schema (``items.jsonl`` or ``items.parquet``; ``items=demo``:
    the embedded demo set): rows kept as they are, media copied, ids prefixed ``items-``."""
    import shutil

    table = next((root / n for n in ("items.jsonl", "items.parquet") if (root / n).is_file()), None)
    if table is None:
        raise FileNotFoundError(f"{root}: no items.jsonl or items.parquet")
    for where, row in _table_rows(table, f"items/{root.name}"):
        if isinstance(row, Rejected):
            yield row
            continue
        ref, sample_id = f"{root.name}/{row.get('sample_id') or '<' + where + '>'}", f"items-{row.get('sample_id')}"
        try:
            visual = row.get("visual")
            paths = {
                rel: resolve_inside(root, rel, sample_id, name)
                for name, rels in (
                    ("visual", visual if isinstance(visual, list) else [visual]),
                    ("audio", [row.get("audio")]),
                )
                for rel in rels
            }
        except RecordError as exc:
            yield Rejected(ref, "record", str(exc), sample_id)
            continue
        missing = [rel for rel, path in paths.items() if not Path(path).is_file()]
        if missing:
            yield Rejected(ref, "media_unreadable", f"{where}: no such file {missing[0]!r}", sample_id)
            continue

        def under_media(rel: str) -> str:
            return rel if rel.startswith("media/") else f"media/{rel}"

        for rel, path in paths.items():
            (out / under_media(rel)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out / under_media(rel))
        hidden = dict(row.get("hidden") or {}) if isinstance(row.get("hidden"), Mapping) else {}
        yield {
            **row,
            "sample_id": sample_id,
            "audio": under_media(row["audio"]),
            "visual": [under_media(v) for v in visual] if isinstance(visual, list) else under_media(visual),
            "hidden": {**hidden, "source_ref": ref, "source_meta": {"source": row.get("source")}},
        }


@hookimpl
def sceval_register_converters(registry) -> None:
    registry.add(
        Converter(
            "social_iq2",
            convert_social_iq2,
            SOCIAL_IQ2_LICENSE,
            evidence_modality="audio+visual",
            description="Social-IQ 2.0 challenge release (siq2/qa/*.json, video/, audio/wav/)",
        )
    )
    registry.add(
        Converter(
            "omni_bench",
            convert_omni_bench,
            OMNI_BENCH_LICENSE,
            evidence_modality="audio+visual",
            description="OmniBench, Hugging Face schema (m-a-p/OmniBench parquet)",
        )
    )
    registry.add(
        Converter(
            "valor",
            convert_valor,
            VALOR_LICENSE,
            evidence_modality="audio+visual",
            description="VALOR-32K-style clips with captions (desc_*.json) or QA entries",
        )
    )
    registry.add(
        Converter(
            "items",
            convert_items,
            "the folder's own (each row's hidden.license)",
            description="a folder in SCEval's unified schema; items=demo: the embedded demo set",
            named_copies={"demo": DEMO_DIR},
        )
    )
