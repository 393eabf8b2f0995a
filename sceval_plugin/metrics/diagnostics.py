"""The SCEval paper's Appendix-C diagnostics (Tables 3, 10, 11, 14-16, 18-23) from a trial table.

Each function is pure: it takes the trial table (:data:`~sceval_plugin.metrics.protocol.TRIAL_COLUMNS`,
plus ``confidence`` and ``source`` where the logs carry them), the per-sample table
(:func:`~sceval_plugin.metrics.protocol.per_sample`), the per-condition summary
(:func:`~sceval_plugin.metrics.protocol.condition_summary` with drops) and the condition catalogue,
and returns a frame. A partial run gives a smaller (possibly empty) frame, never an error;
:func:`appendix_c` runs them all and says, for each, what could not be computed and why.

Conventions follow :mod:`~sceval_plugin.metrics.protocol`: accuracies are fractions, invalid
outputs are missing for accuracy and incorrect for significance, intervals and p-values come from
the shared bootstrap of :mod:`~sceval_plugin.metrics.stats`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pandas as pd

from sceval_plugin.metrics.protocol import JOINT_BLOCKS, MODALITIES, ConditionInfo, grouped_intervals
from sceval_plugin.metrics.stats import B_DEFAULT, SEED_DEFAULT, bootstrap_means, bootstrap_p_value, resample_weights

#: Table 3 / Table 24: the "confound zone" operators whose corrupted variants the annotators reject
#: most often; the primary set is the other ten (four text, six low-rejection vision/audio).
HIGH_REJECTION_OPERATORS = ("occlusion", "brightness", "mute", "remove")
#: The three confidence levels of the JSON schema (Appendix H) as probabilities for ECE. The paper
#: does not give values; the default is the centre of each third of [0, 1]. Pass another mapping
#: (e.g. ``{"low": 0.25, "medium": 0.5, "high": 0.9}``) to read the levels differently.
CONFIDENCE_VALUES = {"low": 1 / 6, "medium": 1 / 2, "high": 5 / 6}
#: Table 23: "shared-hard" items are failed by at least this share of the models (10 of 15).
SHARED_HARD_FRACTION = 2 / 3
HUMAN = "human"
_GROUP_OF_BLOCK = {"clean": "clean", "single": "single", "tv": "bimodal", "ta": "bimodal", "va": "bimodal",
                   "tva": "trimodal"}


def _per_row(column: pd.Series, of_value) -> np.ndarray:
    """``of_value`` of each row's value, evaluated once per distinct value (the trial table's
    columns are categorical: a few hundred values over millions of rows)."""
    codes = column.astype("category")
    lookup = np.array([of_value(v) for v in codes.cat.categories] + [of_value(None)], dtype=object)
    return lookup[codes.cat.codes.to_numpy()]  # code -1 (missing) takes the last entry


def _singles(info: Mapping[str, ConditionInfo]) -> dict[tuple[str, str, int], str]:
    """(modality, operator, severity) -> the single cell applying exactly that corruption."""
    return {c.corruptions[0]: cid for cid, c in info.items() if c.block == "single"}


def _accuracy(summary: pd.DataFrame) -> pd.Series:
    return summary.set_index(["model", "condition_id"])["accuracy"]


def _clean(summary: pd.DataFrame) -> pd.Series:
    return summary[summary["condition_id"] == "clean"].set_index("model")["accuracy"]


def _with_info(summary: pd.DataFrame, info: Mapping[str, ConditionInfo]) -> pd.DataFrame:
    """The summary with each cell's block, first corruption and panel membership as columns."""
    first = {cid: (c.corruptions[0] if c.corruptions else (None, None, np.nan)) for cid, c in info.items()}
    out = summary[summary["condition_id"].isin(list(info))].copy()
    out["block"] = out["condition_id"].map(lambda c: info[c].block)
    out["modality"] = out["condition_id"].map(lambda c: first[c][0])
    out["operator"] = out["condition_id"].map(lambda c: first[c][1])
    out["severity"] = out["condition_id"].map(lambda c: first[c][2]).astype(float)
    out["panel"] = out["condition_id"].map(lambda c: "panel" in info[c].suites)
    return out


# --- C.9, Table 18: seed stability ---------------------------------------------------------------

def weakest_singles(summary: pd.DataFrame, info: Mapping[str, ConditionInfo]) -> pd.DataFrame:
    """Per (model, modality): the single-modality cell with the lowest observed accuracy (C.2:
    "the weakest observed cell ... defines the Δsingle baseline"), with how many single cells of
    that modality were observed."""
    s = _with_info(summary, info)
    s = s[(s["block"] == "single") & s["accuracy"].notna()]
    columns = ["model", "modality", "condition_id", "accuracy", "observed_cells"]
    if s.empty:
        return pd.DataFrame(columns=columns)
    at = s.groupby(["model", "modality"])["accuracy"].idxmin()
    out = s.loc[at.to_numpy(), ["model", "modality", "condition_id", "accuracy"]].reset_index(drop=True)
    counts = s.groupby(["model", "modality"]).size()
    out["observed_cells"] = counts.reindex(pd.MultiIndex.from_frame(out[["model", "modality"]])).to_numpy()
    return out[columns]


