"""The SCEval protocol's numbers (paper §2.4, Appendices C, F.3, G.1-G.5) from a trial table.

Input: one row per (model, condition, sample, variant) trial with columns :data:`TRIAL_COLUMNS`
(``correct`` is 1, 0 or NaN for an invalid output). Everything here is a pure function of that
table and the condition catalogue; reading logs and writing files live in
:mod:`sceval_plugin.report`.

Conventions: accuracy is a fraction in [0, 1]; invalid outputs are missing for accuracy and
incorrect for significance; a sample's score is its mean over valid variants (eq. 3).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from faultline_eval.core.accuracy import mean_of_sample_scores, worst_repeat_accuracy
from faultline_eval.core.identity import SCHEME, fingerprint_of, is_legacy
from faultline_eval.core.stats import (
    B_DEFAULT,
    PAIRED_COLUMNS,
    SEED_DEFAULT,
    grouped_intervals,
    holm_within,
    least_squares_slope,
    paired_rows,
    per_sample,
)
from sceval_plugin import probe_conditions as probes
from sceval_plugin.conditions import catalogue
from sceval_plugin.probe_conditions import NOT_APPLICABLE as PROBE_NOT_APPLICABLE
from sceval_plugin.probe_conditions import READINGS, REREAD_IN_2

TRIAL_COLUMNS = (
    "model",
    "condition_id",
    "sample_id",
    "variant",
    "correct",
    "invalid",
    "n_options",
    "prompt_id",
    "dataset",
    "answer",
    "not_applicable",
)
INVALID = ("api_failure", "parse_failure", "refusal", "empty")
MODALITIES = {"t": "text", "v": "vision", "a": "audio"}
JOINT_BLOCKS = ("tv", "ta", "va", "tva")
SIGNIFICANCE_FAMILIES = ("single", "tv", "ta", "va", "tva", "controls")


@dataclass(frozen=True)
class ConditionInfo:
    """What the report needs to know about a condition (from the catalogue or the records)."""

    id: str
    block: str
    corruptions: tuple[tuple[str, str, int], ...]  # (modality, operator, severity)
    control: str | None = None
    option_order: int = 0
    base: str | None = None
    suites: tuple[str, ...] = ()
    role: str = ""
    probe: tuple | None = None  # (family, probe name, parameter) of a mechanism probe

    @property
    def family(self) -> str:
        """The significance family (one Holm correction each): a probe's is its probe family; a
        named option's (another reading, ``sceval_probe_options``) is its family's options, so
        running one leaves Table 17's adjusted p as they were."""
        if self.probe is not None:
            return f"probe_{self.probe[0]}" + ("_options" if "probe_option" in self.suites else "")
        return (
            "controls"
            if self.block in ("missing", "shortcut", "option_order", "prompt")
            else ("single" if self.block == "single" else self.block)
        )


def catalogue_info() -> dict[str, ConditionInfo]:
    return {
        c.id: ConditionInfo(
            c.id,
            c.block,
            tuple((x.modality, x.operator, x.severity) for x in c.corruptions),
            c.control,
            c.option_order,
            c.base,
            c.suites,
            c.role,
            c.probe and (probes.get(c.probe.name).family, c.probe.name, c.probe.parameter),
        )
        for c in catalogue()
    }


# --- per sample and per condition ---------------------------------------------------------------


def condition_summary(
    trials: pd.DataFrame, samples: pd.DataFrame, *, b: int = B_DEFAULT, seed: int = SEED_DEFAULT
) -> pd.DataFrame:
    """Per (model, condition): accuracy (eq. 3) with a 95 % bootstrap interval over samples,
    worst-variant accuracy (eq. 4), mean-worst gap, coverage, trials and invalid counts."""
    t = trials
    keys = ["model", "condition_id"]
    by_variant = worst_repeat_accuracy(t, keys).rename("worst_variant_accuracy")
    counts = t.groupby(keys, observed=True).agg(trials=("variant", "size"), valid_trials=("correct", "count"))
    invalid = (
        t.dropna(subset=["invalid"])
        .groupby(keys + ["invalid"], observed=True)
        .size()
        .unstack("invalid")
        .reindex(columns=list(INVALID), fill_value=0)
        .fillna(0)
        .astype(int)
        .add_prefix("invalid_")
    )
    valid_samples = samples.dropna(subset=["score"])
    acc = pd.DataFrame(
        {
            "accuracy": mean_of_sample_scores(valid_samples, keys),
            "n_samples": valid_samples.groupby(keys, observed=True).size(),
        }
    )
    summary = acc.join(by_variant, how="outer").join(counts, how="outer").join(invalid, how="left")
    summary[[f"invalid_{c}" for c in INVALID]] = summary[[f"invalid_{c}" for c in INVALID]].fillna(0).astype(int)
    summary["n_samples"] = summary["n_samples"].fillna(0).astype(int)
    summary["coverage"] = summary["valid_trials"] / summary["trials"]
    summary["mean_worst_gap"] = summary["accuracy"] - summary["worst_variant_accuracy"]
    lo, hi = _accuracy_intervals(valid_samples, summary.index, b=b, seed=seed)
    summary["ci_low"], summary["ci_high"] = lo, hi
    summary = summary.reset_index()
    summary[["model", "condition_id"]] = summary[["model", "condition_id"]].astype(str)
    return summary


