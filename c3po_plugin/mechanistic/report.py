"""The probe report: C3PO App. F's tables from ``faultline probe`` folders (one per model).

Written to the report folder as ``report.md`` (every table), one CSV per table, ``report.json``,
Figure 5 (attention budget per modality) and, with verdicts, Figure 4 (Delta H with CIs), PNG + PDF:

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

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from c3po_plugin.mechanistic import profiles
from c3po_plugin.mechanistic.runner import PROBES, RUN_FILE
from c3po_plugin.report.reader import read_runs as read_c3po
from faultline_eval.core.stats import SEED_DEFAULT, bootstrap_means, percentile_interval, resample_weights
from faultline_eval.core.store import read_records, write_atomic


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


def build_tables(
    runs: list[dict], records: pd.DataFrame, verdicts: Sequence[str] | None = None
) -> dict[str, pd.DataFrame]:
    e1, e2, e3 = _alpha_columns(_ok(records, "e1")), _ok(records, "e2"), _ok(records, "e3")
    tables: dict[str, pd.DataFrame] = {}

    budget = []
    for label, group in e1.groupby("label") if not e1.empty else []:
        budget.append(
            {
                "model": label,
                "n": len(group),
                **{f"alpha_{m}": group[f"alpha_{m}"].mean() for m in ("text", "audio", "image")},
                "mid_entropy_bits": group["mid_entropy"].mean(),
                "argmin_depth": group["argmin_depth"].mean(),
            }
        )
    tables["attention_budget"] = pd.DataFrame(
        budget, columns=["model", "n", "alpha_text", "alpha_audio", "alpha_image", "mid_entropy_bits", "argmin_depth"]
    )

    cc_ic, tiers, depth = [], [], []
    for label, group in e1.groupby("label") if not e1.empty else []:
        by = {c: group[group["category"] == c] for c in ("cc", "ic")}
        vectors = {c: by[c][["alpha_text", "alpha_audio", "alpha_image"]].mean().to_numpy() for c in by}
        cosine = (
            float(vectors["cc"] @ vectors["ic"] / np.linalg.norm(vectors["cc"]) / np.linalg.norm(vectors["ic"]))
            if len(by["cc"]) and len(by["ic"])
            else np.nan
        )
        diff, lo, hi = difference_ci(by["cc"]["mid_entropy"], by["ic"]["mid_entropy"])
        cc_ic.append(
            {
                "model": label,
                "n_cc": len(by["cc"]),
                "n_ic": len(by["ic"]),
                "cos_cc_ic": cosine,
                "mid_entropy_cc_minus_ic": diff,
                "ci_low": lo,
                "ci_high": hi,
            }
        )
        row: dict[str, Any] = {"model": label}
        for tier in sorted(group["tier"].dropna().unique()):
            cc = by["cc"][by["cc"]["tier"] == tier]["alpha_audio"]
            ic = by["ic"][by["ic"]["tier"] == tier]["alpha_audio"]
            row[f"T{int(tier)}"] = (
                (cc.mean() - ic.mean()) if len(cc) and len(ic) else (cc.mean() if len(cc) else np.nan)
            )
            row[f"T{int(tier)}_kind"] = "cc-ic" if len(cc) and len(ic) else ("cc only" if len(cc) else "ic only")
        tiers.append(row)
        for category in ("cc", "ic"):
            mean, lo, hi = mean_ci(by[category]["argmin_depth"])
            depth.append(
                {
                    "model": label,
                    "category": category,
                    "n": len(by[category]),
                    "argmin_depth": mean,
                    "ci_low": lo,
                    "ci_high": hi,
                }
            )
    tables["cc_ic"] = pd.DataFrame(cc_ic)
    tables["tier_gap"] = pd.DataFrame(tiers)
    tables["argmin_depth"] = pd.DataFrame(depth)

    latent = []
    for label, group in e2.groupby("label") if not e2.empty else []:
        latent.append(
            {
                "model": label,
                "n": len(group),
                **{
                    c: group[c].astype(float).mean()
                    for c in ("latent_recovery", "latent_audio", "latent_image")
                    if c in group
                },
            }
        )
    tables["latent"] = pd.DataFrame(latent)

    fidelity = []
    for (label, category), group in e3.groupby(["label", "category"], dropna=False) if not e3.empty else []:
        fidelity.append(
            {
                "model": label,
                "category": category,
                "n": len(group),
                "audio_fidelity": group["audio_fidelity"].astype(float).mean(),
                "image_fidelity": group["image_fidelity"].astype(float).mean(),
                "sections_found": group["sections_found"].mean(),
            }
        )
    tables["fidelity"] = pd.DataFrame(fidelity)
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
    tables["fidelity_correlation"] = pd.DataFrame(pairs, columns=["model_a", "model_b", "n", "pearson_r"])

    correctness = _correctness(verdicts)
    if correctness is not None and not e1.empty:
        joined = e1.merge(correctness, on=["label", "sample_id"])
        joined["z"] = joined.groupby("label")["mid_entropy"].transform(
            lambda x: (x - x.mean()) / x.std(ddof=0) if x.std(ddof=0) > 0 else x * 0
        )
        rows, absolute = [], []
        for (label, category), group in joined.groupby(["label", "category"]):
            diff, lo, hi = difference_ci(
                group[group["correct"]]["mid_entropy"], group[~group["correct"]]["mid_entropy"]
            )
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
                {
                    "model": label,
                    "category": category,
                    "mid_entropy_correct": group[group["correct"]]["mid_entropy"].mean(),
                }
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
        tables["entropy_correctness"] = pd.DataFrame(rows)
        tables["entropy_correct"] = pd.DataFrame(absolute)

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


def _markdown(table: pd.DataFrame) -> str:
    if table.empty:
        return "_no rows_\n"
    shown = table.copy()
    for column in shown.columns:
        if shown[column].dtype.kind == "f":
            shown[column] = shown[column].map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
    header = "| " + " | ".join(map(str, shown.columns)) + " |"
    lines = [header, "|" + "---|" * len(shown.columns)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in shown.itertuples(index=False)]
    return "\n".join(lines) + "\n"


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


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, out: Path, name: str) -> list[str]:
    paths = [str(out / f"{name}.png"), str(out / f"{name}.pdf")]
    fig.savefig(paths[0], dpi=300, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight")
    _pyplot().close(fig)
    return paths


def gap_figure(gaps: pd.DataFrame, out: Path) -> list[str]:
    """Figure 4: Delta H (judge-correct minus incorrect) per model and category, 95% CIs."""
    rows = gaps.dropna(subset=["delta_h_bits"])
    if rows.empty:
        return []
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 0.45 * len(rows) + 1.6))
    labels = [f"{m} ({c.upper()})" for m, c in zip(rows["model"], rows["category"])]
    y = np.arange(len(rows))
    error = np.abs(np.vstack([rows["delta_h_bits"] - rows["ci_low"], rows["ci_high"] - rows["delta_h_bits"]]))
    ax.errorbar(rows["delta_h_bits"], y, xerr=np.nan_to_num(error), fmt="o", color="#4c72b0", capsize=3)
    ax.axvline(0, color="grey", linewidth=0.8)
    ax.set_yticks(y, labels)
    ax.set_xlabel("mid-layer entropy, correct minus incorrect (bits; 95% bootstrap CI)")
    fig.tight_layout()
    return _save(fig, out, "entropy_correctness")


def budget_figure(budget: pd.DataFrame, out: Path) -> list[str]:
    """Figure 5: stacked attention shares per model (PNG at 300 dpi and PDF)."""
    if budget.empty:
        return []
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 0.6 * len(budget) + 1.8))
    left = np.zeros(len(budget))
    for column, colour in (("alpha_text", "#4c72b0"), ("alpha_audio", "#dd8452"), ("alpha_image", "#55a868")):
        ax.barh(budget["model"], budget[column], left=left, color=colour, label=column.replace("alpha_", ""))
        left += budget[column].to_numpy()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of attention mass (mean over layers, steps, samples)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=3, frameon=False)
    fig.tight_layout()
    return _save(fig, out, "attention_budget")


def write_report(folders: Sequence[str | Path], output: str | Path, *, verdicts: Sequence[str] | None = None) -> dict:
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    runs, records = read_probe_runs(folders)
    tables = build_tables(runs, records, verdicts)
    files = []
    sections = ["# Mechanistic probes (C3PO App. F)\n"]
    for name in ["coverage", *[n for n in TITLES if n != "coverage"]]:
        if name not in tables:
            continue
        tables[name].to_csv(out / f"{name}.csv", index=False)
        files.append(str(out / f"{name}.csv"))
        sections.append(f"## {TITLES[name]}\n\n{_markdown(tables[name])}")
    if "entropy_correctness" not in tables:
        sections.append(
            "_Tables 10 and 11 need judge verdicts: pass `--verdicts` with the lmms-eval output of the same "
            "models on C3PO._\n"
        )
    write_atomic(out / "report.md", "\n".join(sections))
    files += [str(out / "report.md"), *budget_figure(tables["attention_budget"], out)]
    if "entropy_correctness" in tables:
        files += gap_figure(tables["entropy_correctness"], out)
    summary = {
        "runs": [{k: r.get(k) for k in ("label", "model", "pretrained", "family", "blocked", "counts")} for r in runs],
        "tables": {name: json.loads(t.to_json(orient="records")) for name, t in tables.items()},
    }
    write_atomic(out / "report.json", json.dumps(summary, indent=2) + "\n")
    files.append(str(out / "report.json"))
    return {"files": files, "tables": tables}
