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
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd

from sceval_plugin.metrics.stats import (
    B_DEFAULT,
    SEED_DEFAULT,
    bootstrap_means,
    holm,
    least_squares_slope,
    mcnemar_exact,
    paired_comparisons,
    percentile_interval,
    resample_weights,
)

TRIAL_COLUMNS = ("model", "condition_id", "sample_id", "variant", "correct", "invalid", "n_options",
                 "prompt_id", "dataset", "answer")
INVALID = ("api_failure", "parse_failure", "refusal", "empty")
MODALITIES = {"t": "text", "v": "vision", "a": "audio"}
JOINT_BLOCKS = ("tv", "ta", "va", "tva")
SIGNIFICANCE_FAMILIES = ("single", "tv", "ta", "va", "tva", "controls")
ALPHA = 0.05


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

    @property
    def family(self) -> str:
        return "controls" if self.block in ("missing", "shortcut", "option_order", "prompt") else (
            "single" if self.block == "single" else self.block)


def catalogue_info() -> dict[str, ConditionInfo]:
    from sceval_plugin.conditions import catalogue

    return {c.id: ConditionInfo(c.id, c.block, tuple((x.modality, x.operator, x.severity) for x in c.corruptions),
                                c.control, c.option_order, c.base, c.suites, c.role) for c in catalogue()}


# --- per sample and per condition ---------------------------------------------------------------

