"""The human reference (paper Tables 14 and 15): human accuracy and agreement per condition, and
the excess of a model's drop over the humans' on the items both answered. Human answers arrive as
a trial table with model :data:`HUMAN` (see :mod:`sceval_plugin.report.diagnostics_section` for the
files that supply them)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from faultline_eval.core.stats import (
    B_DEFAULT,
    SEED_DEFAULT,
    bootstrap_means,
    bootstrap_p_value,
    percentile_interval,
    resample_weights,
)
from sceval_plugin.metrics.drops import item_matrix
from sceval_plugin.metrics.protocol import per_sample

HUMAN = "human"


def human_audit(human_trials: pd.DataFrame) -> pd.DataFrame:
    """Table 14: per condition the humans answered: items with a human answer (N), human accuracy
    against the gold (each item's mean over its annotators, then over items, as eq. 3 does over
    variants), annotators per item, and - where several annotators answered an item and their
    answers are given - the agreement (share of such items on which all gave the same answer)."""
    columns = ["condition_id", "items", "human_accuracy", "annotators_per_item", "agreement", "agreement_items"]
    if human_trials.empty:
        return pd.DataFrame(columns=columns)
    samples = per_sample(human_trials)
    samples["condition_id"] = samples["condition_id"].astype(str)
    out = samples.groupby("condition_id").agg(
        items=("score", "count"), human_accuracy=("score", "mean"), annotators_per_item=("trials", "mean")
    )
    answered = human_trials.dropna(subset=["answer"])
    if not answered.empty:
        g = answered.groupby(["condition_id", "sample_id"], observed=True)["answer"]
        per_item = pd.DataFrame({"n": g.size(), "distinct": g.nunique()})
        per_item = per_item[per_item["n"] > 1].reset_index()
        per_item["condition_id"] = per_item["condition_id"].astype(str)
        agree = per_item.groupby("condition_id").agg(
            agreement=("distinct", lambda d: float((d == 1).mean())), agreement_items=("n", "size")
        )
        out = out.join(agree)
    out = out.reindex(columns=columns[1:])
    out["agreement_items"] = out["agreement_items"].fillna(0).astype(int)
    return out.reset_index()[columns]


def human_excess_drop(
    samples: pd.DataFrame, human_trials: pd.DataFrame, *, b: int = B_DEFAULT, seed: int = SEED_DEFAULT
) -> pd.DataFrame:
    """Table 15: per (model, condition ≠ clean the humans answered), on the cohort G_c of items
    with a valid model score and a human answer under both clean and the condition: model drop
    and human drop (clean minus condition accuracy on G_c), the excess drop (model − human) and
    its 95 % paired-bootstrap interval over G_c's items."""
    columns = [
        "model",
        "condition_id",
        "n",
        "model_drop",
        "human_drop",
        "excess_drop",
        "ci_low",
        "ci_high",
        "p_bootstrap",
    ]
    if human_trials.empty:
        return pd.DataFrame(columns=columns)
    humans = per_sample(human_trials)
    samples = samples[samples["condition_id"].astype(str).isin(set(humans["condition_id"].astype(str)))]
    wide = item_matrix(pd.concat([samples, humans]), "score")
    human_rows = {c for m, c in wide.index if m == HUMAN}
    rows, members = [], []
    for model, cid in wide.index:
        if (
            model == HUMAN
            or cid == "clean"
            or cid not in human_rows
            or (model, "clean") not in wide.index
            or "clean" not in human_rows
        ):
            continue
        m = wide.loc[(model, "clean")].to_numpy(float) - wide.loc[(model, cid)].to_numpy(float)
        h = wide.loc[(HUMAN, "clean")].to_numpy(float) - wide.loc[(HUMAN, cid)].to_numpy(float)
        ok = np.isfinite(m) & np.isfinite(h)
        members.append(m[ok] - h[ok])
        rows.append(
            [model, cid, int(ok.sum()), m[ok].mean() if ok.any() else np.nan, h[ok].mean() if ok.any() else np.nan]
        )
    for row, excess in zip(rows, members):
        if excess.size:
            boot = bootstrap_means(excess[None, :], resample_weights(excess.size, b=b, seed=seed))
            lo, hi = percentile_interval(boot)
            row += [float(excess.mean()), float(lo[0]), float(hi[0]), float(bootstrap_p_value(boot)[0])]
        else:
            row += [np.nan] * 4
    return pd.DataFrame(rows, columns=columns) if rows else pd.DataFrame(columns=columns)
