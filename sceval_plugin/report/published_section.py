"""The paper's published models beside the user's (issue 40): each model's clean and severity-70
accuracies placed among SCEval Table 2's fifteen rows, its panel fault among Table 8's, with its
rank and the rank's interval; and its normalised robustness (ImageNet-C CE, relative CE) against a
reference pinned by name and data-file version. The published numbers are the paper's, not re-run:
the tables say so, and say what differs (items, prompt, frames, severities)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from faultline_eval.core.published import PUBLISHED_MARK, PublishedTables
from faultline_eval.core.report_writer import Section
from faultline_eval.core.tables import Table, json_records
from sceval_plugin.data.sceval_published import DEFAULT_REFERENCE, published_rows
from sceval_plugin.eval_prompts import STANDARD
from sceval_plugin.metrics.normalised import (
    RobustnessReference,
    corruption_errors,
    mean_corruption_errors,
    reference_from_published,
)
from sceval_plugin.metrics.protocol import ConditionInfo, Numbers

#: The paper's base set: N = 273 human-verified examples (Table 1).
PAPER_ITEMS = 273
#: The source of a reference taken from the report's own runs.
RUN_SOURCE = "a run of this report"


def _rank(value: float, published: list[float], higher_is_better: bool) -> int:
    """1 + the published rows strictly better than ``value``: the model's place among them."""
    return 1 + sum((p > value) if higher_is_better else (p < value) for p in published)


def _placed(
    model: str,
    quantity: str,
    value: float,
    low: float,
    high: float,
    published: dict[str, float],
    *,
    higher_is_better: bool,
) -> dict:
    values = list(published.values())
    ranks = sorted((_rank(low, values, higher_is_better), _rank(high, values, higher_is_better)))
    nearest = min(published, key=lambda m: abs(published[m] - value))
    return {
        "model": model,
        "quantity": quantity,
        "value": value,
        "ci_low": low,
        "ci_high": high,
        "rank": _rank(value, values, higher_is_better),
        "rank_low": ranks[0] if np.isfinite(low) else np.nan,
        "rank_high": ranks[1] if np.isfinite(high) else np.nan,
        "of": len(values) + 1,
        "published_min": min(values),
        "published_median": float(np.median(values)),
        "published_max": max(values),
        "nearest_published": nearest,
        "nearest_value": published[nearest],
    }


def _severity_70_cells(info: dict[str, ConditionInfo]) -> dict[str, str]:
    """condition id -> operator, for the single cells at severity 70."""
    return {cid: c.corruptions[0][1] for cid, c in info.items() if c.block == "single" and c.corruptions[0][2] == 70}


def placements(numbers: Numbers, info: dict[str, ConditionInfo], rows: PublishedTables) -> pd.DataFrame:
    """One row per (model, quantity) the paper also prints: accuracies in percent, higher is better;
    the panel fault in pp, lower is better (no interval: the panel table has none)."""
    s = numbers.summary
    cells = {"clean": "clean", **_severity_70_cells(info)}
    out = []
    for r in s[s["condition_id"].isin(list(cells))].itertuples(index=False):
        column = cells[r.condition_id]
        quantity = "clean accuracy" if column == "clean" else f"{column}@70 accuracy"
        out.append(
            _placed(
                r.model,
                quantity,
                100 * r.accuracy,
                100 * r.ci_low,
                100 * r.ci_high,
                rows.column("2", column),
                higher_is_better=True,
            )
        )
    for r in numbers.panel.itertuples(index=False):
        if np.isfinite(r.panel_fault):
            fault = 100 * r.panel_fault
            out.append(
                _placed(
                    r.model,
                    "panel fault (pp)",
                    fault,
                    np.nan,
                    np.nan,
                    rows.column("8", "panel_fault"),
                    higher_is_better=False,
                )
            )
    return pd.DataFrame(out)


def _single_cells(s: pd.Series, model: str, info: dict[str, ConditionInfo]) -> dict[tuple[str, int], float]:
    """(operator, severity) -> accuracy (%) of the model's single cells."""
    singles = {cid: c.corruptions[0] for cid, c in info.items() if c.block == "single"}
    return {(op, sev): 100 * s[(model, cid)] for cid, (_, op, sev) in singles.items() if (model, cid) in s.index}


def reference_named(
    name: str, numbers: Numbers, info: dict[str, ConditionInfo], rows: PublishedTables
) -> RobustnessReference:
    """A model of these runs, else a published row (Table 6's full grid before Table 2's severity 70)."""
    s = numbers.summary.set_index(["model", "condition_id"])["accuracy"]
    if (name, "clean") in s.index:
        return RobustnessReference(name, RUN_SOURCE, 100 * s[(name, "clean")], _single_cells(s, name, info))
    for table in ("6", "2"):
        if name in rows.models(table):
            return reference_from_published(rows, name, table)
    runs = sorted(map(str, numbers.summary["model"].unique()))
    raise ValueError(
        f"--robustness-reference {name!r} is neither a model of these runs ({', '.join(runs)}) nor a published "
        f"row of {rows.version} ({', '.join(rows.models('2'))})"
    )


