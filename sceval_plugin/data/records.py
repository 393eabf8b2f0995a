"""One typed record per SCEval item, and the loading of its media.

The unified schema (one JSON object per item; a jsonl/parquet row)::

    sample_id  unique id (str)
    source     which benchmark it came from (str)
    question   the question stem; text operators corrupt this only
    options    {"A": ..., "B": ...} or a list (keys A, B, C, D in order); 2 to 4 options
    gold_key   the correct key
    visual     path of one image, of one video, or a list of frame images (in order)
    audio      path of the audio clip
    context    optional text evidence beyond the question
    category   optional category within the source (the mismatch probes' category-matched donors)
    key_frame_index  optional 0-based index of the frame that holds the evidence, in the frame set
               as decoded (App. F.2); the key-frame position probe needs it
    hidden     optional metadata that no prompt may contain

Media paths are relative to the dataset root and must stay inside it.
"""

from __future__ import annotations

import json
import math
import numbers
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

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

OPTION_KEYS = tuple(string.ascii_uppercase[:4])
MAX_FRAMES = media.MAX_FRAMES


@dataclass(frozen=True)
class OmniItem:
    sample_id: str
    source: str
    question: str
    options: tuple[tuple[str, str], ...]  # ((key, text), ...) in key order
    gold_key: str
    visual: tuple[str, ...]  # resolved absolute paths
    audio: str  # resolved absolute path
    root: str
    context: str = ""
    hidden: Mapping[str, Any] = field(default_factory=dict)
    category: str = ""
    key_frame_index: int | None = None

    @property
    def option_keys(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.options)

    @property
    def visual_kind(self) -> str:
        if len(self.visual) == 1 and Path(self.visual[0]).suffix.lower() in media.VIDEO_SUFFIXES:
            return "video"
        return "image" if len(self.visual) == 1 else "frames"

    def frames(self) -> np.ndarray:
        """The visual evidence as uint8 ``(N, H, W, 3)``: 1 image, up to 8 frames, or a
        video sampled per App. F.2 (see :func:`media.sample_times`). Read-only; decoded once
        per file across tasks and runs (:mod:`faultline_eval.core.decode_cache`)."""
        return load_frames(self.sample_id, "visual", self.visual).frames

    def frames_at_budget(self, count: int) -> media.Frames:
        """A video decoded to exactly ``count`` uniformly spaced frames (the frame-budget probe)."""
        return load_frames(self.sample_id, "visual", self.visual, count)

    def frame_times(self) -> tuple[float, ...] | None:
        """Seconds into the clip of each video frame; None for an image or a frame list."""
        return load_frames(self.sample_id, "visual", self.visual).times if self.visual_kind == "video" else None

    def waveform(self) -> np.ndarray:
        """Mono float32 audio at 16 kHz. Read-only; decoded once (:mod:`faultline_eval.core.decode_cache`)."""
        return load_audio(self.sample_id, "audio", self.audio)[0]

    def media_notes(self) -> list[str]:
        """Every conversion made to the media on decoding (downscaling, resampling, ...)."""
        return [
            *load_frames(self.sample_id, "visual", self.visual).notes,
            *load_audio(self.sample_id, "audio", self.audio)[1],
        ]


