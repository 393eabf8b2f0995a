"""Lossless wire encodings of frames and audio for remote models, chosen per backend for cost.

Encoding the 8 noise-corrupted 640x360 frames of a request as PNG through Pillow costs
hundreds of ms of client CPU, most of it in Pillow's per-row filter search, which buys nothing
on noise (docs/tutorials/served-model.md, "Wire encoding", has the measurements, ``benchmarks/serving.py`` makes
them). Every choice here is lossless, so the model sees exactly the pixels the operator made:

- ``png``: Pillow's PNG (adaptive row filters, zlib level 6); the smallest, the slowest;
- ``png-fast``: a PNG without row filters (OpenCV's libpng writer), zlib level 1: 2x Pillow's
  size on clean frames, a fraction of its CPU on any;
- ``png-stored``: the same with zlib level 0 (deflate "stored" blocks): raw-sized, almost free;
- ``bmp``: uncompressed 24-bit BMP: raw-sized and free. Servers that decode images with Pillow
  (vLLM, SGLang) read it; Gemini does not accept ``image/bmp``.

Audio is 16-bit PCM WAV for every backend (what the task's float samples in [-1, 1] become at
the sample rate they are given in; 16 bits is the resolution of the source clips).
"""

from __future__ import annotations

import io
from typing import Any

#: name -> (zlib level of the unfiltered PNG writer, or a Pillow format), MIME type
IMAGE_ENCODINGS = {
    "png": ("PNG", "image/png"),
    "png-fast": (1, "image/png"),
    "png-stored": (0, "image/png"),
    "bmp": ("BMP", "image/bmp"),
}


def check_image_encoding(name: str, who: str, allowed: tuple[str, ...] = tuple(IMAGE_ENCODINGS)) -> str:
    name = str(name).strip().lower()
    if name not in allowed:
        raise ValueError(f"{who}: image_encoding={name!r} is not one of {', '.join(allowed)}")
    return name


def encode_image(image: Any, encoding: str = "png") -> tuple[bytes, str]:
    """(bytes, MIME type) of a PIL image in one of :data:`IMAGE_ENCODINGS`."""
    writer, mime = IMAGE_ENCODINGS[encoding]
    if isinstance(writer, int) and image.mode == "RGB":
        import cv2
        import numpy as np

        # OpenCV's libpng with the row filter fixed to None: Pillow has no such setting
        ok, data = cv2.imencode(
            ".png",
            np.asarray(image)[..., ::-1],
            [  # OpenCV wants BGR
                cv2.IMWRITE_PNG_COMPRESSION,
                writer,
                cv2.IMWRITE_PNG_FILTER,
                cv2.IMWRITE_PNG_FILTER_NONE,
                cv2.IMWRITE_PNG_ZLIBBUFFER_SIZE,
                1 << 20,
            ],
        )  # one deflate buffer per frame: 8 KB ones cost ~25 %
        if ok:
            return data.tobytes(), mime
    buffer = io.BytesIO()  # Pillow's writers take any mode losslessly
    image.save(
        buffer,
        format="PNG" if isinstance(writer, int) else writer,
        **({"compress_level": writer} if isinstance(writer, int) else {}),
    )
    return buffer.getvalue(), mime


def encode_wav(audio: dict) -> bytes:
    """16-bit PCM WAV bytes of an ``{"array", "sampling_rate"}`` clip."""
    import numpy as np
    import soundfile

    buffer = io.BytesIO()
    soundfile.write(
        buffer,
        np.asarray(audio["array"], dtype=np.float32),
        int(audio["sampling_rate"]),
        format="WAV",
        subtype="PCM_16",
    )
    return buffer.getvalue()
