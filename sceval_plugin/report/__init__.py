"""``sceval report``: every number of the SCEval protocol from lmms-eval output folders.

Reads the per-sample logs of one or many models, computes the protocol's numbers with
:mod:`sceval_plugin.metrics`, and writes tables (Markdown, CSV, LaTeX), PNG figures and one
JSON file with every number.
"""

from __future__ import annotations

import json
import math
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Sequence

import pandas as pd

from sceval_plugin.metrics.diagnostics import DiagnosticOptions
from sceval_plugin.metrics.protocol import ConditionInfo, catalogue_info, compute
from sceval_plugin.metrics.stats import B_DEFAULT, SEED_DEFAULT
from sceval_plugin.report import diagnostics, plots, tables
from sceval_plugin.report.reader import ReportError, read_runs

__all__ = ["ReportError", "build_report"]


def json_records(frame: pd.DataFrame) -> list[dict]:
    """A frame's rows as JSON-ready dicts: NumPy scalars unwrapped, NaN and infinities as None."""
    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if hasattr(v, "item"):
            return clean(v.item())
        return v

    return [{k: clean(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def _info_with_unknowns(trials: pd.DataFrame, info: dict[str, ConditionInfo]) -> dict[str, ConditionInfo]:
    unknown = sorted(set(trials["condition_id"].astype(str)) - set(info))
    if unknown:
        raise ReportError(f"conditions not in the installed catalogue: {', '.join(unknown[:5])}"
                          f"{' ...' if len(unknown) > 5 else ''}; install the plugin that defines them")
    return info


def build_report(run_dirs: Sequence[str | Path], out: str | Path, *, b: int = B_DEFAULT, seed: int = SEED_DEFAULT,
                 model_pairs: bool = True, progress: bool = True, options: DiagnosticOptions | None = None) -> dict:
    """Read ``run_dirs``, compute, write everything under ``out``; returns a summary of what was written."""
    start = time.perf_counter()
    out = Path(out)
    trials, notes = read_runs(run_dirs, progress=progress)
    info = _info_with_unknowns(trials, catalogue_info())
    try:
        numbers = compute(trials, info, b=b, seed=seed, model_pairs=model_pairs)
    except ValueError as exc:
        raise ReportError(str(exc)) from exc
    from sceval_plugin import operators

    ops = [op for m in ("text", "vision", "audio") for op in operators.names(m)]
    # Figures take longest to render: draw them in other processes while the tables are written.
    out.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=2) as figures:
        pending = [figures.submit(plots.severity_curves, numbers, info, out / "severity_curves.png"),
                   figures.submit(plots.joint_scatter, numbers, info, out / "joint_scatter.png"),
                   figures.submit(plots.drop_heatmap, numbers, info, ops, out / "drop_heatmap.png")]
        written = _write_tables(numbers, info, ops, out, notes, trials, run_dirs, b, seed)
        # The Appendix-C diagnostics: their own tables, and their entries added to report.json.
        written += diagnostics.write_diagnostics(numbers, trials, info, out, notes, options, b=b, seed=seed)
        written += [future.result() for future in pending]
    return {"written": [str(p) for p in written], "notes": notes, "trials": len(trials),
            "models": sorted(map(str, trials["model"].unique())), "seconds": time.perf_counter() - start}


def _write_tables(numbers, info, ops, out: Path, notes: list[str], trials: pd.DataFrame, run_dirs, b: int,
                  seed: int) -> list[Path]:
    written = []
    for name, caption, (shown, raw) in [
        ("single_modality_s70", "Severity-70 single-modality accuracy (%) with drop from clean (pp)",
         tables.single_matrix(numbers, info, ops)),
        ("joint", "Joint corruption: accuracy (%), drop from clean, and Δs = change against the weakest single "
                  "component; * p<.05, ** p<.01 (McNemar, Holm within block)", tables.joint_table(numbers, info)),
        ("panel", "Lightweight panel summary", tables.panel_table(numbers)),
        ("controls", "Missing-modality, shortcut and option-order controls", tables.controls_table(numbers)),
        ("diagnostics", "Fault-line scores, fragility slopes and shortcut gap", tables.diagnostics_table(numbers)),
    ]:
        if not raw.empty:
            written += tables.write_table(out, name, shown, raw, caption)
    numbers.summary.to_csv(out / "conditions.csv", index=False)
    numbers.comparisons.to_csv(out / "comparisons.csv", index=False)
    written += [out / "conditions.csv", out / "comparisons.csv"]
    flips = numbers.comparisons[numbers.comparisons["flips"].astype(bool)] if not numbers.comparisons.empty else []
    if len(flips):
        notes.append(f"{len(flips)} comparison(s) change significance when invalid outputs count as missing instead "
                     "of incorrect (see 'flips' in comparisons.csv)")
    everything = {
        "settings": {"bootstrap_resamples": b, "seed": seed, "ci_level": 0.95, "alpha": 0.05,
                     "runs": [str(r) for r in run_dirs], "invalid_outputs": "missing for accuracy; incorrect for significance"},
        "counts": {"trials": int(len(trials)), "models": sorted(map(str, trials["model"].unique())),
                   "conditions": int(trials["condition_id"].nunique())},
        "notes": notes,
        "conditions": json_records(numbers.summary),
        "diagnostics": json_records(numbers.diagnostics),
        "operator_slopes": json_records(numbers.operator_slopes),
        "panel": json_records(numbers.panel),
        "option_orders": json_records(numbers.option_orders),
        "comparisons": json_records(numbers.comparisons),
    }
    (out / "report.json").write_text(json.dumps(everything, indent=1, default=str), encoding="utf-8")
    written.append(out / "report.json")
    return written