def item_from_row(row: Mapping[str, Any], root: str | Path, *, source: str | None = None) -> OmniItem:
    """Validate one unified-schema row and resolve its media paths under ``root``."""
    sample_id = row.get("sample_id")
    if not isinstance(sample_id, str) or not sample_id.strip():
        raise RecordError(f"record without a usable 'sample_id': {str(dict(row))[:200]}")
    for name in ("question", "gold_key"):
        if not isinstance(row.get(name), str) or not row[name].strip():
            raise field_error(sample_id, name, f"missing or empty (got {row.get(name)!r})")

    options = row.get("options")
    if isinstance(options, str):
        try:
            options = json.loads(options)
        except json.JSONDecodeError as exc:
            raise field_error(sample_id, "options", f"not valid JSON: {exc}") from None
    if isinstance(options, (list, tuple)):
        if not 2 <= len(options) <= 4:
            raise field_error(sample_id, "options", f"expected 2-4 options, got {len(options)}")
        options = dict(zip(OPTION_KEYS, options))
    if not isinstance(options, Mapping) or not 2 <= len(options) <= 4:
        raise field_error(
            sample_id, "options", f"expected 2-4 options as a list or a {{key: text}} map, got {options!r}"
        )
    keys = sorted(options)
    if tuple(keys) != OPTION_KEYS[: len(keys)]:
        raise field_error(sample_id, "options", f"keys must be {', '.join(OPTION_KEYS[: len(keys)])}, got {keys}")
    if any(not isinstance(options[k], str) or not options[k].strip() for k in keys):
        raise field_error(sample_id, "options", "every option needs non-empty text")
    gold = row["gold_key"].strip().upper()
    if gold not in keys:
        raise field_error(sample_id, "gold_key", f"{row['gold_key']!r} is not one of the option keys {keys}")

    root_path = Path(root)
    visual = row.get("visual")
    visual_list = (
        [visual]
        if isinstance(visual, str)
        else list(visual)
        if isinstance(visual, (list, tuple))
        else []
        if visual is None
        else None
    )
    if visual_list is None or not all(isinstance(v, str) for v in visual_list):
        raise field_error(sample_id, "visual", f"expected a media path or a list of them, got {visual!r:.80}")
    if not visual_list:
        raise field_error(sample_id, "visual", "missing: SCEval items need visual evidence")
    if len(visual_list) > MAX_FRAMES:
        raise field_error(sample_id, "visual", f"{len(visual_list)} frames; the protocol allows at most {MAX_FRAMES}")
    resolved = tuple(resolve_inside(root_path, v, sample_id, "visual") for v in visual_list)
    if len(resolved) > 1 and any(Path(p).suffix.lower() not in media.IMAGE_SUFFIXES for p in resolved):
        raise field_error(sample_id, "visual", "a frame list must hold images only (one video goes alone)")
    if row.get("audio") in (None, ""):
        raise field_error(sample_id, "audio", "missing: SCEval items need audio")
    audio = resolve_inside(root_path, row["audio"], sample_id, "audio")

    hidden = mapping_field(row.get("hidden"), sample_id, "hidden")
    context = text_field(row, sample_id, "context")
    is_video = len(resolved) == 1 and Path(resolved[0]).suffix.lower() in media.VIDEO_SUFFIXES
    key_frame = key_frame_field(row.get("key_frame_index"), sample_id, None if is_video else len(resolved))
    return OmniItem(
        sample_id=sample_id,
        source=text_field(row, sample_id, "source") or source or "local",
        question=row["question"],
        options=tuple((k, options[k]) for k in keys),
        gold_key=gold,
        visual=resolved,
        audio=audio,
        root=str(root_path.resolve()),
        context=context,
        hidden=hidden,
        category=text_field(row, sample_id, "category"),
        key_frame_index=key_frame,
    )


def key_frame_field(value: Any, sample_id: str, n_frames: int | None) -> int | None:
    """``key_frame_index``: absent (None), or a whole number inside the item's frame set. A frame
    list or an image (``n_frames`` known) is checked here; a video's decoded frame count is checked
    by :func:`check_media` (it is known only once the clip is sampled)."""
    if value is None or value == "" or (isinstance(value, numbers.Real) and math.isnan(value)):
        return None  # parquet and pandas write a missing number as NaN
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and float(value).is_integer():
        value = int(value)  # ... and whole numbers as floats next to nulls, or as NumPy integers
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise field_error(sample_id, "key_frame_index", f"expected a frame index (0, 1, ...), got {value!r:.40}")
    if n_frames is not None and value >= n_frames:
        raise field_error(sample_id, "key_frame_index", f"{value} is past the last of the item's {n_frames} frame(s)")
    return value


def check_media(item: OmniItem) -> None:
    """Decode the item's media once, raising :class:`RecordError` naming the sample and file."""
    try:
        frames = item.frames()
        item.waveform()
    except media.MediaError as exc:
        raise RecordError(f"sample {item.sample_id!r}: {exc}") from exc
    if item.key_frame_index is not None and item.key_frame_index >= len(frames):
        raise field_error(
            item.sample_id,
            "key_frame_index",
            f"{item.key_frame_index} is past the last of the {len(frames)} frames decoded",
        )
