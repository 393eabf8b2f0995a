"""One typed record per C3PO item, its validation, and the loading of its media.

The schema (one JSON object per item; a jsonl/parquet row or a Hugging Face dataset row)::

    sample_id     unique id (str)
    template      template id (``CC08``) or name (``CausalMisattribution``); category and tier
                  follow from it (``category``/``tier`` fields, if present, must agree)
    question      the question (str)
    answer        the short gold answer (str)
    video, image, audio
                  media paths relative to the dataset root, exactly those the template needs
    context       optional extra text evidence (a tier-4 precondition, a posted rule in words)
    distractors   optional {modality: answer that modality alone would suggest}; modality is
                  audio, image, video or text (the text/prior reading); ``partial`` holds an
                  answer that fuses the evidence only in part. Used to name failure modes.
    difficulty    optional difficulty score 1-10
    human_answer  optional answer of a human evaluator (graded like a model's)
    source        optional provenance label; hidden: optional metadata no prompt contains
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from c3po_plugin.templates import Template, registry
from faultline_eval.core import media
from faultline_eval.core.record_fields import (
    RecordError,
    field_error,
    load_audio,
    load_frames,
    mapping_field,
    resolve_inside,
    text_field,
)

MEDIA_FIELDS = ("video", "image", "audio")
DISTRACTOR_KEYS = ("audio", "image", "video", "text", "partial")
SUFFIXES = {"video": media.VIDEO_SUFFIXES, "image": media.IMAGE_SUFFIXES, "audio": media.AUDIO_SUFFIXES}


@dataclass(frozen=True)
class C3POItem:
    sample_id: str
    template_id: str
    question: str
    answer: str
    root: str
    source: str = "local"
    video: str | None = None  # resolved absolute paths
    image: str | None = None
    audio: str | None = None
    context: str = ""
    distractors: Mapping[str, str] = field(default_factory=dict)
    difficulty: int | None = None
    human_answer: str | None = None
    hidden: Mapping[str, Any] = field(default_factory=dict)

    @property
    def template(self) -> Template:
        return registry().get(self.template_id)

    def media_path(self, kind: str) -> str | None:
        return getattr(self, kind)

    def relative_media(self) -> dict[str, str]:
        return {k: str(Path(p).relative_to(self.root)) for k in MEDIA_FIELDS if (p := getattr(self, k))}

    def frames(self) -> np.ndarray:
        """The video sampled per SCEval App. F.2 (1 fps, at most 8 frames spread over the
        whole clip), uint8 ``(N, H, W, 3)``. Decoded once across tasks and runs
        (:mod:`faultline_eval.core.decode_cache`)."""
        return load_frames(self.sample_id, "video", (self.video,)).frames

    def frame_times(self) -> tuple[float, ...] | None:
        """Seconds into the clip of each video frame; None without a video."""
        return load_frames(self.sample_id, "video", (self.video,)).times if self.video else None

    def picture(self) -> np.ndarray:
        """The image, uint8 ``(H, W, 3)``. Decoded once, like the frames."""
        return load_frames(self.sample_id, "image", (self.image,)).frames[0]

    def waveform(self) -> np.ndarray:
        """Mono float32 audio at 16 kHz. Decoded once, like the frames."""
        return load_audio(self.sample_id, "audio", self.audio)[0]

    def media_notes(self) -> list[str]:
        """Every conversion made to the media on decoding (downscaling, resampling, ...)."""
        notes = list(load_frames(self.sample_id, "video", (self.video,)).notes) if self.video else []
        notes += load_frames(self.sample_id, "image", (self.image,)).notes if self.image else ()
        return notes + list(load_audio(self.sample_id, "audio", self.audio)[1] if self.audio else ())


def _whole_number(value: Any) -> int | None:
    """``value`` as an int if it is one (``2``, ``2.0``, ``"2"``), else None."""
    try:
        number = float(value)
        return int(number) if number == int(number) else None
    except (TypeError, ValueError, OverflowError):
        return None


def item_from_row(row: Mapping[str, Any], root: str | Path, *, source: str | None = None) -> C3POItem:
    """Validate one row against its template and resolve its media paths under ``root``."""
    sample_id = row.get("sample_id")
    if not isinstance(sample_id, str) or not sample_id.strip():
        raise RecordError(f"record without a usable 'sample_id': {str(dict(row))[:200]}")
    key = row.get("template") or row.get("template_id")
    if not isinstance(key, str) or key not in registry():
        raise field_error(sample_id, "template", f"unknown template {key!r}; `c3po templates` lists the known ones")
    template = registry().get(key)
    if row.get("category") not in (None, "") and str(row["category"]).lower() not in (
        template.category,
        template.category_name.lower(),
    ):
        raise field_error(
            sample_id,
            "category",
            f"{row['category']!r} contradicts template {template.name} ({template.category_name})",
        )
    if row.get("tier") not in (None, "") and _whole_number(row["tier"]) != template.tier:
        raise field_error(
            sample_id, "tier", f"{row['tier']!r} contradicts template {template.name} (tier {template.tier})"
        )
    for name in ("question", "answer"):
        if not isinstance(row.get(name), str) or not row[name].strip():
            raise field_error(sample_id, name, f"missing or empty (got {row.get(name)!r})")

    root_path = Path(root)
    paths: dict[str, str] = {}
    for kind in MEDIA_FIELDS:
        value = row.get(kind)
        needed = kind in template.modalities
        if needed and value in (None, ""):
            raise field_error(
                sample_id,
                kind,
                f"missing: template {template.name} (tier {template.tier}) needs {', '.join(template.media)}",
            )
        if not needed and value not in (None, ""):
            raise field_error(
                sample_id,
                kind,
                f"template {template.name} (tier {template.tier}) has no {kind}; it takes {', '.join(template.media)}",
            )
        if needed:
            paths[kind] = resolve_inside(root_path, value, sample_id, kind)
            if Path(paths[kind]).suffix.lower() not in SUFFIXES[kind]:
                raise field_error(sample_id, kind, f"{value!r} is not a {kind} file ({', '.join(SUFFIXES[kind])})")

    distractors = mapping_field(row.get("distractors"), sample_id, "distractors")
    bad = sorted(set(distractors) - set(DISTRACTOR_KEYS))
    if bad or any(not isinstance(v, str) or not v.strip() for v in distractors.values()):
        raise field_error(
            sample_id,
            "distractors",
            f"keys must be among {DISTRACTOR_KEYS} with non-empty answers" + (f"; unknown {bad}" if bad else ""),
        )
    difficulty = row.get("difficulty")
    if difficulty not in (None, ""):
        if (
            isinstance(difficulty, bool)
            or not isinstance(difficulty, (int, float))
            or not math.isfinite(difficulty)
            or int(difficulty) != difficulty
            or not 1 <= int(difficulty) <= 10
        ):
            raise field_error(sample_id, "difficulty", f"expected an integer 1-10, got {difficulty!r}")
        difficulty = int(difficulty)
    else:
        difficulty = None
    human = row.get("human_answer")
    if human is not None and not isinstance(human, str):
        raise field_error(sample_id, "human_answer", f"expected text, got {type(human).__name__}")
    return C3POItem(
        sample_id=sample_id,
        template_id=template.id,
        question=row["question"].strip(),
        answer=row["answer"].strip(),
        root=str(root_path.resolve()),
        source=text_field(row, sample_id, "source") or source or "local",
        context=text_field(row, sample_id, "context"),
        distractors={k: distractors[k].strip() for k in DISTRACTOR_KEYS if k in distractors},
        difficulty=difficulty,
        human_answer=human.strip() if human and human.strip() else None,
        hidden=mapping_field(row.get("hidden"), sample_id, "hidden"),
        **paths,
    )


def check_media(item: C3POItem) -> None:
    """Decode every media file of the item once; :class:`RecordError` names the sample and file."""
    for kind, load in (("video", item.frames), ("image", item.picture), ("audio", item.waveform)):
        if item.media_path(kind):
            load()
