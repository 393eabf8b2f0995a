"""A tiny synthetic tri-modal sample, drawn in code, for ``sceval demo`` and the docs.

Eight frames of a red disc moving left to right past a fixed blue square, two seconds of
audio with two high beeps, and a question that needs both. Generated, so it is CC0 and the
same on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from faultline_eval.core.media import SAMPLE_RATE


@dataclass(frozen=True)
class DemoSample:
    key: str
    question: str
    frames: np.ndarray
    audio: np.ndarray


def make_demo_sample(frames: int = 8, height: int = 180, width: int = 320) -> DemoSample:
    y, x = np.mgrid[0:height, 0:width]
    background = np.stack([60 + 80 * x / width, 110 + 60 * y / height, np.full_like(x, 150.0, dtype=float)], axis=-1)
    clip = np.empty((frames, height, width, 3), dtype=np.uint8)
    for i in range(frames):
        frame = background.copy()
        frame[(abs(y - height * 0.3) < 22) & (abs(x - width * 0.7) < 22)] = (40, 60, 220)  # blue square
        cx = width * (0.12 + 0.76 * i / max(1, frames - 1))
        frame[(y - height * 0.65) ** 2 + (x - cx) ** 2 < 24**2] = (220, 40, 40)  # red disc
        clip[i] = np.clip(np.rint(frame), 0, 255).astype(np.uint8)

    t = np.arange(2 * SAMPLE_RATE) / SAMPLE_RATE
    audio = 0.05 * np.sin(2 * np.pi * 220 * t)  # a low hum throughout
    for start in (0.4, 1.2):  # two high beeps
        on = (t >= start) & (t < start + 0.25)
        audio[on] += 0.5 * np.sin(2 * np.pi * 880 * t[on])
    return DemoSample(
        key="demo-0001",
        question=(
            "While the high tone beeps twice, which coloured shape moves from the left edge "
            "towards the right, passing below the square?"
        ),
        frames=clip,
        audio=audio.astype(np.float32),
    )
