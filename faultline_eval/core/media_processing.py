"""The processing actions of base media selection (paper App. B: clipping the video, removing
audio, extracting audio): parsing the spec's action list and applying it to one file.

Actions (``generation_spec[<base modality>]["actions"]``):

``keep``              the file as it is (copied)
``mute``              a video without its audio track
``extract_audio``     the audio track as a 16 kHz mono WAV (the protocol's form, SCEval App. F.2)
``clip:<a>-<b>``      only seconds ``a`` to ``b`` of a video or audio
``clip_max:<s>``      only the first ``s`` seconds

Video that is clipped or muted is re-encoded (H.264, the source's frame rate and size rounded
down to even sides; kept audio becomes 16 kHz mono AAC); untouched video and images are copied
byte for byte. The result is probed with the project's own readers
(:func:`faultline_eval.core.media.read_video_frames`: 1 fps, at most 8 frames over the whole clip;
:func:`faultline_eval.core.media.read_audio`: 16 kHz mono), so what a stage later shows a model is
what was checked here.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # PyAV is imported where a video is read (heavy); its types are for the checker only
    from av.container import InputContainer
    from av.video.stream import VideoStream

from faultline_eval.core import media
from faultline_eval.core.media import SAMPLE_RATE

__all__ = ["Plan", "parse_actions", "write_clip", "Processed", "process", "video_duration"]

ACTIONS = ("keep", "mute", "extract_audio", "clip:<start>-<end>", "clip_max:<seconds>")
_CLIP = re.compile(r"clip:(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)")
_CLIP_MAX = re.compile(r"clip_max:(\d+(?:\.\d+)?)")
#: Which actions make sense for which base file.
_ALLOWED = {"image": {"keep"}, "video": {"keep", "mute", "extract_audio", "clip"}, "audio": {"keep", "clip"}}


@dataclass(frozen=True)
class Plan:
    """A parsed action list."""

    mute: bool = False
    extract_audio: bool = False
    start_s: float = 0.0
    end_s: float | None = None  # None: to the end

    @property
    def clipped(self) -> bool:
        return self.start_s > 0 or self.end_s is not None


def parse_actions(actions: Iterable[str], modality: str, where: str) -> Plan:
    """A :class:`Plan` from ``actions``; ``ValueError`` naming ``where`` (the template) for an
    unknown action or one that does not apply to a ``modality`` file."""
    plan: dict[str, Any] = {}  # Plan field -> value
    for action in actions:
        action = str(action).strip()
        if action == "keep":
            kind = "keep"
        elif action in ("mute", "extract_audio"):
            kind = action
            plan[action] = True
        elif m := _CLIP.fullmatch(action):
            kind = "clip"
            plan["start_s"], plan["end_s"] = float(m[1]), float(m[2])
            if plan["end_s"] <= plan["start_s"]:
                raise ValueError(f"{where}: action {action!r} ends before it starts")
        elif m := _CLIP_MAX.fullmatch(action):
            kind = "clip"
            plan["end_s"] = plan.get("start_s", 0.0) + float(m[1])
        else:
            raise ValueError(f"{where}: unknown processing action {action!r}; known: {', '.join(ACTIONS)}")
        if kind not in _ALLOWED[modality]:
            raise ValueError(f"{where}: action {action!r} does not apply to a {modality} file")
    return Plan(**plan)


# --- decoding a window and writing a clip ---------------------------------------------------------


def _window_frames(
    container: InputContainer, stream: VideoStream, start_s: float, end_s: float | None
) -> Iterator[np.ndarray]:  # rgb24: uint8 (H, W, 3)
    for frame in container.decode(stream):
        t = float(frame.time or 0.0)
        if t + 1e-6 < start_s:
            continue
        if end_s is not None and t >= end_s - 1e-6:
            break
        yield frame.to_ndarray(format="rgb24")


def decode_audio_track(path: Path, start_s: float = 0.0, end_s: float | None = None) -> np.ndarray | None:
    """The audio track of a video file in ``[start_s, end_s)`` as 16 kHz mono float32, or None
    when the file has no audio track."""
    import av

    with av.open(str(path)) as container:
        if not container.streams.audio:
            return None
        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        chunks = []
        for frame in container.decode(container.streams.audio[0]):
            for out in resampler.resample(frame):
                chunks.append(out.to_ndarray().reshape(-1))
        for out in resampler.resample(None):
            chunks.append(out.to_ndarray().reshape(-1))
    wave = np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, np.float32)
    first = int(round(start_s * SAMPLE_RATE))
    last = None if end_s is None else int(round(end_s * SAMPLE_RATE))
    return wave[first:last]


def decode_source_audio_track(path: Path) -> tuple[np.ndarray, int] | None:
    """The audio track of a video file as stored: float32 ``(samples, channels)`` at the track's
    own rate (wrapped tasks' faithful audio, issue 36), or None when the file has no audio track."""
    import av

    with av.open(str(path)) as container:
        if not container.streams.audio:
            return None
        stream = container.streams.audio[0]
        rate, channels = stream.codec_context.sample_rate, stream.codec_context.layout
        # packed float at the track's own rate and layout: a format change only, no resampling
        resampler = av.AudioResampler(format="flt", layout=channels, rate=rate)
        chunks = [out.to_ndarray() for frame in container.decode(stream) for out in resampler.resample(frame)]
        chunks += [out.to_ndarray() for out in resampler.resample(None)]
    width = len(channels.channels)
    wave = np.concatenate([c.reshape(-1) for c in chunks]) if chunks else np.zeros(0, np.float32)
    return np.ascontiguousarray(wave.astype(np.float32, copy=False).reshape(-1, width)), int(rate)


def write_clip(path: Path, frames: Iterable[np.ndarray], rate: Fraction, audio: np.ndarray | None = None) -> Path:
    """An MP4 (H.264, yuv420p; sides cut down to even numbers) from RGB frames at ``rate`` fps,
    with ``audio`` (16 kHz mono float32) as an AAC track when given."""
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w", format="mp4") as out:
        video = None
        for index, rgb in enumerate(frames):
            if video is None:
                video = out.add_stream("libx264", rate=rate)
                video.height, video.width = rgb.shape[0] // 2 * 2, rgb.shape[1] // 2 * 2
                video.pix_fmt = "yuv420p"
                video.codec_context.time_base = Fraction(1) / rate
                video.options = {"crf": "18", "preset": "medium", "threads": "1"}
                sound = out.add_stream("aac", rate=SAMPLE_RATE, layout="mono") if audio is not None else None
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb[: video.height, : video.width]), format="rgb24")
            frame.pts = index
            for packet in video.encode(frame):
                out.mux(packet)
        if video is None:
            raise media.MediaError(f"{path}: no frames to write (is the clip window inside the video?)")
        for packet in video.encode():
            out.mux(packet)
        if sound is not None and audio is not None and len(audio):  # sound exists only when audio is given
            block = sound.codec_context.frame_size or 1024
            for pts in range(0, len(audio), block):
                chunk = np.ascontiguousarray(audio[pts : pts + block], dtype=np.float32).reshape(1, -1)
                audio_frame = av.AudioFrame.from_ndarray(chunk, format="flt", layout="mono")
                audio_frame.sample_rate, audio_frame.pts = SAMPLE_RATE, pts
                for packet in sound.encode(audio_frame):
                    out.mux(packet)
            for packet in sound.encode():
                out.mux(packet)
    return path


