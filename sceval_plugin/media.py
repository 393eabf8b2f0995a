"""Reading and writing the media SCEval corrupts: images, video frames, audio.

Readers return exactly what the file holds plus a list of notes for every conversion made to
reach the protocol's form (RGB uint8 frames; mono float32 audio at 16 kHz), so a caller can
show them; nothing is converted silently. Failures raise :class:`MediaError` naming the file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sceval_plugin.operators import SAMPLE_RATE

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".avi", ".webm")
AUDIO_SUFFIXES = (".wav", ".flac", ".ogg")
#: The paper's frame-extraction protocol: 1 frame per second, at most 8 frames.
FRAME_RATE = 1.0
MAX_FRAMES = 8


class MediaError(ValueError):
    """A media file is missing, unreadable or not what it claims to be."""


def _exists(path: Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise MediaError(f"{path}: no such file")
    return path


def read_image(path: str | Path) -> tuple[np.ndarray, list[str]]:
    """An RGB ``uint8`` ``(H, W, 3)`` array; non-RGB modes are converted and noted."""
    from PIL import Image, UnidentifiedImageError

    path = _exists(Path(path))
    notes: list[str] = []
    try:
        with Image.open(path) as img:
            img.load()
            if img.mode != "RGB":
                notes.append(f"{path.name}: converted {img.mode} image to RGB")
                img = img.convert("RGB")
            return np.asarray(img, dtype=np.uint8).copy(), notes
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise MediaError(f"{path}: cannot decode image: {exc}") from exc


def read_video_frames(
    path: str | Path, *, fps: float = FRAME_RATE, max_frames: int = MAX_FRAMES
) -> tuple[np.ndarray, list[float]]:
    """Frames sampled at ``fps`` (the first frame at or after each 1/fps tick), at most
    ``max_frames``, as ``uint8`` ``(N, H, W, 3)``, with their timestamps in seconds."""
    import av

    path = _exists(Path(path))
    if fps <= 0 or max_frames < 1:
        raise ValueError(f"fps must be > 0 and max_frames >= 1, got fps={fps}, max_frames={max_frames}")
    frames: list[np.ndarray] = []
    times: list[float] = []
    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise MediaError(f"{path}: no video stream")
            stream = container.streams.video[0]
            for index, frame in enumerate(container.decode(stream)):
                t = float(frame.time) if frame.time is not None else index / float(stream.average_rate or 1)
                if t + 1e-6 >= len(frames) / fps:
                    frames.append(frame.to_ndarray(format="rgb24"))
                    times.append(t)
                    if len(frames) == max_frames:
                        break
    except av.FFmpegError as exc:
        raise MediaError(f"{path}: cannot decode video: {exc}") from exc
    if not frames:
        raise MediaError(f"{path}: video has no decodable frames")
    return np.stack(frames), times


def read_audio(path: str | Path) -> tuple[np.ndarray, int, list[str]]:
    """Mono float32 audio at 16 kHz. Stereo is averaged and other rates resampled (soxr, high
    quality); each such step is returned as a note."""
    import soundfile

    path = _exists(Path(path))
    try:
        wave, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except (soundfile.LibsndfileError, RuntimeError, TypeError) as exc:
        raise MediaError(f"{path}: cannot decode audio: {exc}") from exc
    if wave.shape[0] == 0:
        raise MediaError(f"{path}: audio has no samples")
    notes: list[str] = []
    if wave.shape[1] > 1:
        notes.append(f"{path.name}: averaged {wave.shape[1]} channels to mono")
    mono = wave.mean(axis=1, dtype=np.float32)
    if rate != SAMPLE_RATE:
        import soxr

        notes.append(f"{path.name}: resampled {rate} Hz to {SAMPLE_RATE} Hz")
        mono = soxr.resample(mono, rate, SAMPLE_RATE).astype(np.float32)
    return np.ascontiguousarray(mono), SAMPLE_RATE, notes


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
    """32-bit float WAV, so the written samples are the corrupted samples exactly."""
    import soundfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), wave, sample_rate, subtype="FLOAT")
    return path
