"""Statistics used by the SCEval and C3PO reports: pure functions on NumPy arrays.

The bootstrap draws one matrix of resample counts per sample count and applies it to every
vector of that length with one matrix product, so thousands of intervals cost about as much as
one. Seeds derive from (seed, sample count) by BLAKE2b, never from a global RNG: the same
inputs give the same intervals in any process.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import numpy.typing as npt
import pandas as pd

__all__ = [
    "FloatArray",
    "B_DEFAULT",
    "SEED_DEFAULT",
    "resample_weights",
    "bootstrap_means",
    "percentile_interval",
    "bootstrap_p_value",
    "mcnemar_exact",
    "holm",
    "least_squares_slope",
    "Paired",
    "paired_comparisons",
    "grouped_intervals",
]

#: The arrays this module computes with: float64 throughout.
FloatArray = npt.NDArray[np.float64]

B_DEFAULT = 1000
SEED_DEFAULT = 20261129


@functools.lru_cache(maxsize=64)
def resample_weights(n: int, *, b: int = B_DEFAULT, seed: int = SEED_DEFAULT) -> FloatArray:
    """(b, n) counts: row k says how often each of n samples (in a fixed order, e.g. sorted ids)
    is drawn in bootstrap resample k. Seeded by (seed, n) alone, so every statistic over n
    samples shares one matrix and a whole report costs a few matrix products. Read-only."""
    if n == 0:
        return np.zeros((b, 0))
    digest = hashlib.blake2b(f"sceval-bootstrap|{seed}|{n}|{b}".encode(), digest_size=8).digest()
    rng = np.random.default_rng(int.from_bytes(digest, "little"))
    draws = rng.integers(0, n, size=(b, n)) + np.arange(b)[:, None] * n  # resample k's draws, offset by row
    weights = np.bincount(draws.ravel(), minlength=b * n).reshape(b, n).astype(np.float64)
    weights.setflags(write=False)
    return weights


def bootstrap_means(values: npt.ArrayLike, weights: FloatArray) -> FloatArray:
    """Resampled means of each row of ``values`` (m, n) under ``weights`` (b, n): shape (m, b)."""
    values = np.atleast_2d(np.asarray(values, dtype=np.float64))
    if values.shape[1] == 0:
        return np.full((values.shape[0], weights.shape[0]), np.nan)
    means: FloatArray = values @ weights.T / values.shape[1]  # numpy's stubs type matmul as Any
    return means


def percentile_interval(boot: FloatArray, level: float = 0.95) -> tuple[FloatArray, FloatArray]:
    """Percentile interval of each row of resampled statistics."""
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(boot, [tail, 100 - tail], axis=-1)
    return lo, hi


def bootstrap_p_value(boot: FloatArray) -> FloatArray:
    """Two-sided p-value for "the mean difference is zero", from resampled mean differences:
    twice the smaller tail mass at zero (capped at 1). All-zero differences give p = 1."""
    boot = np.atleast_2d(boot)
    below = (boot <= 0).mean(axis=-1)
    above = (boot >= 0).mean(axis=-1)
    p_values: FloatArray = np.minimum(1.0, 2 * np.minimum(below, above))  # .mean(axis) is Any in numpy's stubs
    return p_values


@overload
def mcnemar_exact(b: int, c: int) -> float: ...
@overload
def mcnemar_exact(b: npt.NDArray[np.integer[Any]], c: npt.NDArray[np.integer[Any]]) -> FloatArray: ...
def mcnemar_exact(b: int | npt.NDArray[np.integer[Any]], c: int | npt.NDArray[np.integer[Any]]) -> float | FloatArray:
    """Exact two-sided McNemar p-value from the discordant counts ``b`` and ``c`` (scalars or
    arrays): twice the smaller binomial tail of Bin(b + c, 1/2), capped at 1; 1 when b + c = 0."""
    # heavy: scipy takes a third of a second to import; every command that loads the reports would pay it
    from scipy.special import bdtr  # the binomial CDF; lighter to import than scipy.stats

    b, c = np.asarray(b), np.asarray(c)
    n = b + c
    p = np.where(n == 0, 1.0, np.minimum(1.0, 2 * bdtr(np.minimum(b, c), np.maximum(n, 1), 0.5)))
    return float(p) if p.ndim == 0 else p


def holm(p_values: Sequence[float] | FloatArray) -> FloatArray:
    """Holm-Bonferroni adjusted p-values (NaN inputs stay NaN and are not counted)."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    q = p[ok]
    m = q.size
    if m:
        order = np.argsort(q, kind="stable")
        adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * q[order]))
        result = np.empty(m)
        result[order] = adjusted
        out[ok] = result
    return out


