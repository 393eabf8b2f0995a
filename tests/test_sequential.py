"""The sequential statistics of budgeted evaluation (faultline_eval/core/sequential.py)."""

import numpy as np
import pytest

from faultline_eval.core.sequential import (
    difficulty_bins,
    drop_sequence,
    stopping_index,
    stratified_order,
)
from faultline_eval.core.stats import holm


def _populations(reps, n, p, seed):
    rng = np.random.default_rng(seed)
    pop = rng.choice([-1.0, 0.0, 1.0], p=p, size=(reps, n))
    order = np.argsort(rng.random((reps, n)), axis=1)
    return pop.mean(axis=1), np.take_along_axis(pop, order, axis=1)


@pytest.mark.parametrize("p", [(0.05, 0.85, 0.10), (0.3, 0.3, 0.4), (0.0, 0.9, 0.1)])
def test_coverage_holds_under_optional_stopping(p):
    """The interval read at a data-dependent stopping time (here: the first time it excludes zero,
    else the first time it is 5 pp wide, else the end) holds the full-population drop >= 95 % of the
    time; and it holds it at every prefix at once."""
    truth, drops = _populations(400, 300, p, seed=int(100 * p[0] + 10 * p[2]))
    seq = drop_sequence(drops, 300, alpha=0.05)
    stop = stopping_index(seq, precision=0.05, alpha=0.05, family=1, minimum=10)
    rows = np.arange(len(truth))
    low, high = seq.low[rows, stop - 1], seq.high[rows, stop - 1]
    assert ((low <= truth) & (truth <= high)).mean() >= 0.95
    ever_missed = ((seq.low > truth[:, None]) | (seq.high < truth[:, None])).any(axis=1)
    assert ever_missed.mean() <= 0.05
    # the full population read: the estimate is the population value, the interval narrows towards it
    assert np.allclose(seq.estimate[:, -1], truth)
    assert np.all(seq.half_width[:, -1] < 0.6 * seq.half_width[:, 149])


def test_stopping_on_a_clear_drop_is_early_and_significant_under_holm():
    truth, drops = _populations(50, 600, (0.0, 0.6, 0.4), seed=3)
    seq = drop_sequence(drops, 600)
    stop = stopping_index(seq, precision=None, alpha=0.05, family=50)
    assert np.all(stop < 200)
    p_at_stop = seq.p_value[np.arange(50), stop - 1]
    assert np.all(holm(p_at_stop) <= 0.05)


def test_values_out_of_range_are_refused():
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        drop_sequence([0.5, 2.0], 10)
    with pytest.raises(ValueError, match="population of 1"):
        drop_sequence([0.0, 0.0], 1)


def test_stratified_order_is_seeded_proportional_and_input_order_free():
    ids = [f"item{k:03d}" for k in range(90)]
    strata = [("socialiq", "video") if k < 60 else ("omnibench", "image") for k in range(90)]
    order = stratified_order(ids, strata, seed=7)
    assert sorted(order) == ids
    assert order == stratified_order(ids[::-1], strata[::-1], seed=7)  # input order does not matter
    assert order != stratified_order(ids, strata, seed=8)
    first = order[:30]  # every prefix keeps the strata's shares (2:1 here)
    assert sum(int(i[4:]) < 60 for i in first) in (19, 20, 21)
    with pytest.raises(ValueError, match="unique"):
        stratified_order(["a", "a"], [0, 0], seed=1)


def test_difficulty_bins_split_by_clean_score():
    bins = difficulty_bins([0.0, 0.1, 0.5, 0.6, 1.0, 0.9], bins=3)
    assert list(bins) == [0, 0, 1, 1, 2, 2]


def test_betting_p_value_keeps_its_level_on_an_exactly_null_population():
    """A population whose mean drop is exactly zero: the anytime p-value dips to 0.05 at some prefix
    in at most ~5 % of random orders (Ville), and it is 0 once the draws contradict the null."""
    rng = np.random.default_rng(5)
    pop = np.array([-1.0] * 60 + [0.0] * 180 + [1.0] * 60)
    drops = np.stack([rng.permutation(pop) for _ in range(400)])
    seq = drop_sequence(drops, 300)
    assert (seq.p_value.min(axis=1) <= 0.05).mean() <= 0.06
    shifted = drop_sequence(np.ones((1, 200)), 300)  # 200 of 300 units at +1: the mean is >= 1/3
    assert shifted.p_value[0, -1] == 0.0
