"""The media of a wrapped lmms-eval task, corrupted by value type (wrap design §3, §5; issue 27).

A wrapped task calls the base task's ``doc_to_visual`` (or reads a ``doc_to_messages`` part's url)
and hands what it got to :func:`corrupt_media`, which maps every item by its type, whatever the
task's columns:

================================  =================================  =========================================
item                              given to the operator              returned
================================  =================================  =========================================
``PIL.Image``                     uint8 ``(1, H, W, 3)``             PIL (RGB)
list of PIL (frame tasks)         ``(N, H, W, 3)``, one call         list of PIL
``{"array", "sampling_rate"}``    float32 per channel at the         ``{"type": "audio", "array",
(also datasets' AudioDecoder)     source's rate                      "sampling_rate"}``: the source's rate
                                                                     and shape
path, image suffix                ``(1, H, W, 3)``                   lossless PNG path
path, audio suffix                per channel, the file's rate       float WAV path (the file's rate and
                                                                     channels)
path, anything else: video        every source frame (or the         lossless MP4 path (the source's rate
                                  grid's), one call; the audio       and size, or the grid's; PCM s16
                                  track, per channel                 audio at the track's rate/channels)
================================  =================================  =========================================

**Audio** (issue 36). Under ``frames=source`` audio keeps what the base gives: its sampling rate
and its channels. A condition that leaves audio alone hands the base's samples over unchanged
(the same array values and rate; an audio *path* stays the same path). A corruption runs once per
channel on float32 samples (the operators' type; the result is given back in the source's type,
an integer type rounded), each call the same seeded call, so a removed or muted segment falls at
the same place in every channel; ``distortion`` clips each channel at its own peak. SCEval's audio operators act on
fractions of the length and on amplitude, so they need no rate; the probes that act in seconds
(desync, audio gaps and shuffle) are given the real rate. Under ``frames=sceval_grid`` audio is
SCEval's form instead, as it was before: mono (channels averaged) at 16 kHz
(:func:`faultline_eval.core.media.resample_audio`), for every condition clean included.

**Faithful by default, paired throughout** (issue 36). A condition that leaves a modality alone
(``clean``, audio-only conditions for the frames, ...) still gives that modality the form every
condition gives it, so conditions differ only by their corruption: images and frame lists come
back unchanged (the same objects; an image *path* stays the same path), audio too under
``frames=source`` (above), and a video file always comes back re-encoded.

**Video** (design §5). The model decides how to sample a video file, so the wrapper hands it a new
file; ``frames`` (a wrap option, :data:`FRAMES_CHOICES`) says which frames it holds:

* ``source`` (the default; ``grid=None`` here): every frame of the source, at its own size,
  decoded as lmms-eval's own reader decodes them
  (:func:`faultline_eval.core.media.read_source_video`), corrupted as one stack and written at
  the source's average frame rate (frame *i* at ``i / rate``). A model sampling N frames itself
  (``linspace`` over the frame count, or by time) picks the same frames, bit for bit, as from the
  original file, corrupted. Cost: the whole clip in memory, bounded by
  ``FAULTLINE_MAX_SOURCE_VIDEO_MB`` (default 2048; a clip over it is refused naming the setting,
  never cut); the corruption runs on every frame (a 30 fps clip: 30x the grid's work per second).
* ``sceval_grid``: exactly the frames SCEval's protocol takes
  (:func:`faultline_eval.core.media.sample_times` on the :class:`FrameGrid`, App. F.2: 1 frame/s,
  at most 8, uniform over longer clips), decoded through the shared decode cache and written at
  the grid's constant rate (frame *i* at ``i * step``), so the clip keeps its duration (to within
  one step for clips shorter than ``max_frames / fps``) and index-based and time-based samplers
  agree on which frames exist. A model sampling more frames than the grid holds gets the grid's
  frames at most (2 of a 2 s clip where the base task gave it 8): what SCEval's own items show.

Either way the stack is corrupted in one operator call (occlusion and other operators may be
consistent across frames; chunking would change the bytes), and the frame-budget probe's
``exactly=N`` grid replaces both.

**File cache.** Written files go to ``<cache>/wrapped_media/<2 hex>/<digest>.<ext>``; the digest
covers the source file's identity (resolved path, size, modification time, as the decode cache's
key), the corruption's :attr:`MediaCorruption.identity`, the grid (or ``source``), the audio's
form (the source's or 16 kHz mono), the media limits and
:data:`FORMAT_VERSION`. A file already there is reused (later models, reruns, other ranks: a stat,
a touch and a path). The folder is bounded (``SCEVAL_WRAPPED_MEDIA_GB``, default 50; ``0``: no
bound): past it the least recently used files are deleted down to 90 %, so a rerun after an
eviction writes them again (the bound must exceed what one batch of requests holds). Writers go
through :func:`faultline_eval.core.store.replacing`, so a reader never sees a torn file and two
processes writing the same digest each rename a whole copy; within a process, threads asking for
the same file wait for one writer. ``sceval cache clear`` empties the folder.

**Limits.** Files are read with the project's readers, so the media limits apply
(:class:`faultline_eval.core.media.MediaLimits`): a picture or frame over
``FAULTLINE_MAX_FRAME_SIDE`` is downscaled before the operator sees it (source frames excepted:
they keep their size), an over-long clip is refused. A video without an audio track is written without one; an audio corruption then has
nothing to act on, which is logged as a warning naming the doc and file.

**Errors** name ``where`` (the wrapped task and doc key), the item's position and the item: a
missing or unreadable file, a type this module does not know, an empty list, an operator that
changed a shape. Nothing is dropped silently.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger
from PIL import Image

from faultline_eval.core import decode_cache, media
from faultline_eval.core.media_processing import decode_source_audio_track, video_duration
from faultline_eval.core.paths import cache_dir
from faultline_eval.core.record_fields import NO_AUDIO_TRACK, decode_audio, decode_frames, decode_track
from faultline_eval.core.store import replacing, write_atomic
from sceval_plugin.sceval_environment import SCEVAL_WRAPPED_MEDIA_GB

__all__ = [
    "FORMAT_VERSION",
    "AUDIO_TYPE",
    "NotApplied",
    "WrappedMediaError",
    "MediaCorruption",
    "FrameGrid",
    "SOURCE_FRAMES",
    "GRID_FRAMES",
    "FRAMES_CHOICES",
    "corrupt_media",
    "decoded_video",
    "folder",
    "files",
    "stats",
]

#: Bump when the bytes of a written file change for the same inputs (encoder settings, layout):
#: new digests, old files never reused.
FORMAT_VERSION = 3
#: How a video file is handed over (the wrap option ``frames``, recorded in the manifest and each
#: trial): every source frame at its own rate and size (the default, faithful to the base task),
#: or re-encoded on SCEval's frame grid (:class:`FrameGrid`).
SOURCE_FRAMES = "source"
GRID_FRAMES = "sceval_grid"
FRAMES_CHOICES = (SOURCE_FRAMES, GRID_FRAMES)
#: The ``type`` of the audio dicts returned (lmms-eval's auto-messages read it, design §1.6).
AUDIO_TYPE = "audio"


class NotApplied(Exception):
    """Raised by a corruption that does not apply to an item (``args[0]``: why, e.g. a probe's
    ``single_frame``): the item is kept as it is and :attr:`MediaCorruption.not_applied` is told,
    also when a file written for it is reused later (the reason is kept beside the file)."""


class WrappedMediaError(media.MediaError):
    """A media item of a wrapped task cannot be corrupted; the message names the task and doc
    (``where``), the item's position and the item."""