def _accuracy_intervals(valid_samples: pd.DataFrame, index: pd.MultiIndex, *, b: int, seed: int):
    """Bootstrap intervals of every (model, condition), aligned with ``index``."""
    found = grouped_intervals(valid_samples, ["model", "condition_id"], "score", b=b, seed=seed)
    return found["ci_low"].reindex(index).to_numpy(), found["ci_high"].reindex(index).to_numpy()


# --- drops and diagnostics ----------------------------------------------------------------------

#: Readings of eq. 6's "weakest corresponding single-modality corruption" (see :func:`add_drops`).
DELTA_SINGLE_BASELINES = ("modality", "operator")


def _is_panel(cid: str, info: dict[str, ConditionInfo]) -> bool:
    return cid in info and "panel" in info[cid].suites


def weakest_singles(summary: pd.DataFrame, info: dict[str, ConditionInfo], *, by: str = "modality") -> pd.DataFrame:
    """Per (model, modality) -- or per (model, operator) with ``by="operator"`` -- the single cell
    with the lowest observed accuracy (C.2: "the weakest observed cell ... defines the Δsingle
    baseline"), how many of the catalogue's single cells of that modality (operator) were observed,
    and whether that grid is complete. Ties go to the first condition id, so the choice is stable."""
    if by not in DELTA_SINGLE_BASELINES:
        raise ValueError(f"unknown Δsingle baseline {by!r}; choose one of {DELTA_SINGLE_BASELINES}")
    part = 0 if by == "modality" else 1
    pool_of = {cid: c.corruptions[0][part] for cid, c in info.items() if c.block == "single"}
    in_catalogue = pd.Series(pool_of).value_counts()
    s = summary[summary["condition_id"].isin(list(pool_of)) & summary["accuracy"].notna()]
    columns = ["model", by, "condition_id", "accuracy", "observed_cells", "catalogue_cells", "complete"]
    if s.empty:
        return pd.DataFrame(columns=columns)
    s = s.assign(**{by: s["condition_id"].map(pool_of)}).sort_values(["model", by, "accuracy", "condition_id"])
    g = s.groupby(["model", by], sort=True)
    out = g.first()[["condition_id", "accuracy"]].join(g.size().rename("observed_cells")).reset_index()
    out["catalogue_cells"] = out[by].map(in_catalogue).astype(int)
    out["complete"] = out["observed_cells"] == out["catalogue_cells"]
    return out[columns]


def add_drops(summary: pd.DataFrame, info: dict[str, ConditionInfo], *, baseline: str = "modality") -> pd.DataFrame:
    """Adds Δbase (eq. 5) and, for joint cells, Δsingle (eq. 6): the weakest corresponding single
    cell's accuracy minus the joint cell's (positive: the joint cell is worse than every component).

    ``baseline="modality"`` (default, the paper's): the weakest *observed* single cell of each
    modality the joint cell corrupts, over all of that modality's operators and severities (C.2,
    C.3: "every joint cell stays above the model's weakest single-modality cell (drop_words at
    severity 70)"); on the paper's Tables 5/6 this gives C.3's 3 positive cells of 29 for
    Qwen3.5-Omni-Plus (max +1.09). ``baseline="operator"`` reads Table 6's caption per row
    instead: the weakest observed severity of each of the cell's own operators. Either way it
    needs an observed single cell of every corrupted modality (operator); ``single_grid`` says
    whether that grid was ``complete`` or ``partial`` in the logs.

    Also ``delta_single_same_severity``: against the weaker of the single cells that apply the
    same operators at the same severities (needs all of them), a different, stricter question."""
    part = 0 if baseline == "modality" else 1
    acc = summary.set_index(["model", "condition_id"])["accuracy"].to_dict()
    clean = summary[summary["condition_id"] == "clean"].set_index("model")["accuracy"]
    single_of = {c.corruptions[0]: cid for cid, c in info.items() if c.block == "single"}
    weakest = {
        (m, pool): (a, cid, ok)
        for m, pool, cid, a, ok in weakest_singles(summary, info, by=baseline)[
            ["model", baseline, "condition_id", "accuracy", "complete"]
        ].itertuples(index=False)
    }
    out = summary.copy()
    out["delta_base"] = out["model"].map(clean).astype(float) - out["accuracy"]
    rows = []
    for model, cid in zip(out["model"], out["condition_id"]):
        c = info.get(cid)
        if c is None or c.block not in JOINT_BLOCKS:
            rows.append((None, np.nan, None, None, np.nan))
            continue
        found = [weakest.get((model, x[part])) for x in c.corruptions]
        if all(found):  # (accuracy, condition id) order: the lowest, ties to the first id
            low, low_id, _ = min(found)
            best = (low_id, low, "complete" if all(ok for *_, ok in found) else "partial")
        else:
            best = (None, np.nan, None)
        same = [(acc.get((model, single_of.get(x)), np.nan), single_of.get(x)) for x in c.corruptions]
        same = min(same)[::-1] if all(np.isfinite(a) for a, _ in same) else (None, np.nan)
        rows.append(best + same)
    extra = pd.DataFrame(
        rows,
        index=out.index,
        columns=[
            "weakest_single",
            "weakest_single_accuracy",
            "single_grid",
            "weakest_single_same_severity",
            "same_severity_accuracy",
        ],
    )
    out["weakest_single"], out["single_grid"] = extra["weakest_single"], extra["single_grid"]
    out["delta_single"] = extra["weakest_single_accuracy"].astype(float) - out["accuracy"]
    out["weakest_single_same_severity"] = extra["weakest_single_same_severity"]
    out["delta_single_same_severity"] = extra["same_severity_accuracy"].astype(float) - out["accuracy"]
    return out


