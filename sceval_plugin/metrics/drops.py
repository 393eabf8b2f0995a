"""How a model's corruption drops decompose (paper Appendix C): against the additive null
(sub-additivity, Table 21), by operator group (Table 3), by modality and model family (Tables 19,
20) and by item source (Table 11). Pure functions of the per-condition summary and the trial table
(see :mod:`sceval_plugin.metrics.diagnostics`)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np
import pandas as pd

from faultline_eval.core.stats import B_DEFAULT, SEED_DEFAULT, bootstrap_means, bootstrap_p_value, resample_weights
from sceval_plugin.metrics.protocol import JOINT_BLOCKS, MODALITIES, ConditionInfo

#: Table 3 / Table 24: the "confound zone" operators whose corrupted variants the annotators reject
#: most often; the primary set is the other ten (four text, six low-rejection vision/audio).
HIGH_REJECTION_OPERATORS = ("occlusion", "brightness", "mute", "remove")
ALL_MODELS = "(mean over models)"


def codes_of(column: pd.Series) -> tuple[np.ndarray, list]:
    """(integer code per row, the distinct values): the trial table's columns are categorical, a
    few hundred values over millions of rows, so counting by code with ``np.bincount`` is cheap.
    Missing values get code -1."""
    category = column.astype("category")
    return category.cat.codes.to_numpy().astype(np.int64), list(category.cat.categories)


def item_matrix(samples: pd.DataFrame, column: str) -> pd.DataFrame:
    """``column`` of the per-sample table as a (model, condition) x sample_id matrix (NaN where a
    cell lacks the sample; rows and columns sorted), built from codes rather than a pivot."""
    model, models = codes_of(samples["model"])
    condition, conditions = codes_of(samples["condition_id"])
    item, items = codes_of(samples["sample_id"])
    cell = model * len(conditions) + condition
    rows, cell = np.unique(cell, return_inverse=True)
    matrix = np.full((len(rows), len(items)), np.nan)
    matrix[cell, item] = samples[column].to_numpy(float)
    index = pd.MultiIndex.from_tuples(
        [(str(models[r // len(conditions)]), str(conditions[r % len(conditions)])) for r in rows],
        names=["model", "condition_id"],
    )
    wide = pd.DataFrame(matrix, index=index, columns=pd.Index([str(i) for i in items], name="sample_id"))
    return wide.sort_index().sort_index(axis=1)


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


# --- C.11, Table 21: sub-additivity ---------------------------------------------------------------


def interaction_cells(
    summary: pd.DataFrame, info: Mapping[str, ConditionInfo], *, roles: tuple[str, ...] = ("canonical",)
) -> pd.DataFrame:
    """C.11: per (model, joint cell) of the given roles (the canonical grids by default), the
    additive prediction Acc_add = Acc_clean − Σ_m Δ_m, where Δ_m = Acc_clean − Acc(single cell of
    the same operator at the same severity), and the interaction Δint = Acc(joint) − Acc_add
    (positive: sub-additive, the joint is gentler than the sum). Cells whose clean or component
    single cells were not run are left out (:func:`~sceval_plugin.metrics.diagnostics.appendix_c` notes how many)."""
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
        rows.append((model, cid, c.block, acc[(model, cid)], additive, acc[(model, cid)] - additive, ",".join(parts)))
    return pd.DataFrame(rows, columns=columns)


def sub_additivity(
    samples: pd.DataFrame,
    summary: pd.DataFrame,
    info: Mapping[str, ConditionInfo],
    *,
    b: int = B_DEFAULT,
    seed: int = SEED_DEFAULT,
    roles: tuple[str, ...] = ("canonical",),
) -> pd.DataFrame:
    """C.11, Table 21: per (model, combination type) over its canonical cells: number of cells,
    mean actual accuracy, mean additive prediction, mean Δint, share of sub-additive cells
    (Δint > 0) and a two-sided paired-bootstrap p for "mean Δint = 0".

    The point estimates use the cells' accuracies (invalid outputs missing). The p-value
    resamples items: each item's interaction, averaged over the combination's cells, is
    joint − clean + Σ_m (clean − single_m) on its per-item scores with invalid outputs as
    incorrect (the protocol's rule for significance), over the items every term has."""
    columns = [
        "model",
        "block",
        "n_cells",
        "mean_actual",
        "mean_additive",
        "mean_delta_int",
        "share_sub_additive",
        "p_bootstrap",
        "n_items",
    ]
    cells = interaction_cells(summary, info, roles=roles)
    if cells.empty:
        return pd.DataFrame(columns=columns)
    strict = item_matrix(samples, "strict")
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
        rows.append(
            (
                model,
                block,
                len(group),
                group["accuracy"].mean(),
                group["additive"].mean(),
                group["delta_int"].mean(),
                float((group["delta_int"] > 0).mean()),
                p,
                int(per_item.size),
            )
        )
    out = pd.DataFrame(rows, columns=columns)
    out["order"] = out["block"].map(JOINT_BLOCKS.index)
    return out.sort_values(["model", "order"]).drop(columns="order").reset_index(drop=True)


# --- Table 11: per-source breakdown --------------------------------------------------------------


def source_of_samples(trials: pd.DataFrame) -> pd.Series:
    """sample_id -> the item's source, as logged (empty if the logs carry none)."""
    if "source" not in trials:
        return pd.Series(dtype=object)
    t = trials.dropna(subset=["source"])
    return t.groupby("sample_id", observed=True)["source"].first().astype(str)


def accuracy_by_source(samples: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """Per (model, condition, source): mean-variant accuracy (eq. 3) over the source's items with a
    valid score, and their number - every per-cell accuracy of the report, split by the items'
    source (``sceval report --by-source`` adds the intervals, in one report per source)."""
    source = source_of_samples(trials)
    columns = ["model", "condition_id", "source", "accuracy", "n"]
    if source.empty:
        return pd.DataFrame(columns=columns)
    s = samples.dropna(subset=["score"])
    s = s.assign(source=s["sample_id"].map(source).astype("category")).dropna(subset=["source"])
    found = s.groupby(["model", "condition_id", "source"], observed=True)["score"].agg(accuracy="mean", n="size")
    out = found.reset_index()
    out[["model", "condition_id", "source"]] = out[["model", "condition_id", "source"]].astype(str)
    return out[columns]


def source_breakdown(by_source: pd.DataFrame, info: Mapping[str, ConditionInfo]) -> pd.DataFrame:
    """Table 11: per (model, source): clean accuracy, mean accuracy over the 12-cell panel's
    text-vision cells and over its trimodal cells (the cells run), and the strongest source-level
    drop (the corrupted cell with the largest clean-minus-cell accuracy on that source)."""
    columns = [
        "model",
        "source",
        "clean",
        "tv_mean",
        "tv_cells",
        "tva_mean",
        "tva_cells",
        "strongest_drop",
        "strongest_condition",
    ]
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


def family_summary(
    summary: pd.DataFrame,
    model_diagnostics: pd.DataFrame,
    info: Mapping[str, ConditionInfo],
    families: Mapping[str, str],
) -> pd.DataFrame:
    """Table 20: per family (in the order the mapping first names it): models present, and the means
    over them of clean accuracy, Δ_text/vision/audio at severity 70 (:func:`modality_drops_at_70`),
    the fault-line scores FS_S (as :func:`~sceval_plugin.metrics.protocol.model_diagnostics`
    defines them) and the fragility slopes, with the steepest channel of the family means. Then
    one gap row per pair of families (A − B; positive means A is better: A's clean accuracy is
    higher, its drops smaller). Models without a family are left out."""
    per_model = model_diagnostics.set_index("model")[
        ["clean", *[f"FS_{s}" for s in JOINT_BLOCKS], *[f"S_{m}" for m in MODALITIES]]
    ].join(modality_drops_at_70(summary, info).set_index("model"))
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
    :data:`ALL_MODELS` row, averaged over the models (the paper's panel mean)."""
    s = _with_info(summary, info)
    s = s[(s["block"] == "single") & (s["severity"] == 70)]
    s = s.assign(drop=s["model"].map(_clean(summary)).astype(float) - s["accuracy"]).dropna(subset=["drop"])
    columns = ["model", "group", "operators", "mean_drop"]
    if s.empty:
        return pd.DataFrame(columns=columns)
    stress = s["operator"].isin(HIGH_REJECTION_OPERATORS)
    parts = [("primary", s[~stress]), ("all", s), ("stress", s[stress])]
    rows = [
        g.groupby("model")
        .agg(operators=("operator", "nunique"), mean_drop=("drop", "mean"))
        .reset_index()
        .assign(group=name)
        for name, g in parts
        if not g.empty
    ]
    per_model = pd.concat(rows, ignore_index=True)
    panel = per_model.groupby("group", sort=False).agg(operators=("operators", "max"), mean_drop=("mean_drop", "mean"))
    per_model = pd.concat([per_model, panel.reset_index().assign(model=ALL_MODELS)], ignore_index=True)
    return per_model[columns]