@dataclass(frozen=True)
class MediaCorruption:
    """What one wrapped condition does to media; built from an SCEval condition by the wrapper
    (:mod:`faultline_eval.tasks.wrapped_task`), opaque here.

    ``vision``: uint8 ``(N, H, W, 3)`` -> the same shape and type (N = 1 for an image); None leaves
    images and frames unchanged. ``audio``: ``(samples, rate)``, mono float32 at ``rate`` Hz (the
    source's, or 16 kHz under ``frames=sceval_grid``; one call per channel) -> the same length;
    None leaves the samples unchanged. ``drop_media``: the shortcut controls, every item
    removed. ``identity``: the condition id, variant, doc key and seed scheme, part of the file
    cache's key (two corruptions with the same identity must be the same functions).
    ``keeps_length`` False lets ``vision`` return another number of frames (same size) and
    ``audio`` another number of samples (the temporal probe's middle drop and gaps). ``grid``: the
    frame grid a video is decoded on under this corruption, in place of the task's (the
    frame-budget probe); ``vision`` then acts on images and frame lists only, a video's frames
    being what that grid takes. ``not_applied(reason)`` is called for an item a callable raised
    :class:`NotApplied` on.
    """

    vision: Callable[[np.ndarray], np.ndarray] | None
    audio: Callable[[np.ndarray, int], np.ndarray] | None
    drop_media: bool = False
    identity: str = ""
    keeps_length: bool = True
    grid: FrameGrid | None = None
    not_applied: Callable[[str], None] | None = None