def below_weakest_single(
    summary: pd.DataFrame, comparisons: pd.DataFrame, info: dict[str, ConditionInfo]
) -> pd.DataFrame:
    """C.3's question per model and joint block (and ``all``): of the joint cells with a Δsingle,
    how many are below the weakest single cell (Δsingle > 0), how many of those significantly
    (Holm-adjusted McNemar of single vs joint, invalid as incorrect), the largest Δsingle and its
    cell; beside it the count under the same-severity comparison."""
    columns = [
        "model",
        "block",
        "joint_cells",
        "below_weakest_single",
        "significant",
        "max_delta_single",
        "max_cell",
        "below_same_severity",
    ]
    j = summary[summary["condition_id"].map(lambda c: c in info and info[c].block in JOINT_BLOCKS).astype(bool)]
    j = j[j["delta_single"].notna()]
    if j.empty:
        return pd.DataFrame(columns=columns)
    j = j.assign(block=j["condition_id"].map(lambda c: info[c].block))
    sig = set()
    if not comparisons.empty:
        c = comparisons[
            (comparisons["kind"] == "single_vs_joint")
            & comparisons["significant"].astype(bool)
            & (comparisons["diff"] > 0)
        ]
        sig = set(zip(c["model_b"], c["condition_b"]))
    j["significant"] = [(m, cid) in sig for m, cid in zip(j["model"], j["condition_id"])]
    both = pd.concat([j, j.assign(block="all")])
    both["block"] = pd.Categorical(both["block"], categories=[*JOINT_BLOCKS, "all"], ordered=True)
    rows = []
    for (model, block), g in both.groupby(["model", "block"], observed=True, sort=True):
        top = g.loc[g["delta_single"].idxmax()]
        rows.append(
            {
                "model": model,
                "block": block,
                "joint_cells": len(g),
                "below_weakest_single": int((g["delta_single"] > 0).sum()),
                "significant": int((g["significant"] & (g["delta_single"] > 0)).sum()),
                "max_delta_single": float(top["delta_single"]),
                "max_cell": top["condition_id"],
                "below_same_severity": int((g["delta_single_same_severity"] > 0).sum()),
            }
        )
    return pd.DataFrame(rows, columns=columns)


def panel_block_means(summary: pd.DataFrame, info: dict[str, ConditionInfo]) -> pd.DataFrame:
    """Per model: mean accuracy of each block's cells of the 12-cell panel (Table 31), and how
    many of them were observed; the one source of FS_S, the panel fault and Table 8's columns."""
    p = summary[summary["condition_id"].map(lambda c: _is_panel(c, info)).astype(bool) & summary["accuracy"].notna()]
    p = p.assign(block=p["condition_id"].map(lambda c: info[c].block))
    means = p.pivot_table(index="model", columns="block", values="accuracy", aggfunc="mean")
    counts = p.pivot_table(index="model", columns="block", values="accuracy", aggfunc="size")
    out = pd.DataFrame(index=pd.Index(sorted(summary["model"].astype(str).unique()), name="model"))
    for block in JOINT_BLOCKS:
        out[f"mean_{block}"] = means[block] if block in means else np.nan
        out[f"cells_{block}"] = counts[block] if block in counts else 0
    out[[f"cells_{b}" for b in JOINT_BLOCKS]] = out[[f"cells_{b}" for b in JOINT_BLOCKS]].fillna(0).astype(int)
    return out


def _restricted_mean(samples: pd.DataFrame, model: str, cells: list[str], keep: set[str]) -> float:
    """Mean over ``cells`` of each cell's accuracy on the samples in ``keep`` only."""
    s = samples[(samples["model"] == model) & samples["condition_id"].isin(cells) & samples["sample_id"].isin(keep)]
    return float(s.groupby("condition_id", observed=True)["score"].mean().mean()) if len(s) else np.nan