def seed_stability(trials: pd.DataFrame, summary: pd.DataFrame, info: Mapping[str, ConditionInfo], *,
                   ddof: int = 1) -> pd.DataFrame:
    """C.9, Table 18: per cell, the per-variant accuracies Acc_r (eq. 4's terms: each variant's
    accuracy over its valid trials) summarised as standard deviation (``ddof=1``, the sample
    standard deviation; ``ddof=0`` for the population one), median, worst-2 mean (mean of the two
    lowest, (v2 + v3) / 2 for three variants) and best, next to the headline mean-variant accuracy
    (eq. 3), the worst-variant accuracy and their gap. ``n_var`` is the number of variant indices
    with at least one valid trial (what survived filtering).

    Rows: every model's weakest single cell per modality (``weakest_for`` names the modality) and
    every stochastic cell (``n_var`` > 1)."""
    columns = ["model", "condition_id", "weakest_for", "accuracy", "worst_variant_accuracy", "mean_worst_gap",
               "std", "median", "worst2_mean", "best_variant_accuracy", "n_var"]
    valid = trials.dropna(subset=["correct"])
    if valid.empty:
        return pd.DataFrame(columns=columns)
    per_variant = (valid.groupby(["model", "condition_id", "variant"], observed=True)["correct"].mean()
                   .rename("acc").reset_index())
    per_variant[["model", "condition_id"]] = per_variant[["model", "condition_id"]].astype(str)
    g = per_variant.groupby(["model", "condition_id"])["acc"]
    stats = pd.DataFrame({"std": g.std(ddof=ddof), "median": g.median(), "best_variant_accuracy": g.max(),
                          "n_var": g.size()})
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


# --- C.11, Table 21: sub-additivity ---------------------------------------------------------------

def interaction_cells(summary: pd.DataFrame, info: Mapping[str, ConditionInfo], *,
                      roles: tuple[str, ...] = ("canonical",)) -> pd.DataFrame:
    """C.11: per (model, joint cell) of the given roles (the canonical grids by default), the
    additive prediction Acc_add = Acc_clean − Σ_m Δ_m, where Δ_m = Acc_clean − Acc(single cell of
    the same operator at the same severity), and the interaction Δint = Acc(joint) − Acc_add
    (positive: sub-additive, the joint is gentler than the sum). Cells whose clean or component
    single cells were not run are left out (``missing`` in :func:`appendix_c`'s note)."""
    columns = ["model", "condition_id", "block", "accuracy", "additive", "delta_int", "components"]
    acc, clean = _accuracy(summary), _clean(summary)
    single_of = _singles(info)
    rows = []
    for model, cid in acc.index:
        c = info.get(cid)
        if c is None or c.block not in JOINT_BLOCKS or c.role not in roles or model not in clean.index:
            continue
        parts = [single_of.get(x) for x in c.corruptions]
        singles = [acc.get((model, p), np.nan) for p in parts if p is not None]
        if len(singles) < len(parts) or not np.all(np.isfinite(singles)) or not np.isfinite(clean[model]):
            continue
        additive = clean[model] - sum(clean[model] - a for a in singles)
        rows.append((model, cid, c.block, acc[(model, cid)], additive, acc[(model, cid)] - additive,
                     ",".join(parts)))
    return pd.DataFrame(rows, columns=columns)