@dataclass(frozen=True)
class FrameGrid:
    """The frames a wrapped video keeps: :func:`faultline_eval.core.media.sample_times` with these
    settings (default: SCEval's App. F.2 protocol, 1 frame/s and at most 8). A run option, recorded
    with each trial (:meth:`as_dict`), because it decides what the model can see. ``exactly=N``:
    N frames, frame *i* at ``i * duration / N`` (G.10's frame budget, the rule of
    :meth:`sceval_plugin.data.records.OmniItem.frames_at_budget`), in place of the grid."""

    fps: float = media.FRAME_RATE
    max_frames: int = media.MAX_FRAMES
    exactly: int | None = None

    def __post_init__(self) -> None:
        if not (self.fps > 0 and self.max_frames >= 1) or (self.exactly is not None and self.exactly < 1):
            raise ValueError(f"a frame grid needs fps > 0, max_frames >= 1 and exactly None or >= 1, got {self}")

    def as_dict(self) -> dict[str, float | int | None]:
        return {"fps": self.fps, "max_frames": self.max_frames, "exactly": self.exactly}


@dataclass
class Stats:
    """What this process's wrapped-media calls cost: files written vs found in the file cache."""

    written: int = 0
    reused: int = 0


stats = Stats()
_lock = threading.Lock()
_in_flight: dict[str, threading.Lock] = {}


def folder() -> Path:
    return cache_dir() / "wrapped_media"


#: The bound on the file cache (GB; ``0``: no bound): past it the least recently used files are
#: deleted down to 90 % (a reused file is touched, so it counts as used).
DISK_ENV = SCEVAL_WRAPPED_MEDIA_GB.name
_SUFFIX = {"image": ".png", "audio": ".wav", "video": ".mp4"}
#: Beside a written file, why its corruption did not apply (:class:`NotApplied`).
NOT_APPLIED_SUFFIX = ".not_applied"
files = decode_cache.BoundedFolder(folder, tuple(_SUFFIX.values()), SCEVAL_WRAPPED_MEDIA_GB)


def corrupt_media(
    items: Sequence[Any], corruption: MediaCorruption, *, where: str, grid: FrameGrid | None = None
) -> list[Any]:
    """``items`` (what a task's ``doc_to_visual`` returned) with ``corruption`` applied to each,
    by type (see the module docstring); the same length and order. ``drop_media`` returns ``[]``.
    ``where`` names the wrapped task and doc in every error; ``grid`` is the frame grid a video
    file is re-encoded on (``frames=sceval_grid``); None (the default, ``frames=source``): every
    frame of the source at its own rate and size, and audio at its own rate and channels. Safe to
    call from several threads and processes at once."""
    if corruption.drop_media:
        return []
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise WrappedMediaError(f"{where}: expected a list of media items, got {_describe(items)}")
    if not items:
        raise WrappedMediaError(f"{where}: no media items (an empty list) where the task should give media")
    source_audio = grid is None  # frames=source: the audio is the source's too (module docstring)
    return [
        _corrupt_item(item, corruption, f"{where}: media item {index}", grid, source_audio)
        for index, item in enumerate(items)
    ]


