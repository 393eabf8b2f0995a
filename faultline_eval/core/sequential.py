"""Sequential statistics for budgeted evaluation: anytime-valid intervals for paired drops, a
stopping rule per cell, and a seeded stratified order of the items.

The interval is the predictable-plug-in empirical-Bernstein confidence sequence for sampling
**without replacement** from a finite population (Waudby-Smith & Ramdas, "Confidence sequences for
sampling without replacement", NeurIPS 2020, Theorem 4; the plug-in bets of "Estimating means of
bounded random variables by betting", JRSS-B 2024, eq. 26/27). The population is a cell's full
protocol: its N = items × variants paired differences d = clean − corrupted in [-1, 1]. A budgeted
run reads a prefix of them in a random order; at every prefix length t the sequence holds the
full-protocol mean drop with probability >= 1 − alpha *simultaneously over all t*, so a cell may stop
whenever its interval is narrow or excludes zero without spoiling the coverage, and it shrinks to the
full-run value itself at t = N. Validity assumes the order is a uniformly random permutation of the
cell's units; :func:`stratified_order` interleaves random permutations of strata instead, which
keeps every prefix proportional (less variance, checked by ``benchmarks/efficient.py``) but is a
design assumption the docs state (docs/explanations/budgeted-evaluation.md).

Anytime p-values (the smallest alpha whose sequence excludes zero, minimised over time) are valid
p-values at any stopping time, so Holm's procedure on them (:func:`faultline_eval.core.stats.holm`)
controls the family-wise error as the report's fixed-n Holm does.

Everything is vectorised over leading axes (rows of cells, models, repetitions); nothing uses a
global RNG or Python's ``hash()``: orders derive from BLAKE2b digests of (seed, key).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from faultline_eval.core.stats import FloatArray

__all__ = [
    "ConfidenceSequence",
    "drop_sequence",
    "mean_sequence",
    "betting_p_value",
    "stopping_index",
    "stratified_order",
    "difficulty_bins",
    "seeded_key",
]

#: Cap on each bet (0 < c < 1): 1/2 as Waudby-Smith & Ramdas recommend for the plug-in bets.
BET_CAP = 0.5


@dataclass(frozen=True)
class ConfidenceSequence:
    """A confidence sequence along the last axis (t = 1..T): the estimate, the interval (running
    intersection) and the anytime p-value for "the population mean is ``null``" after t draws."""

    estimate: FloatArray
    low: FloatArray
    high: FloatArray
    p_value: FloatArray

    @property
    def half_width(self) -> FloatArray:
        half: FloatArray = (self.high - self.low) / 2
        return half


def mean_sequence(
    x: npt.ArrayLike,
    population: int,
    *,
    alpha: float = 0.05,
    null: float | FloatArray = 0.5,
    horizon: int | None = None,
) -> ConfidenceSequence:
    """Confidence sequence for the mean of a finite population of ``population`` values in [0, 1],
    from ``x`` (..., T): its first T values in a random order without replacement (T <= population).

    With S_{i-1} the sum of the first i-1 draws and w_i = N / (N − i + 1), the process
    Σ λ_i (X_i − (N m − S_{i−1}) / (N − i + 1)) − Σ v_i ψ(λ_i), v_i = (X_i − μ̂_{i−1})²,
    ψ(λ) = −log(1 − λ) − λ, is a nonnegative-supermartingale exponent at the true mean m, so
    m ∈ [(A_t − B_t) / W_t, (A_t + B_t) / W_t] for all t with probability >= 1 − alpha, where
    A_t = Σ λ_i (X_i + S_{i−1} / (N − i + 1)), W_t = Σ λ_i w_i and B_t = log(2 / alpha) + Σ v_i ψ(λ_i).
    ``null`` (a number, or one per row) is the mean the p-value tests.
    The bets λ_i = min(sqrt(2 log(2/alpha) / (σ̂²_{i−1} i log(1 + i))), 1/2) use only earlier draws;
    with ``horizon`` n they are tuned for n draws instead (i log(1 + i) -> n: tighter near n, valid at
    every t all the same, as any predictable bet is).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.shape[-1] > population:
        raise ValueError(f"mean_sequence: {x.shape[-1]} draws from a population of {population}")
    if np.any((x < 0) | (x > 1)):
        raise ValueError("mean_sequence: values must lie in [0, 1] (rescale paired drops with drop_sequence)")
    t = np.arange(1, x.shape[-1] + 1, dtype=np.float64)
    csum = np.cumsum(x, axis=-1)
    before = csum - x  # S_{i-1}
    mean_so_far = (0.5 + csum) / (t + 1)  # μ̂_i, shrunk towards 1/2
    mean_before = np.concatenate([np.full(x.shape[:-1] + (1,), 0.5), mean_so_far[..., :-1]], axis=-1)
    var_so_far = (0.25 + np.cumsum((x - mean_so_far) ** 2, axis=-1)) / (t + 1)
    var_before = np.concatenate([np.full(x.shape[:-1] + (1,), 0.25), var_so_far[..., :-1]], axis=-1)
    log_term = np.log(2 / alpha)
    spread = t * np.log1p(t) if horizon is None else np.full_like(t, float(horizon))
    bets = np.minimum(np.sqrt(2 * log_term / (var_before * spread)), BET_CAP)
    remaining = population - t + 1
    weight = np.cumsum(bets * population / remaining, axis=-1)
    centre_sum = np.cumsum(bets * (x + before / remaining), axis=-1)
    penalty = np.cumsum((x - mean_before) ** 2 * (-np.log1p(-bets) - bets), axis=-1)
    radius = (log_term + penalty) / weight
    estimate = csum / t
    low = np.maximum.accumulate(np.maximum(centre_sum / weight - radius, 0.0), axis=-1)
    high = np.minimum.accumulate(np.minimum(centre_sum / weight + radius, 1.0), axis=-1)
    # the smallest alpha whose interval excludes ``null``: log(2/alpha) < |A_t − null W_t| − Σ v ψ
    p_value = betting_p_value(x, population, null=null, alpha=alpha)
    return ConfidenceSequence(estimate, low, high, p_value)


