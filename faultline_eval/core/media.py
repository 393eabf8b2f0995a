"""Reading and writing the media SCEval and C3PO use: images, video frames, audio.

Readers return exactly what the file holds plus a list of notes for every conversion made to
reach the protocol's form (RGB uint8 frames; mono float32 audio at 16 kHz), so a caller can
show them; nothing is converted silently. Failures raise :class:`MediaError` naming the file.

Media limits (:class:`MediaLimits`, read from the environment) keep the cost of one item
bounded: a picture or frame wider or taller than ``FAULTLINE_MAX_FRAME_SIDE`` is downscaled
(and noted); an image or video whose header declares more than ``FAULTLINE_MAX_MEGAPIXELS``
per frame, a clip longer than ``FAULTLINE_MAX_CLIP_SECONDS`` or audio longer than
``FAULTLINE_MAX_AUDIO_SECONDS`` is rejected with :class:`MediaTooLarge` before it is decoded.
:func:`probe` applies the same limits from headers alone, so a dataset is checked before any
operator runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np

from faultline_eval.core.settings import (
    FAULTLINE_FRAME_SAMPLING,
    FAULTLINE_MAX_AUDIO_SECONDS,
    FAULTLINE_MAX_CLIP_SECONDS,
    FAULTLINE_MAX_FRAME_SIDE,
    FAULTLINE_MAX_MEGAPIXELS,
    FAULTLINE_MAX_SOURCE_VIDEO_MB,
)
from faultline_eval.core.store import replacing

if TYPE_CHECKING:  # PyAV is imported where a video is read (heavy); its types are for the checker only
    from av.audio.stream import AudioStream
    from av.container import InputContainer
    from av.video.stream import VideoStream

__all__ = [
    "SAMPLE_RATE",
    "IMAGE_SUFFIXES",
    "VIDEO_SUFFIXES",
    "AUDIO_SUFFIXES",
    "FRAME_RATE",
    "MAX_FRAMES",
    "FRAME_SAMPLINGS",
    "MediaError",
    "MediaTooLarge",
    "MediaLimits",
    "limits",
    "Frames",
    "read_image",
    "sample_times",
    "read_video_frames",
    "read_source_video",
    "read_audio",
    "read_source_audio",
    "probe",
    "declared_duration",
    "write_image",
    "write_frames",
    "write_audio",
    "write_video_lossless",
    "resample_audio",
    "describe_frame_times",
]

#: The one audio rate of the project: every waveform is mono float32 at 16 kHz.
SAMPLE_RATE = 16_000

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".avi", ".webm")
AUDIO_SUFFIXES = (".wav", ".flac", ".ogg")
#: The paper's frame-extraction protocol (SCEval App. F.2): 1 frame per second, at most 8.
FRAME_RATE = 1.0
MAX_FRAMES = 8
#: How frames are picked from a clip longer than ``MAX_FRAMES / FRAME_RATE`` seconds.
FRAME_SAMPLINGS = FAULTLINE_FRAME_SAMPLING.choices


class MediaError(ValueError):
    """A media file is missing, unreadable or not what it claims to be."""


class MediaTooLarge(MediaError):
    """A media file is over one of the :class:`MediaLimits`; the message names the limit."""


@dataclass(frozen=True)
class MediaLimits:
    """Caps on what one item may cost; each is a setting (environment variable)."""

    #: ``FAULTLINE_MAX_FRAME_SIDE``: longer image/frame sides are downscaled to this (aspect kept).
    max_side: int = int(FAULTLINE_MAX_FRAME_SIDE.default_text)
    #: ``FAULTLINE_MAX_MEGAPIXELS``: a larger image or video frame (by its header) is rejected.
    max_megapixels: float = float(FAULTLINE_MAX_MEGAPIXELS.default_text)
    #: ``FAULTLINE_MAX_CLIP_SECONDS``: a longer video is rejected.
    max_clip_s: float = float(FAULTLINE_MAX_CLIP_SECONDS.default_text)
    #: ``FAULTLINE_MAX_AUDIO_SECONDS``: longer audio is rejected (cutting it would change the evidence).
    max_audio_s: float = float(FAULTLINE_MAX_AUDIO_SECONDS.default_text)
    #: ``FAULTLINE_FRAME_SAMPLING``: ``uniform`` (the paper's) or ``head`` (the first 8 s only).
    frame_sampling: str = FAULTLINE_FRAME_SAMPLING.default_text


#: The setting of each :class:`MediaLimits` field.
LIMIT_SETTINGS = {
    "max_side": FAULTLINE_MAX_FRAME_SIDE,
    "max_megapixels": FAULTLINE_MAX_MEGAPIXELS,
    "max_clip_s": FAULTLINE_MAX_CLIP_SECONDS,
    "max_audio_s": FAULTLINE_MAX_AUDIO_SECONDS,
    "frame_sampling": FAULTLINE_FRAME_SAMPLING,
}


def limits() -> MediaLimits:
    """The limits in force: the defaults, overridden by the ``FAULTLINE_*`` variables."""
    values: dict[str, Any] = {}
    for name, setting in LIMIT_SETTINGS.items():
        if not setting.is_set():
            continue
        env, raw = setting.name, setting.get()
        if name == "frame_sampling":
            if raw not in FRAME_SAMPLINGS:
                raise ValueError(f"{env}={raw!r}: use one of {', '.join(FRAME_SAMPLINGS)}")
            values[name] = raw
            continue
        try:
            value = int(raw) if name == "max_side" else float(raw)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{env}={raw!r}: expected a positive number")
        values[name] = value
    return MediaLimits(**values)


class Frames(NamedTuple):
    """Frames sampled from a video: uint8 ``(N, H, W, 3)``, their times in seconds from the
    clip's first frame, and the notes on conversions made."""

    frames: np.ndarray
    times: tuple[float, ...]
    notes: tuple[str, ...]