def _corrupt_item(
    item: Any, corruption: MediaCorruption, where: str, grid: FrameGrid | None, source_audio: bool
) -> Any:
    if isinstance(item, Image.Image):
        return _image(item, corruption, where)
    if isinstance(item, (list, tuple)):
        return _frame_list(item, corruption, where)
    if isinstance(item, (str, os.PathLike)):
        return _path(os.fspath(item), corruption, where, corruption.grid or grid, source_audio)
    if isinstance(item, dict) or hasattr(item, "get_all_samples"):  # datasets' AudioDecoder: item access
        return _audio_dict(item, corruption, where, source_audio)
    raise WrappedMediaError(
        f"{where}: {_describe(item)} is not a media item this wrapper knows "
        "(PIL image, list of PIL images, audio dict with 'array' and 'sampling_rate', or a file path)"
    )


# --- in-memory items --------------------------------------------------------------------------------


def _vision(frames: np.ndarray, corruption: MediaCorruption, where: str) -> np.ndarray:
    """One call of the vision operator on the whole stack, its result checked."""
    assert corruption.vision is not None
    out = np.asarray(_call(corruption.vision, frames, "vision", where, corruption))
    same = out.shape == frames.shape if corruption.keeps_length else out.shape[1:] == frames.shape[1:] and len(out)
    if not same or out.dtype != np.uint8:
        raise WrappedMediaError(
            f"{where}: the vision corruption returned {out.dtype} {out.shape} for uint8 {frames.shape}"
        )
    return out


def _audio(wave: np.ndarray, rate: int, corruption: MediaCorruption, where: str) -> np.ndarray:
    """The audio operator on float32 samples at ``rate``: mono ``(samples,)`` in one call,
    ``(samples, channels)`` in one call per channel, each the same seeded call, so a segment falls
    at the same place in every channel (None: the samples as they are)."""
    audio = corruption.audio
    if audio is None:
        return wave
    if wave.ndim == 2:
        channels = [_audio(np.ascontiguousarray(wave[:, c]), rate, corruption, where) for c in range(wave.shape[1])]
        if len({len(channel) for channel in channels}) > 1:
            raise WrappedMediaError(f"{where}: the audio corruption gave the channels different lengths")
        return np.stack(channels, axis=1)
    out = np.asarray(_call(lambda mono: audio(mono, rate), wave, "audio", where, corruption), dtype=np.float32)
    same = out.shape == wave.shape if corruption.keeps_length else out.ndim == 1 and out.size > 0
    if not same:
        raise WrappedMediaError(f"{where}: the audio corruption returned {out.shape} samples for {wave.shape}")
    return out


def _call(
    operator: Callable[[np.ndarray], np.ndarray],
    data: np.ndarray,
    modality: str,
    where: str,
    corruption: MediaCorruption,
) -> Any:
    """``operator(data)``; what it raises is re-raised naming the doc (the operator knows no doc),
    except :class:`NotApplied`: then ``data`` as it is, and ``corruption.not_applied`` told why."""
    try:
        return operator(data)
    except NotApplied as exc:
        if corruption.not_applied is not None:
            corruption.not_applied(str(exc.args[0]))
        return data
    except Exception as exc:
        raise WrappedMediaError(f"{where}: the {modality} corruption failed: {type(exc).__name__}: {exc}") from exc


def _image(image: Image.Image, corruption: MediaCorruption, where: str) -> Image.Image:
    if corruption.vision is None:
        return image
    pixels = np.asarray(image.convert("RGB"))[None]
    return Image.fromarray(_vision(pixels, corruption, where)[0])


