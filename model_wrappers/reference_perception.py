"""What the offline reference models perceive: saturated shapes in frames, tone events in audio.

Shared by the SCEval answers (:mod:`.reference`), the C3PO answers (:mod:`.reference_c3po`) and
the ``c3po build`` stages' reference (:mod:`.reference_c3po_build`). It finds saturated shapes in the
frames (colour from hue, kind from how much of its box a shape fills, size from its area) and tone
events in the audio (loudness envelope; pitch from the spectrum).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import ndimage

from faultline_eval.core import media, record_fields
from faultline_eval.model_wrappers.media_conversion import SAMPLE_RATE, audio_array, is_audio

HIGH_PITCH_HZ = 700.0  # tones above are "high"
#: Hue ranges (degrees) -> colour name.
HUES = [(20, "red"), (75, "yellow"), (165, "green"), (205, "cyan"), (265, "blue"), (330, "magenta"), (361, "red")]


@dataclass(frozen=True)
class Shape:
    colour: str
    kind: str  # circle | square | triangle
    area: int
    x: float = 0.0  # centroid, pixels from the left (C3PO's spatial questions)
    y: float = 0.0  # centroid, pixels from the top


@dataclass(frozen=True)
class Tone:
    start_s: float
    length_s: float
    pitch_hz: float


def colour_name(rgb: Sequence[float]) -> str:
    r, g, b = (float(v) for v in rgb)
    hi, lo = max(r, g, b), min(r, g, b)
    if hi - lo < 1e-6:
        return "grey"
    if hi == r:
        hue = (60 * (g - b) / (hi - lo)) % 360
    elif hi == g:
        hue = 60 * (b - r) / (hi - lo) + 120
    else:
        hue = 60 * (r - g) / (hi - lo) + 240
    return next(name for limit, name in HUES if hue < limit)


def saturated(rgb: np.ndarray) -> np.ndarray:
    """Which pixels of a float ``(..., 3)`` RGB array are saturated colour (not grey, not dark)."""
    hi, lo = rgb.max(axis=-1), rgb.min(axis=-1)
    return ((hi - lo) > 0.35 * np.maximum(hi, 1)) & (hi > 40)


def find_shapes(frame: np.ndarray) -> list[Shape]:
    """Saturated blobs of a frame, largest first."""
    rgb = frame.astype(np.float32)
    mask = ndimage.binary_opening(saturated(rgb), iterations=1)
    labels, count = ndimage.label(mask)
    shapes = []
    for index, box in enumerate(ndimage.find_objects(labels), start=1):
        region = labels[box] == index
        area = int(region.sum())
        if area < 40:
            continue
        fill = area / region.size
        kind = "square" if fill > 0.9 else "circle" if fill > 0.65 else "triangle"
        colour = colour_name(rgb[box][region].mean(axis=0))
        ys, xs = np.nonzero(region)
        shapes.append(Shape(colour, kind, area, box[1].start + float(xs.mean()), box[0].start + float(ys.mean())))
    return sorted(shapes, key=lambda s: -s.area)


def find_tones(wave: np.ndarray, rate: int = SAMPLE_RATE) -> list[Tone]:
    """Loud events (10 ms loudness envelope), each with its dominant frequency."""
    hop = rate // 100
    n = wave.size // hop
    if n == 0:
        return []
    frames = wave[: n * hop].reshape(n, hop)
    loudness = np.sqrt((frames**2).mean(axis=1))
    on = loudness > max(0.03, 0.3 * float(loudness.max()))
    labels, count = ndimage.label(on)
    tones = []
    for box in ndimage.find_objects(labels):
        start, stop = box[0].start, box[0].stop
        if stop - start < 5:  # shorter than 50 ms: a click, not a tone
            continue
        segment = wave[start * hop : stop * hop]
        spectrum = np.abs(np.fft.rfft(segment * np.hanning(segment.size)))
        pitch = float(np.fft.rfftfreq(segment.size, 1 / rate)[int(spectrum.argmax())])
        tones.append(Tone(start / 100, (stop - start) / 100, pitch))
    return tones


# --- media as arrays -----------------------------------------------------------------------------


def image_array(image: Any) -> np.ndarray:
    """An RGB uint8 array of a PIL image (or of an array already)."""
    return np.asarray(image.convert("RGB") if hasattr(image, "convert") else image, dtype=np.uint8)


def audio_wave(audio: Any) -> np.ndarray | None:
    """Mono float32 samples at 16 kHz of an audio item (an HF/lmms-eval dict ``{"array",
    "sampling_rate"}`` with or without ``"type"``, a torchcodec AudioDecoder); None for anything
    else. Other rates are resampled (base lmms-eval tasks send their dataset's rate)."""
    if isinstance(audio, dict) and "array" in audio and int(audio.get("sampling_rate", SAMPLE_RATE)) == SAMPLE_RATE:
        return np.asarray(audio["array"], dtype=np.float32)
    return audio_array(audio) if is_audio(audio) else None


def path_media(path: str, where: str = "") -> tuple[list[np.ndarray], np.ndarray | None]:
    """The frames and the audio of one media file, by extension (an image: one frame; a video: its
    frames on SCEval's grid and its audio track; an audio file: its samples), through the shared
    decode cache. ``where`` (task and doc) names the request in errors."""
    label = where or path
    suffix = Path(path).suffix.lower()
    if suffix in media.AUDIO_SUFFIXES:
        return [], record_fields.load_audio(label, "doc_to_visual", path)[0]
    frames = list(record_fields.load_frames(label, "doc_to_visual", (path,)).frames)
    if suffix not in media.VIDEO_SUFFIXES:
        return frames, None
    return frames, record_fields.load_audio_track(label, "doc_to_visual", path)


def item_media(item: Any, where: str = "") -> tuple[list[np.ndarray], np.ndarray | None]:
    """The frames and the audio of one item a task sends (a ``doc_to_visual`` item or a chat
    part's url): a PIL image or array, a list of them (frames), an audio dict, or a file path.
    Anything else is an error naming ``where`` and the item's type."""
    if isinstance(item, (str, os.PathLike)):
        return path_media(os.fspath(item), where)
    if isinstance(item, (list, tuple)):
        frames, wave = [], None
        for part in item:
            more, heard = item_media(part, where)
            frames += more
            wave = heard if heard is not None else wave
        return frames, wave
    if isinstance(item, dict) or is_audio(item):
        return [], audio_wave(item)
    if hasattr(item, "convert") or isinstance(item, np.ndarray):
        return [image_array(item)], None
    raise ValueError(f"{where or 'request'}: cannot read a media item of type {type(item).__name__}")


def split_visuals(visuals: Iterable[Any], where: str = "") -> tuple[list[np.ndarray], np.ndarray | None]:
    """doc_to_visual's list as (images in order, the audio clip or None); see :func:`item_media`."""
    return item_media(list(visuals), where)


def conversation_media(messages: list[dict], where: str = "") -> tuple[list[np.ndarray], np.ndarray | None, list[str]]:
    """(frames in order, the audio clip or None, the text parts) of the user turns of lmms-eval
    chat messages; image, audio and video parts may hold any item :func:`item_media` reads."""
    images: list[np.ndarray] = []
    wave, texts = None, []
    for message in messages:
        if message.get("role") != "user":
            continue
        for part in message.get("content", []):
            if part.get("type") in ("image", "audio", "video"):
                frames, heard = item_media(part["url"], where)
                images += frames
                wave = heard if heard is not None else wave
            elif part.get("type") == "text":
                texts.append(part["text"])
    return images, wave, texts


# --- single facts a scripted model reads (model_wrappers.modality_oracle) ----------------------


def dominant_colour(frames: Sequence[np.ndarray]) -> str | None:
    """The colour name (:data:`HUES`) of most saturated pixels over ``frames``; None when under
    5 % of the pixels are saturated (blank, grey or missing frames)."""
    counts: dict[str, int] = {}
    total = 0
    for frame in frames:
        rgb = np.asarray(frame, dtype=np.float32).reshape(-1, 3)
        total += len(rgb)
        coloured = rgb[saturated(rgb)]
        if len(coloured):
            # one colour per distinct quantised value: frames of real clips hold thousands of shades
            shades, weights = np.unique((coloured // 16).astype(np.int32), axis=0, return_counts=True)
            for shade, weight in zip(shades, weights):
                name = colour_name(shade * 16 + 8)
                counts[name] = counts.get(name, 0) + int(weight)
    if not counts or sum(counts.values()) < 0.05 * total:
        return None
    return max(counts, key=lambda name: counts[name])


def pitch_word(wave: np.ndarray | None) -> str | None:
    """ "high" or "low" for the longest tone of ``wave`` (:data:`HIGH_PITCH_HZ`); None when no
    tone is heard (silence, missing audio)."""
    tones = find_tones(wave) if wave is not None and wave.size else []
    if not tones:
        return None
    return "high" if max(tones, key=lambda t: t.length_s).pitch_hz > HIGH_PITCH_HZ else "low"