def betting_p_value(
    x: npt.ArrayLike, population: int, *, null: float | FloatArray = 0.5, alpha: float = 0.05
) -> FloatArray:
    """Anytime p-values for "the population mean of values in [0, 1] is ``null``" after each draw
    without replacement: 1 / the running maximum of the hedged capital process
    K_t = (K⁺_t + K⁻_t) / 2, K^±_t = Π (1 ± λ^±_i (X_i − m_i)), where m_i = (N null − S_{i−1}) / (N − i + 1)
    is the mean of the values not yet drawn under the null (Waudby-Smith & Ramdas 2020/2024, the
    hedged capital process). The bets are the plug-in ones of :func:`mean_sequence`, capped at
    0.9 / m_i (0.9 / (1 − m_i) for K⁻): a bet may exceed 1 when the null mean is inside (0, 1), which
    is where this test is far more powerful than the empirical-Bernstein bound at a few dozen draws.
    A null the draws already contradict (m_i outside [0, 1]) gets p = 0 from then on. By Ville's
    inequality P(some p_t <= alpha) <= alpha under the null, so p read at any stopping time is valid."""
    x = np.asarray(x, dtype=np.float64)
    t = np.arange(1, x.shape[-1] + 1, dtype=np.float64)
    csum = np.cumsum(x, axis=-1)
    mean_so_far = (0.5 + csum) / (t + 1)
    var_so_far = (0.25 + np.cumsum((x - mean_so_far) ** 2, axis=-1)) / (t + 1)
    var_before = np.concatenate([np.full(x.shape[:-1] + (1,), 0.25), var_so_far[..., :-1]], axis=-1)
    null_mean = np.asarray(null, dtype=np.float64)[..., None]
    remaining = population - t + 1
    m = (population * null_mean - (csum - x)) / remaining
    impossible = np.maximum.accumulate((m < 0) | (m > 1), axis=-1)
    m = np.clip(m, 1e-9, 1 - 1e-9)
    bet = np.sqrt(2 * np.log(2 / alpha) / (var_before * t * np.log1p(t)))
    up = np.minimum(bet, 0.9 / m)
    down = np.minimum(bet, 0.9 / (1 - m))
    log_up = np.cumsum(np.log1p(up * (x - m)), axis=-1)
    log_down = np.cumsum(np.log1p(-down * (x - m)), axis=-1)
    log_capital = np.logaddexp(log_up, log_down) - np.log(2)
    p_now = np.minimum(1.0, np.exp(-np.maximum.accumulate(log_capital, axis=-1)))
    p_value: FloatArray = np.where(impossible, 0.0, p_now)
    return p_value