def normalised_robustness(
    numbers: Numbers, info: dict[str, ConditionInfo], rows: PublishedTables, reference: str = DEFAULT_REFERENCE
) -> tuple[RobustnessReference, pd.DataFrame, pd.DataFrame]:
    """Per model and operator the CE and relative CE against the reference, and their means."""
    ref = reference_named(reference, numbers, info, rows)
    s = numbers.summary.set_index(["model", "condition_id"])["accuracy"]
    per_op, means = [], []
    for model in numbers.summary["model"].unique():
        cells = _single_cells(s, model, info)
        if (model, "clean") not in s.index or not cells:
            continue
        ops = corruption_errors(100 * s[(model, "clean")], cells, ref, rows.operators).assign(model=model)
        per_op.append(ops)
        means.append(mean_corruption_errors(ops).assign(model=model))
    return ref, (pd.concat(per_op) if per_op else pd.DataFrame()), (pd.concat(means) if means else pd.DataFrame())


def _differences(numbers: Numbers, trials: pd.DataFrame) -> tuple[str, list[str]]:
    clean = numbers.summary[numbers.summary["condition_id"] == "clean"]
    items = int(clean["n_samples"].max()) if len(clean) else 0
    prompts = sorted(map(str, trials["prompt_id"].dropna().unique())) if "prompt_id" in trials else []
    differs = (
        f"What differs from the paper: items, this run {items} vs the paper's {PAPER_ITEMS} human-verified base examples; "
        + (
            f"prompt, the same as the paper's ({STANDARD.id}, App. H); "
            if prompts == [STANDARD.id]
            else f"prompt, this run {', '.join(prompts) or 'unknown'} vs the paper's ({STANDARD.id}, App. H); "
        )
        + "frames, this run's task configuration vs the paper's frame-extracted visual input "
        "(App. F.2); severities, Table 2 and Table 8 at the paper's (severity 70; the 12-cell panel)."
    )
    notes = []
    if items < PAPER_ITEMS:
        notes.append(
            f"The published comparison is indicative: this run has {items} items, a subset of (or other than) the "
            f"paper's {PAPER_ITEMS}; ranks among the paper's models assume the same items."
        )
    return differs, notes


def _interval(lo: float, hi: float) -> str:
    return "" if not np.isfinite(lo) else f" [{lo:.1f}, {hi:.1f}]"


def published_section(
    numbers: Numbers, trials: pd.DataFrame, info: dict[str, ConditionInfo], reference: str = DEFAULT_REFERENCE
) -> Section:
    rows = published_rows()
    placed = placements(numbers, info, rows)
    if placed.empty:
        return Section(notes=["No published comparison: the run has no clean or severity-70 single cell of Table 2."])
    differs, notes = _differences(numbers, trials)
    shown = pd.DataFrame(
        {
            "model": placed["model"],
            "quantity": placed["quantity"],
            "this run": [
                f"{v:.1f}{_interval(lo, hi)}"
                for v, lo, hi in placed[["value", "ci_low", "ci_high"]].itertuples(index=False)
            ],
            "rank [interval]": [
                f"{r} of {n}" + ("" if not np.isfinite(lo) else f" [{int(lo)}, {int(hi)}]")
                for r, lo, hi, n in placed[["rank", "rank_low", "rank_high", "of"]].itertuples(index=False)
            ],
            f"paper's models ({PUBLISHED_MARK}): min / median / max": [
                f"{a:.1f} / {b:.1f} / {c:.1f}"
                for a, b, c in placed[["published_min", "published_median", "published_max"]].itertuples(index=False)
            ],
            "nearest published row": [
                f"{m} {v:.1f}" for m, v in placed[["nearest_published", "nearest_value"]].itertuples(index=False)
            ],
        }
    )
    caption = (
        f"Each model among the paper's fifteen (SCEval Tables 2 and 8, {rows.version}; {PUBLISHED_MARK}): "
        "accuracy (%) with its 95% bootstrap interval, the rank it would take among the paper's rows (1 = best; "
        "the interval is the rank at the accuracy interval's ends), and the paper's spread. " + differs
    )
    tables = [
        Table(
            "published_comparison",
            caption,
            shown,
            placed,
            question="Where would each model sit among the paper's fifteen models (Tables 2 and 8)?",
        )
    ]
    numbers_out = {
        "published_comparison": {"version": rows.version, "differences": differs, "rows": json_records(placed)}
    }
    ref, per_op, means = normalised_robustness(numbers, info, rows, reference)
    if not means.empty:
        shown_means = means.pivot(index="model", columns="modality", values=["mce", "relative_mce"])
        shown_means.columns = [f"{'mCE' if q == 'mce' else 'relative mCE'} {m}" for q, m in shown_means.columns]
        shown_means = shown_means.map(lambda x: "" if not np.isfinite(x) else f"{x:.0f}").reset_index()
        tables.append(
            Table(
                "normalised_robustness",
                f"Normalised robustness (ImageNet-C): per operator, the model's error (100 - accuracy) summed over the "
                f"severities it ran, divided by the reference's on the same cells (CE, %), and the relative CE that first "
                f"subtracts each model's clean error; mean over operators per modality and overall. 100 = as robust as the "
                f"reference, {ref.label}{'' if ref.source == RUN_SOURCE else f' ({PUBLISHED_MARK})'}; above 100 is worse. Per operator: normalised_robustness_operators.csv.",
                shown_means,
                means,
                question="How robust is each model relative to a fixed reference model (mCE, relative mCE)?",
            )
        )
        tables.append(Table("normalised_robustness_operators", "", None, per_op))
        numbers_out["normalised_robustness"] = {"reference": ref.label, "means": json_records(means)}
    return Section(tables=tables, numbers=numbers_out, notes=notes, title="Beside the paper's published models")