def sub_additivity(samples: pd.DataFrame, summary: pd.DataFrame, info: Mapping[str, ConditionInfo], *,
                   b: int = B_DEFAULT, seed: int = SEED_DEFAULT,
                   roles: tuple[str, ...] = ("canonical",)) -> pd.DataFrame:
    """C.11, Table 21: per (model, combination type) over its canonical cells: number of cells,
    mean actual accuracy, mean additive prediction, mean Δint, share of sub-additive cells
    (Δint > 0) and a two-sided paired-bootstrap p for "mean Δint = 0".

    The point estimates use the cells' accuracies (invalid outputs missing). The p-value
    resamples items: each item's interaction, averaged over the combination's cells, is
    joint − clean + Σ_m (clean − single_m) on its per-item scores with invalid outputs as
    incorrect (the protocol's rule for significance), over the items every term has."""
    columns = ["model", "block", "n_cells", "mean_actual", "mean_additive", "mean_delta_int", "share_sub_additive",
               "p_bootstrap", "n_items"]
    cells = interaction_cells(summary, info, roles=roles)
    if cells.empty:
        return pd.DataFrame(columns=columns)
    strict = samples.pivot_table(index=["model", "condition_id"], columns="sample_id", values="strict",
                                 aggfunc="first", observed=True)
    strict.index = strict.index.map(lambda k: (str(k[0]), str(k[1])))
    rows = []
    for (model, block), group in cells.groupby(["model", "block"], sort=True):
        terms = []
        for cid, parts in zip(group["condition_id"], group["components"]):
            clean = strict.loc[(model, "clean")].to_numpy(float)
            value = strict.loc[(model, cid)].to_numpy(float) - clean
            for part in parts.split(","):
                value = value + clean - strict.loc[(model, part)].to_numpy(float)
            terms.append(value)
        per_item = np.mean(terms, axis=0)
        per_item = per_item[np.isfinite(per_item)]
        p = np.nan
        if per_item.size:
            boot = bootstrap_means(per_item[None, :], resample_weights(per_item.size, b=b, seed=seed))
            p = float(bootstrap_p_value(boot)[0])
        rows.append((model, block, len(group), group["accuracy"].mean(), group["additive"].mean(),
                     group["delta_int"].mean(), float((group["delta_int"] > 0).mean()), p, int(per_item.size)))
    out = pd.DataFrame(rows, columns=columns)
    out["order"] = out["block"].map(JOINT_BLOCKS.index)
    return out.sort_values(["model", "order"]).drop(columns="order").reset_index(drop=True)


# --- C.11, Table 22: calibration ------------------------------------------------------------------

def calibration(trials: pd.DataFrame, *, values: Mapping[str, float] = CONFIDENCE_VALUES) -> pd.DataFrame:
    """C.11 and G.11, Table 22: per (model, condition), over the valid answers that state one of
    the schema's confidence levels (case and surrounding space ignored): expected calibration
    error ECE = Σ_level (n_level / n) |acc_level − value(level)|, the over-confident error rate
    ρ_oc = share of wrong answers stated with ``high`` confidence, and the mean stated confidence
    of right and of wrong answers. ``unrated`` counts valid answers with no or another level."""
    columns = ["model", "condition_id", "rated", "unrated", "ece", "rho_oc", "wrong", "confidence_right",
               "confidence_wrong", *[f"share_{k}" for k in values]]
    if "confidence" not in trials or trials["confidence"].isna().all():
        return pd.DataFrame(columns=columns)
    valid = trials.dropna(subset=["correct"])
    names = list(values)
    level = _per_row(valid["confidence"], lambda x: names.index(x.strip().lower())
                     if isinstance(x, str) and x.strip().lower() in values else -1).astype(np.int64)
    t = pd.DataFrame({"model": valid["model"].astype("category").to_numpy(),
                      "condition_id": valid["condition_id"].astype("category").to_numpy(),
                      "level": level, "value": np.array([values[k] for k in names] + [np.nan])[level],
                      "correct": valid["correct"].to_numpy(float)})
    keys = ["model", "condition_id"]
    counts = t.groupby(keys, observed=True).agg(total=("correct", "size"), rated=("value", "count"))
    rated = t[t["level"] >= 0]
    if rated.empty:
        return pd.DataFrame(columns=columns)
    bins = rated.groupby(keys + ["level"], observed=True).agg(n=("correct", "size"), acc=("correct", "mean"),
                                                              conf=("value", "first"))
    bins["gap"] = bins["n"] * (bins["acc"] - bins["conf"]).abs()
    out = counts.join(bins.groupby(level=[0, 1], observed=True)["gap"].sum().rename("gap"), how="inner")
    out["ece"] = out["gap"] / out["rated"]
    out["unrated"] = out["total"] - out["rated"]
    wrong = rated[rated["correct"] == 0]
    out["wrong"] = wrong.groupby(keys, observed=True).size().reindex(out.index).fillna(0).astype(int)
    high = wrong[wrong["level"] == (names.index("high") if "high" in values else -2)]
    high = high.groupby(keys, observed=True).size().reindex(out.index).fillna(0)
    out["rho_oc"] = (high / out["wrong"].replace(0, np.nan)).to_numpy()
    out["confidence_right"] = rated[rated["correct"] == 1].groupby(keys, observed=True)["value"].mean()
    out["confidence_wrong"] = wrong.groupby(keys, observed=True)["value"].mean()
    shares = bins["n"].unstack("level").reindex(columns=range(len(names))).fillna(0).div(out["rated"], axis=0)
    for k, name in enumerate(names):
        out[f"share_{name}"] = shares[k].reindex(out.index)
    out = out.reset_index()
    out[keys] = out[keys].astype(str)
    return out[columns]