def _frame_list(frames: Sequence[Any], corruption: MediaCorruption, where: str) -> list[Any]:
    if not frames:
        raise WrappedMediaError(f"{where}: an empty list of frames")
    for index, frame in enumerate(frames):
        if not isinstance(frame, Image.Image):
            raise WrappedMediaError(f"{where}: frame {index} is {_describe(frame)}, not a PIL image")
    if corruption.vision is None:
        return list(frames)
    stack = [np.asarray(frame.convert("RGB")) for frame in frames]
    if len({pixels.shape for pixels in stack}) > 1:
        raise WrappedMediaError(f"{where}: frames differ in size: {sorted({pixels.shape for pixels in stack})}")
    return [Image.fromarray(pixels) for pixels in _vision(np.stack(stack), corruption, where)]


def _audio_dict(item: Any, corruption: MediaCorruption, where: str, source_audio: bool) -> dict[str, Any]:
    try:
        samples, rate = item["array"], item["sampling_rate"]
    except (KeyError, TypeError, IndexError) as exc:
        raise WrappedMediaError(
            f"{where}: {_describe(item)} is not an audio item ('array' and 'sampling_rate' expected): {exc!r}"
        ) from None
    try:
        rate = int(rate)
    except (TypeError, ValueError):
        raise WrappedMediaError(f"{where}: audio sampling_rate {rate!r} is not a number") from None
    if rate <= 0:
        raise WrappedMediaError(f"{where}: audio sampling_rate {rate} is not positive")
    given = _checked_samples(samples, where)
    if not source_audio:  # frames=sceval_grid: SCEval's form, mono at 16 kHz
        mono = given.mean(axis=_channel_axis(given), dtype=np.float32) if given.ndim == 2 else given
        wave = media.resample_audio(np.ascontiguousarray(mono, dtype=np.float32), rate)
        grid_audio = _audio(wave, media.SAMPLE_RATE, corruption, where)
        return {"type": AUDIO_TYPE, "array": grid_audio, "sampling_rate": media.SAMPLE_RATE}
    if corruption.audio is None:  # the base's samples as they are
        return {"type": AUDIO_TYPE, "array": given, "sampling_rate": rate}
    flipped = given.ndim == 2 and _channel_axis(given) == 0  # (channels, samples): corrupted as (samples, channels)
    out = _audio(np.ascontiguousarray(given.T if flipped else given, dtype=np.float32), rate, corruption, where)
    return {"type": AUDIO_TYPE, "array": _in_dtype(out.T if flipped else out, given.dtype), "sampling_rate": rate}


def _checked_samples(samples: Any, where: str) -> np.ndarray:
    """The samples as an array: mono ``(samples,)`` or 2-D with the channels on the shorter axis
    (soundfile gives (samples, channels), torchcodec (channels, samples)), non-empty and finite."""
    try:
        wave = np.asarray(samples)
    except (TypeError, ValueError) as exc:
        raise WrappedMediaError(f"{where}: audio array cannot be read as numbers: {exc}") from None
    if wave.ndim not in (1, 2) or not wave.size or wave.dtype.kind not in "fiu":
        raise WrappedMediaError(
            f"{where}: audio array of {wave.dtype} {wave.shape}: expected numeric mono or multi-channel samples"
        )
    if not np.isfinite(wave).all():
        raise WrappedMediaError(f"{where}: audio holds NaN or infinite samples")
    return wave


