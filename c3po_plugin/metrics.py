"""The C3PO report's numbers (paper §3.3 Table 3, §4.3, Appendix E, F.5 Table 12) from a trial table.

Input: one row per trial (a model answering one item once) with the columns :data:`TRIAL_COLUMNS`.
``correct`` is 1, 0 or NaN; NaN means *not gradable* (an API failure or a judge error), while an
empty reply or a refusal is graded 0. Everything here is a pure function of that table; reading
logs and writing files live in :mod:`c3po_plugin.report`.

How accuracy is counted and averaged:

* ``accuracy`` is the paper's #Yes / #Total Samples (§3.2): an ungradable trial is not a YES, so
  it counts as not correct. ``accuracy_gradable`` beside it is the other reading, ungradable
  trials as missing (as SCEval reports invalid-as-missing next to invalid-as-wrong); the two
  differ only where there are API failures or judge errors.
* a sample's score is the mean over its runs (the entry's ``v`` and repeated run folders alike);
  a group's accuracy is the mean of its samples' scores, so every sample weighs the same
  whatever its number of runs; a template with many items weighs more than a small one
  (Table 3's tier and overall cells are item-weighted, not template-weighted).

Intervals are 95 % percentile bootstraps over samples from :mod:`faultline_eval.core.stats`:
seeded by (seed, sample count) alone, so the same logs give the same intervals anywhere.
"Human" is a pseudo-model whose trials are the items' human answers (``human_correct``), pooled
over every model's logs; it exists only for items with a human answer (Appendix E's subset):
a template or tier without human answers has no Human row at all, not a 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from c3po_plugin.failure_modes import DOMINANCE, MODES
from c3po_plugin.templates import CATEGORIES, TIERS, registry
from faultline_eval.core.accuracy import mean_of_sample_scores, worst_repeat_accuracy
from faultline_eval.core.stats import B_DEFAULT, SEED_DEFAULT, grouped_intervals

TRIAL_COLUMNS = (
    "model",
    "sample_id",
    "template_id",
    "category",
    "tier",
    "run",
    "correct",
    "invalid",
    "exact",
    "judged",
    "judge_error",
    "failure_mode",
    "human_correct",
    "difficulty",
)
#: Categories of replies with no gradable answer (the task counts each as a metric).
INVALID = ("api_failure", "empty", "refusal")
HUMAN = "Human"
#: The rows of :func:`failure_modes` that average the models' shares.
COHORT = "Cohort mean"
OVERALL = "Overall"
#: Aggregation levels of :func:`accuracy`, coarsest last.
LEVELS = ("template", "cell", "category", "overall")


def cell_name(category: str, tier: int) -> str:
    """Table 3's column name of a category x tier cell: ``("cc", 2)`` -> ``"CC T2"``."""
    return f"{category.upper()} T{int(tier)}"


def cell_order() -> list[str]:
    """Every possible cell in Table 3's order: IC tiers, then CC tiers."""
    return [cell_name(c, t) for c in CATEGORIES for t in TIERS]