# --- Table 23: cross-model failure overlap -------------------------------------------------------

def failure_overlap(samples: pd.DataFrame, *, shared_fraction: float = SHARED_HARD_FRACTION) -> pd.DataFrame:
    """Table 23: per condition run by at least one model, over the items every such model has:
    the mean pairwise Jaccard |A∩B| / |A∪B| of the models' failure sets (an item fails when its
    strict score, invalid outputs as wrong, is below 0.5 - the paired tests' binary outcome; pairs
    whose union is empty are skipped), the shared-hard count (items failed by at least
    ``shared_fraction`` of the models, 10 of 15 in the paper), idiosyncratic failures (exactly one
    model) and the union (at least one model)."""
    columns = ["condition_id", "models", "items", "pairs", "mean_jaccard", "shared_hard_threshold", "shared_hard",
               "idiosyncratic", "union", "failed_by_all"]
    rows = []
    failed = samples.assign(failed=~samples["binary"].astype(bool))
    wide = failed.pivot_table(index=["condition_id", "model"], columns="sample_id", values="failed",
                              aggfunc="first", observed=True)
    for cid, block in wide.groupby(level=0, sort=True, observed=True):
        block = block.dropna(axis=1)  # the items every model of this condition has
        f = block.to_numpy(bool)
        m, n = f.shape
        inter = f.astype(np.int64) @ f.T.astype(np.int64)
        sizes = np.diag(inter)
        i, j = np.triu_indices(m, k=1)
        union = sizes[i] + sizes[j] - inter[i, j]
        ok = union > 0
        jaccard = float(np.mean(inter[i, j][ok] / union[ok])) if ok.any() else np.nan
        per_item = f.sum(axis=0)
        threshold = math.ceil(shared_fraction * m - 1e-9)
        rows.append((str(cid), m, n, int(ok.sum()), jaccard, threshold, int((per_item >= threshold).sum()),
                     int((per_item == 1).sum()), int((per_item >= 1).sum()), int((per_item == m).sum())))
    return pd.DataFrame(rows, columns=columns)


# --- Table 11: per-source breakdown --------------------------------------------------------------

def source_of_samples(trials: pd.DataFrame) -> pd.Series:
    """sample_id -> the item's source, as logged (empty if the logs carry none)."""
    if "source" not in trials:
        return pd.Series(dtype=object)
    t = trials.dropna(subset=["source"])
    return t.groupby("sample_id", observed=True)["source"].first().astype(str)


def accuracy_by_source(samples: pd.DataFrame, trials: pd.DataFrame, *, b: int = B_DEFAULT,
                       seed: int = SEED_DEFAULT) -> pd.DataFrame:
    """Per (model, condition, source): mean-variant accuracy (eq. 3) over the source's items with its
    95 % bootstrap interval - every per-cell number of the report, split by the items' source."""
    source = source_of_samples(trials)
    columns = ["model", "condition_id", "source", "accuracy", "ci_low", "ci_high", "n"]
    if source.empty:
        return pd.DataFrame(columns=columns)
    s = samples.assign(source=samples["sample_id"].map(source).astype(object).to_numpy())
    s = s.dropna(subset=["source"])
    s[["model", "condition_id"]] = s[["model", "condition_id"]].astype(str)
    found = grouped_intervals(s, ["model", "condition_id", "source"], "score", b=b, seed=seed)
    return found.rename(columns={"score": "accuracy"}).reset_index()[columns]


def source_breakdown(by_source: pd.DataFrame, info: Mapping[str, ConditionInfo]) -> pd.DataFrame:
    """Table 11: per (model, source): clean accuracy, mean accuracy over the 12-cell panel's
    text-vision cells and over its trimodal cells (the cells run), and the strongest source-level
    drop (the corrupted cell with the largest clean-minus-cell accuracy on that source)."""
    columns = ["model", "source", "clean", "tv_mean", "tv_cells", "tva_mean", "tva_cells", "strongest_drop",
               "strongest_condition"]
    if by_source.empty:
        return pd.DataFrame(columns=columns)
    s = by_source[by_source["condition_id"].isin(list(info))].copy()
    s["block"] = s["condition_id"].map(lambda c: info[c].block)
    s["panel"] = s["condition_id"].map(lambda c: "panel" in info[c].suites)
    keys = ["model", "source"]
    out = s[s["condition_id"] == "clean"].set_index(keys)["accuracy"].rename("clean").to_frame()
    out = out.reindex(s.set_index(keys).index.unique())
    for block in ("tv", "tva"):
        g = s[(s["block"] == block) & s["panel"]].groupby(keys)["accuracy"]
        out[f"{block}_mean"], out[f"{block}_cells"] = g.mean(), g.size()
    corrupted = s[s["block"].isin(("single", *JOINT_BLOCKS))].join(out["clean"], on=keys)
    corrupted["drop"] = corrupted["clean"] - corrupted["accuracy"]
    corrupted = corrupted.dropna(subset=["drop"])
    if not corrupted.empty:
        at = corrupted.groupby(keys)["drop"].idxmax()
        strongest = corrupted.loc[at.to_numpy()].set_index(keys)
        out["strongest_drop"], out["strongest_condition"] = strongest["drop"], strongest["condition_id"]
    out = out.reindex(columns=columns[2:])
    for k in ("tv_cells", "tva_cells"):
        out[k] = out[k].fillna(0).astype(int)
    return out.reset_index().sort_values(keys).reset_index(drop=True)[columns]


