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
import os
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from sceval_plugin import media
from sceval_plugin.data import decode_cache

OPTION_KEYS = tuple(string.ascii_uppercase[:4])
MAX_FRAMES = media.MAX_FRAMES


class RecordError(ValueError):
    """A dataset record is malformed; the message names the sample and the field."""


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
        per file across tasks and runs (:mod:`.decode_cache`)."""
        return load_frames(self.sample_id, "visual", self.visual).frames

    def frames_at_budget(self, count: int) -> media.Frames:
        """A video decoded to exactly ``count`` uniformly spaced frames (the frame-budget probe)."""
        return load_frames(self.sample_id, "visual", self.visual, count)

    def frame_times(self) -> tuple[float, ...] | None:
        """Seconds into the clip of each video frame; None for an image or a frame list."""
        return load_frames(self.sample_id, "visual", self.visual).times if self.visual_kind == "video" else None

    def waveform(self) -> np.ndarray:
        """Mono float32 audio at 16 kHz. Read-only; decoded once (:mod:`.decode_cache`)."""
        return load_audio(self.sample_id, "audio", self.audio)[0]

    def media_notes(self) -> list[str]:
        """Every conversion made to the media on decoding (downscaling, resampling, ...)."""
        return [*load_frames(self.sample_id, "visual", self.visual).notes, *load_audio(self.sample_id, "audio", self.audio)[1]]


def field_error(sample_id: Any, field_name: str, problem: str) -> RecordError:
    return RecordError(f"sample {sample_id!r}: field {field_name!r}: {problem}")


def mapping_field(value: Any, sample_id: str, name: str) -> dict:
    """An optional ``{key: value}`` field, given as a mapping or as JSON text ({} if absent)."""
    if value in (None, ""):
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise field_error(sample_id, name, f"not valid JSON: {exc}") from None
    if not isinstance(value, Mapping):
        raise field_error(sample_id, name, f"expected a mapping, got {type(value).__name__}")
    return dict(value)


def text_field(row: Mapping[str, Any], sample_id: str, name: str) -> str:
    """An optional text field ("" if absent); any other type is refused, not stringified."""
    value = row.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise field_error(sample_id, name, f"expected text, got {type(value).__name__} {value!r:.60}")
    return value


def resolve_inside(root: Path, relative: Any, sample_id: str, field_name: str) -> str:
    """Absolute path of ``relative`` under ``root``, symlinks resolved.

    A symlink (to a file or a folder) is accepted when its target stays inside the dataset
    root (itself resolved); a path that ends up outside it is rejected, naming the path, its
    target and the root.
    """
    if not isinstance(relative, str) or not relative.strip() or "\x00" in relative:
        raise field_error(sample_id, field_name, f"expected a relative media path, got {relative!r}")
    root = root.resolve()
    path = (root / relative).resolve()
    if path != root and root not in path.parents:
        target = "" if path == Path(os.path.abspath(root / relative)) else f" (which resolves to {path})"
        raise field_error(sample_id, field_name, f"path {relative!r}{target} escapes the dataset root {root}")
    return str(path)


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
        raise field_error(sample_id, "options", f"expected 2-4 options as a list or a {{key: text}} map, got {options!r}")
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
    visual_list = [visual] if isinstance(visual, str) else list(visual) if isinstance(visual, (list, tuple)) else \
        [] if visual is None else None
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
        raise field_error(item.sample_id, "key_frame_index",
                          f"{item.key_frame_index} is past the last of the {len(frames)} frames decoded")


def load_media(sample_id: str, field_name: str, kind: str, paths: tuple[str, ...],
               decode: Callable[[], decode_cache.Decoded], **params: Any) -> decode_cache.Decoded:
    """A medium through the shared :mod:`.decode_cache`; a broken file raises :class:`RecordError`
    naming the sample, the field and the file (failures are not cached)."""
    try:
        return decode_cache.load(kind, paths, decode, **params)
    except media.MediaError as exc:
        raise RecordError(f"sample {sample_id!r}: field {field_name!r}: {exc}") from exc


def decode_frames(paths: tuple[str, ...], exactly: int | None = None) -> decode_cache.Decoded:
    """One video sampled per App. F.2 (or to ``exactly`` frames), or a list of same-size images."""
    if len(paths) == 1 and Path(paths[0]).suffix.lower() in media.VIDEO_SUFFIXES:
        return decode_cache.Decoded(*media.read_video_frames(paths[0], exactly=exactly))
    images, notes = zip(*(media.read_image(p) for p in paths))
    if len({im.shape for im in images}) > 1:
        raise media.MediaError(f"frames differ in size: {sorted({im.shape for im in images})}")
    return decode_cache.Decoded(np.stack(images), (), tuple(n for group in notes for n in group))


def decode_audio(path: str) -> decode_cache.Decoded:
    wave, _, notes = media.read_audio(path)
    return decode_cache.Decoded(wave, (), tuple(notes))


def load_frames(sample_id: str, field_name: str, paths: tuple[str, ...], exactly: int | None = None) -> media.Frames:
    decoded = load_media(sample_id, field_name, "frames", paths, lambda: decode_frames(paths, exactly), exactly=exactly)
    return media.Frames(decoded.array, decoded.times, decoded.notes)


def load_audio(sample_id: str, field_name: str, path: str) -> tuple[np.ndarray, tuple[str, ...]]:
    decoded = load_media(sample_id, field_name, "audio", (path,), lambda: decode_audio(path),
                         sample_rate=media.SAMPLE_RATE)
    return decoded.array, decoded.notes
