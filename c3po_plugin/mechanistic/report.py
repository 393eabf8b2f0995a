"""The probe report: C3PO App. F's tables from ``faultline probe`` folders (one per model).

Built as a :class:`~faultline_eval.core.report_writer.Report` value (:func:`probe_report`, pure) and
written by the one report writer of both benchmarks: each table as Markdown, CSV and LaTeX,
``index.md`` (what each file answers), ``report.json``, Figure 5 (attention budget per modality)
and, with verdicts, Figure 4 (Delta H with CIs), PNG + PDF with the same bytes for the same numbers:

* ``coverage`` (Table 4): per model, which probes ran on how many samples, the profile
  (:mod:`.profiles`) and, for a blocked model, the architectural reason;
* ``attention_budget`` (Figure 5): mean alpha per modality and mid-layer entropy;
* ``cc_ic`` (Table 5): cosine of the CC and IC attention fingerprints, and the CC - IC mid-layer
  entropy difference with a bootstrap 95% CI;
* ``tier_gap`` (Table 6): alpha_audio CC - IC per tier (CC alone where IC has no samples);
* ``latent`` (Table 7): E2 latent_recovery, latent_audio, latent_image;
* ``argmin_depth`` (Table 8): relative depth of the entropy minimum per category, bootstrap CI;
* ``fidelity`` (E3) and ``fidelity_correlation`` (Table 9): Pearson r of per-sample audio
  fidelity between model pairs (samples both models scored);
* with ``--verdicts`` (lmms-eval C3PO output folders of the same models, matched by model and
  sample): ``entropy_correctness`` (Table 10, Figure 4's numbers): Delta H = mean mid-layer
  entropy of judge-correct minus judge-incorrect samples per category with a bootstrap CI, and
  the pooled gap after within-model z-normalisation; ``entropy_correct`` (Table 11).

A sample counts as correct when the mean of its graded runs is at least one half; probe and
verdict runs are matched by their label, ``<model>:<pretrained>`` (as the C3PO report labels
runs), and sample id.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from c3po_plugin.mechanistic import profiles
from c3po_plugin.mechanistic.runner import PROBES, RUN_FILE
from c3po_plugin.report.reader import read_runs as read_c3po
from faultline_eval.core import figures, report_writer
from faultline_eval.core.report_writer import Report, Section
from faultline_eval.core.stats import SEED_DEFAULT, bootstrap_means, percentile_interval, resample_weights
from faultline_eval.core.store import read_records
from faultline_eval.core.tables import Table


def _ci(values: np.ndarray, seed: int = SEED_DEFAULT) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return bootstrap_means(values, resample_weights(len(values), seed=seed))[0]


def mean_ci(values: Any) -> tuple[float, float, float]:
    """Mean and bootstrap 95% CI (NaN when empty)."""
    values = np.asarray(list(values), dtype=float)
    if values.size == 0:
        return (np.nan,) * 3
    lo, hi = percentile_interval(_ci(values))
    return float(values.mean()), float(lo), float(hi)


def difference_ci(a: Any, b: Any) -> tuple[float, float, float]:
    """mean(a) - mean(b) of two independent groups with a bootstrap 95% CI (groups resampled
    apart, with different seeds)."""
    a, b = np.asarray(list(a), dtype=float), np.asarray(list(b), dtype=float)
    if a.size == 0 or b.size == 0:
        return (np.nan,) * 3
    lo, hi = percentile_interval(_ci(a) - _ci(b, SEED_DEFAULT + 1))
    return float(a.mean() - b.mean()), float(lo), float(hi)


def read_probe_runs(folders: Sequence[str | Path]) -> tuple[list[dict], pd.DataFrame]:
    """The run summaries and every probe record of the folders."""
    runs, records = [], []
    for folder in map(Path, folders):
        if not (folder / RUN_FILE).exists():
            raise FileNotFoundError(f"{folder}: no {RUN_FILE}; is this a `faultline probe` output folder?")
        run = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
        # as the C3PO report labels a run (model:pretrained), so that verdicts join on it
        run["label"] = label = f"{run['model']}:{run['pretrained']}" if run.get("pretrained") else run["model"]
        runs.append(run)
        for probe in PROBES:
            path = folder / f"{probe}.jsonl"
            if path.exists():
                records += [{**record, "label": label} for record in read_records(path)]
    return runs, pd.DataFrame(records)


def _ok(records: pd.DataFrame, probe: str) -> pd.DataFrame:
    if records.empty:
        return records
    return records[(records["probe"] == probe) & (records["status"] == "ok")].copy()


def _alpha_columns(e1: pd.DataFrame) -> pd.DataFrame:
    if e1.empty:
        return e1
    shares = np.array(e1["alpha_mean"].tolist(), dtype=float)
    return e1.assign(alpha_text=shares[:, 0], alpha_audio=shares[:, 1], alpha_image=shares[:, 2])


def _correctness(verdicts: Sequence[str] | None) -> pd.DataFrame | None:
    if not verdicts:
        return None

    trials, _ = read_c3po(verdicts)
    graded = trials.dropna(subset=["correct"])
    per_sample = graded.groupby(["model", "sample_id"])["correct"].mean().reset_index()
    per_sample["correct"] = per_sample["correct"] >= 0.5
    return per_sample.rename(columns={"model": "label"})


def _budget_table(e1: pd.DataFrame) -> pd.DataFrame:
    """Figure 5's numbers: per model, mean alpha per modality, mid-layer entropy and argmin depth."""
    budget = [
        {
            "model": label,
            "n": len(group),
            **{f"alpha_{m}": group[f"alpha_{m}"].mean() for m in ("text", "audio", "image")},
            "mid_entropy_bits": group["mid_entropy"].mean(),
            "argmin_depth": group["argmin_depth"].mean(),
        }
        for label, group in _by_label(e1)
    ]
    return pd.DataFrame(
        budget, columns=["model", "n", "alpha_text", "alpha_audio", "alpha_image", "mid_entropy_bits", "argmin_depth"]
    )


