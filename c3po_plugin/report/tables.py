"""The C3PO report's tables: each builder returns ``(shown, raw, trial_links)`` for a
:class:`faultline_eval.core.tables.Table` (``shown`` formatted, in percentage points, for Markdown
and LaTeX; ``raw`` fractions for CSV; per shown cell the trials behind the number: the templates
of its group (:func:`template_groups`), the model, and for failure modes the mode)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from c3po_plugin import metrics
from c3po_plugin.failure_modes import MODES
from c3po_plugin.templates import registry
from faultline_eval.core.tables import Body, Selector, pp, trial_links, trials_in

#: Table 12's column names (dom-multi: several agreeing modalities; "dominance" sums the dom-* columns).
MODE_HEADINGS = {
    "audio_dominance": "dom-aud",
    "visual_dominance": "dom-img",
    "text_dominance": "dom-txt",
    "joint_dominance": "dom-multi",
    "incomplete_fusion": "inc-fus",
    "other": "other",
    "dominance": "dominance",
}


def with_ci(acc: float, low: float, high: float) -> str:
    """``"45.0 [40.1, 50.2]"``: accuracy and its interval in points."""
    return pp(acc) if not np.isfinite(acc) else f"{pp(acc)} [{pp(low)}, {pp(high)}]"


def template_name(template_id: str) -> str:
    return registry().get(template_id).name if template_id in registry() else template_id


def template_label(template_id: str) -> str:
    """``"CC08 CausalMisattribution"``: id and name, as tables and figures name a template."""
    name = template_name(template_id)
    return template_id if name == template_id else f"{template_id} {name}"


def template_groups(trials_frame: pd.DataFrame) -> dict[str, list[str]]:
    """Each group a number can stand for (Table 3's ``"IC T1"`` cells, ``"IC"``/``"CC"``,
    ``"Overall"``, a template id, and ``"all"``, the failure tables' every template) -> the
    template ids of the trials in it."""
    t = trials_frame[["template_id", "category", "tier"]].drop_duplicates().astype({"template_id": str})
    groups: dict[str, list[str]] = {metrics.OVERALL: sorted(t["template_id"].unique())}
    groups["all"] = groups[metrics.OVERALL]
    for (category, tier), g in t.groupby(["category", "tier"]):
        groups[metrics.cell_name(category, tier)] = sorted(g["template_id"].unique())
    for category, g in t.groupby("category"):
        groups[str(category).upper()] = sorted(g["template_id"].unique())
    return {**groups, **{tid: [tid] for tid in groups["all"]}}


def _trials_of(groups: dict[str, list[str]], group: str, model: str, **where: str) -> Selector | None:
    """The trials behind one (model, group) number; none for the human reference (no model trials)."""
    if model == metrics.HUMAN:
        return None
    return trials_in(groups.get(group, [group]), None if model == metrics.COHORT else model, **where)


def tier_table(acc: pd.DataFrame, groups: dict[str, list[str]] | None = None) -> Body:
    """Table 3: models x (IC T1 ... CC T4, Overall), accuracy in points; the CSV adds each cell's
    interval and sample count."""
    wide = metrics.tier_table(acc)
    shown = wide.map(pp).reset_index(names="model")
    links = (
        None
        if groups is None
        else trial_links(shown, [{c: _trials_of(groups, c, m) for c in wide.columns} for m in shown["model"]])
    )
    long = acc[acc["level"].isin(["cell", "overall"])].set_index(["model", "group"])
    raw = pd.DataFrame({"model": wide.index})
    for column in wide.columns:
        for field in ("accuracy", "ci_low", "ci_high", "n_samples"):
            values = [long[field].get((m, column), np.nan) for m in wide.index]
            raw[column if field == "accuracy" else f"{column} {field}"] = (
                pd.array([None if pd.isna(v) else int(v) for v in values], dtype="Int64")
                if field == "n_samples"
                else values
            )
    return shown, raw, links


def template_table(acc: pd.DataFrame) -> Body:
    """Templates (registry order) x models: ``accuracy [CI] (n)``; the CSV is the long form."""
    t = acc[acc["level"] == "template"]
    models = metrics.models_of(t)
    templates = sorted(t["group"].unique(), key=metrics.group_rank)
    cells = t.set_index(["group", "model"])
    rows, links = [], []
    for tid in templates:
        row = {"template": tid, "name": template_name(tid)}
        links.append({"template": trials_in([tid]), **{m: _trials_of({}, tid, m) for m in models}})
        for model in models:
            if (tid, model) in cells.index:
                c = cells.loc[(tid, model)]
                row[model] = f"{with_ci(c['accuracy'], c['ci_low'], c['ci_high'])} ({int(c['n_samples'])})"
            else:
                row[model] = "–"
        rows.append(row)
    raw = t.drop(columns="level").rename(columns={"group": "template_id"})
    raw.insert(2, "template", raw["template_id"].map(template_name))
    shown = pd.DataFrame(rows)
    return shown, raw.reset_index(drop=True), trial_links(shown, links)


def failure_table(modes: pd.DataFrame, groups: dict[str, list[str]] | None = None) -> Body:
    """Per model and template: wrong answers, the share of each failure mode (Table 12's columns)
    and the dominance share (§4.3's dominance vs incomplete fusion split)."""
    shown = pd.DataFrame(
        {
            "model": modes["model"],
            "template": [t if t == "all" else template_label(t) for t in modes["template_id"]],
            "wrong": modes["wrong"],
            **{
                MODE_HEADINGS[m]: modes[f"share_{m}"].map(lambda x: "–" if not np.isfinite(x) else f"{100 * x:.0f}%")
                for m in (*MODES, "dominance")
            },
        }
    )
    if groups is None:
        return shown, modes, None
    links = []  # a wrong answer without a mode counts as "other" (the viewer shows it so)
    for row in modes.to_dict("records"):
        m, t = row["model"], row["template_id"]
        link = {
            "wrong": _trials_of(groups, t, m, verdict="=wrong") if row["wrong"] else None,
            "dominance": _trials_of(groups, t, m, verdict="=wrong", failure_mode="dominance")
            if row["dominance"]
            else None,
        }
        links.append(
            {
                **link,
                **{
                    MODE_HEADINGS[mode]: _trials_of(groups, t, m, verdict="=wrong", failure_mode=f"={mode}")
                    for mode in MODES
                    if row[mode]
                },
            }
        )
    return shown, modes, trial_links(shown, links)


def overall_table(
    ov: pd.DataFrame, judges: dict[str, list[str]] | None = None, groups: dict[str, list[str]] | None = None
) -> Body:
    """Per model: overall accuracy (#YES/#Total) with CI, the same with ungradable trials as
    missing, exact-match-only, IC, CC, coverage, judge and invalid counts, and the judge(s)."""

    def count(column: str) -> pd.Series:
        return ov[column].map(lambda x: "–" if pd.isna(x) else str(int(x)))

    graded = [", ".join((judges or {}).get(m) or ["–"]) for m in ov["model"]]
    shown = pd.DataFrame(
        {
            "model": ov["model"],
            "accuracy [95% CI]": [with_ci(a, lo, hi) for a, lo, hi in zip(ov["accuracy"], ov["ci_low"], ov["ci_high"])],
            "samples": ov["n_samples"],
            "ungradable as missing": ov["accuracy_gradable"].map(pp),
            "exact match only": ov["exact_accuracy"].map(pp),
            "IC": ov["ic_accuracy"].map(pp),
            "CC": ov["cc_accuracy"].map(pp),
            "coverage": ov["coverage"].map(lambda x: "–" if pd.isna(x) else f"{100 * x:.1f}%"),
            "judge decisions": count("judge_decisions"),
            "judge errors": count("judge_errors"),
            **{f"invalid: {k.replace('_', ' ')}": count(f"invalid_{k}") for k in metrics.INVALID},
            "graded by": graded,
        }
    )
    raw = ov.assign(graded_by=graded)
    if groups is None:
        return shown, raw, None
    links = []
    for row in ov.to_dict("records"):
        m = row["model"]
        every = _trials_of(groups, metrics.OVERALL, m)
        counted = {
            "judge decisions": ("judge_decisions", {"decided_by": "=judge"}),
            "judge errors": ("judge_errors", {"verdict": "=ungradable: judge error"}),
            **{
                f"invalid: {k.replace('_', ' ')}": (f"invalid_{k}", {"verdict": f"=invalid: {k}"})
                for k in metrics.INVALID
            },
        }
        links.append(
            {
                **dict.fromkeys(
                    ("accuracy [95% CI]", "samples", "ungradable as missing", "exact match only", "coverage"), every
                ),
                "IC": _trials_of(groups, "IC", m),
                "CC": _trials_of(groups, "CC", m),
                **{
                    c: _trials_of(groups, metrics.OVERALL, m, **where)
                    for c, (n, where) in counted.items()
                    if row.get(n) and row[n] == row[n]
                },
            }
        )  # a count of 0 (or none) opens nothing
    return shown, raw, trial_links(shown, links)
