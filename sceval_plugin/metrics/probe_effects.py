"""The mechanism probes' numbers (paper Table 17; Appendices G.9-G.11) from the trial table.

Pure functions of the trial table, the per-condition summary and the paired comparisons of
:func:`sceval_plugin.metrics.protocol.compute` (whose clean-vs-condition McNemar tests are
Holm-corrected within each probe family: :attr:`ConditionInfo.family` is ``probe_<family>``).
Accuracies are fractions; drops and gaps are in accuracy points (fractions) too, the tables
print them in pp. Trials a probe did not apply to are left out (they are counted in the report's
``not_applicable``). Invalid answers follow the project's one rule everywhere below: missing
for every accuracy, drop, gap, slope and T_m (App. G.8: accuracy over the valid outputs), wrong
for the McNemar tests (App. H).

Definitions (our reading where the paper gives only a name; each says so):

- **temporal drop** (G.10): Acc(clean) − Acc(probe), per temporal probe; the family's number is
  the mean over the temporal probes run (Table 17's kinds; a named option such as
  ``middle_drop_1`` has its row, not a share of the mean).
- **desync curve and slope** (G.10): accuracy at each audio shift (clean at 0 s); the slope is the
  least-squares slope of accuracy on |shift| in seconds over the clean point and every shift run
  (both signs); the late (+) and early (−) sides also get a slope each.
- **budget gap** (G.10): Acc(8 frames) − Acc(budget) per budget (8 is the headline's F.2 budget);
  the family's number is the largest of them (the worst loss against the headline budget).
- **position gap** (G.10): max − min accuracy over the key-frame positions run.
- **distractor effect** (G.11): Acc(clean) − Acc(distractor) on the items the distractor applies
  to (those whose evidence does not need the modality inserted), per distractor modality; the
  family's number is the mean over Table 17's three (the ``appended_*`` options have their own
  columns).
- **trust bias** T_m (G.9): among the mismatch trials replacing modality m whose answer is valid and
  where "following the donor" is an answer distinct from the item's gold, the share whose answer
  follows the donor. Reading ``donor_gold`` (default): the donor's gold answer, mapped onto the
  item's options by text. Reading ``donor_clean_answer``: the answer the same model gave to the
  donor item on the clean condition, mapped the same way (needs the clean run of the donors). The
  shares following the item's own evidence (its gold) and neither are reported beside it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from faultline_eval.core.stats import (
    B_DEFAULT,
    SEED_DEFAULT,
    least_squares_slope,
    percentile_interval,
    resample_weights,
)
from sceval_plugin.metrics.protocol import ConditionInfo, per_sample, split_not_applicable
from sceval_plugin.metrics.reliability import CONFIDENCE_VALUES, calibration
from sceval_plugin.probe_conditions import HEADLINE_BUDGET, PROBE_FAMILIES, registry

TRUST_READINGS = ("donor_gold", "donor_clean_answer")


def probe_info(info: Mapping[str, ConditionInfo]) -> dict[str, ConditionInfo]:
    return {cid: c for cid, c in info.items() if c.probe is not None}


def probe_conditions(
    summary: pd.DataFrame,
    comparisons: pd.DataFrame,
    not_applicable: pd.DataFrame,
    info: Mapping[str, ConditionInfo],
    trials: pd.DataFrame,
) -> pd.DataFrame:
    """One row per (model, probe condition): family, probe, parameter, accuracy with its bootstrap
    interval, clean accuracy and drop from clean on the items the probe applied to, the
    clean-vs-probe McNemar p (raw and Holm-adjusted within the probe family), and the items the
    probe did not apply to.

    The project's one rule for invalid outputs (App. H, "treated as incorrect for significance
    testing"; F/G.8, accuracy "reported only over" valid items): ``accuracy``, ``clean_accuracy``
    and ``drop`` count an invalid answer as missing (``clean_accuracy`` is the mean over the
    applicable items' valid clean scores, so ``drop = clean_accuracy - accuracy`` recomputes from
    the trials); the McNemar p-values count it as wrong (the paired test of :mod:`.protocol`)."""
    columns = [
        "model",
        "family",
        "probe",
        "parameter",
        "condition_id",
        "accuracy",
        "ci_low",
        "ci_high",
        "n_samples",
        "clean_accuracy",
        "drop",
        "p_mcnemar",
        "p_holm",
        "significant",
        "not_applicable",
        "option",
    ]
    probes = probe_info(info)
    rows = summary[summary["condition_id"].isin(probes)]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    scored = per_sample(split_not_applicable(trials)[0])
    scored = scored.assign(
        model=scored["model"].astype(str),
        condition_id=scored["condition_id"].astype(str),
        sample_id=scored["sample_id"].astype(str),
    )
    clean = {
        m: s.set_index("sample_id")["score"]  # NaN: invalid, so left out of the mean
        for m, s in scored[scored["condition_id"] == "clean"].groupby("model", sort=False)
    }
    applied = scored[scored["condition_id"].isin(probes)].groupby(["model", "condition_id"])["sample_id"].agg(list)
    tests = (
        comparisons[comparisons["kind"] == "clean_vs_condition"].set_index(["model_b", "condition_b"])
        if len(comparisons)
        else pd.DataFrame(columns=["p_mcnemar", "p_holm", "significant"])
    )
    void = (
        not_applicable.groupby(["model", "condition_id"])["items"].sum()
        if len(not_applicable)
        else pd.Series(dtype=int)
    )
    out = []
    for _, r in rows.iterrows():
        family, name, parameter = probes[r["condition_id"]].probe
        key = (r["model"], r["condition_id"])
        test = tests.loc[key] if key in tests.index else None
        baseline = clean.get(r["model"])
        items = applied.get(key, [])
        clean_acc = float(baseline.reindex(items).mean()) if baseline is not None and len(items) else np.nan
        out.append(
            {
                "model": r["model"],
                "family": family,
                "probe": name,
                "parameter": parameter,
                "condition_id": r["condition_id"],
                "accuracy": r["accuracy"],
                "ci_low": r["ci_low"],
                "ci_high": r["ci_high"],
                "n_samples": int(r["n_samples"]),
                "clean_accuracy": clean_acc,
                "drop": clean_acc - r["accuracy"],
                "p_mcnemar": np.nan if test is None else test["p_mcnemar"],
                "p_holm": np.nan if test is None else test["p_holm"],
                "significant": bool(test is not None and test["significant"]),
                "not_applicable": int(void.get(key, 0)),
                # another reading than Table 17's (probes.OPTIONS): in its family's table, not its number
                "option": "probe_option" in probes[r["condition_id"]].suites,
            }
        )
    frame = pd.DataFrame(out, columns=columns)
    families = {f: k for k, f in enumerate(PROBE_FAMILIES)}
    registered = {name: k for k, name in enumerate(registry().names())}  # text, vision, audio
    frame["_f"] = frame["family"].map(lambda f: families.get(f, len(families)))
    frame["_n"] = frame["probe"].map(lambda n: registered.get(n, len(registered)))
    frame["_p"] = frame["parameter"].map(_sort_key)
    return (
        frame.sort_values(["model", "_f", "_n", "_p"], kind="stable")
        .drop(columns=["_f", "_n", "_p"])
        .reset_index(drop=True)
    )


def _sort_key(parameter) -> tuple:
    """Numbers in order, then words in the order of Table 17's lists."""
    if isinstance(parameter, (int, float)) and not isinstance(parameter, bool):
        return (0, float(parameter), "")
    words = (
        "random",
        "category",
        "answer",
        "frame_shuffle",
        "frame_reverse",
        "middle_drop",
        "middle_drop_1",
        "audio_shuffle",
        "audio_gaps",
        "default",
        "first",
        "middle",
        "last",
        "audio",
        "image",
        "text",
        "appended_audio",
        "appended_frame",
        "appended_text",
    )
    return (1, float(words.index(parameter)) if parameter in words else 99.0, str(parameter))


