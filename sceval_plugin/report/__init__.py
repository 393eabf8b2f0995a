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

import numpy as np
import pandas as pd

from sceval_plugin.metrics.diagnostics import DiagnosticOptions
from sceval_plugin.metrics.protocol import ConditionInfo, catalogue_info, compute
from faultline_eval.core.stats import B_DEFAULT, SEED_DEFAULT
from sceval_plugin.report import plots, tables
from sceval_plugin.report import diagnostics_section as diagnostics
from sceval_plugin.report import no_option_section as no_option
from sceval_plugin.report import probe_section as probes
from sceval_plugin.report.reader import ReportError, read_runs
from faultline_eval.core.store import write_atomic

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
    unknown = sorted(set(map(str, trials["condition_id"].unique())) - set(info))
    if unknown:
        raise ReportError(f"conditions not in the installed catalogue: {', '.join(unknown[:5])}"
                          f"{' ...' if len(unknown) > 5 else ''}; install the plugin that defines them")
    return info


#: Table columns that describe the run rather than report a result.
_NOT_RESULTS = ["cells", "joint_cells", "chance", "missing_text_items_not_applicable"]


def _has_numbers(frame: pd.DataFrame) -> bool:
    """Whether a table holds at least one result (a finite number besides labels and counts)."""
    values = frame.select_dtypes("number").drop(columns=_NOT_RESULTS, errors="ignore")
    return bool(len(frame)) and bool(values.notna().to_numpy().any())


COHORTS = ("gold_preserved", "stress", "all")


def select_cohort(trials: pd.DataFrame, cohort: str, notes: list[str]) -> pd.DataFrame:
    """The trials of one cohort (Appendix D, G.7). ``gold_preserved`` (default): the paper's
    headline cohort, every trial not run on a stress-only cell (an annotation manifest marked the
    cell interpretable but not preserving the original gold); ``stress``: only those, for the
    descriptive stress-test tables; ``all``: both together. Clean trials are in every cohort, so
    drops under ``stress`` are measured against the same clean baseline."""
    if cohort not in COHORTS:
        raise ReportError(f"unknown cohort {cohort!r}: use one of {', '.join(COHORTS)}")
    # an optional column (EXTRA_COLUMNS): a trial table without it has no stress-only trials
    stress = (trials["cohort"] == "stress_only").to_numpy() if "cohort" in trials else np.zeros(len(trials), bool)
    if cohort == "all" or not stress.any() and cohort == "gold_preserved":
        return trials
    if cohort == "gold_preserved":
        notes.append(f"{int(stress.sum())} stress-only trial(s) (cells that do not preserve the original gold) "
                     "are left out of every table: see them with --cohort stress")
        return trials[~stress].reset_index(drop=True)
    if not stress.any():
        raise ReportError("--cohort stress: the logs hold no stress-only trials (runs with an SCEVAL_MANIFEST "
                          "whose cells are interpretable but not gold-preserving)")
    clean = trials["condition_id"].isin(["clean"]).to_numpy()
    return trials[stress | clean].reset_index(drop=True)


def build_report(run_dirs: Sequence[str | Path], out: str | Path, *, b: int = B_DEFAULT, seed: int = SEED_DEFAULT,
                 model_pairs: bool = True, progress: bool = True, delta_single: str = "modality",
                 options: DiagnosticOptions | None = None, figures: bool = True,
                 cohort: str = "gold_preserved") -> dict:
    """Read ``run_dirs``, compute, write everything under ``out``; returns a summary of what was written.
    Works on any subset of the catalogue: what the logs do not allow is listed in ``notes`` (and
    report.json), and a figure without data is skipped with its reason."""
    start = time.perf_counter()
    out = Path(out)
    trials, notes = read_runs(run_dirs, progress=progress)
    trials = select_cohort(trials, cohort, notes)
    info = _info_with_unknowns(trials, catalogue_info())
    trials, no_option_trials = no_option.split_trials(trials, info)  # never in the headline tables (Table 33)
    if trials.empty:
        raise ReportError("the logs hold only no-option trials; Table 35 compares them with the multiple-choice "
                          "runs of the same conditions: run --tasks sceval_no_option, which includes both")
    try:
        numbers = compute(trials, info, b=b, seed=seed, model_pairs=model_pairs, delta_single=delta_single,
                          holm_families=(options or DiagnosticOptions()).holm_families)
    except ValueError as exc:
        raise ReportError(str(exc)) from exc
    notes += numbers.notes
    from sceval_plugin import operators

    ops = [op for m in ("text", "vision", "audio") for op in operators.names(m)]
    drawings = plots.figures(numbers, info, ops)
    if not figures:
        drawings = {name: (draw, reason or "figures turned off (--no-figures)") for name, (draw, reason) in drawings.items()}
    skipped = {name: reason for name, (_, reason) in drawings.items() if reason}
    notes += [f"figure {name} not drawn: {reason}" for name, reason in skipped.items()]
    # Figures take longest to render: draw them in other processes while the tables are written.
    out.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=2) as pool:
        pending = [pool.submit(draw, numbers, info, out / name) for name, (draw, reason) in drawings.items()
                   if not reason]
        written, everything = _write_tables(numbers, info, ops, out, notes, trials, run_dirs, b, seed, delta_single,
                                            skipped)
        # The Appendix-C diagnostics: their own tables, and their entries added to report.json.
        written += diagnostics.write_diagnostics(numbers, trials, info, out, notes, options, everything, b=b,
                                                 seed=seed, delta_single=delta_single)
        opts = options or DiagnosticOptions()
        written += probes.write_probes(numbers, trials, info, out, notes, everything, b=b, seed=seed,
                                       trust_reading=opts.trust_reading, confidence_values=opts.confidence_values,
                                       figures=figures)
        if no_option_trials:
            notes.append(f"{no_option_trials} no-option trial(s) are reported in no_option_transfer and "
                         "no_option_agreement only, not in the trial counts or any other table")
            written += no_option.write_no_option(trials, info, run_dirs, out, notes, everything, b=b, seed=seed)
        written.append(write_json(out, everything))
        written += [path for future in pending for path in future.result()]
    return {"written": [str(p) for p in written], "notes": notes, "trials": len(trials),
            "models": sorted(map(str, trials["model"].unique())), "seconds": time.perf_counter() - start}


