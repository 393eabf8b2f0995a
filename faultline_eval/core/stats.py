"""Statistics used by the SCEval and C3PO reports and the viewer: pure functions on NumPy arrays
and trial tables.

A *paired comparison* compares two rows of per-sample scores (two models, two runs, or two
conditions of one model) on the samples both have: the mean difference with its paired bootstrap
interval, exact McNemar on the per-sample binary outcomes, and Holm's adjustment within each
family of comparisons (:func:`per_sample`, :func:`paired_rows`, :func:`holm_within`, and
:func:`compare_two` for two models on every row, as the SCEval report's model-vs-model rows and the
viewer's compare views use it).

The bootstrap draws one matrix of resample counts per sample count and applies it to every
vector of that length with one matrix product, so thousands of intervals cost about as much as
one. Seeds derive from (seed, sample count) by BLAKE2b, never from a global RNG: the same
inputs give the same intervals in any process.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import numpy.typing as npt
import pandas as pd

from faultline_eval.core.accuracy import sample_scores

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
    "ALPHA",
    "PAIRED_COLUMNS",
    "per_sample",
    "paired_rows",
    "holm_within",
    "compare_two",
]

#: The arrays this module computes with: float64 throughout.
FloatArray = npt.NDArray[np.float64]

B_DEFAULT = 1000
SEED_DEFAULT = 20261129
#: The significance level of every paired test (on the Holm-adjusted p).
ALPHA = 0.05


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


# --- paired comparisons of trial tables -----------------------------------------------------------------


def per_sample(trials: pd.DataFrame, row: str = "condition_id") -> pd.DataFrame:
    """One row per (model, ``row``, sample) of a trial table (columns model, ``row``, sample_id,
    correct: 1, 0 or NaN for an unscored trial): ``score`` (mean over scored repeats, NaN if none),
    ``strict`` (unscored counted as wrong), ``binary`` (strict >= 0.5, for McNemar), ``valid``
    (scored repeats) and ``trials`` (all repeats)."""
    t = trials[["model", row, "sample_id", "correct"]].copy()
    t["valid"] = t["correct"].notna()
    t["strict"] = t["correct"].fillna(0.0)
    g = t.groupby(["model", row, "sample_id"], sort=False, observed=True)
    out = pd.DataFrame(
        {
            "score": sample_scores(t, ["model", row]),
            "strict": g["strict"].mean(),
            "valid": g["valid"].sum(),
            "trials": g["valid"].size(),
        }
    )
    out["binary"] = out["strict"] >= 0.5
    return out.reset_index()


#: What :func:`paired_rows` gives for each pair of rows: the comparison with unscored trials wrong
#: (``n`` to ``p_mcnemar``) and with them missing (``n_valid_pairs``, ``p_mcnemar_missing``, ``diff_missing``).
PAIRED_COLUMNS = [
    "n",
    "mean_a",
    "mean_b",
    "diff",
    "ci_low",
    "ci_high",
    "p_bootstrap",
    "b",
    "c",
    "p_mcnemar",
    "n_valid_pairs",
    "p_mcnemar_missing",
    "diff_missing",
]


def paired_rows(
    strict: pd.DataFrame,
    score: pd.DataFrame,
    pairs: Sequence[tuple[Hashable, Hashable]],
    *,
    b: int = B_DEFAULT,
    seed: int = SEED_DEFAULT,
) -> list[dict[str, Any]]:
    """Each pair (row a, row b) of the per-sample tables ``strict`` and ``score`` (one row per
    compared thing, one column per sample, NaN where a row has no such sample; the same index
    and columns) compared over the samples both rows have (in column order): the
    :data:`PAIRED_COLUMNS` of each, NaN (counts 0) for a pair with no common sample. Pairs with
    the same number of common samples share one bootstrap matrix."""
    strict_np, score_np = strict.to_numpy(dtype=np.float64), score.to_numpy(dtype=np.float64)
    row_of = {key: i for i, key in enumerate(strict.index)}
    present = ~np.isnan(strict_np)
    by_size: dict[int, list[tuple[int, npt.NDArray[np.intp]]]] = {}
    for k, (key_a, key_b) in enumerate(pairs):
        cols = np.flatnonzero(present[row_of[key_a]] & present[row_of[key_b]])
        by_size.setdefault(len(cols), []).append((k, cols))
    out: list[dict[str, Any]] = [{} for _ in pairs]
    for n, members in by_size.items():
        ra = np.array([row_of[pairs[k][0]] for k, _ in members])[:, None]
        rb = np.array([row_of[pairs[k][1]] for k, _ in members])[:, None]
        cols = np.stack([c for _, c in members]) if n else np.zeros((len(members), 0), np.intp)
        a, bb = strict_np[ra, cols], strict_np[rb, cols]
        sa, sb = score_np[ra, cols], score_np[rb, cols]
        results = paired_comparisons(a, bb, a >= 0.5, bb >= 0.5, resample_weights(n, b=b, seed=seed)) if n else []
        # Unscored trials as missing: only samples with a score on both sides.
        keep = np.isfinite(sa) & np.isfinite(sb)
        va, vb = (sa >= 0.5) & keep, (sb >= 0.5) & keep
        p_missing = np.atleast_1d(mcnemar_exact((va & ~vb & keep).sum(1), (~va & vb & keep).sum(1)))
        with np.errstate(invalid="ignore", divide="ignore"):
            diff_missing = np.where(keep, sa - sb, 0).sum(1) / keep.sum(1)
        for j, (k, _) in enumerate(members):
            if not n:
                out[k] = {**dict.fromkeys(PAIRED_COLUMNS, np.nan), "n": 0, "b": 0, "c": 0, "n_valid_pairs": 0}
                continue
            r = results[j]
            out[k] = {
                "n": r.n,
                "mean_a": r.mean_a,
                "mean_b": r.mean_b,
                "diff": r.diff,
                "ci_low": r.ci_low,
                "ci_high": r.ci_high,
                "p_bootstrap": r.p_bootstrap,
                "b": r.b,
                "c": r.c,
                "p_mcnemar": r.p_mcnemar,
                "n_valid_pairs": int(keep[j].sum()),
                "p_mcnemar_missing": float(p_missing[j]),
                "diff_missing": float(diff_missing[j]),
            }
    return out


def holm_within(frame: pd.DataFrame, families: list[str]) -> pd.DataFrame:
    """``frame`` (rows of :func:`paired_rows`) with ``p_holm`` and ``p_holm_missing``: Holm's
    adjustment of ``p_mcnemar`` / ``p_mcnemar_missing`` within each group of the ``families``
    columns, ``significant`` and ``significant_missing`` (adjusted p < :data:`ALPHA`) and ``flips``
    (whether the two readings disagree)."""
    frame = frame.assign(p_holm=np.nan, p_holm_missing=np.nan)
    by: str | list[str] = families[0] if len(families) == 1 else families  # one key: scalar group keys
    for _, idx in frame.groupby(by).groups.items():
        frame.loc[idx, "p_holm"] = holm(frame.loc[idx, "p_mcnemar"].to_numpy())
        frame.loc[idx, "p_holm_missing"] = holm(frame.loc[idx, "p_mcnemar_missing"].to_numpy())
    frame["significant"] = frame["p_holm"] < ALPHA
    frame["significant_missing"] = frame["p_holm_missing"] < ALPHA
    frame["flips"] = frame["significant"] != frame["significant_missing"]
    return frame


def compare_two(
    samples: pd.DataFrame,
    model_a: str,
    model_b: str,
    *,
    row: str = "condition_id",
    families: Mapping[str, str] | None = None,
    other_family: str = "controls",
    b: int = B_DEFAULT,
    seed: int = SEED_DEFAULT,
) -> pd.DataFrame:
    """Two models (or two runs) compared on every ``row`` value both have, paired on the samples
    both answered (``samples``: :func:`per_sample`'s table): one row per compared value, indexed
    by it, in the order of the values, with ``family`` (from ``families``; a value not in it is in
    ``other_family``), the :data:`PAIRED_COLUMNS` (``diff`` is A - B) and :func:`holm_within`'s
    columns, Holm's adjustment within each family."""
    sides = samples[samples["model"].isin([model_a, model_b])]
    strict = sides.pivot_table(index=["model", row], columns="sample_id", values="strict", aggfunc="first")
    score = sides.pivot_table(index=["model", row], columns="sample_id", values="score", aggfunc="first")
    score = score.reindex(index=strict.index, columns=strict.columns)
    have = set(strict.index)
    values = sorted({v for _, v in have if (model_a, v) in have and (model_b, v) in have})
    pairs = [((model_a, v), (model_b, v)) for v in values]
    frame = pd.DataFrame(paired_rows(strict, score, pairs, b=b, seed=seed), columns=PAIRED_COLUMNS)
    family = [(families or {}).get(v, other_family) for v in values]
    frame.insert(0, "family", pd.Series(family, dtype=object))
    frame.insert(1, "model_a", model_a)
    frame.insert(2, row, pd.Series(values, dtype=object))
    frame.insert(3, "model_b", model_b)
    return holm_within(frame, ["family"]).set_index(row)
