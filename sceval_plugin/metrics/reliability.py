"""How far a model's numbers and outputs can be trusted (paper Appendix C): seed stability
(C.9, Table 18), calibration (C.11, Table 22), cross-model failure overlap (Table 23), invalid
outputs per item (Table 16) and across prompt variants (Table 10). Pure functions of the trial,
per-sample and per-condition tables (see :mod:`sceval_plugin.metrics.diagnostics`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from sceval_plugin.conditions import catalogue
from sceval_plugin.metrics.drops import codes_of, item_matrix
from sceval_plugin.metrics.protocol import INVALID, MODALITIES, ConditionInfo, weakest_singles

#: The three confidence levels of the JSON schema (Appendix H) as probabilities for ECE. The paper
#: does not give values; the default is the centre of each third of [0, 1]. Pass another mapping
#: (e.g. ``{"low": 0.25, "medium": 0.5, "high": 0.9}``) to read the levels differently.
CONFIDENCE_VALUES = {"low": 1 / 6, "medium": 1 / 2, "high": 5 / 6}
#: Table 23: "shared-hard" items are failed by at least this share of the models (10 of 15).
SHARED_HARD_FRACTION = 2 / 3
#: Table 16's groups of conditions by block (any other block: "controls").
GROUP_OF_BLOCK = {
    "clean": "clean",
    "single": "single",
    "tv": "bimodal",
    "ta": "bimodal",
    "va": "bimodal",
    "tva": "trimodal",
}


def _per_row(column: pd.Series, of_value) -> np.ndarray:
    """``of_value`` of each row's value, evaluated once per distinct value."""
    codes, values = codes_of(column)
    lookup = np.array([of_value(v) for v in values] + [of_value(None)], dtype=object)
    return lookup[codes]  # code -1 (missing) takes the last entry


def _cells(trials: pd.DataFrame) -> tuple[np.ndarray, list, list]:
    """Per row the code of its (model, condition) cell, model * conditions + condition, with the
    models and conditions those codes index."""
    model, models = codes_of(trials["model"])
    condition, conditions = codes_of(trials["condition_id"])
    return model * len(conditions) + condition, models, conditions


# --- C.9, Table 18: seed stability ---------------------------------------------------------------


def seed_stability(
    trials: pd.DataFrame, summary: pd.DataFrame, info: Mapping[str, ConditionInfo], *, ddof: int = 1
) -> pd.DataFrame:
    """C.9, Table 18: per cell, the per-variant accuracies Acc_r (eq. 4's terms: each variant's
    accuracy over its valid trials) summarised as standard deviation (``ddof=1``, the sample
    standard deviation; ``ddof=0`` for the population one), median, worst-2 mean (mean of the two
    lowest, (v2 + v3) / 2 for three variants) and best, next to the headline mean-variant accuracy
    (eq. 3), the worst-variant accuracy and their gap. ``n_var`` is the number of variant indices
    with at least one valid trial (what survived filtering).

    Rows: every model's weakest single cell per modality (``weakest_for`` names the modality) and
    every stochastic cell (``n_var`` > 1)."""
    columns = [
        "model",
        "condition_id",
        "weakest_for",
        "accuracy",
        "worst_variant_accuracy",
        "mean_worst_gap",
        "std",
        "median",
        "worst2_mean",
        "best_variant_accuracy",
        "n_var",
    ]
    valid = trials.dropna(subset=["correct"])
    if valid.empty:
        return pd.DataFrame(columns=columns)
    per_variant = (
        valid.groupby(["model", "condition_id", "variant"], observed=True)["correct"].mean().rename("acc").reset_index()
    )
    per_variant[["model", "condition_id"]] = per_variant[["model", "condition_id"]].astype(str)
    g = per_variant.groupby(["model", "condition_id"])["acc"]
    stats = pd.DataFrame(
        {"std": g.std(ddof=ddof), "median": g.median(), "best_variant_accuracy": g.max(), "n_var": g.size()}
    )
    lowest_two = per_variant.sort_values(["model", "condition_id", "acc"]).groupby(["model", "condition_id"]).head(2)
    stats["worst2_mean"] = lowest_two.groupby(["model", "condition_id"])["acc"].mean()
    stats.loc[stats["n_var"] < 2, "worst2_mean"] = np.nan
    weakest = weakest_singles(summary, info).set_index(["model", "condition_id"])["modality"]
    keep = stats.index[(stats["n_var"] > 1).to_numpy()].union(weakest.index)
    head = summary.set_index(["model", "condition_id"])[["accuracy", "worst_variant_accuracy", "mean_worst_gap"]]
    out = head.reindex(keep).join(stats, how="left")
    out["weakest_for"] = weakest.reindex(keep).fillna("").to_numpy()
    out = out.reset_index()
    out["n_var"] = out["n_var"].fillna(0).astype(int)
    modality_order = {m: k for k, m in enumerate(MODALITIES.values())}
    out["order"] = out["weakest_for"].map(lambda m: modality_order.get(m, len(modality_order)))
    return out.sort_values(["model", "order", "condition_id"], kind="stable")[columns].reset_index(drop=True)