def per_sample(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, condition, sample): ``score`` (mean over valid variants, NaN if none),
    ``strict`` (invalid counted as wrong), ``binary`` (strict >= 0.5, for McNemar), ``valid``."""
    t = trials[["model", "condition_id", "sample_id", "correct"]].copy()
    t["valid"] = t["correct"].notna()
    t["strict"] = t["correct"].fillna(0.0)
    g = t.groupby(["model", "condition_id", "sample_id"], sort=False, observed=True)
    out = pd.DataFrame({"score": g["correct"].mean(), "strict": g["strict"].mean(), "valid": g["valid"].sum(),
                        "trials": g["valid"].size()})
    out["binary"] = out["strict"] >= 0.5
    return out.reset_index()


def condition_summary(trials: pd.DataFrame, samples: pd.DataFrame, *, b: int = B_DEFAULT,
                      seed: int = SEED_DEFAULT) -> pd.DataFrame:
    """Per (model, condition): accuracy (eq. 3) with a 95 % bootstrap interval over samples,
    worst-variant accuracy (eq. 4), mean-worst gap, coverage, trials and invalid counts."""
    t = trials
    keys = ["model", "condition_id"]
    by_variant = (t.dropna(subset=["correct"]).groupby(keys + ["variant"], observed=True)["correct"].mean()
                  .groupby(level=[0, 1], observed=True).min().rename("worst_variant_accuracy"))
    counts = t.groupby(keys, observed=True).agg(trials=("variant", "size"), valid_trials=("correct", "count"))
    invalid = (t.dropna(subset=["invalid"]).groupby(keys + ["invalid"], observed=True).size()
               .unstack("invalid").reindex(columns=list(INVALID), fill_value=0).fillna(0).astype(int)
               .add_prefix("invalid_"))
    valid_samples = samples.dropna(subset=["score"])
    acc = valid_samples.groupby(keys, observed=True)["score"].agg(accuracy="mean", n_samples="size")
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


def grouped_intervals(values: pd.DataFrame, keys: list[str], column: str, *, b: int, seed: int) -> pd.DataFrame:
    """Mean of ``column`` per ``keys`` group with its 95 % bootstrap percentile interval over the
    group's rows (NaN rows dropped; rows ordered by ``sample_id`` so resamples are reproducible).
    Groups of equal size share one resample matrix: one matrix product per size."""
    v = values.dropna(subset=[column]).sort_values(["sample_id"], kind="stable")
    series = {key: frame[column].to_numpy(float) for key, frame in v.groupby(keys, sort=True, observed=True)}
    rows = {key: [float(x.mean()), np.nan, np.nan, len(x)] for key, x in series.items()}
    by_size: dict[int, list] = {}
    for key, x in series.items():
        by_size.setdefault(len(x), []).append(key)
    for n, group_keys in by_size.items():
        boot = bootstrap_means(np.stack([series[k] for k in group_keys]), resample_weights(n, b=b, seed=seed))
        low, high = percentile_interval(boot)
        for k, lo, hi in zip(group_keys, low, high):
            rows[k][1:3] = float(lo), float(hi)
    index = pd.MultiIndex.from_tuples(list(rows), names=keys) if rows else pd.MultiIndex.from_tuples([], names=keys)
    return pd.DataFrame(list(rows.values()), index=index, columns=[column, "ci_low", "ci_high", "n"])


def _accuracy_intervals(valid_samples: pd.DataFrame, index: pd.MultiIndex, *, b: int, seed: int):
    """Bootstrap intervals of every (model, condition), aligned with ``index``."""
    found = grouped_intervals(valid_samples, ["model", "condition_id"], "score", b=b, seed=seed)
    return found["ci_low"].reindex(index).to_numpy(), found["ci_high"].reindex(index).to_numpy()


# --- drops and diagnostics ----------------------------------------------------------------------

def add_drops(summary: pd.DataFrame, info: dict[str, ConditionInfo]) -> pd.DataFrame:
    """Adds Δbase (eq. 5), and for joint cells Δsingle (eq. 6) against the weakest of the single
    cells that apply the same operators at the same severities (looked up in the catalogue by
    their corruptions, not by their names)."""
    acc = summary.set_index(["model", "condition_id"])["accuracy"]
    clean = summary[summary["condition_id"] == "clean"].set_index("model")["accuracy"]
    single_of = {c.corruptions[0]: cid for cid, c in info.items() if c.block == "single"}
    out = summary.copy()
    out["delta_base"] = out["model"].map(clean).astype(float) - out["accuracy"]
    weakest, weakest_acc = [], []
    for model, cid in zip(out["model"], out["condition_id"]):
        c = info.get(cid)
        parts = [single_of.get(x) for x in c.corruptions] if c is not None and c.block in JOINT_BLOCKS else []
        present = [(p, acc[(model, p)]) for p in parts if p is not None and np.isfinite(acc.get((model, p), np.nan))]
        w = min(present, key=lambda p: p[1]) if present else (None, np.nan)
        weakest.append(w[0]), weakest_acc.append(w[1])
    out["weakest_single"] = weakest
    out["delta_single"] = np.asarray(weakest_acc, dtype=float) - out["accuracy"]
    return out


def model_diagnostics(summary: pd.DataFrame, trials: pd.DataFrame, info: dict[str, ConditionInfo]) -> pd.DataFrame:
    """Per model: fault-line scores FS_S (clean minus the mean of block S's cells), misleading-modality
    effects M_m (missing m minus the mean of m's severity-70 single cells), fragility slopes S_m
    (least squares of accuracy on severity 0/10/30/50/70, clean as 0; accuracy per severity point),
    and the shortcut gap G (text-only accuracy minus chance, 1 / number of options)."""
    rows = []
    chance = trials.groupby("model", observed=True)["n_options"].apply(lambda s: float(np.mean(1.0 / s)))
    for model, frame in summary.groupby("model", observed=True):
        acc = frame.set_index("condition_id")["accuracy"]
        clean = acc.get("clean", np.nan)
        row = {"model": model, "clean": clean}
        for block in JOINT_BLOCKS:
            cells = [cid for cid in acc.index if info.get(cid) and info[cid].block == block]
            row[f"FS_{block}"] = clean - acc[cells].mean() if cells else np.nan
        for letter, modality in MODALITIES.items():
            singles = {cid: info[cid] for cid in acc.index if info.get(cid) and info[cid].block == "single"
                       and info[cid].corruptions[0][0] == modality}
            at70 = [cid for cid, c in singles.items() if c.corruptions[0][2] == 70]
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


def panel_summary(summary: pd.DataFrame, info: dict[str, ConditionInfo]) -> pd.DataFrame:
    """Per model over the 12-cell panel: clean, mean, worst, block means, strongest fault line
    (the panel cell with the largest Δbase), mean coverage."""
    rows = []
    for model, frame in summary.groupby("model", observed=True):
        f = frame[frame["condition_id"].map(lambda c: bool(info.get(c)) and "panel" in info[c].suites)]
        if f.empty:
            continue
        acc = frame.set_index("condition_id")["accuracy"]
        strongest = f.loc[f["delta_base"].idxmax()] if f["delta_base"].notna().any() else None
        row = {"model": model, "clean": acc.get("clean", np.nan), "panel_mean": f["accuracy"].mean(),
               "panel_worst": f["accuracy"].min(), "cells": len(f)}
        for block in JOINT_BLOCKS:
            row[f"mean_{block}"] = f[f["condition_id"].map(lambda c: info[c].block == block)]["accuracy"].mean()
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
    t = pd.DataFrame({"model": t["model"].astype(str).to_numpy(), "base": t["condition_id"].astype(str).map(base_of).to_numpy(),
                      "condition_id": t["condition_id"].astype(str).to_numpy(), "sample_id": t["sample_id"].to_numpy(),
                      "variant": t["variant"].to_numpy(), "code": answers})
    orders = t.groupby(["model", "base"])["condition_id"].nunique()
    g = t.groupby(["model", "base", "sample_id", "variant"], observed=True)["code"]
    per_trial = pd.DataFrame({"n": g.size(), "lo": g.min(), "hi": g.max()}).reset_index()
    per_trial["consistent"] = ((per_trial["n"].to_numpy() == orders.reindex(pd.MultiIndex.from_frame(per_trial[["model", "base"]])).to_numpy())
                               & (per_trial["lo"] == per_trial["hi"]) & (per_trial["lo"] >= 0))
    consistency = per_trial.groupby(["model", "base"])["consistent"].mean()
    acc = summary.assign(base=summary["condition_id"].map(base_of)).dropna(subset=["base"])
    by_base = acc.groupby(["model", "base"])["accuracy"].agg(mean_order="mean", worst_order="min")
    out = by_base.join(orders.rename("orders")).join(consistency.rename("consistency")).reset_index()
    return out[columns]


# --- paired comparisons -------------------------------------------------------------------------

def comparisons(samples: pd.DataFrame, summary: pd.DataFrame, info: dict[str, ConditionInfo], *,
                b: int = B_DEFAULT, seed: int = SEED_DEFAULT, model_pairs: bool = True) -> pd.DataFrame:
    """Clean vs each condition, weakest single vs each joint cell, and model vs model on each
    condition: paired bootstrap of the per-sample difference and exact McNemar, Holm-adjusted
    within each (kind, family). Computed with invalid outputs as incorrect (the headline) and as
    missing; ``flips`` marks comparisons whose significance differs between the two."""
    strict = samples.pivot_table(index=["model", "condition_id"], columns="sample_id", values="strict", aggfunc="first")
    score = samples.pivot_table(index=["model", "condition_id"], columns="sample_id", values="score", aggfunc="first")
    weakest = summary.set_index(["model", "condition_id"])["weakest_single"] if "weakest_single" in summary else None
    specs = []  # (kind, family, model_a, cond_a, model_b, cond_b)
    rows_present = set(strict.index)
    for model, cid in rows_present:
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
    columns = ["kind", "family", "model_a", "condition_a", "model_b", "condition_b", "n", "mean_a", "mean_b", "diff",
               "ci_low", "ci_high", "p_bootstrap", "b", "c", "p_mcnemar", "p_holm", "significant",
               "n_valid_pairs", "p_holm_missing", "significant_missing", "flips"]
    if not specs:
        return pd.DataFrame(columns=columns)
    results = _run_pairs(specs, strict, score, b=b, seed=seed)
    frame = pd.DataFrame(results)
    frame["p_holm"] = np.nan
    frame["p_holm_missing"] = np.nan
    for _, idx in frame.groupby(["kind", "family"]).groups.items():
        frame.loc[idx, "p_holm"] = holm(frame.loc[idx, "p_mcnemar"].to_numpy())
        frame.loc[idx, "p_holm_missing"] = holm(frame.loc[idx, "p_mcnemar_missing"].to_numpy())
    frame["significant"] = frame["p_holm"] < ALPHA
    frame["significant_missing"] = frame["p_holm_missing"] < ALPHA
    frame["flips"] = frame["significant"] != frame["significant_missing"]
    return frame[columns + ["p_mcnemar_missing", "diff_missing"]]


def _run_pairs(specs, strict: pd.DataFrame, score: pd.DataFrame, *, b: int, seed: int):
    """Each spec compares two rows over the samples both have (sorted ids); specs with the same
    number of common samples share one bootstrap matrix."""
    strict_np, score_np = strict.to_numpy(), score.to_numpy()
    row_of = {key: i for i, key in enumerate(strict.index)}
    present = ~np.isnan(strict_np)
    by_size: dict[int, list[tuple[int, np.ndarray]]] = {}
    for k, (_, _, ma, ca, mb, cb) in enumerate(specs):
        cols = np.flatnonzero(present[row_of[(ma, ca)]] & present[row_of[(mb, cb)]])
        by_size.setdefault(len(cols), []).append((k, cols))
    out: list[dict] = [None] * len(specs)  # type: ignore[list-item]
    for n, members in by_size.items():
        ra = [row_of[(specs[k][2], specs[k][3])] for k, _ in members]
        rb = [row_of[(specs[k][4], specs[k][5])] for k, _ in members]
        cols = np.stack([c for _, c in members]) if n else np.zeros((len(members), 0), int)
        a, bb = strict_np[np.array(ra)[:, None], cols], strict_np[np.array(rb)[:, None], cols]
        sa, sb = score_np[np.array(ra)[:, None], cols], score_np[np.array(rb)[:, None], cols]
        results = paired_comparisons(a, bb, a >= 0.5, bb >= 0.5, resample_weights(n, b=b, seed=seed)) if n else []
        # Invalid outputs as missing: only samples with a valid score on both sides.
        keep = np.isfinite(sa) & np.isfinite(sb)
        va, vb = (sa >= 0.5) & keep, (sb >= 0.5) & keep
        p_missing = np.atleast_1d(mcnemar_exact((va & ~vb & keep).sum(1), (~va & vb & keep).sum(1)))
        with np.errstate(invalid="ignore", divide="ignore"):
            diff_missing = np.where(keep, sa - sb, 0).sum(1) / keep.sum(1)
        for j, (k, _) in enumerate(members):
            kind, family, ma, ca, mb, cb = specs[k]
            row = {"kind": kind, "family": family, "model_a": ma, "condition_a": ca, "model_b": mb, "condition_b": cb}
            if n:
                r = results[j]
                row.update(n=r.n, mean_a=r.mean_a, mean_b=r.mean_b, diff=r.diff, ci_low=r.ci_low, ci_high=r.ci_high,
                           p_bootstrap=r.p_bootstrap, b=r.b, c=r.c, p_mcnemar=r.p_mcnemar,
                           n_valid_pairs=int(keep[j].sum()), p_mcnemar_missing=float(p_missing[j]),
                           diff_missing=float(diff_missing[j]))
            else:
                row.update(n=0, mean_a=np.nan, mean_b=np.nan, diff=np.nan, ci_low=np.nan, ci_high=np.nan,
                           p_bootstrap=np.nan, b=0, c=0, p_mcnemar=np.nan, n_valid_pairs=0, p_mcnemar_missing=np.nan,
                           diff_missing=np.nan)
            out[k] = row
    return out


def check_comparable(trials: pd.DataFrame, info: dict[str, ConditionInfo]) -> None:
    """Refuse to compare runs made with different prompts (outside the prompt-variant block) or
    different dataset versions: raise ``ValueError`` naming what clashes."""
    headline = trials[~trials["condition_id"].map(lambda c: info.get(c) is not None and info[c].block == "prompt")]
    prompts = headline.groupby("prompt_id", observed=True)["model"].unique()
    if len(prompts) > 1:
        detail = "; ".join(f"{p}: {', '.join(map(str, ms))}" for p, ms in prompts.items())
        raise ValueError(f"runs use different prompt templates ({detail}); report one prompt id at a time")
    datasets = trials.groupby("dataset", observed=True)["model"].unique()
    if len(datasets) > 1:
        detail = "; ".join(f"{d}: {', '.join(map(str, ms))}" for d, ms in datasets.items())
        raise ValueError(f"runs use different dataset versions ({detail}); compare runs on the same data")


@dataclass
class Numbers:
    summary: pd.DataFrame
    diagnostics: pd.DataFrame
    operator_slopes: pd.DataFrame
    panel: pd.DataFrame
    option_orders: pd.DataFrame
    comparisons: pd.DataFrame


def compute(trials: pd.DataFrame, info: dict[str, ConditionInfo] | None = None, *, b: int = B_DEFAULT,
            seed: int = SEED_DEFAULT, model_pairs: bool = True) -> Numbers:
    """Every number of the protocol for the trials of one or many models."""
    info = info if info is not None else catalogue_info()
    check_comparable(trials, info)
    samples = per_sample(trials)
    summary = add_drops(condition_summary(trials, samples, b=b, seed=seed), info)
    return Numbers(
        summary=summary,
        diagnostics=model_diagnostics(summary, trials, info),
        operator_slopes=operator_slopes(summary, info),
        panel=panel_summary(summary, info),
        option_orders=option_order_summary(trials, summary, info),
        comparisons=comparisons(samples, summary, info, b=b, seed=seed, model_pairs=model_pairs),
    )


def trials_frame(records: Iterable[dict]) -> pd.DataFrame:
    """A trial table from per-sample records (``sceval_record`` dicts)."""
    rows = [(r.get("model") or "unknown", r["condition_id"], r["sample_id"], r["variant"],
             np.nan if r.get("correct") is None else float(r["correct"]), r.get("invalid"),
             r.get("n_options") or 4, r.get("prompt_id"), r.get("dataset"), r.get("parsed_answer_original_key"))
            for r in records]
    return pd.DataFrame(rows, columns=list(TRIAL_COLUMNS))
