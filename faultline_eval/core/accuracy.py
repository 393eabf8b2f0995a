"""Accuracy over repeated trials: SCEval's eq. 3 and eq. 4 (paper §2.4), on a trial table.

A benchmark repeats each item (SCEval: ``variant``s of a condition; C³PO: ``run``s): a trial
table has one row per trial with ``sample_id``, the repeat index and a score column (1, 0, NaN
for a trial that is not scored). Both benchmarks' reports and their lmms-eval aggregations
compute accuracy through these functions, so a task's metric and the report's number are the
same computation.

* eq. 3, :func:`mean_over_samples`: a sample's score is the mean over its scored repeats
  (:func:`sample_scores`); accuracy is the mean over the samples that have one
  (:func:`mean_of_sample_scores`, for a report that keeps the sample scores).
* eq. 4, :func:`worst_repeat_accuracy`: per repeat index, the accuracy over the samples scored
  at that index; the lowest of them.

``by`` names the columns whose groups are computed separately (e.g. model and condition); empty,
the whole table is one group and a number is returned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the functions take and return pandas objects; importing this module needs no pandas
    import pandas as pd

__all__ = ["sample_scores", "mean_of_sample_scores", "mean_over_samples", "worst_repeat_accuracy"]

_ALL = "__all__"


def _grouped(trials: pd.DataFrame, by: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """The table and its group columns; a constant column stands in for no grouping."""
    return (trials, list(by)) if by else (trials.assign(**{_ALL: 0}), [_ALL])


def _result(values: pd.Series, by: Sequence[str]) -> pd.Series | float:
    if by:
        return values
    return float(values.iloc[0]) if len(values) else math.nan


def sample_scores(trials: pd.DataFrame, by: Sequence[str] = (), value: str = "correct") -> pd.Series:
    """Eq. 3's inner mean: per (``by``..., sample), the mean of ``value`` over the sample's
    scored trials (NaN when none is scored), samples in order of first appearance."""
    return trials.groupby([*by, "sample_id"], sort=False, observed=True)[value].mean()


def mean_of_sample_scores(samples: pd.DataFrame, by: Sequence[str] = (), score: str = "score") -> pd.Series | float:
    """Eq. 3's outer mean, from a table of sample scores (one row per sample and group): the
    mean over the samples that have a score (NaN when none has)."""
    table, keys = _grouped(samples.dropna(subset=[score]), by)
    return _result(table.groupby(keys, observed=True)[score].mean(), by)


def mean_over_samples(trials: pd.DataFrame, by: Sequence[str] = (), value: str = "correct") -> pd.Series | float:
    """Eq. 3: the mean over samples of each sample's mean over its scored repeats; samples with
    no scored repeat drop out (NaN when none is left)."""
    return mean_of_sample_scores(sample_scores(trials, by, value).rename("score").reset_index(), by)


def worst_repeat_accuracy(
    trials: pd.DataFrame, by: Sequence[str] = (), value: str = "correct", repeat: str = "variant"
) -> pd.Series | float:
    """Eq. 4: the lowest, over repeat indices, of the accuracy over the trials scored at that
    index (NaN when no trial is scored)."""
    table, keys = _grouped(trials.dropna(subset=[value]), by)
    per_repeat = table.groupby([*keys, repeat], observed=True)[value].mean()
    return _result(per_repeat.groupby(level=list(range(len(keys))), observed=True).min(), by)
