"""Measured semantics of the three audio operators."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sceval_plugin import operators

SEVERITIES = (10, 30, 50, 70)


def half_up(x: float) -> int:
    return math.floor(x + 0.5 + 1e-9)


def first_difference(a: np.ndarray, b: np.ndarray) -> int:
    n = min(a.size, b.size)
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if diff.size else n


@pytest.mark.parametrize("severity", SEVERITIES)
def test_remove_deletes_one_contiguous_segment_of_the_fraction(wave, severity):
    fraction = operators.get("remove").parameter(severity)
    length = half_up(fraction * wave.size)
    starts = set()
    for variant in range(3):
        out = operators.apply("remove", wave, severity=severity, variant=variant, key="clip-1")
        assert out.dtype == np.float32 and out.size == wave.size - length
        start = first_difference(wave, out)
        assert np.array_equal(out, np.concatenate([wave[:start], wave[start + length :]]))
        starts.add(start)
    assert len(starts) == 3


@pytest.mark.parametrize("severity", SEVERITIES)
def test_mute_zeroes_one_contiguous_segment_of_the_fraction(wave, severity):
    fraction = operators.get("mute").parameter(severity)
    out = operators.apply("mute", wave, severity=severity, variant=2, key="clip-1")
    assert out.dtype == np.float32 and out.size == wave.size
    silent = np.flatnonzero(out != wave)
    assert silent.size == half_up(fraction * wave.size)
    assert np.array_equal(silent, np.arange(silent[0], silent[-1] + 1)), "one contiguous segment"
    assert (out[silent] == 0).all()


@pytest.mark.parametrize("severity", SEVERITIES)
def test_distortion_clips_at_the_fraction_of_the_peak(wave, severity):
    threshold = operators.get("distortion").parameter(severity)
    quiet = wave * np.float32(0.1)  # relative to the clip's own peak, not full scale
    for x in (wave, quiet):
        out = operators.apply("distortion", x, severity=severity)
        limit = threshold * np.abs(x).max()
        assert np.abs(out).max() == pytest.approx(limit, rel=1e-6)
        assert np.allclose(out, np.clip(x, -limit, limit))
        clear = np.abs(np.abs(x) - limit) > 1e-4 * limit  # away from float rounding at the limit
        assert ((np.abs(x) > limit) == (out != x))[clear].all()


def test_distortion_of_silence_is_silence():
    silence = np.zeros(1600, np.float32)
    assert np.array_equal(operators.apply("distortion", silence, severity=70), silence)


def test_remove_keeps_at_least_one_sample():
    out = operators.apply("remove", np.array([0.5], np.float32), severity=70, key="k")
    assert out.size == 1


@pytest.mark.parametrize(
    "bad, kwargs, match",
    [
        (np.zeros((2, 1600), np.float32), {}, "stereo"),
        (np.zeros((1600, 1), np.float32), {}, "1-D mono"),
        (np.zeros(1600, np.float64), {}, "must be float32"),
        (np.zeros(1600, np.int16), {}, "must be float32"),
        (np.zeros(0, np.float32), {}, "zero-length"),
        (np.full(1600, np.nan, np.float32), {}, "NaN"),
        (np.zeros(1600, np.float32), {"sample_rate": 44_100}, "44100 Hz"),
        ([0.0, 0.1], {}, "numpy float32"),
    ],
)
def test_bad_audio_is_refused_with_a_clear_message(bad, kwargs, match):
    with pytest.raises(operators.OperatorInputError, match=match):
        operators.apply("mute", bad, severity=30, key="k", **kwargs)


def test_explicit_16k_sample_rate_is_accepted(wave):
    out = operators.apply("mute", wave, severity=30, key="k", sample_rate=16_000)
    assert np.array_equal(out, operators.apply("mute", wave, severity=30, key="k"))