def least_squares_slope(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Slope of the least-squares line through the finite (x, y) points (NaN if < 2 points)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 2 or np.ptp(x[ok]) == 0:
        return float("nan")
    return float(np.polyfit(x[ok], y[ok], 1)[0])


@dataclass(frozen=True)
class Paired:
    """A paired comparison of two per-sample score vectors (same samples, same order)."""

    n: int
    mean_a: float
    mean_b: float
    diff: float  # mean(a - b)
    ci_low: float
    ci_high: float
    p_bootstrap: float
    b: int  # a right, b wrong (binary outcomes)
    c: int  # a wrong, b right
    p_mcnemar: float


def paired_comparisons(
    a: npt.ArrayLike, b: npt.ArrayLike, a_bin: npt.ArrayLike, b_bin: npt.ArrayLike, weights: FloatArray
) -> list[Paired]:
    """Rows of ``a``/``b`` (m, n) compared pairwise: paired bootstrap of the mean difference and
    exact McNemar on the binary outcomes ``a_bin``/``b_bin``."""
    a, b = np.atleast_2d(a).astype(float), np.atleast_2d(b).astype(float)
    a_bin, b_bin = np.atleast_2d(a_bin).astype(bool), np.atleast_2d(b_bin).astype(bool)
    boot = bootstrap_means(a - b, weights)
    lo, hi = percentile_interval(boot)
    p = bootstrap_p_value(boot)
    bb = (a_bin & ~b_bin).sum(axis=1)
    cc = (~a_bin & b_bin).sum(axis=1)
    p_mcnemar = np.atleast_1d(mcnemar_exact(bb, cc))
    mean_a, mean_b = a.mean(axis=1), b.mean(axis=1)
    return [
        Paired(
            a.shape[1],
            float(mean_a[k]),
            float(mean_b[k]),
            float(mean_a[k] - mean_b[k]),
            float(lo[k]),
            float(hi[k]),
            float(p[k]),
            int(bb[k]),
            int(cc[k]),
            float(p_mcnemar[k]),
        )
        for k in range(a.shape[0])
    ]


def grouped_intervals(values: pd.DataFrame, keys: list[str], column: str, *, b: int, seed: int) -> pd.DataFrame:
    """Mean of ``column`` per ``keys`` group with its 95 % bootstrap percentile interval over the
    group's rows (NaN rows dropped; rows ordered by ``sample_id`` so resamples are reproducible).
    Groups of equal size share one resample matrix: one matrix product per size."""
    v = values.dropna(subset=[column]).sort_values(["sample_id"], kind="stable")
    series = {key: frame[column].to_numpy(float) for key, frame in v.groupby(keys, sort=True, observed=True)}
    rows = {key: [float(x.mean()), np.nan, np.nan, len(x)] for key, x in series.items()}
    by_size: dict[int, list[Hashable]] = {}
    for key, x in series.items():
        by_size.setdefault(len(x), []).append(key)
    for n, group_keys in by_size.items():
        boot = bootstrap_means(np.stack([series[k] for k in group_keys]), resample_weights(n, b=b, seed=seed))
        low, high = percentile_interval(boot)
        for k, lo, hi in zip(group_keys, low, high):
            rows[k][1:3] = float(lo), float(hi)
    index = pd.MultiIndex.from_tuples(list(rows), names=keys) if rows else pd.MultiIndex.from_tuples([], names=keys)
    return pd.DataFrame(list(rows.values()), index=index, columns=[column, "ci_low", "ci_high", "n"])