def drop_sequence(
    d: npt.ArrayLike,
    population: int,
    *,
    alpha: float = 0.05,
    horizon: int | None = None,
    offset: float | FloatArray = 0.0,
) -> ConfidenceSequence:
    """:func:`mean_sequence` for paired drops d = clean − corrupted in [-1, 1] (per unit: one item
    and variant, its clean score minus its corrupted score): estimates and bounds in drop units,
    the p-value for "no drop".

    With ``offset`` (one per row, known exactly) the sequence is for offset + mean(d): the
    difference estimator of survey sampling (prediction-powered inference, Angelopoulos et al.,
    Science 2023). There d = prediction − corrupted for a prediction in [0, 1] of each unit's
    corrupted score made before the run (e.g. from other models' runs on the same items) and
    offset = the population's mean clean score − its mean prediction, so offset + mean(d) is the
    drop whatever the prediction; a good prediction only makes the interval narrower."""
    d = np.asarray(d, dtype=np.float64)
    if np.any((d < -1) | (d > 1)):
        raise ValueError("drop_sequence: paired drops must lie in [-1, 1]")
    shift = np.asarray(offset, dtype=np.float64)
    if np.any(np.abs(shift) > 1):
        raise ValueError("drop_sequence: offset must lie in [-1, 1]")
    s = mean_sequence((d + 1) / 2, population, alpha=alpha, null=(1 - shift) / 2, horizon=horizon)
    out = [2 * v - 1 + shift[..., None] for v in (s.estimate, s.low, s.high)]
    return ConfidenceSequence(out[0], out[1], out[2], s.p_value)


def stopping_index(
    sequence: ConfidenceSequence, *, precision: float | None, alpha: float, family: int, minimum: int = 1
) -> npt.NDArray[np.int64]:
    """Per row, the number of draws after which a cell stops (T when it never does): its interval's
    half-width is at most ``precision`` (drop units, 0.02 = 2 pp), or its anytime p-value is at most
    ``alpha / family`` (Bonferroni over the family: every such cell is then also rejected by Holm's
    step-down at the end). No cell stops before ``minimum`` draws."""
    if family < 1:
        raise ValueError(f"stopping_index: family must be >= 1, got {family}")
    done = sequence.p_value <= alpha / family
    if precision is not None:
        done |= sequence.half_width <= precision
    t = done.shape[-1]
    done[..., : max(0, minimum - 1)] = False
    first = np.where(done.any(axis=-1), done.argmax(axis=-1) + 1, t)
    return np.asarray(first, dtype=np.int64)


def seeded_key(seed: int | str, key: str) -> int:
    """A 64-bit number derived from (seed, key) by BLAKE2b: the same in every process and Python."""
    digest = hashlib.blake2b(f"faultline-order|{seed}|{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def difficulty_bins(clean_score: npt.ArrayLike, bins: int = 3) -> npt.NDArray[np.int64]:
    """Clean-difficulty stratum of each item: its clean score's quantile bin (0 = hardest)."""
    score = np.asarray(clean_score, dtype=np.float64)
    if score.size == 0:
        return np.zeros(0, dtype=np.int64)
    edges = np.quantile(score, np.linspace(0, 1, bins + 1)[1:-1])
    return np.asarray(np.searchsorted(edges, score, side="right"), dtype=np.int64)


def stratified_order(ids: Sequence[str], strata: Sequence[Hashable], seed: int | str) -> list[str]:
    """``ids`` in a seeded order whose every prefix is proportionally stratified: a seeded random
    permutation within each stratum (by :func:`seeded_key`), the strata interleaved by systematic
    allocation (the r-th of n_s units of stratum s sits at (r + u_s) / n_s with a seeded offset u_s).
    Depends only on (ids, strata, seed): not on the input order nor on any global state."""
    if len(ids) != len(strata):
        raise ValueError(f"stratified_order: {len(ids)} ids but {len(strata)} strata")
    if len(set(ids)) != len(ids):
        raise ValueError("stratified_order: ids must be unique")
    groups: dict[str, list[str]] = {}
    for item, stratum in zip(ids, strata):
        groups.setdefault(repr(stratum), []).append(item)
    placed: list[tuple[float, int, str]] = []
    for name, members in groups.items():
        members.sort(key=lambda item: (seeded_key(seed, item), item))
        offset = seeded_key(seed, f"stratum|{name}") / 2**64
        tie = seeded_key(seed, f"tie|{name}")
        placed += [((r + offset) / len(members), tie, item) for r, item in enumerate(members)]
    return [item for _, _, item in sorted(placed)]