def _exists(path: Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise MediaError(f"{path}: no such file")
    return path


def _check_pixels(path: Path, width: int, height: int, cap: MediaLimits, what: str) -> None:
    megapixels = width * height / 1e6
    if megapixels > cap.max_megapixels:
        raise MediaTooLarge(
            f"{path}: {what} is {width}x{height} ({megapixels:.1f} MP), over the "
            f"{cap.max_megapixels:g} MP limit ({FAULTLINE_MAX_MEGAPIXELS.name})"
        )


def fitted_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    """``(width, height)`` scaled down, aspect kept, so that neither side exceeds ``max_side``."""
    scale = max_side / max(width, height)
    if scale >= 1:
        return width, height
    return max(1, round(width * scale)), max(1, round(height * scale))


def _downscale_note(path: Path, size: tuple[int, int], fitted: tuple[int, int], cap: MediaLimits) -> str:
    return (
        f"{path.name}: downscaled {size[0]}x{size[1]} to {fitted[0]}x{fitted[1]} "
        f"({FAULTLINE_MAX_FRAME_SIDE.name}={cap.max_side})"
    )


def read_image(path: str | Path, cap: MediaLimits | None = None) -> tuple[np.ndarray, list[str]]:
    """An RGB ``uint8`` ``(H, W, 3)`` array; non-RGB modes are converted and oversized
    images downscaled, each step noted."""
    from PIL import Image, UnidentifiedImageError

    cap = cap or limits()
    path = _exists(Path(path))
    notes: list[str] = []
    try:
        with Image.open(path) as img:
            _check_pixels(path, img.width, img.height, cap, "image")
            size, fitted = img.size, fitted_size(img.width, img.height, cap.max_side)
            if fitted != size:
                img.draft("RGB", fitted)  # JPEG decodes at a reduced scale directly
            img.load()
            if img.mode != "RGB":
                notes.append(f"{path.name}: converted {img.mode} image to RGB")
                img = img.convert("RGB")
            if img.size != fitted:
                img = img.resize(fitted, Image.Resampling.LANCZOS)
            if fitted != size:
                notes.append(_downscale_note(path, size, fitted, cap))
            return np.asarray(img, dtype=np.uint8).copy(), notes
    except (UnidentifiedImageError, OSError, SyntaxError, Image.DecompressionBombError) as exc:
        raise MediaError(f"{path}: cannot decode image: {exc}") from exc


def sample_times(
    duration: float, *, fps: float = FRAME_RATE, max_frames: int = MAX_FRAMES, sampling: str = "uniform"
) -> list[float]:
    """When to take frames from a clip of ``duration`` seconds (App. F.2).

    One frame per second: ``0, 1/fps, 2/fps, ...`` while that gives at most ``max_frames``.
    A longer clip gets ``max_frames`` frames by uniform temporal sampling over its whole
    duration, frame *i* at ``i * duration / max_frames`` (the start of the *i*-th of
    ``max_frames`` equal spans), so the frames and the audio cover the same span. The paper
    says "uniform" but not where in each span; we take its start, which reduces to the 1 fps
    grid at exactly ``max_frames`` seconds. ``sampling="head"`` keeps the first ``max_frames``
    ticks of the 1 fps grid instead (the clip's head only), for comparison with such runs.
    """
    if sampling not in FRAME_SAMPLINGS:
        raise ValueError(f"frame sampling must be one of {FRAME_SAMPLINGS}, got {sampling!r}")
    ticks = max(1, math.ceil(duration * fps - 1e-6))
    if ticks <= max_frames or sampling == "head":
        return [i / fps for i in range(min(ticks, max_frames))]
    return uniform_times(duration, max_frames)


def uniform_times(duration: float, count: int) -> list[float]:
    """``count`` frames spread over ``duration`` seconds, frame *i* at the start of the *i*-th of
    ``count`` equal spans (F.2's uniform rule; the frame-budget probe's, without the 1 fps cap)."""
    return [i * duration / count for i in range(count)]


def declared_duration(container: InputContainer, stream: VideoStream) -> float | None:
    """Seconds of an open video ``stream`` as its header declares them (the stream's duration, else
    the container's, else frames over frame rate), without decoding; None when it declares none."""
    if stream.duration and stream.time_base:
        return float(stream.duration * stream.time_base)
    if container.duration:
        return container.duration / 1_000_000  # av.time_base
    if stream.frames and stream.average_rate:
        return stream.frames / float(stream.average_rate)
    return None


def _check_clip(path: Path, container: InputContainer, stream: VideoStream, cap: MediaLimits) -> float | None:
    """Refuse a clip whose header declares frames or a duration over the limits; its duration."""
    width, height = stream.codec_context.width, stream.codec_context.height
    if width and height:
        _check_pixels(path, width, height, cap, "video frame")
    duration = declared_duration(container, stream)
    if duration is not None and duration > cap.max_clip_s:
        raise MediaTooLarge(
            f"{path}: clip is {duration:.1f} s, over the {cap.max_clip_s:g} s limit ({FAULTLINE_MAX_CLIP_SECONDS.name})"
        )
    return duration


def read_video_frames(
    path: str | Path,
    *,
    fps: float = FRAME_RATE,
    max_frames: int = MAX_FRAMES,
    sampling: str | None = None,
    cap: MediaLimits | None = None,
    exactly: int | None = None,
) -> Frames:
    """Frames at the times :func:`sample_times` gives (each the first decoded frame at or
    after its time), downscaled to the limits, with their times in seconds. ``exactly=N``
    takes N frames at :func:`uniform_times` instead, whatever the clip's length (frame budgets).

    Decoding is one pass that keeps only the chosen frames, so memory stays at
    ``max_frames`` frames whatever the clip's length. ``sampling`` defaults to
    ``FAULTLINE_FRAME_SAMPLING`` (``uniform``).
    """
    import av

    cap = cap or limits()
    path = _exists(Path(path))
    if fps <= 0 or max_frames < 1:
        raise ValueError(f"fps must be > 0 and max_frames >= 1, got fps={fps}, max_frames={max_frames}")
    notes: list[str] = []
    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise MediaError(f"{path}: no video stream")
            stream = container.streams.video[0]
            duration = _check_clip(path, container, stream, cap)
            if duration is None:
                notes.append(f"{path.name}: duration unknown; took the first {max_frames} frames at {fps:g} fps")
            if exactly is not None:
                targets = uniform_times(duration or exactly / fps, exactly)
            else:
                targets = sample_times(
                    duration or max_frames / fps,
                    fps=fps,
                    max_frames=max_frames,
                    sampling="head" if duration is None else sampling or cap.frame_sampling,
                )
            frames, times = _decode_at(
                path, container.decode(stream), float(stream.average_rate or 1), targets, cap, notes
            )
    except av.FFmpegError as exc:
        raise MediaError(f"{path}: cannot decode video: {exc}") from exc
    if not frames:
        raise MediaError(f"{path}: video has no decodable frames")
    return Frames(np.stack(frames), tuple(times), tuple(notes))


def read_source_video(path: str | Path, *, cap: MediaLimits | None = None) -> tuple[Frames, Fraction]:
    """Every frame of a video at its own size (RGB, decoded as PyAV's ``to_ndarray("rgb24")``, which
    lmms-eval's own reader also calls), their times, and the stream's average frame rate: what a
    wrapped task re-encodes when it hands the model the whole clip (``frames=source``), so a model
    sampling frames itself picks the same frames as from the original file.

    No downscaling (the clip's size is the point); the megapixel and clip-length limits apply, and
    the decoded frames may take at most ``FAULTLINE_MAX_SOURCE_VIDEO_MB``: a clip over it is
    refused (from its header when it declares its frame count, else while decoding) with
    :class:`MediaTooLarge` naming the setting, never cut."""
    import av

    cap = cap or limits()
    path = _exists(Path(path))
    budget = _source_video_budget()
    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise MediaError(f"{path}: no video stream")
            stream = container.streams.video[0]
            _check_clip(path, container, stream, cap)
            rate = Fraction(stream.average_rate or stream.guessed_rate or 0)
            if rate <= 0:
                raise MediaError(f"{path}: the video stream declares no frame rate")
            width, height = stream.codec_context.width, stream.codec_context.height
            if stream.frames and width and height:
                _check_source_bytes(path, stream.frames * width * height * 3, budget, f"{stream.frames} frames")
            frames: list[np.ndarray] = []
            times: list[float] = []
            total, start = 0, None
            for index, frame in enumerate(container.decode(stream)):
                t = float(frame.time) if frame.time is not None else index / float(rate)
                start = t if start is None else start
                if t - start > cap.max_clip_s:
                    raise MediaTooLarge(
                        f"{path}: clip runs past the {cap.max_clip_s:g} s limit ({FAULTLINE_MAX_CLIP_SECONDS.name})"
                    )
                rgb = frame.to_ndarray(format="rgb24")
                total += rgb.nbytes
                _check_source_bytes(path, total, budget, f"over {len(frames)} frames")
                if frames and rgb.shape != frames[0].shape:
                    raise MediaError(
                        f"{path}: frame {index} is {rgb.shape[1]}x{rgb.shape[0]}, the first frames "
                        f"{frames[0].shape[1]}x{frames[0].shape[0]}: a size change mid-clip"
                    )
                frames.append(rgb)
                times.append(round(t - start, 6))
    except av.FFmpegError as exc:
        raise MediaError(f"{path}: cannot decode video: {exc}") from exc
    if not frames:
        raise MediaError(f"{path}: video has no decodable frames")
    return Frames(np.stack(frames), tuple(times), ()), rate


def _source_video_budget() -> float:
    raw = FAULTLINE_MAX_SOURCE_VIDEO_MB.get()
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{FAULTLINE_MAX_SOURCE_VIDEO_MB.name}={raw!r}: expected a positive number")
    return value * 1e6


def _check_source_bytes(path: Path, size: int, budget: float, what: str) -> None:
    if size > budget:
        raise MediaTooLarge(
            f"{path}: every frame decoded ({what}) takes {size / 1e6:.0f} MB, over the {budget / 1e6:g} MB "
            f"limit ({FAULTLINE_MAX_SOURCE_VIDEO_MB.name}); raise it, or wrap with --frames sceval_grid "
            "(SCEval's frame grid: at most 8 frames)"
        )


def _decode_at(
    path: Path, decoded: Any, rate: float, targets: Sequence[float], cap: MediaLimits, notes: list[str]
) -> tuple[list[np.ndarray], list[float]]:
    """One pass over the decoded frames keeping the first at or after each target time (seconds
    from the first frame), downscaled to the limits; a clip running past the limit raises."""
    frames: list[np.ndarray] = []
    times: list[float] = []
    start = None
    for index, frame in enumerate(decoded):
        t = float(frame.time) if frame.time is not None else index / rate
        start = t if start is None else start
        if t - start > cap.max_clip_s:
            raise MediaTooLarge(
                f"{path}: clip runs past the {cap.max_clip_s:g} s limit ({FAULTLINE_MAX_CLIP_SECONDS.name})"
            )
        if t - start + 1e-6 < targets[len(frames)]:
            continue
        fitted = fitted_size(frame.width, frame.height, cap.max_side)
        if fitted != (frame.width, frame.height) and not frames:
            notes.append(_downscale_note(path, (frame.width, frame.height), fitted, cap))
        frames.append(frame.reformat(width=fitted[0], height=fitted[1], format="rgb24").to_ndarray())
        times.append(round(t - start, 6))
        if len(frames) == len(targets):
            break
    return frames, times


def read_audio(path: str | Path, cap: MediaLimits | None = None) -> tuple[np.ndarray, int, list[str]]:
    """Mono float32 audio at 16 kHz. Stereo is averaged and other rates resampled (soxr, high
    quality); each such step is returned as a note. Audio over the length limit is refused."""
    wave, rate = read_source_audio(path, cap)
    name = Path(path).name
    notes: list[str] = []
    if wave.shape[1] > 1:
        notes.append(f"{name}: averaged {wave.shape[1]} channels to mono")
    mono = wave.mean(axis=1, dtype=np.float32)
    if rate != SAMPLE_RATE:
        notes.append(f"{name}: resampled {rate} Hz to {SAMPLE_RATE} Hz")
        mono = resample_audio(mono, rate)
    return np.ascontiguousarray(mono), SAMPLE_RATE, notes


def read_source_audio(path: str | Path, cap: MediaLimits | None = None) -> tuple[np.ndarray, int]:
    """The samples of an audio file as they are stored: float32 ``(samples, channels)`` at the
    file's own rate (wrapped tasks' faithful audio, issue 36); :func:`read_audio`'s checks."""
    import soundfile

    cap = cap or limits()
    path = _exists(Path(path))
    try:
        _check_audio_length(path, soundfile.info(str(path)), cap)
        wave, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except (soundfile.LibsndfileError, RuntimeError, TypeError) as exc:
        raise MediaError(f"{path}: cannot decode audio: {exc}") from exc
    if wave.shape[0] == 0:
        raise MediaError(f"{path}: audio has no samples")
    if not np.isfinite(wave).all():
        raise MediaError(f"{path}: audio holds NaN or infinite samples")
    return np.ascontiguousarray(wave), int(rate)


def resample_audio(samples: np.ndarray, rate: int, target: int = SAMPLE_RATE) -> np.ndarray:
    """Mono ``samples`` at ``rate`` Hz as float32 at ``target`` Hz: the project's one resampler
    (soxr, high quality), used by :func:`read_audio` and by wrapped tasks' in-memory audio. The
    same rate returns the samples as float32 unchanged."""
    if rate <= 0 or target <= 0:
        raise ValueError(f"sample rates must be positive, got {rate} -> {target}")
    if rate == target:
        return np.asarray(samples, dtype=np.float32)
    import soxr

    return np.asarray(soxr.resample(samples, rate, target), dtype=np.float32)


def _check_audio_length(path: Path, info: Any, cap: MediaLimits) -> None:  # info: soundfile.info(), untyped
    if info.frames == 0:
        raise MediaError(f"{path}: audio has no samples")
    seconds = info.frames / info.samplerate
    if seconds > cap.max_audio_s:
        raise MediaTooLarge(
            f"{path}: audio is {seconds:.1f} s, over the {cap.max_audio_s:g} s limit ({FAULTLINE_MAX_AUDIO_SECONDS.name})"
        )


# --- checks from headers alone --------------------------------------------------------------------


def probe(path: str | Path, cap: MediaLimits | None = None) -> None:
    """Raise :class:`MediaError` (or :class:`MediaTooLarge`) if the file cannot be used, judging
    from its header (and a video's first frame) only: cheap enough to run on a whole dataset."""
    cap = cap or limits()
    path = _exists(Path(path))
    suffix = path.suffix.lower()
    kind = (
        "image"
        if suffix in IMAGE_SUFFIXES
        else "video"
        if suffix in VIDEO_SUFFIXES
        else "audio"
        if suffix in AUDIO_SUFFIXES
        else None
    )
    if kind is None:
        raise MediaError(f"{path}: unsupported file type {suffix!r}")
    try:
        _PROBES[kind](path, cap)
    except MediaError:
        raise
    except Exception as exc:  # each decoder fails its own way; all are reported by file
        raise MediaError(f"{path}: cannot decode {kind}: {type(exc).__name__}: {exc}") from exc


def _probe_image(path: Path, cap: MediaLimits) -> None:
    from PIL import Image

    with Image.open(path) as img:
        _check_pixels(path, img.width, img.height, cap, "image")
        img.verify()


def _probe_video(path: Path, cap: MediaLimits) -> None:
    import av

    with av.open(str(path)) as container:
        if not container.streams.video:
            raise MediaError(f"{path}: no video stream")
        stream = container.streams.video[0]
        _check_clip(path, container, stream, cap)
        next(container.decode(stream))


def _probe_audio(path: Path, cap: MediaLimits) -> None:
    import soundfile

    _check_audio_length(path, soundfile.info(str(path)), cap)


_PROBES = {"image": _probe_image, "video": _probe_video, "audio": _probe_audio}


def write_image(path: str | Path, image: np.ndarray) -> Path:
    """Lossless PNG."""
    from PIL import Image

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(path, format="PNG")
    return path


def write_frames(folder: str | Path, frames: np.ndarray) -> list[Path]:
    """One lossless PNG per frame (``frame_00.png``, ...): corrupted pixels are never re-encoded lossily."""
    folder = Path(folder)
    return [write_image(folder / f"frame_{i:02d}.png", frame) for i, frame in enumerate(frames)]


def write_audio(path: str | Path, wave: np.ndarray, sample_rate: int = SAMPLE_RATE) -> Path:
    """32-bit float WAV, so the written samples are the corrupted samples exactly. The same
    samples give the same bytes: libsndfile stamps float WAVs with the time of writing (the
    ``PEAK`` chunk), which is zeroed here."""
    import soundfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), wave, sample_rate, subtype="FLOAT", format="WAV")  # any suffix (atomic temporaries)
    with open(path, "r+b") as written:
        at = written.read(512).find(b"PEAK")  # chunk id, size, version, then the 4-byte time stamp
        if at >= 0:
            written.seek(at + 12)
            written.write(bytes(4))
    return path