def desync_curve(table: pd.DataFrame) -> pd.DataFrame:
    """Per model, accuracy at each shift (seconds) with its interval, and clean at 0 s: the desync
    curve. Every point counts invalid answers as missing, the clean one too (the rows'
    ``clean_accuracy``, on the items the shifts applied to), so a model the shift does not change
    draws a flat line (slope 0)."""
    d = table[table["family"] == "desync"]
    columns = ["model", "shift_s", "accuracy", "ci_low", "ci_high"]
    if d.empty:
        return pd.DataFrame(columns=columns)
    points = d.assign(shift_s=d["parameter"].astype(float))[columns]
    clean = d.groupby("model", as_index=False)["clean_accuracy"].first().rename(columns={"clean_accuracy": "accuracy"})
    clean = clean.assign(shift_s=0.0, ci_low=np.nan, ci_high=np.nan)[columns]
    return pd.concat([points, clean]).sort_values(["model", "shift_s"]).reset_index(drop=True)


def family_metrics(table: pd.DataFrame) -> pd.DataFrame:
    """Per model, Table 17's one number per probe family (see the module docstring), plus the
    per-parameter budget gaps and distractor effects and the one-sided desync slopes. A family's
    number is over Table 17's conditions only; a named option's condition (``option``) gets its
    per-parameter column alone."""
    rows = []
    for model, everything in table.groupby("model", sort=True):
        t = everything[~everything["option"].astype(bool)] if "option" in everything else everything
        row: dict = {"model": model}
        by = {(r["family"], r["parameter"]): r["accuracy"] for _, r in t.iterrows()}
        temporal = t[t["family"] == "temporal"]
        row["temporal_drop"] = temporal["drop"].mean() if len(temporal) else np.nan
        curve = desync_curve(t)
        if len(curve) > 1:
            x, y = curve["shift_s"].to_numpy(float), curve["accuracy"].to_numpy(float)
            row["desync_slope"] = least_squares_slope(np.abs(x), y)
            row["desync_slope_late"] = least_squares_slope(x[x >= 0], y[x >= 0])
            row["desync_slope_early"] = least_squares_slope(-x[x <= 0], y[x <= 0])
        headline = by.get(("frame_budget", HEADLINE_BUDGET), np.nan)
        gaps = {p: headline - acc for (f, p), acc in by.items() if f == "frame_budget" and p != HEADLINE_BUDGET}
        for p, gap in gaps.items():
            row[f"budget_gap_{p}"] = gap
        row["budget_gap"] = max((g for g in gaps.values() if np.isfinite(g)), default=np.nan)
        positions = [acc for (f, _), acc in by.items() if f == "key_frame" and np.isfinite(acc)]
        row["position_gap"] = max(positions) - min(positions) if len(positions) > 1 else np.nan
        for _, r in everything[everything["family"] == "distractor"].iterrows():
            row[f"distractor_effect_{r['parameter']}"] = r["drop"]
        distractors = t[t["family"] == "distractor"]
        row["distractor_effect"] = distractors["drop"].mean() if len(distractors) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _donor_clean_keys(trials: pd.DataFrame) -> pd.Series:
    """(model, sample id) -> the original option key the model chose on the clean condition."""
    clean = trials[(trials["condition_id"] == "clean") & trials["answer"].notna()]
    clean = clean.sort_values("variant").drop_duplicates(["model", "sample_id"])
    return clean.set_index([clean["model"].astype(str), clean["sample_id"].astype(str)])["answer"].astype(str)


