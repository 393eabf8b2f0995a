"""The media of one shown trial, written once into the site: frames, audio, waveform, text.

A :class:`Shown` is what a model received for a trial, regenerated from the records by the
benchmark's own renderer (the same code the task used when it ran). :class:`MediaWriter`
writes each trial's media once, under a folder named by a keyed hash of the trial, and stops
writing (leaving the trial listed without media) once the budget's megabytes are spent.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile
from PIL import Image

from faultline_eval.core.media import SAMPLE_RATE
from sceval_plugin.contact_sheet import render_waveform

THUMB_HEIGHT = 96


@dataclass
class Shown:
    """What a model was sent: labelled images in order, the audio clip (mono, 16 kHz), the text
    (the user turn; ``system``: the system prompt)."""

    images: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (caption, H x W x 3 uint8)
    audio: np.ndarray | None = None
    text: str = ""
    notes: list[str] = field(default_factory=list)  # e.g. "audio not shown (control)", the donor
    system: str = ""  # the system prompt sent with the text


@dataclass
class Written:
    """Site-relative paths of a trial's media files (``media/<key>/...``)."""

    images: list[tuple[str, str, str]]  # (caption, thumbnail, full size)
    audio: str | None
    waveform: str | None


class MediaWriter:
    def __init__(self, root: Path, max_bytes: float):
        self.root, self.max_bytes, self.bytes = root, max_bytes, 0
        self.written: dict[str, Written] = {}  # trial key -> its files, each trial written once
        self.skipped = 0

    def write(self, key: str, make_shown, reference_length: int | None = None) -> tuple[Shown, Written | None]:
        """Write the media of trial ``key`` (once); ``make_shown()`` regenerates them. Past the
        budget nothing is written (the text sent is still returned, written None);
        ``reference_length`` sets the waveform's time scale."""
        shown = make_shown()
        if key in self.written:
            return shown, self.written[key]
        if self.bytes >= self.max_bytes:
            self.skipped += 1
            return shown, None
        folder = f"media/{hashlib.blake2b(key.encode(), digest_size=10).hexdigest()}"
        (self.root / folder).mkdir(parents=True, exist_ok=True)
        images = []
        for i, (caption, image) in enumerate(shown.images):
            full = thumb = f"{folder}/{i:03d}.png"
            picture = Image.fromarray(np.ascontiguousarray(image))
            picture.save(self.root / full, format="PNG", compress_level=1)  # lossless; level 1 writes fast
            if picture.height > THUMB_HEIGHT:  # small images are their own thumbnail
                thumb = f"{folder}/{i:03d}_thumb.jpg"
                width = max(1, round(picture.width * THUMB_HEIGHT / picture.height))
                picture.resize((width, THUMB_HEIGHT), Image.Resampling.BOX).save(self.root / thumb, quality=85)
            images.append((caption, thumb, full))
        audio = waveform = None
        if shown.audio is not None:
            audio, waveform = f"{folder}/audio.wav", f"{folder}/waveform.png"
            # 16-bit PCM: half the size of the float original, within 1/32768 of every sample sent
            soundfile.write(
                str(self.root / audio), np.asarray(shown.audio, dtype=np.float32), SAMPLE_RATE, subtype="PCM_16"
            )
            reference = reference_length or len(shown.audio)
            render_waveform(np.asarray(shown.audio, dtype=np.float32), reference).save(self.root / waveform)
        self.bytes += sum(p.stat().st_size for p in (self.root / folder).iterdir())
        self.written[key] = Written(images, audio, waveform)
        return shown, self.written[key]