def model_diagnostics(
    summary: pd.DataFrame,
    trials: pd.DataFrame,
    info: dict[str, ConditionInfo],
    *,
    samples: pd.DataFrame | None = None,
    control_samples: dict[tuple[str, str], set[str]] | None = None,
) -> pd.DataFrame:
    """Per model (paper §2.4, Tables 8, 9, 19, 20):

    - ``FS_S`` for S in tv/ta/va/tva: clean minus the mean of block S's cells *of the 12-cell
      panel* (Table 20, G.3), so running more joint cells does not move it; ``drop_all_S``: clean
      minus the mean of every run cell of block S (not a paper quantity: the whole run's view);
    - ``M_m`` (eq. 7): missing m minus the mean of m's severity-70 single cells, over the samples
      the control applies to when ``control_samples`` restricts it (the no-text control on items
      without textual evidence beyond question and options does not apply);
    - ``S_m``: least-squares slope of accuracy on severity 0/10/30/50/70 (clean as 0; accuracy per
      severity point; Table 19);
    - ``G``: text-only accuracy minus chance (1 / number of options)."""
    rows = []
    chance = trials.groupby("model", observed=True)["n_options"].apply(lambda s: float(np.mean(1.0 / s)))
    panel = panel_block_means(summary, info)
    for model, frame in summary.groupby("model", observed=True):
        acc = frame.set_index("condition_id")["accuracy"]
        clean = acc.get("clean", np.nan)
        row = {"model": model, "clean": clean}
        for block in JOINT_BLOCKS:
            row[f"FS_{block}"] = clean - panel.loc[model, f"mean_{block}"]
            cells = [cid for cid in acc.index if info.get(cid) and info[cid].block == block]
            row[f"drop_all_{block}"] = clean - acc[cells].mean() if cells else np.nan
        for letter, modality in MODALITIES.items():
            singles = {
                cid: info[cid]
                for cid in acc.index
                if info.get(cid) and info[cid].block == "single" and info[cid].corruptions[0][0] == modality
            }
            at70 = [cid for cid, c in singles.items() if c.corruptions[0][2] == 70]
            keep = (control_samples or {}).get((model, f"missing_{modality}"))
            if keep is not None and samples is not None:
                corrupted = _restricted_mean(samples, model, at70, keep)
            else:
                corrupted = acc[at70].mean() if at70 else np.nan
            row[f"M_{letter}"] = acc.get(f"missing_{modality}", np.nan) - corrupted
            xs, ys = [0.0], [clean]
            for severity in (10, 30, 50, 70):
                cells = [cid for cid, c in singles.items() if c.corruptions[0][2] == severity]
                xs.append(severity), ys.append(acc[cells].mean() if cells else np.nan)
            row[f"S_{letter}"] = least_squares_slope(xs, ys)
        row["text_only"] = acc.get("shortcut_text_only", np.nan)
        row["chance"] = chance.get(model, np.nan)
        row["G"] = row["text_only"] - row["chance"]
        rows.append(row)
    return pd.DataFrame(rows)


def operator_slopes(summary: pd.DataFrame, info: dict[str, ConditionInfo]) -> pd.DataFrame:
    """Fragility slope per (model, operator) over its single cells, clean as severity 0."""
    rows = []
    for model, frame in summary.groupby("model", observed=True):
        acc = frame.set_index("condition_id")["accuracy"]
        ops: dict[str, dict[int, float]] = {}
        for cid, value in acc.items():
            c = info.get(cid)
            if c and c.block == "single":
                ops.setdefault(c.corruptions[0][1], {})[c.corruptions[0][2]] = value
        for op, curve in ops.items():
            xs = [0] + sorted(curve)
            ys = [acc.get("clean", np.nan)] + [curve[s] for s in sorted(curve)]
            rows.append({"model": model, "operator": op, "slope": least_squares_slope(xs, ys)})
    return pd.DataFrame(rows, columns=["model", "operator", "slope"])


#: Table 8's asymmetry: C_asym = Acc(t70/v70) - Acc(t30/v70), positive when mild text damage
#: under heavy visual noise is the worse cell.
ASYMMETRY_CELLS = ("bi_tv_drop_words_noise_t70_v70", "bi_tv_drop_words_noise_t30_v70")


def panel_summary(summary: pd.DataFrame, info: dict[str, ConditionInfo]) -> pd.DataFrame:
    """Per model over the 12-cell panel (Table 8): clean, block means (TV, TA, VA, TVA), panel
    fault (the mean of the four blocks' clean-to-panel drops FS_S; needs clean and all four
    blocks), C_asym, mean and worst panel cell, the strongest fault line (the panel cell with
    the largest Δbase), cells observed and mean coverage."""
    rows = []
    blocks = panel_block_means(summary, info)
    for model, frame in summary.groupby("model", observed=True):
        f = frame[frame["condition_id"].map(lambda c: _is_panel(c, info)).astype(bool)]
        if f.empty:
            continue
        acc = frame.set_index("condition_id")["accuracy"]
        clean = acc.get("clean", np.nan)
        strongest = f.loc[f["delta_base"].idxmax()] if f["delta_base"].notna().any() else None
        row = {
            "model": model,
            "clean": clean,
            "panel_mean": f["accuracy"].mean(),
            "panel_worst": f["accuracy"].min(),
            "cells": len(f),
        }
        for block in JOINT_BLOCKS:
            row[f"mean_{block}"] = blocks.loc[model, f"mean_{block}"]
        row["panel_fault"] = float(np.mean([clean - row[f"mean_{b}"] for b in JOINT_BLOCKS]))
        row["C_asym"] = acc.get(ASYMMETRY_CELLS[0], np.nan) - acc.get(ASYMMETRY_CELLS[1], np.nan)
        row["strongest_fault_line"] = None if strongest is None else strongest["condition_id"]
        row["strongest_drop"] = np.nan if strongest is None else strongest["delta_base"]
        row["coverage"] = f["coverage"].mean()
        rows.append(row)
    return pd.DataFrame(rows)


