"""Lossless wire encodings of frames and audio for remote models, chosen per backend for cost.

Encoding a noise-corrupted 640x360 frame as PNG at zlib's default level costs ~35 ms of client
CPU, most of a request's budget (README "Speed"). Every choice here is lossless, so the model
sees exactly the pixels the operator produced:

- ``png``: zlib level 6 (Pillow's default); the smallest, the slowest;
- ``png-fast``: zlib level 1; a little larger on clean frames, a fraction of the CPU;
- ``png-stored``: zlib level 0 (deflate "stored" blocks): raw-sized, almost free;
- ``bmp``: uncompressed 24-bit BMP: raw-sized and free. Servers that decode images with Pillow
  (vLLM, SGLang) read it; Gemini does not accept ``image/bmp``.

Audio is 16-bit PCM WAV for every backend (what the task's float samples in [-1, 1] become at
the sample rate they are given in; 16 bits is the resolution of the source clips).
"""

from __future__ import annotations

import io
from typing import Any

IMAGE_ENCODINGS = {"png": ("PNG", {"compress_level": 6}, "image/png"),
                   "png-fast": ("PNG", {"compress_level": 1}, "image/png"),
                   "png-stored": ("PNG", {"compress_level": 0}, "image/png"),
                   "bmp": ("BMP", {}, "image/bmp")}


def check_image_encoding(name: str, who: str, allowed: tuple[str, ...] = tuple(IMAGE_ENCODINGS)) -> str:
    name = str(name).strip().lower()
    if name not in allowed:
        raise ValueError(f"{who}: image_encoding={name!r} is not one of {', '.join(allowed)}")
    return name


def encode_image(image: Any, encoding: str = "png") -> tuple[bytes, str]:
    """(bytes, MIME type) of a PIL image in one of :data:`IMAGE_ENCODINGS`."""
    image_format, options, mime = IMAGE_ENCODINGS[encoding]
    buffer = io.BytesIO()
    image.save(buffer, format=image_format, **options)
    return buffer.getvalue(), mime


def encode_wav(audio: dict) -> bytes:
    """16-bit PCM WAV bytes of an ``{"array", "sampling_rate"}`` clip."""
    import numpy as np
    import soundfile

    buffer = io.BytesIO()
    soundfile.write(buffer, np.asarray(audio["array"], dtype=np.float32), int(audio["sampling_rate"]),
                    format="WAV", subtype="PCM_16")
    return buffer.getvalue()
