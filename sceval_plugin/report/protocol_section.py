"""The protocol's part of ``sceval report``: report.json's head (settings and counts), the main
tables (single-modality, joint, panel, controls, diagnostics ...), ``conditions.csv`` and
``comparisons.csv``, and the figures. Each function returns a value
(:class:`~faultline_eval.core.report_writer.Section`); nothing is written here.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from faultline_eval.core.figures import Figure
from faultline_eval.core.report_writer import Section
from faultline_eval.core.tables import CONVENTIONS, Table, TableSpec, json_records
from sceval_plugin import operators
from sceval_plugin.metrics.protocol import ConditionInfo, Numbers
from sceval_plugin.report import plots, tables

#: Table columns that describe the run rather than report a result.
_NOT_RESULTS = ["cells", "joint_cells", "chance", "missing_text_items_not_applicable"]


def operator_names() -> list[str]:
    """The installed operators, text then vision then audio (the tables' and heatmap's column order)."""
    return [op for m in ("text", "vision", "audio") for op in operators.names(m)]


def head(
    numbers: Numbers, trials: pd.DataFrame, run_dirs: Sequence[str | Path], *, b: int, seed: int, delta_single: str
) -> dict[str, Any]:
    """report.json's first entries: the settings the numbers were computed with, the units and
    signs every table and figure follows, and the counts."""
    return {
        "settings": {
            "bootstrap_resamples": b,
            "seed": seed,
            "ci_level": 0.95,
            "alpha": 0.05,
            "runs": [str(r) for r in run_dirs],
            "invalid_outputs": "missing for accuracy and drops; incorrect for significance",
            "delta_single_baseline": delta_single,
            "holm_families": numbers.holm_families,
            # one scheme (compute refuses a mix); None: logs from before records named it
            "seed_scheme": next((int(n) for n in trials["seed_scheme"].dropna().unique()), None)
            if "seed_scheme" in trials
            else None,
        },
        "conventions": {**CONVENTIONS, "slope": tables.SLOPE_CONVENTION},
        "counts": {
            "trials": int(len(trials)),
            "models": sorted(map(str, trials["model"].unique())),
            "conditions": int(trials["condition_id"].nunique()),
        },
    }


def figures_section(numbers: Numbers, info: dict[str, ConditionInfo], ops: list[str], *, drawn: bool = True) -> Section:
    """The severity curves, joint scatter and drop heatmap the numbers can fill; each other one,
    or every one unless ``drawn``, is listed in ``figures_skipped`` with its reason."""
    found = plots.figures(numbers, info, ops)
    if not drawn:
        found = {
            name: (*rest, reason or "figures turned off (--no-figures)") for name, (*rest, reason) in found.items()
        }
    skipped = {name: reason for name, (*_, reason) in found.items() if reason}
    return Section(
        figures=[
            Figure(name, functools.partial(draw, numbers, info), caption)
            for name, (draw, caption, reason) in found.items()
            if not reason
        ],
        notes=[f"figure {name} not drawn: {reason}" for name, reason in skipped.items()],
        numbers={"figures_skipped": skipped},
        title="The fault-line picture",
    )


def _has_numbers(frame: pd.DataFrame) -> bool:
    """Whether a table holds at least one result (a finite number besides labels and counts)."""
    values = frame.select_dtypes("number").drop(columns=_NOT_RESULTS, errors="ignore")
    return bool(len(frame)) and bool(values.notna().to_numpy().any())


def _main_tables(numbers: Numbers, info: dict[str, ConditionInfo], ops: list[str], delta_single: str) -> list[Table]:
    joint_caption = (
        "Joint corruption: accuracy (%), drop from clean, and Δs = Δsingle (eq. 6), the drop below the "
        "weakest observed single cell of the cell's "
        f"{'modalities' if delta_single == 'modality' else 'operators'}"
        f"; * p<.05, ** p<.01 (McNemar, Holm within block, {tables.holm_scope(numbers.holm_families)})"
        "; † from a partial single-modality grid"
    )
    return [
        TableSpec(
            "single_modality_s70",
            "Severity-70 single-modality accuracy (%) with drop from clean (pp)",
            question="Which single-modality corruption hurts each model most at severity 70 (Table 2)?",
        ).of(tables.single_matrix(numbers, info, ops)),
        TableSpec(
            "joint",
            joint_caption,
            question="Does corrupting two or three modalities at once cost more than the worst single "
            "corruption (Δsingle, eq. 6), and is it significant?",
        ).of(tables.joint_table(numbers, info)),
        TableSpec(
            "single_baselines",
            "Δsingle baselines: the weakest observed single-modality cell and the grid observed",
            question="Which single cell is each model's Δsingle measured against, and how much of its grid was run?",
        ).of(tables.single_baselines_table(numbers)),
        TableSpec(
            "below_weakest_single",
            "Joint cells below the weakest single cell (Δsingle > 0; significant: "
            "Holm-adjusted McNemar p<.05), and under the same-severity comparison (C.3); max Δsingle: "
            "↓ below the weakest single cell, ↑ above it (pp)",
            question="How many joint cells fall below their weakest single cell, per combination (C.3)?",
        ).of(tables.below_single_table(numbers, info)),
        TableSpec(
            "panel",
            "Lightweight panel (Table 8): block means (%), panel fault = mean of the four FS_S (pp), "
            "C_asym = Acc(t70/v70) - Acc(t30/v70) (pp)",
            question="How fragile is each model on the 12-cell lightweight panel, and where is its "
            "strongest fault line (Table 8)?",
        ).of(tables.panel_table(numbers, info)),
        TableSpec(
            "controls",
            "Missing-modality, shortcut and option-order controls; ‡ the no-text control does not "
            "apply to items without textual evidence beyond question and options (left out, see notes)",
            question="Does each model use every modality (M_m), lean on text-only shortcuts (G) or on option order?",
        ).of(tables.controls_table(numbers, info)),
        TableSpec(
            "diagnostics",
            "Fault-line scores FS_S over the 12-cell panel (Table 20) and drop over every run cell of "
            "each block (pp, ↓ = below clean), fragility slopes S_m (pp per severity unit, Table 19) and "
            "shortcut gap G = Acc(text only) − chance (pp)",
            question="Which combination is each model's fault line (FS_S), and which channel decays fastest (S_m)?",
        ).of(tables.diagnostics_table(numbers, info)),
    ]


def tables_section(numbers: Numbers, info: dict[str, ConditionInfo], ops: list[str], delta_single: str) -> Section:
    """Every table of the main report the logs allow (a table none of whose quantities can be
    computed is left out with a note), conditions.csv and comparisons.csv (the CSV only), and
    their numbers for report.json."""
    notes = []
    written = []
    for table in _main_tables(numbers, info, ops, delta_single):
        if _has_numbers(table.raw):
            written.append(table)
        elif not table.raw.empty:
            notes.append(f"table {table.name} not written: none of its quantities can be computed from these logs")
    written += [
        Table(
            "conditions",
            "",
            None,
            numbers.summary,
            question="Every (model, condition): accuracy with its interval, drops, coverage and invalid "
            "outputs: the numbers behind every table (fractions)",
        ),
        Table(
            "comparisons",
            "",
            None,
            numbers.comparisons,
            question="Every paired test (clean vs condition, single vs joint, model vs model): McNemar "
            "p-values before and after Holm, with invalid outputs as incorrect and as missing",
        ),
    ]
    flips = numbers.comparisons[numbers.comparisons["flips"].astype(bool)] if not numbers.comparisons.empty else []
    if len(flips):
        notes.append(
            f"{len(flips)} comparison(s) change significance when invalid outputs count as missing instead "
            "of incorrect (see 'flips' in comparisons.csv)"
        )
    return Section(
        tables=written,
        notes=notes,
        title="Headline tables",
        numbers={
            "conditions": json_records(numbers.summary),
            "diagnostics": json_records(numbers.diagnostics),
            "operator_slopes": json_records(numbers.operator_slopes),
            "panel": json_records(numbers.panel),
            "single_baselines": json_records(numbers.weakest_singles),
            "below_weakest_single": json_records(numbers.below_weakest_single),
            "not_applicable": json_records(numbers.not_applicable),
            "option_orders": json_records(numbers.option_orders),
            "comparisons": json_records(numbers.comparisons),
        },
    )