def option_order_summary(trials: pd.DataFrame, summary: pd.DataFrame, info: dict[str, ConditionInfo]) -> pd.DataFrame:
    """Per model and base condition: mean- and worst-order accuracy over its option orders, and
    prediction consistency (share of trials answering the same original option in every order)."""
    columns = ["model", "base", "orders", "mean_order", "worst_order", "consistency"]
    base_of = {cid: c.base for cid, c in info.items() if c.block == "option_order"}
    t = trials[trials["condition_id"].isin(list(base_of))]
    if t.empty:
        return pd.DataFrame(columns=columns)
    answers = t["answer"].astype("category").cat.codes.to_numpy()  # -1 = no valid answer
    t = pd.DataFrame(
        {
            "model": t["model"].astype(str).to_numpy(),
            "base": t["condition_id"].astype(str).map(base_of).to_numpy(),
            "condition_id": t["condition_id"].astype(str).to_numpy(),
            "sample_id": t["sample_id"].to_numpy(),
            "variant": t["variant"].to_numpy(),
            "code": answers,
        }
    )
    orders = t.groupby(["model", "base"])["condition_id"].nunique()
    g = t.groupby(["model", "base", "sample_id", "variant"], observed=True)["code"]
    per_trial = pd.DataFrame({"n": g.size(), "lo": g.min(), "hi": g.max()}).reset_index()
    per_trial["consistent"] = (
        (per_trial["n"].to_numpy() == orders.reindex(pd.MultiIndex.from_frame(per_trial[["model", "base"]])).to_numpy())
        & (per_trial["lo"] == per_trial["hi"])
        & (per_trial["lo"] >= 0)
    )
    consistency = per_trial.groupby(["model", "base"])["consistent"].mean()
    acc = summary.assign(base=summary["condition_id"].map(base_of)).dropna(subset=["base"])
    by_base = acc.groupby(["model", "base"])["accuracy"].agg(mean_order="mean", worst_order="min")
    out = by_base.join(orders.rename("orders")).join(consistency.rename("consistency")).reset_index()
    return out[columns]


# --- paired comparisons -------------------------------------------------------------------------

#: Readings of §2.4's Holm family, "the family of comparisons inside one experimental block"
#: (see :func:`comparisons`).
HOLM_FAMILIES = ("model", "pooled")


def comparisons(
    samples: pd.DataFrame,
    summary: pd.DataFrame,
    info: dict[str, ConditionInfo],
    *,
    b: int = B_DEFAULT,
    seed: int = SEED_DEFAULT,
    model_pairs: bool = True,
    holm_families: str = "model",
) -> pd.DataFrame:
    """Clean vs each condition, weakest single vs each joint cell, and model vs model on each
    condition: paired bootstrap of the per-sample difference and exact McNemar, Holm-adjusted
    within each family. Computed with invalid outputs as incorrect (the headline) and as
    missing; ``flips`` marks comparisons whose significance differs between the two.

    §2.4 corrects "across the family of comparisons inside one experimental block". Reading
    ``holm_families="model"`` (default): one model's block, so a within-model comparison (clean
    vs condition, single vs joint) is corrected within (kind, family, model) and its adjusted p
    does not change with which other models the report holds. ``"pooled"``: every model's
    comparisons of a (kind, family) together (stricter with more models). Model-vs-model
    comparisons span models: always corrected within (kind, family)."""
    if holm_families not in HOLM_FAMILIES:
        raise ValueError(f"holm_families must be one of {HOLM_FAMILIES}, got {holm_families!r}")
    strict = samples.pivot_table(index=["model", "condition_id"], columns="sample_id", values="strict", aggfunc="first")
    # aligned with strict: a condition whose every output is invalid has no score row of its own
    score = samples.pivot_table(
        index=["model", "condition_id"], columns="sample_id", values="score", aggfunc="first"
    ).reindex(index=strict.index, columns=strict.columns)
    weakest = summary.set_index(["model", "condition_id"])["weakest_single"] if "weakest_single" in summary else None
    specs = []  # (kind, family, model_a, cond_a, model_b, cond_b)
    rows_present = set(strict.index)
    for model, cid in sorted(rows_present):  # sorted: a set iterates in PYTHONHASHSEED order
        c = info.get(cid)
        if cid == "clean" or c is None:
            continue
        if (model, "clean") in rows_present:
            specs.append(("clean_vs_condition", c.family, model, "clean", model, cid))
        if weakest is not None and c.block in JOINT_BLOCKS and isinstance(weakest.get((model, cid)), str):
            specs.append(("single_vs_joint", c.block, model, weakest[(model, cid)], model, cid))
    if model_pairs:
        models = sorted({m for m, _ in rows_present})
        for cid in sorted({c for _, c in rows_present}):
            have = [m for m in models if (m, cid) in rows_present]
            family = info[cid].family if cid in info else "controls"
            specs += [("model_vs_model", family, m1, cid, m2, cid) for m1, m2 in itertools.combinations(have, 2)]
    labels = ("kind", "family", "model_a", "condition_a", "model_b", "condition_b")
    tested = PAIRED_COLUMNS[: PAIRED_COLUMNS.index("p_mcnemar") + 1]  # n ... p_mcnemar: invalid counted wrong
    columns = [*labels, *tested, "p_holm", "significant", "n_valid_pairs"]
    columns += ["p_holm_missing", "significant_missing", "flips"]
    if not specs:
        return pd.DataFrame(columns=columns)
    # each spec compares two rows over the samples both have (core.stats.paired_rows)
    pairs = [((ma, ca), (mb, cb)) for _, _, ma, ca, mb, cb in specs]
    numbers = paired_rows(strict, score, pairs, b=b, seed=seed)
    frame = pd.DataFrame([{**dict(zip(labels, spec)), **row} for spec, row in zip(specs, numbers)])
    per_model = (frame["kind"] != "model_vs_model") & (holm_families == "model")
    frame["_block"] = frame["model_b"].where(per_model, "")
    frame = holm_within(frame, ["kind", "family", "_block"])
    return frame[columns + ["p_mcnemar_missing", "diff_missing"]]