def per_sample(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, sample): ``score`` (mean ``correct`` over its trials, an ungradable
    trial counted 0), ``score_gradable`` (mean over gradable trials only, NaN if none), ``exact``
    (exact match as the only grader, over all trials), ``trials`` and ``valid`` (gradable
    trials), and the item's template, category, tier, difficulty (those the table has).
    The one definition of a sample's score: the report and the task's aggregations use it."""
    t = trials.assign(
        valid=trials["correct"].notna(),
        strict=trials["correct"].fillna(0.0).astype(float),
        exact_only=trials["exact"].fillna(0).astype(float),
    )
    g = t.groupby(["model", "sample_id"], sort=True, observed=True)
    item = {c: (c, "first") for c in ("template_id", "category", "tier", "difficulty") if c in t}
    out = g.agg(
        **item,
        score=("strict", "mean"),
        score_gradable=("correct", "mean"),
        exact=("exact_only", "mean"),
        trials=("valid", "size"),
        valid=("valid", "sum"),
    )
    return out.reset_index()


def model_accuracy(trials: pd.DataFrame, score: str = "score") -> float:
    """One model's accuracy over ``trials``: the mean over samples of :func:`per_sample`'s
    ``score`` (#YES / #Total, §3.2), or of ``score_gradable`` or ``exact``; samples without one
    drop out (eq. 3's averaging, :func:`faultline_eval.core.accuracy.mean_of_sample_scores`).
    :func:`accuracy` adds groups and intervals."""
    return mean_of_sample_scores(per_sample(trials), score=score)


def worst_run_accuracy(trials: pd.DataFrame) -> float:
    """One model's lowest accuracy among run indices (eq. 4's reading for runs), an ungradable
    trial counted as not correct."""
    return worst_repeat_accuracy(trials.assign(strict=trials["correct"].fillna(0.0)), value="strict", repeat="run")


def human_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """The items' human answers as trials of the pseudo-model :data:`HUMAN`: every item with a
    human answer (``has_human_answer`` or ``human_answer`` when the table has it, else a graded
    ``human_correct``); an answer the judge failed on is ungradable (NaN), like a model's."""
    if "has_human_answer" in trials:
        has = trials["has_human_answer"].astype(bool)
    else:
        has = trials["human_answer"].notna() if "human_answer" in trials else trials["human_correct"].notna()
    h = trials[has]
    return h.assign(
        model=HUMAN,
        correct=h["human_correct"].astype(float),
        exact=np.nan,
        invalid=None,
        judged=False,
        judge_error=h["human_correct"].isna(),
        failure_mode=None,
    )


def _grouped(samples: pd.DataFrame) -> pd.DataFrame:
    """Per-sample rows repeated once per level they count in, with ``level`` and ``group``."""
    parts = [
        samples.assign(level="template", group=samples["template_id"]),
        samples.assign(level="cell", group=[cell_name(c, t) for c, t in zip(samples["category"], samples["tier"])]),
        samples.assign(level="category", group=samples["category"].str.upper()),
        samples.assign(level="overall", group=OVERALL),
    ]
    return pd.concat(parts, ignore_index=True)


def accuracy(trials: pd.DataFrame, *, b: int = B_DEFAULT, seed: int = SEED_DEFAULT) -> pd.DataFrame:
    """Long table, one row per (model, level, group) for every level of :data:`LEVELS`
    (groups: template id, ``"IC T1"``-style cell, ``"IC"``/``"CC"``, ``"Overall"``): ``accuracy``
    (#YES / #Total) with ``ci_low``/``ci_high`` and ``n_samples``; ``accuracy_gradable`` over the
    ``n_gradable`` samples with a gradable trial; ``exact_accuracy`` (exact match only). Includes
    the :data:`HUMAN` rows for the groups that hold human answers."""
    both = pd.concat([trials, human_trials(trials)], ignore_index=True)
    grouped = _grouped(per_sample(both))
    keys = ["model", "level", "group"]
    acc = grouped_intervals(grouped, keys, "score", b=b, seed=seed).rename(
        columns={"score": "accuracy", "n": "n_samples"}
    )
    by = grouped.groupby(keys, observed=True)
    extra = pd.DataFrame(
        {
            "accuracy_gradable": by["score_gradable"].mean(),
            "n_gradable": by["score_gradable"].count(),
            "exact_accuracy": by["exact"].mean(),
        }
    )
    out = acc.join(extra).reset_index()
    out["n_samples"] = out["n_samples"].astype(int)
    out["n_gradable"] = out["n_gradable"].astype(int)
    out.loc[out["model"] == HUMAN, "exact_accuracy"] = np.nan
    order = out.assign(_h=out["model"] == HUMAN, _l=out["level"].map(LEVELS.index), _g=out["group"].map(group_rank))
    return out.loc[order.sort_values(["_h", "model", "_l", "_g"]).index].reset_index(drop=True)


def models_of(frame: pd.DataFrame) -> list[str]:
    """Model names in report order: alphabetical, :data:`HUMAN` last."""
    return sorted(map(str, frame["model"].unique()), key=lambda m: (m == HUMAN, m))


def tier_table(acc: pd.DataFrame) -> pd.DataFrame:
    """Table 3's layout from :func:`accuracy`: one row per model (Human last), columns the
    category x tier cells that hold items (``"IC T1"`` ... ``"CC T4"``), then ``Overall``."""
    cells = acc[acc["level"].isin(["cell", "overall"])]
    wide = cells.pivot(index="model", columns="group", values="accuracy")
    present = [c for c in cell_order() if c in wide.columns]
    return wide.reindex(index=models_of(cells), columns=present + [OVERALL]).rename_axis(None, axis=1)


def coverage(trials: pd.DataFrame) -> pd.DataFrame:
    """Per (model, category) and per model (category ``"all"``): trials, gradable trials,
    ``coverage`` (their share), invalid counts by kind, exact matches, judge decisions and errors."""
    t = trials.assign(
        valid=trials["correct"].notna(),
        exact_hit=trials["exact"].fillna(0).astype(bool),
        **{f"invalid_{k}": trials["invalid"] == k for k in INVALID},
    )
    both = pd.concat([t, t.assign(category="all")], ignore_index=True)
    g = both.groupby(["model", "category"], observed=True)
    out = g.agg(
        trials=("valid", "size"),
        valid_trials=("valid", "sum"),
        exact_matches=("exact_hit", "sum"),
        judge_decisions=("judged", "sum"),
        judge_errors=("judge_error", "sum"),
        **{f"invalid_{k}": (f"invalid_{k}", "sum") for k in INVALID},
    ).reset_index()
    out["coverage"] = out["valid_trials"] / out["trials"]
    counts = [c for c in out.columns if c not in ("model", "category", "coverage")]
    out[counts] = out[counts].astype(int)
    return out


def failure_modes(trials: pd.DataFrame, *, pooled: str | None = COHORT) -> pd.DataFrame:
    """Failure-mode distribution of wrong answers (graded 0 with an answer, i.e. not an empty reply
    or refusal) per (model, template) and per model (template ``"all"``): ``wrong`` (trials), a
    count per mode of :data:`~c3po_plugin.failure_modes.MODES`, ``dominance`` (the modes of
    :data:`~c3po_plugin.failure_modes.DOMINANCE` together) and ``share_<mode>`` /
    ``share_dominance`` = count / wrong (NaN when nothing was wrong): §4.3's dominance vs
    incomplete-fusion split and Table 12's columns. Every (model, template) that has trials gets
    a row, with zero counts if nothing was wrong.

    With ``pooled`` and several models, adds rows under that name that, like Table 12 ("averaged
    across the cohort"), give each share as the **mean of the models' shares** (models with a
    wrong answer there), so every model weighs the same; their counts are the models' sums."""
    t = trials[["model", "template_id", "correct", "invalid", "failure_mode"]]
    t = pd.concat([t, t.assign(template_id="all")], ignore_index=True).astype({"model": str, "template_id": str})
    wrong = t[(t["correct"] == 0) & t["invalid"].isna()]
    wrong = wrong.assign(failure_mode=wrong["failure_mode"].fillna("other"))
    index = pd.MultiIndex.from_frame(t[["model", "template_id"]].drop_duplicates())
    counts = (
        wrong.groupby(["model", "template_id", "failure_mode"])
        .size()
        .unstack("failure_mode")
        .reindex(index=index, columns=list(MODES))
        .fillna(0)
        .astype(int)
    )
    counts.columns.name = None
    counts.insert(0, "wrong", counts.sum(axis=1))
    counts["dominance"] = counts[list(DOMINANCE)].sum(axis=1)
    for mode in (*MODES, "dominance"):
        counts[f"share_{mode}"] = counts[mode] / counts["wrong"].where(counts["wrong"] > 0)
    out = counts.reset_index()
    if pooled and out["model"].nunique() > 1:
        shares = [c for c in out.columns if c.startswith("share_")]
        sums = out.groupby("template_id", sort=False)[["wrong", *MODES, "dominance"]].sum()
        means = out.groupby("template_id", sort=False)[shares].mean()  # NaN shares (nothing wrong) skipped
        out = pd.concat([out, sums.join(means).reset_index().assign(model=pooled)], ignore_index=True)
    order = out.assign(_p=out["model"] == pooled, _a=out["template_id"] == "all", _t=out["template_id"].map(group_rank))
    return out.loc[order.sort_values(["_p", "model", "_a", "_t"]).index].reset_index(drop=True)


def group_rank(group: str) -> tuple:
    """Sort key of a group name: template ids in the registry's order (IC by tier, then CC),
    then Table 3's cells, then ``IC``, ``CC``, ``Overall``; unknown names last, alphabetically."""
    names = [t.id for t in registry()] + cell_order() + [c.upper() for c in CATEGORIES] + [OVERALL]
    order = {name: k for k, name in enumerate(names)}
    return (order.get(group, len(order)), group)


def overall(acc: pd.DataFrame, cov: pd.DataFrame) -> pd.DataFrame:
    """Per model (Human last): overall accuracy with CI and n, the ungradable-as-missing accuracy,
    exact-match-only accuracy, IC and CC accuracy, and the ``"all"`` row of :func:`coverage`
    (coverage, judge and invalid counts)."""
    a = acc.set_index(["model", "level", "group"])
    rows = []
    for model in models_of(acc):
        o = a.loc[(model, "overall", OVERALL)]
        row = {
            "model": model,
            "accuracy": o["accuracy"],
            "ci_low": o["ci_low"],
            "ci_high": o["ci_high"],
            "n_samples": int(o["n_samples"]),
            "accuracy_gradable": o["accuracy_gradable"],
            "exact_accuracy": o["exact_accuracy"],
        }
        for category in CATEGORIES:
            key = (model, "category", category.upper())
            row[f"{category}_accuracy"] = a.loc[key, "accuracy"] if key in a.index else np.nan
        rows.append(row)
    out = pd.DataFrame(rows)
    return out.merge(cov[cov["category"] == "all"].drop(columns="category"), on="model", how="left")