# --- Tables 19 and 20: steepest channel and model families ---------------------------------------

def steepest_channels(model_diagnostics: pd.DataFrame) -> pd.DataFrame:
    """Table 19: per model, the fragility slopes S_t, S_v, S_a (accuracy per severity point, from
    :func:`~sceval_plugin.metrics.protocol.model_diagnostics`) and the steepest channel, the
    modality with the most negative slope (``None`` without any slope)."""
    slopes = model_diagnostics.set_index("model")[[f"S_{m}" for m in MODALITIES]].astype(float)
    values = slopes.to_numpy()
    has_slope = np.isfinite(values).any(axis=1)
    steepest = np.nanargmin(np.where(np.isfinite(values), values, np.inf), axis=1) if len(values) else []
    out = slopes.copy()
    out["steepest"] = [list(MODALITIES.values())[k] if ok else None for k, ok in zip(steepest, has_slope)]
    return out.reset_index()


def modality_drops_at_70(summary: pd.DataFrame, info: Mapping[str, ConditionInfo]) -> pd.DataFrame:
    """Per model: Δ_mod (Table 20), the mean over the modality's operators of the severity-70
    single-cell drop from clean, for each modality (the cells run)."""
    s = _with_info(summary, info)
    s = s[(s["block"] == "single") & (s["severity"] == 70)]
    clean = _clean(summary)
    s = s.assign(drop=s["model"].map(clean).astype(float) - s["accuracy"])
    out = s.groupby(["model", "modality"])["drop"].mean().unstack("modality")
    out = out.reindex(columns=list(MODALITIES.values()))
    out.columns = [f"delta_{m}" for m in out.columns]
    return out.reindex(summary["model"].unique()).rename_axis("model").reset_index()


def family_summary(summary: pd.DataFrame, model_diagnostics: pd.DataFrame, info: Mapping[str, ConditionInfo],
                   families: Mapping[str, str]) -> pd.DataFrame:
    """Table 20: per family (in the order the mapping first names it): models present, and the means
    over them of clean accuracy, Δ_text/vision/audio at severity 70 (:func:`modality_drops_at_70`),
    the fault-line scores FS_S (as :func:`~sceval_plugin.metrics.protocol.model_diagnostics`
    defines them) and the fragility slopes, with the steepest channel of the family means. Then
    one gap row per pair of families (A − B; positive means A is better: A's clean accuracy is
    higher, its drops smaller). Models without a family are left out."""
    per_model = (model_diagnostics.set_index("model")[["clean", *[f"FS_{s}" for s in JOINT_BLOCKS],
                                                       *[f"S_{m}" for m in MODALITIES]]]
                 .join(modality_drops_at_70(summary, info).set_index("model")))
    per_model = per_model[per_model.index.isin(list(families))]
    drops = [f"delta_{m}" for m in MODALITIES.values()] + [f"FS_{s}" for s in JOINT_BLOCKS]
    columns = ["family", "n", "clean", *drops, *[f"S_{m}" for m in MODALITIES], "steepest", "models"]
    if per_model.empty:
        return pd.DataFrame(columns=columns)
    per_model["family"] = per_model.index.map(dict(families))
    order = list(dict.fromkeys(f for f in families.values() if f in set(per_model["family"])))
    means = per_model.groupby("family").mean(numeric_only=True).reindex(order)
    means["n"] = per_model.groupby("family").size()
    means["models"] = per_model.reset_index().groupby("family")["model"].agg(", ".join)
    means["steepest"] = steepest_channels(means.rename_axis("model").reset_index())["steepest"].to_numpy()
    rows = [means.reset_index()]
    for a, b in itertools.combinations(order, 2):
        gap = {"family": f"gap ({a} − {b})", "clean": means.loc[a, "clean"] - means.loc[b, "clean"]}
        gap.update({k: means.loc[b, k] - means.loc[a, k] for k in drops})
        rows.append(pd.DataFrame([gap]))
    out = pd.concat(rows, ignore_index=True)
    return out.reindex(columns=columns)


# --- Table 3: operator groups -----------------------------------------------------------------------