def check_comparable(trials: pd.DataFrame, info: dict[str, ConditionInfo]) -> None:
    """Refuse to compare runs made with different prompts (outside the prompt-variant block),
    different dataset versions or different seed schemes: raise ``ValueError`` naming what clashes."""
    prompt_variants = [cid for cid, c in info.items() if c.block == "prompt"]
    headline = trials[~trials["condition_id"].isin(prompt_variants)]
    prompts = headline.groupby("prompt_id", observed=True)["model"].unique()
    if len(prompts) > 1:
        detail = "; ".join(f"{p}: {', '.join(map(str, ms))}" for p, ms in prompts.items())
        raise ValueError(f"runs use different prompt templates ({detail}); report one prompt id at a time")
    datasets = trials.groupby(trials["dataset"].map(fingerprint_of, na_action="ignore"), observed=True)[
        "model"
    ].unique()
    if len(datasets) > 1:  # by content: the same items in another folder or on another machine are one dataset
        detail = "; ".join(f"{d}: {', '.join(map(str, ms))}" for d, ms in datasets.items())
        legacy = (
            f" (a fingerprint without the '{SCHEME}-' prefix is a legacy one, from before content fingerprints: "
            "rerun those logs to compare them)"
            if len({is_legacy(d) for d in datasets.index}) > 1
            else ""
        )
        raise ValueError(f"runs use different dataset versions ({detail}){legacy}; compare runs on the same data")
    if "seed_scheme" in trials:  # logs that predate the field have none, and are not checked
        schemes = trials.groupby("seed_scheme", observed=True)["model"].unique()
        if len(schemes) > 1:
            detail = "; ".join(f"scheme {n}: {', '.join(map(str, ms))}" for n, ms in schemes.items())
            raise ValueError(
                f"runs use different seed schemes ({detail}), so their noise variants differ; rerun "
                "with SCEVAL_SEED_SCHEME set to one of them"
            )
    old = earlier_readings(trials)
    if old.any():
        raise ValueError(earlier_readings_message(trials[old]))


def earlier_readings(trials: pd.DataFrame) -> pd.Series:
    """Which trials are of a probe that changed meaning with the paper's G.10/G.11 readings
    (:data:`REREAD_IN_2`) and were made under the earlier reading: ``probe_readings`` below
    :data:`READINGS`, or none (a log from before the field)."""
    if "probe_readings" not in trials:  # not read from logs (read_runs gives every log the column)
        return pd.Series(False, index=trials.index)
    reread = trials["condition_id"].isin(REREAD_IN_2)
    readings = pd.to_numeric(trials.loc[reread, "probe_readings"].astype(object), errors="coerce")
    return reread & ~(readings >= READINGS).reindex(trials.index, fill_value=True)


def earlier_readings_message(old: pd.DataFrame) -> str:
    """Why trials of :func:`earlier_readings` cannot be pooled with today's, by condition and model."""
    detail = "; ".join(
        f"{c}: {', '.join(map(str, ms))}"
        for c, ms in old.groupby("condition_id", observed=True)["model"].unique().items()
    )
    return (
        f"logs of probes whose meaning changed with the paper's G.10/G.11 readings were made "
        f"under the earlier reading ({detail}): they appended distractors to every item and "
        f"dropped one middle frame; rerun those tasks (the earlier readings are the "
        f"sceval_probe_options tasks *_appended_* and probe_temporal_middle_drop_1)"
    )


#: Why a report leaves trials out rather than refuse the whole report (``sceval report --strict``
#: refuses instead), in words: rows whose meaning today's catalogue does not hold.
LEFT_OUT_REASONS = {
    "earlier_probe_reading": "logged under the probe's earlier reading (no probe_readings: distractors "
    "appended to every item, one middle frame dropped), not the paper's G.10/G.11 reading the condition "
    "now names; rerun those tasks for their numbers (the earlier reading runs today as the "
    "sceval_probe_options tasks *_appended_* and probe_temporal_middle_drop_1)",
    "unknown_condition": "a condition not in the installed catalogue; install the plugin that defines it",
}


