"""What the offline reference models perceive: saturated shapes in frames, tone events in audio.

Shared by the SCEval answers (:mod:`.reference`), the C3PO answers (:mod:`.reference_c3po`) and
the ``c3po build`` stages' reference (:mod:`c3po_plugin.construction.reference_model`). It finds saturated shapes in the
frames (colour from hue, kind from how much of its box a shape fills, size from its area) and tone
events in the audio (loudness envelope; pitch from the spectrum).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import ndimage

from faultline_eval.model_wrappers.media_conversion import SAMPLE_RATE

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


def find_shapes(frame: np.ndarray) -> list[Shape]:
    """Saturated blobs of a frame, largest first."""
    rgb = frame.astype(np.float32)
    hi, lo = rgb.max(axis=-1), rgb.min(axis=-1)
    mask = ((hi - lo) > 0.35 * np.maximum(hi, 1)) & (hi > 40)
    mask = ndimage.binary_opening(mask, iterations=1)
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
    """The samples of a 16 kHz audio dict; None for anything else."""
    if isinstance(audio, dict) and "array" in audio:
        if int(audio.get("sampling_rate", SAMPLE_RATE)) != SAMPLE_RATE:
            raise ValueError("sceval_reference expects 16 kHz audio")
        return np.asarray(audio["array"], dtype=np.float32)
    return None


def split_visuals(visuals: Iterable[Any]) -> tuple[list[np.ndarray], np.ndarray | None]:
    """doc_to_visual's list as (images in order, the audio clip or None)."""
    images, wave = [], None
    for v in visuals:
        if isinstance(v, dict):
            wave = audio_wave(v)
        else:
            images.append(image_array(v))
    return images, wave
