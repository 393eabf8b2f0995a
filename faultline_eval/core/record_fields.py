"""The checks and media loading every benchmark's record validation shares.

An error names the sample and the field (:class:`RecordError`); media go through the one
decode cache, so a file decoded for one task is not decoded again for another or the next run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from faultline_eval.core import decode_cache, media

__all__ = [
    "RecordError",
    "field_error",
    "mapping_field",
    "text_field",
    "resolve_inside",
    "load_media",
    "decode_frames",
    "decode_audio",
    "load_frames",
    "load_audio",
]


class RecordError(ValueError):
    """A dataset record is malformed; the message names the sample and the field."""


def field_error(sample_id: Any, field_name: str, problem: str) -> RecordError:
    return RecordError(f"sample {sample_id!r}: field {field_name!r}: {problem}")


def mapping_field(value: Any, sample_id: str, name: str) -> dict[str, Any]:
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


def load_media(
    sample_id: str,
    field_name: str,
    kind: str,
    paths: tuple[str, ...],
    decode: Callable[[], decode_cache.Decoded],
    **params: Any,
) -> decode_cache.Decoded:
    """A medium through the shared :mod:`.decode_cache`; a broken file raises :class:`RecordError`
    naming the sample, the field and the file (failures are not cached)."""
    try:
        return decode_cache.load(kind, paths, decode, **params)
    except media.MediaError as exc:
        raise RecordError(f"sample {sample_id!r}: field {field_name!r}: {exc}") from exc


def decode_frames(
    paths: tuple[str, ...],
    exactly: int | None = None,
    *,
    fps: float = media.FRAME_RATE,
    max_frames: int = media.MAX_FRAMES,
    as_video: bool = False,
) -> decode_cache.Decoded:
    """One video sampled per App. F.2 (or on another ``fps``/``max_frames`` grid, or to
    ``exactly`` frames), or a list of same-size images. A single path is read as a video when its
    suffix is a video's or ``as_video`` is set."""
    if len(paths) == 1 and (as_video or Path(paths[0]).suffix.lower() in media.VIDEO_SUFFIXES):
        return decode_cache.Decoded(*media.read_video_frames(paths[0], fps=fps, max_frames=max_frames, exactly=exactly))
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
    decoded = load_media(
        sample_id, field_name, "audio", (path,), lambda: decode_audio(path), sample_rate=media.SAMPLE_RATE
    )
    return decoded.array, decoded.notes
