"""Versioned seed schemes: old variants stay reproducible, the new noise sampler is exact in
distribution and deterministic across processes."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import cv2
import numpy as np
import pytest

from sceval_plugin import operators
from sceval_plugin.operators.vision import rounded_gaussian_table

#: sha256 of every noise variant of NOISE_DIGEST's clip, computed with the code as it was before
#: seed scheme 2 existed (scheme 1), and with scheme 2 when it was introduced.
PINNED_NOISE_DIGEST = {
    1: "36f98e8c379f6d7fdba730f896ad27d1ce1985c0ed288fefba4992b6d93656de",
    2: "86dbf7baf5cbd7a7bfa1db890994e0ffb0bde574e3feac3dbf8783fe305ec0f5",
}

NOISE_DIGEST = r"""
import hashlib, numpy as np
from sceval_plugin import operators

def noise_digest():
    frames = np.random.default_rng(7).integers(0, 256, size=(3, 48, 64, 3), dtype=np.uint8)
    h = hashlib.sha256()
    for severity in (10, 30, 50, 70):
        for variant in range(3):
            h.update(operators.apply("noise", frames, severity=severity, variant=variant, key="sample-17").tobytes())
    return f"{operators.seed_scheme()} {h.hexdigest()}"
"""


def noise_digest() -> str:
    """The digest, computed in this process by the same code the subprocess runs."""
    namespace: dict = {}
    exec(NOISE_DIGEST, namespace)
    return namespace["noise_digest"]()


@pytest.mark.parametrize("scheme", [1, 2])
def test_each_scheme_gives_its_pinned_bytes(monkeypatch, scheme):
    """The pinned bytes in a fresh interpreter (the contract: the same bytes in every process),
    then in this long-lived test process. CI installs the newest OpenCV: scheme 1 once followed
    cv2.add's float rounding, which OpenCV 5.1 changed; it now rounds in NumPy."""
    env = {**os.environ, "SCEVAL_SEED_SCHEME": str(scheme)}
    fresh = subprocess.run(
        [sys.executable, "-c", NOISE_DIGEST + "\nprint(noise_digest())"], env=env, capture_output=True, text=True
    )
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.strip() == f"{scheme} {PINNED_NOISE_DIGEST[scheme]}"
    monkeypatch.setenv("SCEVAL_SEED_SCHEME", str(scheme))
    assert noise_digest() == fresh.stdout.strip()


