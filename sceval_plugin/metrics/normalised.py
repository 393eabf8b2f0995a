"""Normalised robustness, ImageNet-C style (Hendrycks & Dietterich 2019): a model's corruption error
per operator, summed over severities and divided by a reference model's summed error on the same
cells (CE), and the relative version that first subtracts each model's clean error (relative CE).
Averaged per modality and overall (mCE). 100 means "as robust as the reference"; above 100, worse.

The reference is pinned by name and source: a published row (``reference_from_published``: model,
table and data-file version) or any run the user names. Pure functions of accuracies in percent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from faultline_eval.core.published import PublishedTables

OVERALL = "overall"


@dataclass(frozen=True)
class RobustnessReference:
    name: str  # the model, e.g. "Gemini 3 Flash"
    source: str  # where its numbers come from, e.g. "sceval_v1 Table 6" or a run folder
    clean: float  # clean accuracy (%)
    cells: Mapping[tuple[str, int], float]  # (operator, severity) -> accuracy (%)

    @property
    def label(self) -> str:
        return f"{self.name} ({self.source})"


def reference_from_published(rows: PublishedTables, model: str, table: str) -> RobustnessReference:
    """A published row as the reference: Table 2's severity-70 matrix (15 models) or Table 6's
    10/30/50/70 grid (two deep-dive models); clean accuracy from Table 2's clean column."""
    cells: dict[tuple[str, int], float] = {}
    for column, value in rows.row(table, model).items():
        if column == "clean":
            continue
        operator, _, severity = column.partition("@")
        cells[(operator, int(severity) if severity else 70)] = float(value.value)
    if not cells:
        raise KeyError(f"{rows.version}: Table {table} has no row {model!r}; rows: {', '.join(rows.models(table))}")
    clean = float(rows.value("2", model, "clean").value)
    return RobustnessReference(model, f"{rows.version} Table {table}", clean, cells)


def corruption_errors(
    clean: float,
    cells: Mapping[tuple[str, int], float],
    reference: RobustnessReference,
    operators: Mapping[str, str],
) -> pd.DataFrame:
    """One row per operator the model was run on: its modality, the severities summed over (those the
    reference also has), the severities left out because the reference lacks them, CE and relative
    CE (%). A ratio the reference cannot anchor (no common severity, or a reference that loses no
    accuracy for the relative version) is NaN with the reason in ``note``, never dropped."""
    rows = []
    for operator in dict.fromkeys(op for op, _ in cells):
        severities = sorted(s for op, s in cells if op == operator)
        used = [s for s in severities if (operator, s) in reference.cells]
        error = sum(100.0 - cells[(operator, s)] for s in used)
        ref_error = sum(100.0 - reference.cells[(operator, s)] for s in used)
        excess = error - len(used) * (100.0 - clean)
        ref_excess = ref_error - len(used) * (100.0 - reference.clean)
        note = ""
        if not used:
            note = f"the reference has no {operator} cell at severities {severities}"
        elif ref_excess <= 0:
            note = "the reference loses no accuracy here: relative CE undefined"
        rows.append(
            {
                "operator": operator,
                "modality": operators.get(operator, "unknown"),
                "severities": used,
                "not_in_reference": [s for s in severities if s not in used],
                "ce": 100.0 * error / ref_error if used and ref_error > 0 else np.nan,
                "relative_ce": 100.0 * excess / ref_excess if used and ref_excess > 0 else np.nan,
                "note": note,
            }
        )
    return pd.DataFrame(
        rows, columns=["operator", "modality", "severities", "not_in_reference", "ce", "relative_ce", "note"]
    )


def mean_corruption_errors(per_operator: pd.DataFrame) -> pd.DataFrame:
    """mCE and relative mCE per modality and overall: the mean over the operators with a defined ratio
    (``operators`` counts them, so a mean over fewer operators is visible)."""
    groups = [*per_operator.groupby("modality", sort=False), (OVERALL, per_operator)]
    return pd.DataFrame(
        [
            {
                "modality": name,
                "mce": g["ce"].mean(),
                "relative_mce": g["relative_ce"].mean(),
                "operators": int(g["ce"].notna().sum()),
            }
            for name, g in groups
        ]
    )
