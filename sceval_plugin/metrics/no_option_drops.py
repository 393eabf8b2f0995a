"""Table 35's numbers: the multiple-choice drop, the no-option drop and their transfer Δ.

For each model and each corrupted condition of :data:`sceval_plugin.no_option_control.NO_OPTION_BASES`:

* **MC drop** = Acc_MC(clean) − Acc_MC(cell), from the multiple-choice runs of the same conditions;
* **no-option drop** = Acc_NO(clean) − Acc_NO(cell), from the no-option twins, where a trial is
  right when the grading scorer (the second) says CORRECT; ``partial_credit`` (default 0, the
  strict reading) is what a PARTIAL counts, 0.5 being the other reading;
* **transfer Δ** = no-option drop − MC drop (the paper's "TransferΔ is the no-option drop minus
  the multiple-choice drop"); positive: the damage shows more without options.

All three are computed on the **shared gold-preserved subset** (Table 33: "the no-option control is
evaluated only on a shared gold-preserved subset"): the samples that have trials in all four
runs (MC clean, MC cell, no-option clean, no-option cell). The annotation manifest
(``SCEVAL_MANIFEST``) removes, at task build time, every trial whose sample is invalid or
unanswerable or whose cell is not gold-preserving (:mod:`sceval_plugin.data.manifest`), and
``sceval report`` applies the manifest set when it runs once more (runs made without it), so a
sample present in all four is valid and gold-preserved in both clean and the cell. Without a
manifest (the embedded demo) nothing is removed and the subset is every sample the four runs
share. Per sample, a condition's score is its mean over variants with an invalid output counted
as wrong (a model that stops answering under corruption is not excused by it), so the three
differences are paired per sample; 95 % bootstrap intervals come from the shared resampling of
:mod:`faultline_eval.core.stats`. Each drop gets the headline's exact McNemar test (per-sample
score >= 0.5) and Δ a bootstrap p-value for Δ ≠ 0; each kind is Holm-adjusted over a model's
rows (one family per model).

Inter-scorer agreement: per model and no-option condition, the share of graded trials on which
the two scorers give the same label and Cohen's κ over the four labels
(:func:`faultline_eval.core.agreement.label_kappa`), over every graded trial and over those exact
match did not decide (where the scorers' own rules and judges act; C3PO's default reading).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from faultline_eval.core.agreement import label_kappa
from faultline_eval.core.stats import (
    B_DEFAULT,
    SEED_DEFAULT,
    bootstrap_means,
    bootstrap_p_value,
    holm,
    paired_comparisons,
    percentile_interval,
    resample_weights,
)
from sceval_plugin.conditions import catalogue
from sceval_plugin.no_option_control import NO_OPTION_BASES, condition_id

LABELS = ("CORRECT", "PARTIAL", "INCORRECT", "UNANSWERABLE")
NO_OPTION_COLUMNS = (
    "model",
    "condition_id",
    "sample_id",
    "variant",
    "label_1",
    "label_2",
    "exact_match",
    "invalid",
    "judge_1",
    "judge_2",
)
TRANSFER_COLUMNS = [
    "model",
    "condition",
    "row",
    "n_shared",
    "mc_clean",
    "mc_cell",
    "mc_drop",
    "mc_drop_low",
    "mc_drop_high",
    "p_mcnemar_mc",
    "p_holm_mc",
    "no_option_clean",
    "no_option_cell",
    "no_option_drop",
    "no_option_drop_low",
    "no_option_drop_high",
    "p_mcnemar_no_option",
    "p_holm_no_option",
    "transfer",
    "transfer_low",
    "transfer_high",
    "p_bootstrap",
    "p_holm",
    "no_option_drop_scorer_1",
]


def row_name(condition) -> str:
    """Table 35's name of a cell: ``drop_words@70``, ``TV t30/v70``, ``TVA t30/v70/a30``."""
    if len(condition.corruptions) == 1:
        _, op, severity = condition.corruptions[0]
        return f"{op}@{severity}"
    codes = "/".join(f"{modality[0]}{severity}" for modality, _, severity in condition.corruptions)
    return f"{condition.block.upper()} {codes}"


