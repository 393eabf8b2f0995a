"""Every media form our tasks (and lmms-eval's audio tasks) produce, in the forms local model code
consumes: PIL images and mono float32 16 kHz sample arrays.

Heavy libraries (PIL, soundfile, librosa) load on first use: lmms-eval imports a model's module
only when that model is selected, and that should stay cheap.
"""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np

SAMPLE_RATE = 16_000
VIDEO_EXTENSIONS = (".mp4", ".avi", ".mov", ".mkv", ".webm")
AUDIO_EXTENSIONS = (".wav", ".flac", ".mp3", ".ogg", ".m4a")


def _samples_and_rate(audio: Any, rate: int) -> tuple[Any, int]:
    """The samples of any audio form we receive, and the rate they are at."""
    if isinstance(audio, dict) and "array" in audio:
        return audio["array"], int(audio.get("sampling_rate", rate))
    if type(audio).__name__ == "AudioDecoder":
        decoded = audio.get_all_samples()
        return decoded.data.cpu().numpy(), int(decoded.sample_rate)
    if isinstance(audio, (tuple, list)) and len(audio) == 2:
        return audio[0], int(audio[1])
    if isinstance(audio, (str, os.PathLike)):
        import soundfile

        samples, source_rate = soundfile.read(os.fspath(audio), dtype="float32", always_2d=True)
        return samples.T, int(source_rate)  # channels first, like AudioDecoder
    return audio, rate


def audio_array(audio: Any, rate: int = SAMPLE_RATE) -> np.ndarray:
    """Mono float32 samples at ``rate`` from an HF audio dict, a torchcodec AudioDecoder, a
    (samples, rate) pair, a bare array (taken to be at ``rate`` already) or a file path."""
    samples, source_rate = _samples_and_rate(audio, rate)
    samples = np.asarray(samples, dtype=np.float32)
    if samples.ndim > 1:  # channels are the shorter axis
        samples = samples.mean(axis=int(np.argmin(samples.shape)))
    if int(source_rate) != rate:
        import librosa

        samples = librosa.resample(samples, orig_sr=int(source_rate), target_sr=rate)
    return np.ascontiguousarray(samples, dtype=np.float32)


def pil_image(image: Any):
    """An RGB PIL image from a PIL image, an HF image dict (bytes or path) or a file path."""
    from PIL import Image

    if isinstance(image, Image.Image):
        return image.convert("RGB")
    if isinstance(image, dict) and image.get("bytes") is not None:
        return Image.open(io.BytesIO(image["bytes"])).convert("RGB")
    if isinstance(image, dict) and image.get("path"):
        image = image["path"]
    return Image.open(image).convert("RGB")


def is_audio(visual: Any) -> bool:
    """Whether a ``doc_to_visual`` item is an audio clip (an HF audio dict or an AudioDecoder)."""
    return (isinstance(visual, dict) and "array" in visual) or type(visual).__name__ == "AudioDecoder"