def trust_bias(
    trials: pd.DataFrame,
    info: Mapping[str, ConditionInfo],
    *,
    reading: str = "donor_gold",
    b: int = B_DEFAULT,
    seed: int = SEED_DEFAULT,
) -> pd.DataFrame:
    """G.9's trust bias T_m per (model, replaced modality, donor tier) and over all tiers
    (``tier`` = "all"), with 95 % bootstrap intervals over samples (a sample's trials of every
    tier resampled together: :func:`sample_cluster_intervals`); ``reading`` is one of
    :data:`TRUST_READINGS` (see the module docstring). Also: ``follows_item`` (answers equal to the
    item's gold), ``follows_neither``, ``determinable`` trials and ``undetermined`` ones (no option
    follows the donor, it is the item's gold, or the donor's clean answer is missing or invalid)."""
    if reading not in TRUST_READINGS:
        raise ValueError(f"trust-bias reading must be one of {TRUST_READINGS}, got {reading!r}")
    columns = [
        "model",
        "modality",
        "tier",
        "trust_bias",
        "ci_low",
        "ci_high",
        "follows_item",
        "follows_neither",
        "determinable",
        "undetermined",
        "reading",
    ]
    mismatch = {cid: c.probe for cid, c in probe_info(info).items() if c.probe[0] == "mismatch"}
    t = trials[
        trials["condition_id"].isin(list(mismatch)) & trials["not_applicable"].isna() & trials["correct"].notna()
    ].copy()
    if t.empty or "follows_donor" not in t:
        return pd.DataFrame(columns=columns)
    cid = t["condition_id"].astype(str)
    t["modality"] = cid.map(lambda c: mismatch[c][1].removeprefix("mismatch_"))
    t["tier"] = cid.map(lambda c: mismatch[c][2])
    if reading == "donor_gold":
        follows = t["follows_donor"].astype(object)
    else:
        clean = _donor_clean_keys(trials)
        keys = [clean.get((str(m), str(d))) if isinstance(d, str) else None for m, d in zip(t["model"], t["donor"])]
        follows = pd.Series([_mapped(m, k) for m, k in zip(t["donor_key_map"].astype(object), keys)], index=t.index)
    t["determinable"] = follows.notna()
    t["follows"] = (t["answer"].astype(object) == follows).astype(float).where(t["determinable"])
    t["model"], t["sample_id"] = t["model"].astype(str), t["sample_id"].astype(str)
    both = pd.concat([t, t.assign(tier="all")])
    both["undetermined"] = ~both["determinable"]
    counted = both[both["determinable"]]
    keys = ["model", "modality", "tier"]
    out = both.groupby(keys)[["determinable", "undetermined"]].sum().astype(int)
    found = sample_cluster_intervals(counted, keys, "follows", b=b, seed=seed).rename(columns={"follows": "trust_bias"})
    out = out.join(found[["trust_bias", "ci_low", "ci_high"]])
    out["follows_item"] = counted.groupby(keys)["correct"].mean().reindex(out.index)
    out["follows_neither"] = 1 - out["trust_bias"] - out["follows_item"]
    out = out.reset_index().assign(reading=reading)
    order = {"text": 0, "vision": 1, "audio": 2, "random": 0, "category": 1, "answer": 2, "all": 3}
    out = out.assign(_m=out["modality"].map(order), _t=out["tier"].map(order)).sort_values(["model", "_m", "_t"])
    return out[columns].reset_index(drop=True)