def no_option_frame(records) -> pd.DataFrame:
    """One row per no-option trial from its records: both scorers' labels, exact match, invalid."""
    rows = []
    for r in records:
        entry = r.get("no_option") or {}
        scorers = entry.get("scorers") or []
        labels = [s.get("label") for s in scorers] + [None, None]
        judges = [s.get("judge_id") for s in scorers] + [None, None]
        rows.append(
            (
                r.get("model") or "unknown",
                r["condition_id"],
                r["sample_id"],
                r["variant"],
                labels[0],
                labels[1],
                bool(scorers and scorers[-1].get("exact_match")),
                entry.get("invalid", r.get("invalid")),
                judges[0],
                judges[1],
            )
        )
    return pd.DataFrame(rows, columns=list(NO_OPTION_COLUMNS))


def _credit(labels: pd.Series, partial_credit: float) -> np.ndarray:
    return np.where(labels == "CORRECT", 1.0, np.where(labels == "PARTIAL", partial_credit, 0.0))


def _sample_scores(frame: pd.DataFrame, value: np.ndarray) -> pd.Series:
    """Per (model, condition, sample): the mean over variants of ``value`` (invalid = 0)."""
    keyed = frame[["model", "condition_id", "sample_id"]].astype(str).assign(value=value)
    return keyed.groupby(["model", "condition_id", "sample_id"])["value"].mean()


def _by_cell(scores: pd.Series) -> dict[tuple, pd.Series]:
    """:func:`_sample_scores` split by (model, condition): each cell's scores by sample id (one
    pass, not a look-up in the whole table per cell)."""
    return {key: part.droplevel([0, 1]) for key, part in scores.groupby(level=[0, 1], sort=False)}


def gold_preserved(frame: pd.DataFrame, manifest) -> pd.DataFrame:
    """The trials of ``frame`` the annotation manifest keeps (all of them without one): the same
    rule the tasks apply when they are built (:meth:`~sceval_plugin.data.manifest.Manifest.exclusion_reason`),
    for runs made before the manifest was set."""
    if manifest is None or frame.empty:
        return frame

    registry = catalogue()
    keep = [
        cid not in registry or manifest.exclusion_reason(str(sample), registry.get(cid), int(variant)) is None
        for cid, sample, variant in zip(frame["condition_id"].astype(str), frame["sample_id"], frame["variant"])
    ]
    return frame[np.asarray(keep, dtype=bool)]