def _in_dtype(wave: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Corrupted float32 samples in the source's type: a float type as is, an integer type
    (PCM-valued arrays) rounded and clipped to its range."""
    if dtype.kind == "f":
        return wave.astype(dtype, copy=False)
    bounds = np.iinfo(dtype)
    return np.clip(np.rint(wave), bounds.min, bounds.max).astype(dtype)


def _channel_axis(wave: np.ndarray) -> int:
    return int(np.argmin(wave.shape))


# --- files -----------------------------------------------------------------------------------------


def _path(path: str, corruption: MediaCorruption, where: str, grid: FrameGrid | None, source_audio: bool) -> str:
    try:
        status = os.stat(path)
    except OSError as exc:
        raise WrappedMediaError(f"{where}: media file {path!r} cannot be read: {exc.strerror or exc}") from None
    suffix = os.path.splitext(path)[1].lower()  # os.path: a warm request is mostly such calls
    if suffix in media.IMAGE_SUFFIXES:
        if corruption.vision is None:
            return path
        kind, write = "image", _write_image
    elif suffix in media.AUDIO_SUFFIXES:
        if corruption.audio is None and source_audio:
            return path
        kind, write = "audio", _write_audio
    else:  # what is neither an image nor audio is read as a video (lmms-eval's own rule, design §1.6)
        kind, write = "video", _write_video
    target = files.path(_digest(kind, path, status, corruption, grid, source_audio), _SUFFIX[kind])
    told = corruption.not_applied
    if told is not None:  # the reason goes beside the file, before the file itself is in place
        note = target.with_name(target.name + NOT_APPLIED_SUFFIX)

        def keep(reason: str) -> None:
            write_atomic(note, reason)
            told(reason)

        corruption = replace(corruption, not_applied=keep)
    if _reuse(target):
        if told is not None and note.is_file():
            told(note.read_text(encoding="utf-8"))
        return str(target)
    key = target.name
    with _lock:
        gate = _in_flight.setdefault(key, threading.Lock())
    try:
        with gate:  # a second thread asking for the same file waits for the first's
            if not _reuse(target):
                try:
                    write(path, target, corruption, where, grid, source_audio)
                except media.MediaError as exc:
                    if isinstance(exc, WrappedMediaError):
                        raise
                    raise WrappedMediaError(f"{where}: {exc}") from exc
                stats.written += 1
                if files.limit_bytes() > 0:
                    files.added(target.stat().st_size)
    finally:
        with _lock:
            _in_flight.pop(key, None)
    return str(target)


def _reuse(target: Path) -> bool:
    """Whether ``target`` is already written; if so it is touched (least recently *used* goes first)."""
    try:
        os.utime(target)
    except FileNotFoundError:
        return False
    except OSError:  # a cache shared read-only: reused, not touched
        pass
    stats.reused += 1
    return True


def _digest(
    kind: str,
    path: str,
    status: os.stat_result,
    corruption: MediaCorruption,
    grid: FrameGrid | None,
    source_audio: bool,
) -> str:
    """The file cache key: what the written bytes depend on (module docstring), and nothing else."""
    identity = (
        FORMAT_VERSION,
        kind,
        _real_path(path),
        status.st_size,
        status.st_mtime_ns,
        corruption.identity,
        (astuple(grid) if grid is not None else SOURCE_FRAMES) if kind == "video" else (),
        ("source audio" if source_audio else "16 kHz mono") if kind != "image" else (),
        repr(media.limits()),  # a frozen dataclass: its repr lists every field (astuple deep-copies, slower)
    )
    return hashlib.blake2b(repr(identity).encode(), digest_size=16).hexdigest()


@functools.lru_cache(maxsize=65_536)
def _real_path(path: str) -> str:
    """``os.path.realpath`` once per path in a process (it lstats every component: most of a warm
    request's cost). The size and time in the key come from a fresh stat of what the path names."""
    return os.path.realpath(path)


def _write_image(
    path: str, target: Path, corruption: MediaCorruption, where: str, grid: FrameGrid | None, source_audio: bool
) -> None:
    decoded = decode_cache.load("frames", (path,), lambda: decode_frames((path,)), exactly=None)
    pixels = _vision(decoded.array, corruption, where)[0]
    with replacing(target) as temporary:
        media.write_image(temporary, pixels)


def _write_audio(
    path: str, target: Path, corruption: MediaCorruption, where: str, grid: FrameGrid | None, source_audio: bool
) -> None:
    if source_audio:  # the file's own rate and channels
        wave, rate = media.read_source_audio(path)
        wave = wave[:, 0] if wave.shape[1] == 1 else wave
    else:
        decoded = decode_cache.load("audio", (path,), lambda: decode_audio(path), sample_rate=media.SAMPLE_RATE)
        wave, rate = decoded.array, media.SAMPLE_RATE
    with replacing(target) as temporary:
        media.write_audio(temporary, _audio(wave, rate, corruption, where), rate)


def _write_video(
    path: str, target: Path, corruption: MediaCorruption, where: str, grid: FrameGrid | None, source_audio: bool
) -> None:
    rate: float | Fraction
    if grid is None:  # the source's frames: every one, at its own rate and size
        source, rate = media.read_source_video(path)
        frames = source.frames
    else:
        frames = _grid_frames(path, grid)
        rate = _grid_rate(path, grid)
    track, sample_rate = _source_audio_track(path) if source_audio else (_audio_track(path), media.SAMPLE_RATE)
    pixels = frames if corruption.vision is None or corruption.grid is not None else _vision(frames, corruption, where)
    if corruption.audio is not None and track is None:
        logger.warning(f"{where}: {path} has no audio track; the audio corruption has nothing to act on")
    audio = None if track is None else _audio(track, sample_rate, corruption, where)
    media.write_video_lossless(target, pixels, rate, audio, sample_rate)


def decoded_video(path: str, grid: FrameGrid | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """A video file's frames on ``grid`` (read-only uint8 ``(N, H, W, 3)``) and its audio track
    (16 kHz mono float32; None without one), through the shared decode cache: every condition
    and variant of an item decodes it once, and the default grid shares SCEval's own entries
    (:func:`faultline_eval.core.record_fields.load_frames`). Raises
    :class:`~faultline_eval.core.media.MediaError` naming the file."""
    return _grid_frames(path, grid or FrameGrid()), _audio_track(path)


def _grid_frames(path: str, grid: FrameGrid) -> np.ndarray:
    """A video file's frames on ``grid`` through the shared decode cache (:func:`decoded_video`)."""
    if grid == FrameGrid():
        params: dict[str, Any] = {"exactly": None}  # the key of record_fields.load_frames
    else:
        params = {"exactly": grid.exactly, "fps": grid.fps, "max_frames": grid.max_frames}
    frames = decode_cache.load(
        "frames",
        (path,),
        lambda: decode_frames((path,), grid.exactly, fps=grid.fps, max_frames=grid.max_frames, as_video=True),
        **params,
    )
    return frames.array


def _audio_track(path: str) -> np.ndarray | None:
    """A video file's audio track (16 kHz mono float32) through the decode cache; None without one."""
    track = decode_cache.load("audio_track", (path,), lambda: decode_track(path), sample_rate=media.SAMPLE_RATE)
    return None if NO_AUDIO_TRACK in track.notes else track.array


def _source_audio_track(path: str) -> tuple[np.ndarray | None, int]:
    """A video file's audio track as stored (float32 at its own rate, ``(samples,)`` for mono,
    else ``(samples, channels)``) and its rate; ``(None, 0)`` without one. Decoded only to write a
    file (which the file cache then keeps), so not through the decode cache."""
    import av  # heavy: PyAV, loaded where a video is read

    try:
        decoded = decode_source_audio_track(Path(path))
    except av.FFmpegError as exc:
        raise media.MediaError(f"{path}: cannot decode the audio track: {exc}") from exc
    if decoded is None or not len(decoded[0]):
        return None, 0
    wave, rate = decoded
    return (wave[:, 0] if wave.shape[1] == 1 else wave), rate


def _grid_rate(path: str, grid: FrameGrid) -> float:
    """The constant frame rate of the written clip: one frame per step of the grid's times
    (``1 / fps`` for a clip of at most ``max_frames / fps`` s, else ``max_frames / duration``)."""
    duration = video_duration(Path(path))
    if duration is None:  # read_video_frames then takes the first frames at fps
        return grid.fps
    if grid.exactly is not None:  # frame i at i * duration / exactly
        return grid.exactly / duration
    times = media.sample_times(
        duration, fps=grid.fps, max_frames=grid.max_frames, sampling=media.limits().frame_sampling
    )
    return 1 / (times[1] - times[0]) if len(times) > 1 else grid.fps


def _describe(item: Any) -> str:
    text = repr(item)
    return f"{type(item).__name__} {text[:80]}{'...' if len(text) > 80 else ''}"