def operator_groups(summary: pd.DataFrame, info: Mapping[str, ConditionInfo]) -> pd.DataFrame:
    """Table 3: severity-70 drops from clean (accuracy over valid outputs: coverage-aware) averaged
    per operator group - primary (every operator outside the high-rejection set), all operators,
    and the high-rejection stress set (:data:`HIGH_REJECTION_OPERATORS`) - per model and, as the
    ``panel`` row, averaged over the models."""
    s = _with_info(summary, info)
    s = s[(s["block"] == "single") & (s["severity"] == 70)]
    s = s.assign(drop=s["model"].map(_clean(summary)).astype(float) - s["accuracy"]).dropna(subset=["drop"])
    columns = ["model", "group", "operators", "mean_drop"]
    if s.empty:
        return pd.DataFrame(columns=columns)
    stress = s["operator"].isin(HIGH_REJECTION_OPERATORS)
    parts = [("primary", s[~stress]), ("all", s), ("stress", s[stress])]
    rows = [g.groupby("model").agg(operators=("operator", "nunique"), mean_drop=("drop", "mean"))
            .reset_index().assign(group=name) for name, g in parts if not g.empty]
    per_model = pd.concat(rows, ignore_index=True)
    panel = per_model.groupby("group", sort=False).agg(operators=("operators", "max"), mean_drop=("mean_drop", "mean"))
    per_model = pd.concat([per_model, panel.reset_index().assign(model="panel")], ignore_index=True)
    return per_model[columns]


# --- Table 10: prompt variants ---------------------------------------------------------------------

def prompt_shift(summary: pd.DataFrame, info: Mapping[str, ConditionInfo]) -> pd.DataFrame:
    """Table 10: per model, accuracy and valid-output coverage of the standard JSON prompt and of
    each prompt variant, each over the prompt-subset base cells run under every prompt the model
    was run with (so the columns compare the same cells), and the invalid-output shift: JSON
    coverage minus the worst variant's coverage."""
    from sceval_plugin.conditions import catalogue

    registry = catalogue()
    variant_of = {cid: (c.base, registry.get(cid).prompt) for cid, c in info.items()
                  if c.block == "prompt" and cid in registry}
    kinds = list(dict.fromkeys(p for _, p in variant_of.values()))
    columns = ["model", "bases", *[f"accuracy_{k}" for k in ["json", *kinds]],
               *[f"coverage_{k}" for k in ["json", *kinds]], "invalid_shift", "worst_prompt"]
    s = summary[summary["condition_id"].isin(list(variant_of))]
    if s.empty:
        return pd.DataFrame(columns=columns)
    base_cells = {base for base, _ in variant_of.values()}
    s = pd.concat([s.assign(base=s["condition_id"].map(lambda c: variant_of[c][0]),
                            prompt=s["condition_id"].map(lambda c: variant_of[c][1])),
                   summary[summary["condition_id"].isin(base_cells)].assign(base=lambda f: f["condition_id"],
                                                                             prompt="json")])
    rows = []
    for model, g in s.groupby("model"):
        run = sorted(set(g["prompt"]), key=["json", *kinds].index)
        common = set.intersection(*(set(g.loc[g["prompt"] == p, "base"]) for p in run))
        g = g[g["base"].isin(common)]
        row = {"model": model, "bases": len(common)}
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
    from sceval_plugin.metrics.protocol import INVALID

    columns = ["model", "group", "items", *[f"items_{c}" for c in INVALID], "items_any_invalid", "valid_items",
               "answered_items"]
    if trials.empty:
        return pd.DataFrame(columns=columns)
    group = _per_row(trials["condition_id"], lambda c: _GROUP_OF_BLOCK.get(info[c].block, "controls")
                     if c in info else "controls")
    valid = trials["correct"].notna().to_numpy()
    t = pd.DataFrame({"model": trials["model"].astype("category").to_numpy(), "group": group,
                      "sample_id": trials["sample_id"].astype("category").cat.codes.to_numpy(),
                      "invalid": trials["invalid"].astype(object).to_numpy(), "valid": valid, "any_invalid": ~valid})
    keys = ["model", "group"]
    per_item = t.groupby(keys + ["sample_id"], observed=True).agg(any_invalid=("any_invalid", "max"),
                                                                 answered=("valid", "max"))
    out = per_item.groupby(level=[0, 1], observed=True).agg(
        items=("answered", "size"), items_any_invalid=("any_invalid", "sum"), answered_items=("answered", "sum"))
    bad = t.dropna(subset=["invalid"])
    by_category = bad.groupby(keys + ["invalid"], observed=True)["sample_id"].nunique().unstack("invalid")
    by_category = by_category.reindex(index=out.index, columns=list(INVALID)).fillna(0).astype(int)
    out = out.join(by_category.add_prefix("items_"))
    out["valid_items"] = out["items"] - out["items_any_invalid"]
    order = ["clean", "single", "bimodal", "trimodal", "controls"]
    out = out.reset_index()
    out["order"] = out["group"].map(order.index)
    return out.sort_values(["model", "order"]).reset_index(drop=True)[columns].astype(
        {c: int for c in columns[2:]})