def sample_cluster_intervals(values: pd.DataFrame, keys: list[str], column: str, *, b: int, seed: int) -> pd.DataFrame:
    """Per ``keys`` group, the mean of ``column`` over its rows with a 95 % bootstrap interval that
    resamples *samples* (cluster bootstrap): a sample with several rows in a group (T_m over all
    three donor tiers holds up to three trials of one item) is drawn or left out with all of
    them, so the interval is as wide as the number of items warrants. Each resample's statistic
    is the ratio sum / count over the drawn samples' rows; with one row per sample this is
    :func:`faultline_eval.core.stats.grouped_intervals` (same resample matrix)."""
    v = values.dropna(subset=[column])
    per = v.groupby([*keys, "sample_id"], sort=True, observed=True)[column].agg(["sum", "count"])
    rows = {}
    for key, g in per.groupby(level=list(range(len(keys))), sort=True):
        sums, counts = g["sum"].to_numpy(float), g["count"].to_numpy(float)
        weights = resample_weights(len(sums), b=b, seed=seed)
        with np.errstate(invalid="ignore", divide="ignore"):
            low, high = percentile_interval((weights @ sums) / (weights @ counts))
        rows[key if isinstance(key, tuple) else (key,)] = [
            sums.sum() / counts.sum(),
            float(low),
            float(high),
            len(sums),
        ]
    index = pd.MultiIndex.from_tuples(list(rows), names=keys) if rows else pd.MultiIndex.from_tuples([], names=keys)
    return pd.DataFrame(list(rows.values()), index=index, columns=[column, "ci_low", "ci_high", "n"])


def _mapped(key_map, donor_key) -> str | None:
    """The item key the donor's option ``donor_key`` maps to ("-" and unknowns: None)."""
    if not isinstance(key_map, str) or not isinstance(donor_key, str) or len(donor_key) != 1:
        return None
    index = ord(donor_key) - ord("A")
    return key_map[index] if 0 <= index < len(key_map) and key_map[index] != "-" else None


def probe_calibration(
    trials: pd.DataFrame, info: Mapping[str, ConditionInfo], *, values: Mapping[str, float] = CONFIDENCE_VALUES
) -> pd.DataFrame:
    """G.11: ECE, ρ_oc and mean stated confidence (:func:`reliability.calibration`) on clean and
    under each probe condition, with the probe's family and parameter."""
    probes = probe_info(info)
    keep = trials["condition_id"].isin(["clean", *probes]) & trials["not_applicable"].isna()
    frame = calibration(trials[keep], values=values)
    if frame.empty:
        return frame
    frame.insert(1, "family", frame["condition_id"].map(lambda c: probes[c].probe[0] if c in probes else "clean"))
    frame.insert(2, "parameter", frame["condition_id"].map(lambda c: probes[c].probe[2] if c in probes else ""))
    return frame