def _by_label(records: pd.DataFrame) -> Any:
    """The records of each run label (none when there are no records)."""
    return records.groupby("label") if not records.empty else []


def _cc_ic_row(label: str, by: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """Table 5's row: CC-IC fingerprint cosine and the mid-layer entropy gap with its CI."""
    vectors = {c: by[c][["alpha_text", "alpha_audio", "alpha_image"]].mean().to_numpy() for c in by}
    cosine = (
        float(vectors["cc"] @ vectors["ic"] / np.linalg.norm(vectors["cc"]) / np.linalg.norm(vectors["ic"]))
        if len(by["cc"]) and len(by["ic"])
        else np.nan
    )
    diff, lo, hi = difference_ci(by["cc"]["mid_entropy"], by["ic"]["mid_entropy"])
    return {
        "model": label,
        "n_cc": len(by["cc"]),
        "n_ic": len(by["ic"]),
        "cos_cc_ic": cosine,
        "mid_entropy_cc_minus_ic": diff,
        "ci_low": lo,
        "ci_high": hi,
    }


def _tier_row(label: str, group: pd.DataFrame, by: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """Table 6's row: alpha_audio CC - IC per tier (CC alone where IC has no samples)."""
    row: dict[str, Any] = {"model": label}
    for tier in sorted(group["tier"].dropna().unique()):
        cc = by["cc"][by["cc"]["tier"] == tier]["alpha_audio"]
        ic = by["ic"][by["ic"]["tier"] == tier]["alpha_audio"]
        row[f"T{int(tier)}"] = (cc.mean() - ic.mean()) if len(cc) and len(ic) else (cc.mean() if len(cc) else np.nan)
        row[f"T{int(tier)}_kind"] = "cc-ic" if len(cc) and len(ic) else ("cc only" if len(cc) else "ic only")
    return row


def _depth_rows(label: str, by: dict[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """Table 8's rows: the relative depth of the entropy minimum per category with its CI."""
    rows = []
    for category in ("cc", "ic"):
        mean, lo, hi = mean_ci(by[category]["argmin_depth"])
        rows.append(
            {
                "model": label,
                "category": category,
                "n": len(by[category]),
                "argmin_depth": mean,
                "ci_low": lo,
                "ci_high": hi,
            }
        )
    return rows


def _e1_tables(e1: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Tables 5, 6 and 8 from the E1 records."""
    cc_ic, tiers, depth = [], [], []
    for label, group in _by_label(e1):
        by = {c: group[group["category"] == c] for c in ("cc", "ic")}
        cc_ic.append(_cc_ic_row(label, by))
        tiers.append(_tier_row(label, group, by))
        depth += _depth_rows(label, by)
    return {"cc_ic": pd.DataFrame(cc_ic), "tier_gap": pd.DataFrame(tiers), "argmin_depth": pd.DataFrame(depth)}


def _latent_table(e2: pd.DataFrame) -> pd.DataFrame:
    """Table 7: E2 latent recovery per model."""
    latent = [
        {
            "model": label,
            "n": len(group),
            **{
                c: group[c].astype(float).mean()
                for c in ("latent_recovery", "latent_audio", "latent_image")
                if c in group
            },
        }
        for label, group in _by_label(e2)
    ]
    return pd.DataFrame(latent)


def _fidelity_tables(e3: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """E3 per model and category, and Table 9: Pearson r of audio fidelity between model pairs."""
    fidelity = [
        {
            "model": label,
            "category": category,
            "n": len(group),
            "audio_fidelity": group["audio_fidelity"].astype(float).mean(),
            "image_fidelity": group["image_fidelity"].astype(float).mean(),
            "sections_found": group["sections_found"].mean(),
        }
        for (label, category), group in (e3.groupby(["label", "category"], dropna=False) if not e3.empty else [])
    ]
    pairs = []
    if not e3.empty:
        wide = e3.pivot_table(index="sample_id", columns="label", values="audio_fidelity", aggfunc="mean")
        for i, a in enumerate(wide.columns):
            for b in wide.columns[i + 1 :]:
                both = wide[[a, b]].dropna()
                r = (
                    float(np.corrcoef(both[a], both[b])[0, 1])
                    if len(both) >= 2 and both[a].std() > 0 and both[b].std() > 0
                    else np.nan
                )
                pairs.append({"model_a": a, "model_b": b, "n": len(both), "pearson_r": r})
    return {
        "fidelity": pd.DataFrame(fidelity),
        "fidelity_correlation": pd.DataFrame(pairs, columns=["model_a", "model_b", "n", "pearson_r"]),
    }


def _correctness_tables(e1: pd.DataFrame, correctness: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Tables 10 and 11: mid-layer entropy of judge-correct against judge-incorrect samples."""
    joined = e1.merge(correctness, on=["label", "sample_id"])
    joined["z"] = joined.groupby("label")["mid_entropy"].transform(
        lambda x: (x - x.mean()) / x.std(ddof=0) if x.std(ddof=0) > 0 else x * 0
    )
    rows, absolute = [], []
    for (label, category), group in joined.groupby(["label", "category"]):
        diff, lo, hi = difference_ci(group[group["correct"]]["mid_entropy"], group[~group["correct"]]["mid_entropy"])
        rows.append(
            {
                "model": label,
                "category": category,
                "n_correct": int(group["correct"].sum()),
                "n_incorrect": int((~group["correct"]).sum()),
                "delta_h_bits": diff,
                "ci_low": lo,
                "ci_high": hi,
            }
        )
        absolute.append(
            {"model": label, "category": category, "mid_entropy_correct": group[group["correct"]]["mid_entropy"].mean()}
        )
    for category, group in joined.groupby("category"):
        diff, lo, hi = difference_ci(group[group["correct"]]["z"], group[~group["correct"]]["z"])
        rows.append(
            {
                "model": "pooled (within-model z)",
                "category": category,
                "n_correct": int(group["correct"].sum()),
                "n_incorrect": int((~group["correct"]).sum()),
                "delta_h_bits": np.nan,
                "z_gap_sd": diff,
                "ci_low": lo,
                "ci_high": hi,
            }
        )
    return {"entropy_correctness": pd.DataFrame(rows), "entropy_correct": pd.DataFrame(absolute)}


def build_tables(
    runs: list[dict], records: pd.DataFrame, verdicts: Sequence[str] | None = None
) -> dict[str, pd.DataFrame]:
    """Every table of App. F the records (and, with ``verdicts``, the judge verdicts) allow, by name."""
    e1, e2, e3 = _alpha_columns(_ok(records, "e1")), _ok(records, "e2"), _ok(records, "e3")
    tables = {"attention_budget": _budget_table(e1), **_e1_tables(e1), "latent": _latent_table(e2)}
    tables.update(_fidelity_tables(e3))
    correctness = _correctness(verdicts)
    if correctness is not None and not e1.empty:
        tables.update(_correctness_tables(e1, correctness))
    tables["coverage"] = coverage(runs, records, tables)
    return tables


def coverage(runs: list[dict], records: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Table 4: probes run per model, the profile and the architectural status."""
    fidelity = tables["fidelity"]
    per_model = (
        fidelity.groupby("model")[["audio_fidelity", "image_fidelity"]].mean()
        if not fidelity.empty
        else pd.DataFrame(columns=["audio_fidelity", "image_fidelity"])
    )
    cohort = {
        m: (float(per_model[f"{m}_fidelity"].median()) if len(per_model) >= 2 else None) for m in ("audio", "image")
    }
    budget = tables["attention_budget"].set_index("model") if not tables["attention_budget"].empty else None
    rows = []
    for run in runs:
        label = run["label"]
        mine = records[records["label"] == label] if not records.empty else records
        ran = {p: int(((mine["probe"] == p) & (mine["status"] == "ok")).sum()) if not mine.empty else 0 for p in PROBES}
        failed = {
            p: int(((mine["probe"] == p) & (mine["status"] == "error")).sum()) if not mine.empty else 0 for p in PROBES
        }
        alpha_text = depth = None
        if budget is not None and label in budget.index:
            alpha_text, depth = float(budget.loc[label, "alpha_text"]), float(budget.loc[label, "argmin_depth"])
        fid = {
            m: (
                float(per_model.loc[label, f"{m}_fidelity"])
                if label in per_model.index and pd.notna(per_model.loc[label, f"{m}_fidelity"])
                else None
            )
            for m in ("audio", "image")
        }
        profile, rule = profiles.classify(alpha_text, depth, fid, cohort)
        status = f"E1/E2 blocked: {run['blocked']}" if run.get("blocked") else f"E1/E2 spans from {run.get('family')}"
        rows.append(
            {
                "model": label,
                "profile": profile,
                "rule": rule,
                "architectural_status": status,
                **{f"{p}_samples": ran[p] for p in PROBES},
                **{f"{p}_errors": failed[p] for p in PROBES},
            }
        )
    return pd.DataFrame(rows)


def _shown(table: pd.DataFrame) -> pd.DataFrame:
    """A probe table as shown: floats to three decimals, a missing number left blank."""
    shown = table.copy()
    for column in shown.columns:
        if shown[column].dtype.kind == "f":
            shown[column] = shown[column].map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
    return shown


TITLES = {
    "coverage": "Table 4: cohort coverage",
    "attention_budget": "Figure 5: attention budget per modality (E1)",
    "cc_ic": "Table 5: CC-IC attention fingerprint and mid-layer entropy gap (E1)",
    "tier_gap": "Table 6: per-tier alpha_audio CC - IC (E1)",
    "latent": "Table 7: logit-lens latent recovery (E2)",
    "argmin_depth": "Table 8: relative depth of the entropy minimum (E1)",
    "fidelity": "E3: caption fidelity",
    "fidelity_correlation": "Table 9: Pearson r of audio fidelity (E3)",
    "entropy_correctness": "Table 10: mid-layer entropy, judge-correct minus incorrect (E1)",
    "entropy_correct": "Table 11: mid-layer entropy on judge-correct samples (E1)",
}

#: Figure 4's caption (the report index and the results viewer print it under the figure).
GAP_CAPTION = "Figure 4: mid-layer entropy of judge-correct minus judge-incorrect samples per model and category (bits; 95% bootstrap CI)"
#: Figure 5's caption.
BUDGET_CAPTION = "Figure 5: share of attention mass per modality and model (mean over layers, steps and samples)"


def gap_figure(gaps: pd.DataFrame, stem: Path) -> list[Path]:
    """Figure 4: Delta H (judge-correct minus incorrect) per model and category, 95% CIs."""
    rows = gaps.dropna(subset=["delta_h_bits"])
    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 0.45 * len(rows) + 1.6))
    labels = [f"{m} ({c.upper()})" for m, c in zip(rows["model"], rows["category"])]
    y = np.arange(len(rows))
    error = np.abs(np.vstack([rows["delta_h_bits"] - rows["ci_low"], rows["ci_high"] - rows["delta_h_bits"]]))
    ax.errorbar(rows["delta_h_bits"], y, xerr=np.nan_to_num(error), fmt="o", color="#4c72b0", capsize=3)
    ax.axvline(0, color="grey", linewidth=0.8)
    ax.set_yticks(y, labels)
    ax.set_xlabel("mid-layer entropy, correct minus incorrect (bits; 95% bootstrap CI)")
    fig.tight_layout()
    return figures.save(fig, stem)


def budget_figure(budget: pd.DataFrame, stem: Path) -> list[Path]:
    """Figure 5: stacked attention shares per model."""
    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 0.6 * len(budget) + 1.8))
    left = np.zeros(len(budget))
    for column, colour in (("alpha_text", "#4c72b0"), ("alpha_audio", "#dd8452"), ("alpha_image", "#55a868")):
        ax.barh(budget["model"], budget[column], left=left, color=colour, label=column.replace("alpha_", ""))
        left += budget[column].to_numpy()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of attention mass (mean over layers, steps, samples)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=3, frameon=False)
    fig.tight_layout()
    return figures.save(fig, stem)


def _figures(tables: dict[str, pd.DataFrame]) -> list[figures.Figure]:
    """Figure 5 when E1 ran, Figure 4 when verdicts gave a Delta H."""
    found = []
    if not tables["attention_budget"].empty:
        found.append(
            figures.Figure(
                "attention_budget", functools.partial(budget_figure, tables["attention_budget"]), BUDGET_CAPTION
            )
        )
    gaps = tables.get("entropy_correctness")
    if gaps is not None and not gaps.dropna(subset=["delta_h_bits"]).empty:
        found.append(figures.Figure("entropy_correctness", functools.partial(gap_figure, gaps), GAP_CAPTION))
    return found


def probe_report(runs: list[dict], tables: dict[str, pd.DataFrame]) -> Report:
    """The probe report as a value (pure): every table (coverage first), the figures, and in
    report.json the runs and every table's rows."""
    names = ["coverage", *[n for n in TITLES if n != "coverage"]]
    notes = [
        f"{TITLES[name]}: no rows (no probe records for it; CSV only)"
        for name in names
        if name in tables and not len(tables[name])
    ]
    if "entropy_correctness" not in tables:
        notes.append(
            "Tables 10 and 11 need judge verdicts: pass `--verdicts` with the lmms-eval output of the same "
            "models on C3PO."
        )
    section = Section(
        tables=[
            Table(name, TITLES[name], _shown(tables[name]) if len(tables[name]) else None, tables[name])
            for name in names
            if name in tables
        ],
        figures=_figures(tables),
        numbers={"tables": {name: json.loads(t.to_json(orient="records")) for name, t in tables.items()}},
        notes=notes,
        title="Mechanistic probes (C3PO App. F)",
    )
    head = {
        "runs": [{k: r.get(k) for k in ("label", "model", "pretrained", "family", "blocked", "counts")} for r in runs]
    }
    return Report(
        head, [section], title="Mechanistic probes (C3PO App. F)", open_first=("coverage.md", "attention_budget.png")
    )


def write_report(folders: Sequence[str | Path], output: str | Path, *, verdicts: Sequence[str] | None = None) -> dict:
    """Read the probe folders (and ``verdicts``), write the report under ``output`` through the one
    report writer; returns the files written and the tables."""
    runs, records = read_probe_runs(folders)
    tables = build_tables(runs, records, verdicts)
    written = report_writer.write_report(Path(output), probe_report(runs, tables))
    return {"files": [str(p) for p in written], "tables": tables}