# --- Tables 14 and 15: human reference -------------------------------------------------------------

def human_audit(human_trials: pd.DataFrame) -> pd.DataFrame:
    """Table 14: per condition the humans answered: items with a human answer (N), human accuracy
    against the gold (each item's mean over its annotators, then over items, as eq. 3 does over
    variants), annotators per item, and - where several annotators answered an item and their
    answers are given - the agreement (share of such items on which all gave the same answer)."""
    from sceval_plugin.metrics.protocol import per_sample

    columns = ["condition_id", "items", "human_accuracy", "annotators_per_item", "agreement", "agreement_items"]
    if human_trials.empty:
        return pd.DataFrame(columns=columns)
    samples = per_sample(human_trials)
    samples["condition_id"] = samples["condition_id"].astype(str)
    out = samples.groupby("condition_id").agg(items=("score", "count"), human_accuracy=("score", "mean"),
                                              annotators_per_item=("trials", "mean"))
    answered = human_trials.dropna(subset=["answer"])
    if not answered.empty:
        g = answered.groupby(["condition_id", "sample_id"], observed=True)["answer"]
        per_item = pd.DataFrame({"n": g.size(), "distinct": g.nunique()})
        per_item = per_item[per_item["n"] > 1].reset_index()
        per_item["condition_id"] = per_item["condition_id"].astype(str)
        agree = per_item.groupby("condition_id").agg(agreement=("distinct", lambda d: float((d == 1).mean())),
                                                     agreement_items=("n", "size"))
        out = out.join(agree)
    out = out.reindex(columns=columns[1:])
    out["agreement_items"] = out["agreement_items"].fillna(0).astype(int)
    return out.reset_index()[columns]


def human_excess_drop(samples: pd.DataFrame, human_trials: pd.DataFrame, *, b: int = B_DEFAULT,
                      seed: int = SEED_DEFAULT) -> pd.DataFrame:
    """Table 15: per (model, condition ≠ clean the humans answered), on the cohort G_c of items
    with a valid model score and a human answer under both clean and the condition: model drop
    and human drop (clean minus condition accuracy on G_c), the excess drop (model − human) and
    its 95 % paired-bootstrap interval over G_c's items."""
    from sceval_plugin.metrics.protocol import per_sample
    from sceval_plugin.metrics.stats import percentile_interval

    columns = ["model", "condition_id", "n", "model_drop", "human_drop", "excess_drop", "ci_low", "ci_high",
               "p_bootstrap"]
    if human_trials.empty:
        return pd.DataFrame(columns=columns)
    humans = per_sample(human_trials)
    samples = samples[samples["condition_id"].astype(str).isin(set(humans["condition_id"].astype(str)))]
    wide = pd.concat([samples, humans]).pivot_table(index=["model", "condition_id"], columns="sample_id",
                                                    values="score", aggfunc="first", observed=True)
    wide.index = wide.index.map(lambda k: (str(k[0]), str(k[1])))
    human_rows = {c for m, c in wide.index if m == HUMAN}
    rows, members = [], []
    for model, cid in wide.index:
        if model == HUMAN or cid == "clean" or cid not in human_rows or (model, "clean") not in wide.index \
                or "clean" not in human_rows:
            continue
        m = wide.loc[(model, "clean")].to_numpy(float) - wide.loc[(model, cid)].to_numpy(float)
        h = wide.loc[(HUMAN, "clean")].to_numpy(float) - wide.loc[(HUMAN, cid)].to_numpy(float)
        ok = np.isfinite(m) & np.isfinite(h)
        members.append(m[ok] - h[ok])
        rows.append([model, cid, int(ok.sum()), m[ok].mean() if ok.any() else np.nan,
                     h[ok].mean() if ok.any() else np.nan])
    for row, excess in zip(rows, members):
        if excess.size:
            boot = bootstrap_means(excess[None, :], resample_weights(excess.size, b=b, seed=seed))
            lo, hi = percentile_interval(boot)
            row += [float(excess.mean()), float(lo[0]), float(hi[0]), float(bootstrap_p_value(boot)[0])]
        else:
            row += [np.nan] * 4
    return pd.DataFrame(rows, columns=columns) if rows else pd.DataFrame(columns=columns)


# --- everything ---------------------------------------------------------------------------------------