def leave_out_incomparable(trials: pd.DataFrame, info: dict[str, ConditionInfo]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The trials a report can pool, and per (model, condition) the trials it leaves out with
    their reason (:data:`LEFT_OUT_REASONS`; columns model, condition_id, reason, trials): those of
    :func:`earlier_readings`, and those of conditions ``info`` does not know. The rest of the
    logs' tables are computed as if those logs had not been given."""
    reasons = pd.Series(None, index=trials.index, dtype=object)
    reasons[earlier_readings(trials)] = "earlier_probe_reading"
    reasons[~trials["condition_id"].isin(list(info))] = "unknown_condition"
    out = reasons.notna()
    columns = ["model", "condition_id", "reason", "trials"]
    if not out.any():
        return trials, pd.DataFrame(columns=columns)
    left = (
        trials[out]
        .assign(**{k: trials.loc[out, k].astype(str) for k in ("model", "condition_id")}, reason=reasons[out])
        .groupby(["model", "condition_id", "reason"])
        .size()
        .rename("trials")
        .reset_index()
    )
    return trials[~out].reset_index(drop=True), left[columns]


def left_out_notes(left_out: pd.DataFrame) -> list[str]:
    """One note per reason of :func:`leave_out_incomparable`, naming each condition and its models."""
    notes = []
    for reason, group in left_out.groupby("reason", sort=False):
        cells = "; ".join(
            f"{cid} ({', '.join(g['model'])}: {int(g['trials'].sum())} trial(s))"
            for cid, g in group.groupby("condition_id", sort=True)
        )
        notes.append(f"left out of every table: {cells}: {LEFT_OUT_REASONS[reason]} (--strict refuses such logs)")
    return notes


#: Why a control does not apply to an item (the trial's ``not_applicable``), in words.
NOT_APPLICABLE = {
    "no_text_evidence": "no textual evidence beyond the question and options, so the no-text control "
    "removes nothing (its prompt equals clean's)"
}


def split_not_applicable(trials: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The trials every number uses, and per (model, condition, reason) the items whose control
    did not apply (``not_applicable`` set by the renderer: counted, never scored)."""
    flagged = trials["not_applicable"].notna()
    columns = ["model", "condition_id", "reason", "items", "items_run"]
    if not flagged.any():
        return trials, pd.DataFrame(columns=columns)
    t = trials.assign(**{k: trials[k].astype(str) for k in ("model", "condition_id")})
    run = t.groupby(["model", "condition_id"])["sample_id"].nunique()
    out = (
        t[flagged]
        .assign(reason=t.loc[flagged, "not_applicable"].astype(str))
        .groupby(["model", "condition_id", "reason"])["sample_id"]
        .nunique()
        .rename("items")
        .reset_index()
    )
    out["items_run"] = run.reindex(pd.MultiIndex.from_frame(out[["model", "condition_id"]])).to_numpy()
    return trials[~flagged].reset_index(drop=True), out[columns]


def _models(keys) -> str:
    return ", ".join(sorted(map(str, keys)))


def coverage_notes(
    summary: pd.DataFrame, info: dict[str, ConditionInfo], not_applicable: pd.DataFrame, *, model_pairs: bool
) -> list[str]:
    """What the logs do not allow computing, in words (each subset of the catalogue gives a report
    with what it can compute; these notes say what is missing and why)."""
    notes = []
    for _, r in not_applicable.iterrows():
        control = info.get(r["condition_id"]) is None or info[r["condition_id"]].probe is None
        words = {**NOT_APPLICABLE, **PROBE_NOT_APPLICABLE}.get(r["reason"], r["reason"])
        whole = r["items"] == r["items_run"]
        notes.append(
            f"{r['condition_id']} ({r['model']}): {r['items']} of {r['items_run']} item(s) have {words}; "
            f"they are left out of {r['condition_id']}"
            + (
                " and its M_m" + (" (so both are not computed)" if whole else "")
                if control
                else " (so it is not computed)"
                if whole
                else ""
            )
        )
    block = summary["condition_id"].map(lambda c: info[c].block if c in info else "")
    present = summary.assign(block=block)
    models = set(summary["model"])
    no_clean = models - set(present.loc[present["block"] == "clean", "model"])
    if no_clean:
        notes.append(
            f"no clean condition ({_models(no_clean)}): Δbase, FS_S, panel fault, slopes S_m and the "
            "clean-vs-condition tests are not computed"
        )
    joint_models = set(present.loc[present["block"].isin(JOINT_BLOCKS), "model"])
    single_models = set(present.loc[(present["block"] == "single") & present["accuracy"].notna(), "model"])
    if joint_models - single_models:
        notes.append(
            f"no single-modality cells with a valid output ({_models(joint_models - single_models)}): "
            "Δsingle and the single-vs-joint tests are not computed"
        )
    elif models - single_models:
        notes.append(
            f"no single-modality cells ({_models(models - single_models)}): M_m and slopes S_m are not computed"
        )
    partial = present[present["single_grid"] == "partial"]
    for model in sorted(set(partial["model"])):
        grid = weakest_singles(summary[summary["model"] == model], info)
        seen = "; ".join(f"{r['modality']} {r['observed_cells']} of {r['catalogue_cells']}" for _, r in grid.iterrows())
        notes.append(
            f"Δsingle of {model} comes from a partial single-modality grid (observed cells: {seen}): "
            "its baseline is the weakest cell observed, not of the full grid"
        )
    missing_singles = present[
        present["block"].isin(JOINT_BLOCKS) & present["delta_single"].isna() & present["model"].isin(single_models)
    ]
    if len(missing_singles):
        notes.append(
            f"{len(missing_singles)} joint cell(s) have no Δsingle: no single cell of one of their "
            "corrupted modalities was observed"
        )
    panel = present[present["condition_id"].map(lambda c: _is_panel(c, info)).astype(bool)]
    panel_size = sum(1 for c in info.values() if "panel" in c.suites)
    for model, g in panel.groupby("model"):
        lacking = [b for b in JOINT_BLOCKS if b not in {info[c].block for c in g["condition_id"]}]
        if len(g) < panel_size:
            notes.append(
                f"panel of {model}: {len(g)} of {panel_size} cells observed; FS_S averages the observed "
                "panel cells of each block"
                + (
                    f"; no panel cell of {', '.join(lacking)}, so their FS_S and the panel fault are not computed"
                    if lacking
                    else ""
                )
            )
    if joint_models and not len(panel):
        notes.append(
            "no cell of the 12-cell panel: FS_S, panel fault and C_asym are not computed "
            "(drop_all_S gives the mean drop over the joint cells that were run)"
        )
    empty = present[present["n_samples"] == 0]
    for _, r in empty.iterrows():
        notes.append(
            f"{r['condition_id']} ({r['model']}): no valid output in {int(r['trials'])} trial(s); accuracy "
            "is undefined (the trials count as incorrect in the tests)"
        )
    if model_pairs and len(models) == 1:
        notes.append("one model: no model-vs-model comparisons")
    return notes


@dataclass
class Numbers:
    summary: pd.DataFrame
    diagnostics: pd.DataFrame
    operator_slopes: pd.DataFrame
    panel: pd.DataFrame
    option_orders: pd.DataFrame
    comparisons: pd.DataFrame
    weakest_singles: pd.DataFrame
    below_weakest_single: pd.DataFrame
    not_applicable: pd.DataFrame
    notes: list[str]
    holm_families: str = "model"  # the Holm family reading of the comparisons (HOLM_FAMILIES)


def compute(
    trials: pd.DataFrame,
    info: dict[str, ConditionInfo] | None = None,
    *,
    b: int = B_DEFAULT,
    seed: int = SEED_DEFAULT,
    model_pairs: bool = True,
    delta_single: str = "modality",
    holm_families: str = "model",
) -> Numbers:
    """Every number of the protocol for the trials of one or many models, on any subset of the
    catalogue (``notes`` says what the subset does not allow). ``delta_single`` picks the
    reading of eq. 6's baseline (:data:`DELTA_SINGLE_BASELINES`, see :func:`add_drops`);
    ``holm_families`` that of the Holm family (:data:`HOLM_FAMILIES`, see :func:`comparisons`)."""
    info = info if info is not None else catalogue_info()
    check_comparable(trials, info)
    trials, not_applicable = split_not_applicable(trials)
    samples = per_sample(trials)
    summary = add_drops(condition_summary(trials, samples, b=b, seed=seed), info, baseline=delta_single)
    # the items a partly applicable control was scored on (M_m compares on those alone)
    restricted = {
        (m, cid): set(samples.loc[(samples["model"] == m) & (samples["condition_id"] == cid), "sample_id"])
        for m, cid in dict.fromkeys(zip(not_applicable["model"], not_applicable["condition_id"]))  # once per cell
    }
    tests = comparisons(samples, summary, info, b=b, seed=seed, model_pairs=model_pairs, holm_families=holm_families)
    return Numbers(
        summary=summary,
        diagnostics=model_diagnostics(summary, trials, info, samples=samples, control_samples=restricted),
        operator_slopes=operator_slopes(summary, info),
        panel=panel_summary(summary, info),
        option_orders=option_order_summary(trials, summary, info),
        comparisons=tests,
        weakest_singles=weakest_singles(summary, info, by=delta_single),
        below_weakest_single=below_weakest_single(summary, tests, info),
        not_applicable=not_applicable,
        notes=coverage_notes(summary, info, not_applicable, model_pairs=model_pairs),
        holm_families=holm_families,
    )


def trials_frame(records: Iterable[dict]) -> pd.DataFrame:
    """A trial table from per-sample records (``sceval_record`` dicts)."""
    rows = [
        (
            r.get("model") or "unknown",
            r["condition_id"],
            r["sample_id"],
            r["variant"],
            np.nan if r.get("correct") is None else float(r["correct"]),
            r.get("invalid"),
            r.get("n_options") or 4,
            r.get("prompt_id"),
            r.get("dataset"),
            r.get("parsed_answer_original_key"),
            r.get("control_not_applicable") or (r.get("probe") or {}).get("not_applicable"),
        )
        for r in records
    ]
    return pd.DataFrame(rows, columns=list(TRIAL_COLUMNS))