# --- C.11, Table 22: calibration ------------------------------------------------------------------


def calibration(trials: pd.DataFrame, *, values: Mapping[str, float] = CONFIDENCE_VALUES) -> pd.DataFrame:
    """C.11 and G.11, Table 22: per (model, condition), over the valid answers that state one of
    the schema's confidence levels (case and surrounding space ignored): expected calibration
    error ECE = Σ_level (n_level / n) |acc_level − value(level)|, the over-confident error rate
    ρ_oc = share of wrong answers stated with ``high`` confidence, and the mean stated confidence
    of right and of wrong answers. ``unrated`` counts valid answers with no or another level."""
    columns = [
        "model",
        "condition_id",
        "rated",
        "unrated",
        "ece",
        "rho_oc",
        "wrong",
        "confidence_right",
        "confidence_wrong",
        *[f"share_{k}" for k in values],
    ]
    if "confidence" not in trials or trials["confidence"].isna().all():
        return pd.DataFrame(columns=columns)
    names = list(values)
    cell, models, conditions = _cells(trials)
    valid = trials["correct"].notna().to_numpy()
    level = _per_row(
        trials["confidence"],
        lambda x: names.index(x.strip().lower()) if isinstance(x, str) and x.strip().lower() in values else -1,
    ).astype(np.int64)
    rated = valid & (level >= 0)
    if not rated.any():
        return pd.DataFrame(columns=columns)
    k, cells = len(names), len(models) * len(conditions)
    correct = trials["correct"].to_numpy(float)[rated]
    key = cell[rated] * k + level[rated]
    n = np.bincount(key, minlength=cells * k).reshape(cells, k).astype(float)  # answers per (cell, level)
    right = np.bincount(key, weights=correct, minlength=cells * k).reshape(cells, k)
    stated = np.array([values[name] for name in names])
    total, wrong = n.sum(axis=1), (n - right).sum(axis=1)
    keep = np.flatnonzero(total > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        # Σ_level n |acc − value| = Σ_level |right − n value|
        ece = np.abs(right - n * stated).sum(axis=1) / total
        high = (n - right)[:, names.index("high")] if "high" in names else np.full(cells, np.nan)
        rho_oc = np.where(wrong > 0, high / wrong, np.nan)
        confidence_right = (right * stated).sum(axis=1) / right.sum(axis=1)
        confidence_wrong = ((n - right) * stated).sum(axis=1) / wrong
    answered = np.bincount(cell[valid], minlength=cells)
    out = pd.DataFrame(
        {
            "model": [str(models[c // len(conditions)]) for c in keep],
            "condition_id": [str(conditions[c % len(conditions)]) for c in keep],
            "rated": total[keep].astype(int),
            "unrated": (answered - total)[keep].astype(int),
            "ece": ece[keep],
            "rho_oc": rho_oc[keep],
            "wrong": wrong[keep].astype(int),
            "confidence_right": confidence_right[keep],
            "confidence_wrong": confidence_wrong[keep],
            **{f"share_{name}": n[keep, j] / total[keep] for j, name in enumerate(names)},
        }
    )
    return out[columns]


# --- Table 23: cross-model failure overlap -------------------------------------------------------


def failure_overlap(samples: pd.DataFrame, *, shared_fraction: float = SHARED_HARD_FRACTION) -> pd.DataFrame:
    """Table 23: per condition run by at least one model, over the items every such model has:
    the mean pairwise Jaccard |A∩B| / |A∪B| of the models' failure sets (an item fails when its
    strict score, invalid outputs as wrong, is below 0.5 - the paired tests' binary outcome; pairs
    whose union is empty are skipped), the shared-hard count (items failed by at least
    ``shared_fraction`` of the models, 10 of 15 in the paper), idiosyncratic failures (exactly one
    model) and the union (at least one model)."""
    columns = [
        "condition_id",
        "models",
        "items",
        "pairs",
        "mean_jaccard",
        "shared_hard_threshold",
        "shared_hard",
        "idiosyncratic",
        "union",
        "failed_by_all",
    ]
    rows = []
    wide = item_matrix(samples, "strict")
    for cid, block in wide.groupby(level=1, sort=True):
        block = block.dropna(axis=1)  # the items every model of this condition has
        f = block.to_numpy(float) < 0.5  # the paired tests' binary outcome, failed
        m, n = f.shape
        inter = f.astype(np.int64) @ f.T.astype(np.int64)
        sizes = np.diag(inter)
        i, j = np.triu_indices(m, k=1)
        union = sizes[i] + sizes[j] - inter[i, j]
        ok = union > 0
        jaccard = float(np.mean(inter[i, j][ok] / union[ok])) if ok.any() else np.nan
        per_item = f.sum(axis=0)
        threshold = math.ceil(shared_fraction * m - 1e-9)
        rows.append(
            (
                str(cid),
                m,
                n,
                int(ok.sum()),
                jaccard,
                threshold,
                int((per_item >= threshold).sum()),
                int((per_item == 1).sum()),
                int((per_item >= 1).sum()),
                int((per_item == m).sum()),
            )
        )
    return pd.DataFrame(rows, columns=columns)


# --- Table 10: prompt variants ---------------------------------------------------------------------


def prompt_variants(info: Mapping[str, ConditionInfo]) -> dict[str, tuple[str, str]]:
    """Each prompt-variant condition -> (its base cell, its prompt); the base cell itself is the
    standard JSON prompt ("json")."""
    registry = catalogue()
    return {
        cid: (c.base, registry.get(cid).prompt) for cid, c in info.items() if c.block == "prompt" and cid in registry
    }


def prompt_shift(summary: pd.DataFrame, info: Mapping[str, ConditionInfo]) -> pd.DataFrame:
    """Table 10: per model, accuracy and valid-output coverage of the standard JSON prompt and of
    each prompt variant, each over the prompt-subset base cells run under every prompt the model
    was run with (so the columns compare the same cells; ``base_cells`` names them, comma-joined),
    and the invalid-output shift: JSON coverage minus the worst variant's coverage."""
    variant_of = prompt_variants(info)
    kinds = list(dict.fromkeys(p for _, p in variant_of.values()))
    columns = [
        "model",
        "bases",
        "base_cells",
        *[f"accuracy_{k}" for k in ["json", *kinds]],
        *[f"coverage_{k}" for k in ["json", *kinds]],
        "invalid_shift",
        "worst_prompt",
    ]
    s = summary[summary["condition_id"].isin(list(variant_of))]
    if s.empty:
        return pd.DataFrame(columns=columns)
    base_cells = {base for base, _ in variant_of.values()}
    s = pd.concat(
        [
            s.assign(
                base=s["condition_id"].map(lambda c: variant_of[c][0]),
                prompt=s["condition_id"].map(lambda c: variant_of[c][1]),
            ),
            summary[summary["condition_id"].isin(base_cells)].assign(base=lambda f: f["condition_id"], prompt="json"),
        ]
    )
    rows = []
    for model, g in s.groupby("model"):
        run = sorted(set(g["prompt"]), key=["json", *kinds].index)
        common = set.intersection(*(set(g.loc[g["prompt"] == p, "base"]) for p in run))
        g = g[g["base"].isin(common)]
        row = {"model": model, "bases": len(common), "base_cells": ",".join(sorted(common))}
        for p in run:
            cells = g[g["prompt"] == p]
            row[f"accuracy_{p}"] = cells["accuracy"].mean() if len(cells) else np.nan
            row[f"coverage_{p}"] = cells["valid_trials"].sum() / cells["trials"].sum() if len(cells) else np.nan
        alternatives = {p: row[f"coverage_{p}"] for p in run if p != "json" and np.isfinite(row[f"coverage_{p}"])}
        if "json" in run and alternatives and common:
            worst = min(alternatives, key=alternatives.get)
            row["invalid_shift"], row["worst_prompt"] = row["coverage_json"] - alternatives[worst], worst
        rows.append(row)
    return pd.DataFrame(rows).reindex(columns=columns)


# --- Table 16: invalid outputs per item and block --------------------------------------------------


def invalid_items(trials: pd.DataFrame, info: Mapping[str, ConditionInfo]) -> pd.DataFrame:
    """Table 16: per (model, group of conditions: clean, single, bimodal, trimodal, controls), the
    items run, and how many of them had at least one invalid output of each category (an item can
    count in several), at least one of any category, no invalid output at all (``valid_items``),
    and at least one valid answer (``answered_items``, the paper's "returned a parseable answer at
    all")."""
    columns = [
        "model",
        "group",
        "items",
        *[f"items_{c}" for c in INVALID],
        "items_any_invalid",
        "valid_items",
        "answered_items",
    ]
    if trials.empty:
        return pd.DataFrame(columns=columns)
    order = ["clean", "single", "bimodal", "trimodal", "controls"]
    group = _per_row(
        trials["condition_id"],
        lambda c: order.index(GROUP_OF_BLOCK.get(info[c].block, "controls") if c in info else "controls"),
    ).astype(np.int64)
    model, models = codes_of(trials["model"])
    item, items = codes_of(trials["sample_id"])
    m, g, i = len(models), len(order), len(items)
    key = (model * g + group) * i + item  # one code per (model, group, item)
    valid = trials["correct"].notna().to_numpy()
    run = np.bincount(key, minlength=m * g * i).reshape(m, g, i) > 0
    answered = np.bincount(key[valid], minlength=m * g * i).reshape(m, g, i) > 0
    any_invalid = np.bincount(key[~valid], minlength=m * g * i).reshape(m, g, i) > 0
    category, categories = codes_of(trials["invalid"])
    counts = {
        c: (np.bincount(key[category == categories.index(c)], minlength=m * g * i).reshape(m, g, i) > 0).sum(axis=2)
        if c in categories
        else np.zeros((m, g), int)
        for c in INVALID
    }
    present = np.argwhere(run.any(axis=2))  # (model, group) pairs that were run, in model then group order
    mi, gi = present[:, 0], present[:, 1]
    out = pd.DataFrame(
        {
            "model": [str(models[k]) for k in mi],
            "group": [order[k] for k in gi],
            "items": run.sum(axis=2)[mi, gi],
            **{f"items_{c}": counts[c][mi, gi] for c in INVALID},
            "items_any_invalid": any_invalid.sum(axis=2)[mi, gi],
            "answered_items": answered.sum(axis=2)[mi, gi],
        }
    )
    out["valid_items"] = out["items"] - out["items_any_invalid"]
    return (
        out.sort_values(["model"], kind="stable")
        .reset_index(drop=True)[columns]
        .astype(dict.fromkeys(columns[2:], int))
    )