# --- applying a plan -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Processed:
    """The processed base media of one candidate and what probing it found."""

    media: dict[str, Path]  # kind -> file
    duration_s: float | None
    frame_times_s: tuple[float, ...] | None


def process(source: Path, modality: str, base_modality: str, plan: Plan, out_dir: Path) -> Processed:
    """Apply ``plan`` to ``source`` (a ``modality`` file) for a template whose base is
    ``base_modality``; files go to ``out_dir``. Raises :class:`~faultline_eval.core.media.MediaError`
    naming the file when it cannot be read or the result cannot be decoded."""
    import av

    out_dir.mkdir(parents=True, exist_ok=True)
    made: dict[str, Path] = {}
    try:
        if modality == "image":
            made["image"] = _copy(source, out_dir / f"image{source.suffix.lower()}")
        elif modality == "audio":
            wave = media.read_audio(source)[0]
            made["audio"] = _write_wave(out_dir / "audio.wav", _cut(wave, plan))
        else:  # video
            if plan.extract_audio or base_modality == "audio":
                track = decode_audio_track(source, plan.start_s, plan.end_s)
                if track is None or not len(track):
                    raise media.MediaError(f"{source}: no audio track to extract")
                made["audio"] = _write_wave(out_dir / "audio.wav", track)
            if base_modality != "audio":
                target = out_dir / "video.mp4"
                if not plan.clipped and not plan.mute and source.suffix.lower() == ".mp4":
                    made["video"] = _copy(source, target)
                else:
                    with av.open(str(source)) as container:
                        stream = container.streams.video[0]
                        rate = stream.average_rate or Fraction(25)
                        track = None if plan.mute else decode_audio_track(source, plan.start_s, plan.end_s)
                        made["video"] = write_clip(
                            target, _window_frames(container, stream, plan.start_s, plan.end_s), Fraction(rate), track
                        )
    except av.FFmpegError as exc:
        raise media.MediaError(f"{source}: cannot process: {exc}") from exc
    return _probe(made)


def _cut(wave: np.ndarray, plan: Plan) -> np.ndarray:
    first = int(round(plan.start_s * SAMPLE_RATE))
    return wave[first : None if plan.end_s is None else int(round(plan.end_s * SAMPLE_RATE))]


def _copy(source: Path, target: Path) -> Path:
    shutil.copyfile(source, target)
    return target


def _write_wave(path: Path, wave: np.ndarray) -> Path:
    if not len(wave):
        raise media.MediaError(f"{path.name}: the clip window holds no audio")
    return media.write_audio(path, wave.astype(np.float32))


def _probe(made: dict[str, Path]) -> Processed:
    """Decode the processed files the way an evaluation will (frames at 1 fps, at most 8)."""
    duration, times = None, None
    if "video" in made:
        frames = media.read_video_frames(made["video"])
        times = frames.times
        duration = video_duration(made["video"])
    if "image" in made:
        media.read_image(made["image"])
    if "audio" in made:
        wave = media.read_audio(made["audio"])[0]
        duration = duration if duration is not None else len(wave) / SAMPLE_RATE
    return Processed(made, None if duration is None else round(duration, 3), times)


def video_duration(path: Path) -> float | None:
    """Seconds of a video file by its header (None when it declares none)."""
    import av

    with av.open(str(path)) as container:
        duration = media.declared_duration(container, container.streams.video[0])
    return duration  # after the block: mypy cannot tell that av's container never swallows an exception