def transfer_table(
    trials: pd.DataFrame,
    no_option: pd.DataFrame,
    info: dict,
    *,
    partial_credit: float = 0.0,
    manifest=None,
    b: int = B_DEFAULT,
    seed: int = SEED_DEFAULT,
) -> pd.DataFrame:
    """Table 35 per model (see the module docstring). ``trials``: the multiple-choice trial table
    (:data:`~sceval_plugin.metrics.protocol.TRIAL_COLUMNS`); ``no_option``: :func:`no_option_frame`;
    ``info``: condition id -> ConditionInfo; ``manifest``: an annotation manifest applied again
    (:func:`gold_preserved`). Rows whose four runs share no sample are left out."""
    # only the multiple-choice conditions Table 35 pairs with a twin are looked up (not the whole table)
    trials = trials[trials["condition_id"].isin(NO_OPTION_BASES).to_numpy()]
    trials, no_option = gold_preserved(trials, manifest), gold_preserved(no_option, manifest)
    mc = _by_cell(_sample_scores(trials, trials["correct"].fillna(0.0).to_numpy(float)))
    no = {
        k: _by_cell(
            _sample_scores(
                no_option, _credit(no_option[f"label_{k}"].where(no_option["invalid"].isna()), partial_credit)
            )
        )
        for k in (1, 2)
    }
    rows = []
    for model in sorted(set(map(str, no_option["model"]))):

        def scores(cells: dict[tuple, pd.Series], cid: str) -> pd.Series:
            return cells.get((model, cid), pd.Series(dtype=float))  # noqa: B023  (called within this iteration only)

        for base in NO_OPTION_BASES[1:]:
            four = [
                scores(mc, "clean"),
                scores(mc, base),
                scores(no[2], condition_id("clean")),
                scores(no[2], condition_id(base)),
            ]
            shared = sorted(set.intersection(*(set(s.index) for s in four)))
            if not shared or base not in info:
                continue
            mc_c, mc_x, no_c, no_x = (s.reindex(shared).to_numpy(float) for s in four)
            s1_c, s1_x = (scores(no[1], condition_id(c)).reindex(shared).to_numpy(float) for c in ("clean", base))
            weights = resample_weights(len(shared), b=b, seed=seed)
            # the two drops: paired bootstrap and exact McNemar (per-sample score >= 0.5), as the headline
            mc_cmp, no_cmp = paired_comparisons(
                np.stack([mc_c, no_c]),
                np.stack([mc_x, no_x]),
                np.stack([mc_c, no_c]) >= 0.5,
                np.stack([mc_x, no_x]) >= 0.5,
                weights,
            )
            delta = bootstrap_means((no_c - no_x) - (mc_c - mc_x), weights)
            low, high = percentile_interval(delta)
            rows.append(
                {
                    "model": model,
                    "condition": base,
                    "row": row_name(info[base]),
                    "n_shared": len(shared),
                    "mc_clean": mc_cmp.mean_a,
                    "mc_cell": mc_cmp.mean_b,
                    "mc_drop": mc_cmp.diff,
                    "mc_drop_low": mc_cmp.ci_low,
                    "mc_drop_high": mc_cmp.ci_high,
                    "p_mcnemar_mc": mc_cmp.p_mcnemar,
                    "no_option_clean": no_cmp.mean_a,
                    "no_option_cell": no_cmp.mean_b,
                    "no_option_drop": no_cmp.diff,
                    "no_option_drop_low": no_cmp.ci_low,
                    "no_option_drop_high": no_cmp.ci_high,
                    "p_mcnemar_no_option": no_cmp.p_mcnemar,
                    "transfer": no_cmp.diff - mc_cmp.diff,
                    "transfer_low": float(low[0]),
                    "transfer_high": float(high[0]),
                    "p_bootstrap": float(bootstrap_p_value(delta)[0]),
                    "no_option_drop_scorer_1": float(np.mean(s1_c - s1_x)),
                }
            )
    table = pd.DataFrame(rows, columns=TRANSFER_COLUMNS)
    for _, index in table.groupby("model").groups.items():  # one Holm family per model and p-value kind
        for p, adjusted in (
            ("p_mcnemar_mc", "p_holm_mc"),
            ("p_mcnemar_no_option", "p_holm_no_option"),
            ("p_bootstrap", "p_holm"),
        ):
            table.loc[index, adjusted] = holm(table.loc[index, p].to_numpy())
    return table


def agreement_table(no_option: pd.DataFrame) -> pd.DataFrame:
    """Per model and no-option condition (and ``(all)`` per model): trials graded by both scorers,
    the share they label alike and κ (over all graded trials, and over those exact match did not
    decide), trials left ungraded (invalid or a scorer failed), and the grading scorer's label counts."""

    def kappa(f: pd.DataFrame) -> float:
        return label_kappa(list(f["label_1"]), list(f["label_2"])) if len(f) else np.nan

    rows = []
    for model, frame in no_option.groupby(no_option["model"].astype(str)):
        groups = list(frame.groupby(frame["condition_id"].astype(str))) + [("(all)", frame)]
        for cid, f in groups:
            graded = f.dropna(subset=["label_1", "label_2"])
            decided = graded[~graded["exact_match"].astype(bool)]
            counts = graded["label_2"].value_counts()
            rows.append(
                {
                    "model": model,
                    "condition_id": cid,
                    "graded": len(graded),
                    "ungraded": len(f) - len(graded),
                    "agreement": float((graded["label_1"] == graded["label_2"]).mean()) if len(graded) else np.nan,
                    "kappa": kappa(graded),
                    "decided_without_exact_match": len(decided),
                    "kappa_without_exact_match": kappa(decided),
                    **{label.lower(): int(counts.get(label, 0)) for label in LABELS},
                }
            )
    return pd.DataFrame(rows)