def _write_tables(numbers, info, ops, out: Path, notes: list[str], trials: pd.DataFrame, run_dirs, b: int,
                  seed: int, delta_single: str, skipped: dict[str, str]) -> tuple[list[Path], dict]:
    """Every table of the main report, and the report.json content (written by the caller, once
    the diagnostics have added theirs)."""
    written = []
    for name, caption, (shown, raw) in [
        ("single_modality_s70", "Severity-70 single-modality accuracy (%) with drop from clean (pp)",
         tables.single_matrix(numbers, info, ops)),
        ("joint", "Joint corruption: accuracy (%), drop from clean, and Δs = Δsingle (eq. 6), the drop below the "
                  f"weakest observed single cell of the cell's {'modalities' if delta_single == 'modality' else 'operators'}"
                  f"; * p<.05, ** p<.01 (McNemar, Holm within block, {tables.holm_scope(numbers.holm_families)})"
                  "; † from a partial single-modality grid",
         tables.joint_table(numbers, info)),
        ("single_baselines", "Δsingle baselines: the weakest observed single-modality cell and the grid observed",
         tables.single_baselines_table(numbers)),
        ("below_weakest_single", "Joint cells below the weakest single cell (Δsingle > 0; significant: Holm-adjusted "
                                 "McNemar p<.05), and under the same-severity comparison (C.3)",
         tables.below_single_table(numbers, info)),
        ("panel", "Lightweight panel (Table 8): block means (%), panel fault = mean of the four FS_S (pp), "
                  "C_asym = Acc(t70/v70) - Acc(t30/v70) (pp)", tables.panel_table(numbers, info)),
        ("controls", "Missing-modality, shortcut and option-order controls; ‡ the no-text control does not apply "
                     "to items without textual evidence beyond question and options (left out, see notes)",
         tables.controls_table(numbers, info)),
        ("diagnostics", "Fault-line scores FS_S over the 12-cell panel (Table 20), drop over every run cell of each "
                        "block, fragility slopes and shortcut gap", tables.diagnostics_table(numbers, info)),
    ]:
        if _has_numbers(raw):
            written += tables.write_table(out, name, shown, raw, caption)
        elif not raw.empty:
            notes.append(f"table {name} not written: none of its quantities can be computed from these logs")
    numbers.summary.to_csv(out / "conditions.csv", index=False)
    numbers.comparisons.to_csv(out / "comparisons.csv", index=False)
    written += [out / "conditions.csv", out / "comparisons.csv"]
    flips = numbers.comparisons[numbers.comparisons["flips"].astype(bool)] if not numbers.comparisons.empty else []
    if len(flips):
        notes.append(f"{len(flips)} comparison(s) change significance when invalid outputs count as missing instead "
                     "of incorrect (see 'flips' in comparisons.csv)")
    everything = {
        "settings": {"bootstrap_resamples": b, "seed": seed, "ci_level": 0.95, "alpha": 0.05,
                     "runs": [str(r) for r in run_dirs], "invalid_outputs": "missing for accuracy and drops; incorrect for significance",
                     "delta_single_baseline": delta_single, "holm_families": numbers.holm_families,
                     # one scheme (compute refuses a mix); None: logs from before records named it
                     "seed_scheme": next((int(n) for n in trials["seed_scheme"].dropna().unique()), None)
                     if "seed_scheme" in trials else None},
        "counts": {"trials": int(len(trials)), "models": sorted(map(str, trials["model"].unique())),
                   "conditions": int(trials["condition_id"].nunique())},
        "notes": notes,
        "figures_skipped": skipped,
        "conditions": json_records(numbers.summary),
        "diagnostics": json_records(numbers.diagnostics),
        "operator_slopes": json_records(numbers.operator_slopes),
        "panel": json_records(numbers.panel),
        "single_baselines": json_records(numbers.weakest_singles),
        "below_weakest_single": json_records(numbers.below_weakest_single),
        "not_applicable": json_records(numbers.not_applicable),
        "option_orders": json_records(numbers.option_orders),
        "comparisons": json_records(numbers.comparisons),
    }
    return written, everything


def write_json(out: Path, everything: dict) -> Path:
    """``out/report.json``: the one file with every number of the report."""
    write_atomic(out / "report.json", json.dumps(everything, indent=1, default=str))
    return out / "report.json"
