"""The C3PO report's tables: each a (shown, raw) pair for :func:`sceval_plugin.report.tables.write_table`
(``shown`` formatted, in percentage points, for Markdown and LaTeX; ``raw`` fractions for CSV)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from c3po_plugin import metrics
from c3po_plugin.failure_modes import MODES
from c3po_plugin.templates import registry
from sceval_plugin.report.tables import pp

Pair = tuple[pd.DataFrame, pd.DataFrame]
#: Table 12's column names (dom-multi: several agreeing modalities; "dominance" sums the dom-* columns).
MODE_HEADINGS = {"audio_dominance": "dom-aud", "visual_dominance": "dom-img", "text_dominance": "dom-txt",
                 "joint_dominance": "dom-multi", "incomplete_fusion": "inc-fus", "other": "other",
                 "dominance": "dominance"}


def with_ci(acc: float, low: float, high: float) -> str:
    """``"45.0 [40.1, 50.2]"``: accuracy and its interval in points."""
    return pp(acc) if not np.isfinite(acc) else f"{pp(acc)} [{pp(low)}, {pp(high)}]"


def template_name(template_id: str) -> str:
    return registry().get(template_id).name if template_id in registry() else template_id


def template_label(template_id: str) -> str:
    """``"CC08 CausalMisattribution"``: id and name, as tables and figures name a template."""
    name = template_name(template_id)
    return template_id if name == template_id else f"{template_id} {name}"


def tier_table(acc: pd.DataFrame) -> Pair:
    """Table 3: models x (IC T1 ... CC T4, Overall), accuracy in points; the CSV adds each cell's
    interval and sample count."""
    wide = metrics.tier_table(acc)
    shown = wide.map(pp).reset_index(names="model")
    long = acc[acc["level"].isin(["cell", "overall"])].set_index(["model", "group"])
    raw = pd.DataFrame({"model": wide.index})
    for column in wide.columns:
        for field in ("accuracy", "ci_low", "ci_high", "n_samples"):
            values = [long[field].get((m, column), np.nan) for m in wide.index]
            raw[column if field == "accuracy" else f"{column} {field}"] = (
                pd.array([None if pd.isna(v) else int(v) for v in values], dtype="Int64") if field == "n_samples"
                else values)
    return shown, raw


def template_table(acc: pd.DataFrame) -> Pair:
    """Templates (registry order) x models: ``accuracy [CI] (n)``; the CSV is the long form."""
    t = acc[acc["level"] == "template"]
    models = metrics.models_of(t)
    templates = sorted(t["group"].unique(), key=metrics.group_rank)
    cells = t.set_index(["group", "model"])
    rows = []
    for tid in templates:
        row = {"template": tid, "name": template_name(tid)}
        for model in models:
            if (tid, model) in cells.index:
                c = cells.loc[(tid, model)]
                row[model] = f"{with_ci(c['accuracy'], c['ci_low'], c['ci_high'])} ({int(c['n_samples'])})"
            else:
                row[model] = "–"
        rows.append(row)
    raw = t.drop(columns="level").rename(columns={"group": "template_id"})
    raw.insert(2, "template", raw["template_id"].map(template_name))
    return pd.DataFrame(rows), raw.reset_index(drop=True)


def failure_table(modes: pd.DataFrame) -> Pair:
    """Per model and template: wrong answers, the share of each failure mode (Table 12's columns)
    and the dominance share (§4.3's dominance vs incomplete fusion split)."""
    shown = pd.DataFrame({
        "model": modes["model"],
        "template": [t if t == "all" else template_label(t) for t in modes["template_id"]],
        "wrong": modes["wrong"],
        **{MODE_HEADINGS[m]: modes[f"share_{m}"].map(lambda x: "–" if not np.isfinite(x) else f"{100 * x:.0f}%")
           for m in (*MODES, "dominance")},
    })
    return shown, modes


def overall_table(ov: pd.DataFrame, judges: dict[str, list[str]] | None = None) -> Pair:
    """Per model: overall accuracy (#YES/#Total) with CI, the same with ungradable trials as
    missing, exact-match-only, IC, CC, coverage, judge and invalid counts, and the judge(s)."""
    def count(column: str) -> pd.Series:
        return ov[column].map(lambda x: "–" if pd.isna(x) else str(int(x)))

    graded = [", ".join((judges or {}).get(m) or ["–"]) for m in ov["model"]]
    shown = pd.DataFrame({
        "model": ov["model"],
        "accuracy [95% CI]": [with_ci(a, lo, hi) for a, lo, hi in zip(ov["accuracy"], ov["ci_low"], ov["ci_high"])],
        "samples": ov["n_samples"], "ungradable as missing": ov["accuracy_gradable"].map(pp),
        "exact match only": ov["exact_accuracy"].map(pp),
        "IC": ov["ic_accuracy"].map(pp), "CC": ov["cc_accuracy"].map(pp),
        "coverage": ov["coverage"].map(lambda x: "–" if pd.isna(x) else f"{100 * x:.1f}%"),
        "judge decisions": count("judge_decisions"), "judge errors": count("judge_errors"),
        **{f"invalid: {k.replace('_', ' ')}": count(f"invalid_{k}") for k in metrics.INVALID},
        "graded by": graded,
    })
    return shown, ov.assign(graded_by=graded)
