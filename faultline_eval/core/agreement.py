"""How much two raters (two judges, or a judge and human labels) agree on binary verdicts.

Raw agreement flatters a rater that says YES to nearly everything when most pairs are YES.
Cohen's kappa corrects for the agreement two raters would reach by chance given how often each
says YES: ``kappa = (p_o - p_e) / (1 - p_e)``, with ``p_o`` the observed agreement and
``p_e = P(a=YES) P(b=YES) + P(a=NO) P(b=NO)``. 1 is perfect, 0 is chance level, below 0 is worse
than chance. C3PO validated its judge against a second one at 93% agreement, kappa 0.88.
:func:`fleiss_kappa` extends it to more raters per item (SCEval's Table 27 uses both; its
benchmark-construction agreement, :mod:`sceval_plugin.construction.annotator_agreement`, reuses these).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

__all__ = ["agreement_rate", "cohen_kappa", "label_kappa", "best_threshold", "fleiss_kappa"]


def _check(a: Sequence[object], b: Sequence[object]) -> int:
    if len(a) != len(b):
        raise ValueError(f"raters labelled different numbers of items: {len(a)} != {len(b)}")
    if not a:
        raise ValueError("agreement of zero items is undefined")
    return len(a)


def agreement_rate(a: Sequence[bool], b: Sequence[bool]) -> float:
    """Fraction of items on which the two raters give the same label.

    >>> agreement_rate([True, True, False, False], [True, False, False, False])
    0.75
    """
    n = _check(a, b)
    return sum(bool(x) == bool(y) for x, y in zip(a, b)) / n


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float:
    """Cohen's kappa of two binary raters (labels are read as booleans: YES=True); see
    :func:`label_kappa`, of which this is the two-label case.

    >>> round(cohen_kappa([1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0]), 4)
    0.6667
    """
    return label_kappa([bool(x) for x in a], [bool(y) for y in b])


def label_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters over any set of labels (e.g. the graded scale's CORRECT /
    PARTIAL / INCORRECT / UNANSWERABLE): ``p_e = sum_k P(a=k) P(b=k)``.

    Degenerate case: when chance agreement is 1 (both raters gave one and the same label to every
    item) the formula is 0/0. We return 1.0 if observed agreement is 1 (it then always is: they
    agree perfectly, just without any variation to show it is not chance) and 0.0 otherwise.
    Counts are kept as integers so that test is exact rather than a float comparison.

    >>> round(label_kappa(["x", "y", "z", "z"], ["x", "y", "z", "y"]), 4)
    0.6364
    """
    n = _check(a, b)
    count_a, count_b = Counter(a), Counter(b)
    agree = sum(x == y for x, y in zip(a, b))
    chance = sum(count_a[k] * count_b[k] for k in count_a)  # p_e scaled by n**2
    if chance == n * n:
        return 1.0 if agree == n else 0.0
    return (agree * n - chance) / (n * n - chance)


def best_threshold(
    scores: Sequence[float], labels: Sequence[bool], grid: Sequence[float] | None = None
) -> tuple[float, float, float]:
    """The threshold ``t`` (deciding YES when ``score >= t``) that best reproduces ``labels``.

    Sweeps ``grid`` (default 0.00, 0.01, ..., 1.00) and maximises Cohen's kappa. Several
    thresholds usually tie (every ``t`` between two neighbouring scores gives the same
    verdicts); we take the one farthest from any score, so that a tiny numerical change in a
    score cannot flip a verdict, then the higher one (stricter). Returns (threshold, kappa,
    accuracy).
    """
    grid = [i / 100 for i in range(101)] if grid is None else list(grid)
    truth = [bool(x) for x in labels]

    def rank(t: float) -> tuple[float, float, float]:
        kappa = cohen_kappa([s >= t for s in scores], truth)
        margin = min(abs(s - t) for s in scores)
        return (round(kappa, 12), margin, t)  # round: equal kappas must compare equal

    t = max(grid, key=rank)
    verdicts = [s >= t for s in scores]
    return t, cohen_kappa(verdicts, truth), agreement_rate(verdicts, truth)


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float:
    """Fleiss' kappa (Fleiss 1971) of any number of raters: ``ratings[i]`` holds the labels the
    raters gave item ``i`` (the same number ``n >= 2`` per item; who gave which does not matter).

    ``P_i = (sum_k n_ik^2 - n) / (n (n - 1))`` is the agreement on item i, ``P_bar`` its mean,
    ``p_k`` the share of all labels that are k, ``P_e = sum_k p_k^2``, and
    ``kappa = (P_bar - P_e) / (1 - P_e)``. The degenerate case (one label throughout) is
    handled as in :func:`label_kappa`. Fleiss' own worked example (10 items, 14 raters, 5
    categories; Wikipedia's table) gives 0.210:

    >>> table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    ...          [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    >>> round(fleiss_kappa([[k for k, c in enumerate(row) for _ in range(c)] for row in table]), 3)
    0.21
    """
    if not ratings:
        raise ValueError("agreement of zero items is undefined")
    n = len(ratings[0])
    if n < 2 or any(len(r) != n for r in ratings):
        raise ValueError(
            f"Fleiss' kappa needs the same number (>= 2) of labels per item, got {sorted({len(r) for r in ratings})}"
        )
    counts = [Counter(r) for r in ratings]
    agree = sum(sum(c * c for c in item.values()) - n for item in counts)  # P_bar * N n (n - 1)
    totals: Counter[Hashable] = Counter()
    for item in counts:
        totals.update(item)
    chance = sum(c * c for c in totals.values())  # P_e * (N n)^2
    items, labels = len(ratings), len(ratings) * n
    if chance == labels * labels:
        return 1.0 if agree == items * n * (n - 1) else 0.0
    p_bar, p_e = agree / (items * n * (n - 1)), chance / (labels * labels)
    return (p_bar - p_e) / (1 - p_e)