def write_video_lossless(
    path: str | Path,
    frames: np.ndarray,
    fps: float | Fraction,
    audio: np.ndarray | None,
    sample_rate: int = SAMPLE_RATE,
) -> Path:
    """An MP4 whose frames decode back to ``frames`` bit for bit, written atomically.

    ``frames``: uint8 ``(N, H, W, 3)`` RGB, shown at a constant ``fps`` (frame *i* at ``i / fps``
    s, so N frames last ``N / fps`` s). Video: H.264 RGB lossless (``libx264rgb``, ``qp=0``,
    ``rgb24``; any size, odd sides included). ``audio``: float32 at ``sample_rate``, mono
    ``(samples,)`` or ``(samples, channels)`` (interleaved in the track), stored
    as PCM s16le, FFmpeg's convention (``round(x * 32768)`` clipped to the int16 range: decoders
    give back each sample in [-1, 1] to within 1/32768); None writes no audio track.
    MP4 because model wrappers check extensions (wrap design §5, where the bit-exact round trip
    through lmms-eval's own reader is verified). One encoder thread: the same input gives the
    same bytes in every process. The file goes through :func:`faultline_eval.core.store.replacing`
    (a temporary file renamed into place, synced): a reader, or a second writer of the same
    path, sees the old file or a whole new one, never a torn one.
    """
    import av

    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8 or not len(frames):
        raise ValueError(f"{path}: expected uint8 frames (N>0, H, W, 3), got {frames.dtype} {frames.shape}")
    if not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"{path}: fps must be a positive number, got {fps}")
    rate = Fraction(fps).limit_denominator(1_000_000)
    with replacing(path) as temporary, av.open(str(temporary), "w", format="mp4") as out:
        video = cast("VideoStream", out.add_stream("libx264rgb", rate=rate))  # the stubs type only common codec names
        video.height, video.width = frames.shape[1], frames.shape[2]
        video.pix_fmt = "rgb24"
        video.codec_context.time_base = 1 / rate
        # ultrafast: lossless under every preset; slower ones save ~10 % of the bytes for 4-6x the
        # encode and decode time (CAVLC, no B-frames; measured on 8 noisy 360p/720p frames)
        video.options = {"qp": "0", "preset": "ultrafast", "threads": "1"}
        sound: AudioStream | None = None
        channels = 0 if audio is None else (1 if np.ndim(audio) == 1 else np.shape(audio)[1])
        layout = av.AudioLayout(f"{channels}c").name if channels else "mono"  # FFmpeg's default: mono, stereo, ...
        if audio is not None:
            sound = out.add_stream("pcm_s16le", rate=sample_rate, layout=layout)
        for index, rgb in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
            frame.pts = index
            for packet in video.encode(frame):
                out.mux(packet)
        for packet in video.encode():
            out.mux(packet)
        if sound is not None and audio is not None:
            scaled = np.round(np.asarray(audio, dtype=np.float64).reshape(-1) * 32768)
            pcm = np.clip(scaled, -32768, 32767).astype(np.int16)
            block = _PCM_BLOCK * channels  # packed s16: the channels interleaved, one row
            for start in range(0, len(pcm), block):
                chunk = av.AudioFrame.from_ndarray(pcm[None, start : start + block], format="s16", layout=layout)
                chunk.sample_rate, chunk.pts = sample_rate, start // channels
                for packet in sound.encode(chunk):
                    out.mux(packet)
            for packet in sound.encode():
                out.mux(packet)
    return Path(path)


#: Samples per PCM frame written by :func:`write_video_lossless` (any size works; fewer calls).
_PCM_BLOCK = 16_384


def describe_frame_times(times: Sequence[float] | None) -> str:
    """``", taken at 0, 1.25, 2.5 s into the clip"`` (empty without times): a model told only
    "in order" could not know that 8 frames of a long clip are spread over all of it."""
    if not times:
        return ""
    return f", taken at {', '.join(f'{round(t, 2):g}' for t in times)} s into the clip"