@dataclass
class Diagnostic:
    """One Appendix-C table: its numbers and what could not be computed (empty when complete)."""

    frame: pd.DataFrame
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DiagnosticOptions:
    """What the user supplies beyond the logs (``sceval report --families/--humans/...``)."""

    families: Mapping[str, str] | None = None
    human_trials: pd.DataFrame | None = None
    shared_fraction: float = SHARED_HARD_FRACTION
    confidence_values: Mapping[str, float] = field(default_factory=lambda: dict(CONFIDENCE_VALUES))
    variant_ddof: int = 1
    by_source: bool = False  # also write the whole report once per item source


def appendix_c(trials: pd.DataFrame, samples: pd.DataFrame, summary: pd.DataFrame,
               model_diagnostics: pd.DataFrame, info: Mapping[str, ConditionInfo],
               options: DiagnosticOptions | None = None, *, b: int = B_DEFAULT,
               seed: int = SEED_DEFAULT) -> dict[str, Diagnostic]:
    """Every diagnostic by table name, each with notes on what the run could not support."""
    options = options or DiagnosticOptions()
    present = set(summary["condition_id"])
    blocks = {info[c].block for c in present if c in info}
    models = sorted(set(summary["model"]))
    out: dict[str, Diagnostic] = {}

    def add(name: str, frame: pd.DataFrame, *why: tuple[bool, str]) -> None:
        out[name] = Diagnostic(frame, [reason for failed, reason in why if failed])

    no_clean = "clean" not in present
    add("seed_stability", seed_stability(trials, summary, info, ddof=options.variant_ddof),
        ("single" not in blocks, "no single-modality cells were run: no weakest single cell per modality"),
        (not any(trials.groupby(["model", "condition_id"], observed=True)["variant"].nunique() > 1),
         "no cell has more than one variant: no per-variant spread"))
    cells = interaction_cells(summary, info)
    canonical = [c for c in present if c in info and info[c].block in JOINT_BLOCKS and info[c].role == "canonical"]
    add("sub_additivity", sub_additivity(samples, summary, info, b=b, seed=seed),
        (not canonical, "no canonical joint cells were run"),
        (no_clean and bool(canonical), "no clean run: no additive prediction"),
        (bool(canonical) and not no_clean and len(cells) < len(canonical) * len(models),
         f"{len(canonical) * len(models) - len(cells)} (model, canonical joint cell) pair(s) lack a single cell at "
         "the same severity and are left out"))
    has_confidence = "confidence" in trials and trials["confidence"].notna().any()
    add("calibration", calibration(trials, values=options.confidence_values),
        (not has_confidence, "the logs carry no stated confidence (older logs, or no model gave one)"))
    add("failure_overlap", failure_overlap(samples, shared_fraction=options.shared_fraction),
        (len(models) < 2, "one model only: no pairwise Jaccard, and shared-hard/idiosyncratic counts are trivial"))
    by_source = accuracy_by_source(samples, trials, b=b, seed=seed)
    no_source = "source" not in trials or trials["source"].isna().all()
    add("accuracy_by_source", by_source,
        (no_source, "the logs carry no item source (logs written before the source was recorded)"))
    add("source_breakdown", source_breakdown(by_source, info),
        (no_source, "the logs carry no item source"),
        (not no_source and no_clean, "no clean run: no clean column or source-level drops"))
    add("steepest_channel", steepest_channels(model_diagnostics),
        ("single" not in blocks, "no single-modality cells were run: no fragility slopes"))
    if options.families is not None:
        unmatched = sorted(set(models) - set(options.families))
        add("families", family_summary(summary, model_diagnostics, info, options.families),
            (bool(unmatched), f"model(s) without a family, left out of the family means: {', '.join(unmatched)}"),
            (not set(models) & set(options.families), "no model of the runs is named in the families file"))
    add("operator_groups", operator_groups(summary, info),
        (no_clean or not any(c in info and info[c].block == "single" and info[c].corruptions[0][2] == 70
                             for c in present), "needs clean and severity-70 single cells"))
    add("prompt_shift", prompt_shift(summary, info),
        ("prompt" not in blocks, "no prompt-variant cells (prompt_cot_*, prompt_open_*) were run"))
    add("invalid_items", invalid_items(trials, info))
    if options.human_trials is not None:
        humans = options.human_trials
        human_conditions = set(humans["condition_id"].astype(str))
        add("human_audit", human_audit(humans), (humans.empty, "the human answers file holds no answers"))
        add("human_excess_drop", human_excess_drop(samples, humans, b=b, seed=seed),
            ("clean" not in human_conditions, "no human answers on clean: no human drop"),
            (not (human_conditions - {"clean"}) & present, "no condition both humans and models answered"))
    for d in out.values():
        if d.frame.empty and not d.notes:
            d.notes.append("nothing to compute: the cells it needs have no valid answers")
    return out
