"""Audio structure corruptions on mono float32 waveforms at 16 kHz.

Segments are measured in samples: a fraction r of an n-sample clip is round(r * n) samples.
Implemented with NumPy: audiomentations has no interior-segment removal, its
ClippingDistortion clips a percentile of samples rather than at a threshold, and its TimeMask
draws from the global RNG.
"""

from __future__ import annotations

import numpy as np

from sceval_plugin.hookspecs import hookimpl
from sceval_plugin.operators._spec import SeverityTable, operator, round_half_up


def segment(n: int, fraction: float, rng: np.random.Generator, *, keep_one: bool) -> tuple[int, int]:
    """(start, length) of a uniformly placed segment of round(fraction * n) samples."""
    length = round_half_up(fraction * n)
    if keep_one:
        length = min(length, n - 1)
    start = int(rng.integers(0, n - length + 1))
    return start, length


REMOVED_FRACTION = SeverityTable("fraction of the clip removed", {10: 0.10, 30: 0.30, 50: 0.50, 70: 0.70}, identity=0.0)


@operator("remove", modality="audio", table=REMOVED_FRACTION, stochastic=True)
def remove(wave: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Cut one contiguous segment out; the clip gets shorter and the ends are spliced hard."""
    start, length = segment(wave.size, fraction, rng, keep_one=True)
    return np.concatenate((wave[:start], wave[start + length :]))


MUTED_FRACTION = SeverityTable("fraction of the clip silenced", {10: 0.10, 30: 0.30, 50: 0.50, 70: 0.70}, identity=0.0)


@operator("mute", modality="audio", table=MUTED_FRACTION, stochastic=True)
def mute(wave: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Zero one contiguous segment; the clip keeps its length."""
    start, length = segment(wave.size, fraction, rng, keep_one=False)
    out = wave.copy()
    out[start : start + length] = 0.0
    return out


CLIP_THRESHOLD = SeverityTable(
    "clipping threshold (fraction of the clip's peak)", {10: 0.9, 30: 0.7, 50: 0.5, 70: 0.3}, identity=1.0
)


@operator("distortion", modality="audio", table=CLIP_THRESHOLD, stochastic=False)
def distortion(wave: np.ndarray, threshold: float, rng: np.random.Generator) -> np.ndarray:
    """Hard-clip at ``threshold`` times the clip's own peak, with no make-up gain.

    Relative to the peak, so a quiet recording is distorted as much as a loud one.
    """
    limit = np.float32(threshold) * np.abs(wave).max()
    return np.clip(wave, -limit, limit)


@hookimpl
def sceval_register_operators(registry):
    for op in (remove, mute, distortion):
        registry.add(op)