def test_default_scheme_is_2_and_same_bytes_in_a_subprocess(monkeypatch):
    monkeypatch.delenv("SCEVAL_SEED_SCHEME", raising=False)
    assert operators.seed_scheme() == 2
    here = noise_digest()
    env = {k: v for k, v in os.environ.items() if k != "SCEVAL_SEED_SCHEME"}
    done = subprocess.run(
        [sys.executable, "-c", NOISE_DIGEST + "\nprint(noise_digest())"],
        env={**env, "PYTHONHASHSEED": "3"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == here == f"2 {PINNED_NOISE_DIGEST[2]}"


def test_schemes_change_only_noise(monkeypatch, clip, wave):
    """Scheme 2 keeps scheme 1's seeds: every other stochastic operator gives the same bytes."""
    inputs = {"vision": clip, "audio": wave, "text": "Which shape moves left while the tone beeps twice?"}
    outputs = {}
    for scheme in (1, 2):
        monkeypatch.setenv("SCEVAL_SEED_SCHEME", str(scheme))
        outputs[scheme] = {
            name: operators.apply(name, inputs[operators.get(name).modality], severity=50, variant=1, key="s")
            for name in operators.names()
            if operators.get(name).stochastic
        }
    for name, old in outputs[1].items():
        same = old == outputs[2][name] if isinstance(old, str) else np.array_equal(old, outputs[2][name])
        assert same == (name != "noise"), name


@pytest.mark.parametrize("name", ["noise", "defocus_blur"])
def test_bytes_do_not_depend_on_the_thread_count(clip, name):
    threaded = operators.apply(name, clip, severity=70, key="k")
    default = cv2.getNumThreads()
    cv2.setNumThreads(1)  # the frame pool follows OpenCV: frames run one after another
    try:
        serial = operators.apply(name, clip, severity=70, key="k")
    finally:
        cv2.setNumThreads(default)
    assert np.array_equal(serial, threaded)


@pytest.mark.parametrize("sigma", [15.0, 40.0, 65.0, 90.0])
def test_noise_table_is_the_rounded_gaussian_within_its_resolution(sigma):
    table = rounded_gaussian_table(sigma)
    assert table.dtype == np.int16 and table.size == 2**16 and (np.diff(table) >= 0).all()
    levels = np.arange(-255, 256)
    cdf = np.cumsum(np.bincount(table.astype(int) + 255, minlength=levels.size)) / 2**16
    exact = np.array([0.5 * math.erfc(-(k + 0.5) / (sigma * math.sqrt(2))) for k in levels])
    exact[-1] = 1.0  # +255 holds everything above: it saturates every pixel alike
    assert np.abs(cdf - exact).max() <= 2**-17 + 1e-12


def test_scheme_2_noise_is_the_saturated_sum_with_the_pinned_distribution(monkeypatch):
    monkeypatch.setenv("SCEVAL_SEED_SCHEME", "2")
    sigma = operators.get("noise").parameter(10)
    grey = np.full((4, 96, 128, 3), 128, dtype=np.uint8)
    residual = operators.apply("noise", grey, severity=10, variant=0, key="grey").astype(int) - 128
    # Kolmogorov-Smirnov against the rounded Gaussian: n = 147k values, so 1.63/sqrt(n) is p = 0.01
    levels = np.arange(-60, 61)
    ecdf = np.searchsorted(np.sort(residual.ravel()), levels, side="right") / residual.size
    exact = np.array([0.5 * math.erfc(-(k + 0.5) / (sigma * math.sqrt(2))) for k in levels])
    assert np.abs(ecdf - exact).max() < 1.63 / math.sqrt(residual.size)
    # the noise field does not depend on the pixels (|noise| <= 65 at sigma 15, so grey 128 never
    # clips it): any clip gets the same field, added with saturation at 0 and 255
    clip = np.random.default_rng(3).integers(0, 256, size=grey.shape, dtype=np.uint8)
    out = operators.apply("noise", clip, severity=10, variant=0, key="grey")
    assert np.array_equal(out, np.clip(clip.astype(int) + residual, 0, 255))


def test_unknown_scheme_is_refused_by_name(monkeypatch, clip):
    monkeypatch.setenv("SCEVAL_SEED_SCHEME", "3")
    with pytest.raises(ValueError, match=r"SCEVAL_SEED_SCHEME='3' is not a seed scheme; known: 1 \(.*\), 2 \("):
        operators.apply("noise", clip, severity=10, key="k")


def test_report_reads_the_scheme_and_refuses_to_mix_schemes(monkeypatch, tmp_path):
    from fixtures import guesser, write_logs

    from sceval_plugin.metrics import catalogue_info, check_comparable
    from sceval_plugin.report.reader import read_runs

    for scheme in (1, 2):
        monkeypatch.setenv("SCEVAL_SEED_SCHEME", str(scheme))
        write_logs(tmp_path / f"scheme{scheme}", f"model-{scheme}", guesser, ["single_noise_v70"])
    trials, _ = read_runs([tmp_path], workers=1, progress=False)
    assert sorted(trials["seed_scheme"].unique()) == [1, 2]
    with pytest.raises(ValueError, match=r"different seed schemes \(scheme 1: model-1; scheme 2: model-2\)"):
        check_comparable(trials, catalogue_info())
    check_comparable(read_runs([tmp_path / "scheme2"], workers=1, progress=False)[0], catalogue_info())
