"""Drops of a wrapped lmms-eval task's own metrics, with paired bootstrap intervals (issue 27;
design ``docs/design/wrap-any-task.md`` §7).

A wrapped task (``<base>__<condition>__var<k>``) keeps the base task's ``process_results`` and
aggregation, so its value per variant is the base task's own aggregate. The interval of a drop
resamples the adapter's *unit* (a doc, MME's image pair, a videomme video) with the same draws
in clean and in the condition, and recomputes the metric on each resample:

* through the task's own aggregation (:func:`aggregate_drops`): correct for any metric, corpus
  WER and MME's acc+ included. A unit drawn twice contributes its docs twice; the copies get
  distinct ids (:func:`resampled_items`), so aggregations that group or dedupe by that id
  (MME's pairs, worldsense's first score per question) count them again, as a resample must;
* or, when the metric is the plain mean of the per-doc 0/1 score (checked on the full sample by
  :func:`mean_factor`), as a ratio of resampled sums (:func:`mean_score_drops`): the same
  numbers from one matrix product instead of ``b`` aggregation calls.

Both draw their resamples from :func:`faultline_eval.core.stats.resample_weights` over the sorted
unit ids, so they give the same interval for a mean metric. One sign convention throughout:
**drop = clean − condition** for a metric where higher is better and **condition − clean**
where lower is better (WER): a positive drop is always a loss.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "MEAN_FACTORS",
    "drop_sign",
    "unit_codes",
    "resampled_items",
    "aggregate_drops",
    "mean_factor",
    "mean_score_drops",
]

#: Scales a "plain mean of the per-doc score" metric is reported on: a percentage or a fraction.
MEAN_FACTORS = (100.0, 1.0)


def drop_sign(higher_is_better: bool) -> float:
    """+1 when a drop is clean − condition (higher is better), −1 when condition − clean (WER)."""
    return 1.0 if higher_is_better else -1.0


def unit_codes(units: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Per doc, the index of its unit among the sorted distinct unit ids; and those ids. Sorted,
    so a resample matrix over them does not depend on the order the logs listed the docs in."""
    names = sorted({str(u) for u in units})
    index = {name: k for k, name in enumerate(names)}
    return np.array([index[str(u)] for u in units], dtype=np.int64), names


def _relabelled(item: Any, unit: str, copy: int) -> Any:
    """``item`` as the ``copy``-th extra draw of its unit: every field equal to the unit id gets
    ``#<copy>`` appended (so an aggregation keyed on it sees a new unit). Items that are not
    dicts (a bare 0/1 score) are returned as they are."""
    if copy == 0 or not isinstance(item, dict):
        return item
    return {k: (f"{v}#{copy}" if isinstance(v, (str, int)) and str(v) == unit else v) for k, v in item.items()}


def resampled_items(
    items: Sequence[Any], codes: np.ndarray, names: list[str], counts: np.ndarray, memo: dict | None = None
) -> list[Any]:
    """The item list of one resample: the docs of a unit drawn ``counts[u]`` times contribute
    their items that often; copies after the first are relabelled (:func:`_relabelled`; ``memo``
    keeps relabelled copies across resamples of one list). Order: every drawn doc once, in doc
    order, then the second copies, and so on (the aggregations read a multiset)."""
    memo = {} if memo is None else memo
    drawn = np.asarray(counts)[codes]
    out = [items[d] for d in np.flatnonzero(drawn)]
    for copy in range(1, int(drawn.max(initial=0))):
        for d in np.flatnonzero(drawn > copy):
            key = (int(d), copy)
            if key not in memo:
                memo[key] = _relabelled(items[d], names[codes[d]], copy)
            out.append(memo[key])
    return out


def aggregate_drops(
    clean: Sequence[Sequence[Any]],
    variants: Sequence[Sequence[Any]],
    units: Sequence[str],
    aggregate: Callable[[list[Any]], float],
    weights: np.ndarray,
    *,
    higher_is_better: bool,
) -> np.ndarray:
    """Resampled drops (shape ``(b,)``) of the mean-over-variants value from clean: per row of
    ``weights`` (b, units; counts from :func:`~faultline_eval.core.stats.resample_weights` over
    :func:`unit_codes`' names), the mean of the task's own ``aggregate`` over the resampled items
    of each clean variant (clean has one) minus the same over the condition's ``variants``,
    signed by :func:`drop_sign`. Every list holds one item per doc, in the order of ``units``."""
    codes, names = unit_codes(units)
    if weights.shape[1] != len(names):
        raise ValueError(f"{weights.shape[1]} resample weights for {len(names)} units")
    sign = drop_sign(higher_is_better)
    memos: list[dict] = [{} for _ in range(len(clean) + len(variants))]
    drops = np.empty(weights.shape[0])
    for row, counts in enumerate(weights.astype(np.int64)):
        values = [
            aggregate(resampled_items(items, codes, names, counts, memo))
            for items, memo in zip([*clean, *variants], memos)
        ]
        drops[row] = sign * (np.mean(values[: len(clean)]) - np.mean(values[len(clean) :]))
    return drops


def mean_factor(
    items: Sequence[Any], scores: Sequence[float | None], aggregate: Callable[[list[Any]], float]
) -> float | None:
    """The factor (:data:`MEAN_FACTORS`) with which ``aggregate(items)`` equals the plain mean of
    the per-doc 0/1 ``scores``; None when the scores are not all 0/1 or no factor fits (a metric
    that dedupes, drops empty replies or is not a mean: the bootstrap then calls the aggregation)."""
    values = [s for s in scores if s is not None]
    if len(values) != len(scores) or not values or any(s not in (0, 1) for s in values):
        return None
    value, mean = float(aggregate(list(items))), float(np.mean(values))
    return next((f for f in MEAN_FACTORS if abs(value - f * mean) <= 1e-9 * max(1.0, abs(value))), None)


def mean_score_drops(
    clean: Sequence[Sequence[float]],
    variants: Sequence[Sequence[float]],
    units: Sequence[str],
    weights: np.ndarray,
    *,
    factor: float,
    higher_is_better: bool,
) -> np.ndarray:
    """The fast path of :func:`aggregate_drops` for a metric that is ``factor`` × the mean of the
    per-doc score: per resample, Σ counts·unit sums / Σ counts·unit sizes, for clean and each
    variant (one matrix product each). Same draws, same numbers."""
    codes, names = unit_codes(units)
    size = np.bincount(codes, minlength=len(names)).astype(np.float64)
    drawn = weights @ size

    def resampled_mean(scores: Sequence[float]) -> np.ndarray:
        sums = np.bincount(codes, weights=np.asarray(scores, dtype=np.float64), minlength=len(names))
        mean: np.ndarray = factor * (weights @ sums) / drawn
        return mean

    base = np.mean([resampled_mean(c) for c in clean], axis=0)
    under = np.mean([resampled_mean(v) for v in variants], axis=0)
    result: np.ndarray = drop_sign(higher_is_better) * (base - under)
    return result
