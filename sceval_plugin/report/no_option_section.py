"""The no-option control's part of ``sceval report``: Table 35 and the inter-scorer agreement.

No-option trials are split off the trial table before the protocol's numbers are computed
(Table 33: option manipulation is never mixed into headline tables); their records are read in
full here, for both scorers' labels (:mod:`sceval_plugin.metrics.no_option_drops` computes the numbers).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from faultline_eval.core.model_names import ModelNames
from faultline_eval.core.report_writer import Section
from faultline_eval.core.run_logs import results_for
from faultline_eval.core.tables import Table, drop, json_records, signed
from sceval_plugin.data.manifest import current_manifest
from sceval_plugin.metrics.drops import codes_of
from sceval_plugin.metrics.no_option_drops import agreement_table, no_option_frame, transfer_table
from sceval_plugin.no_option_control import BLOCK
from sceval_plugin.report import tables
from sceval_plugin.report.reader import in_processes, read_record, sample_files

SAMPLES_MARK = "_samples_sceval_no_option_"


def split_trials(trials: pd.DataFrame, info: dict) -> tuple[pd.DataFrame, int]:
    """The trial table without no-option trials, and how many were taken out."""
    # decided once per distinct condition, not per row (millions of rows, a few hundred conditions)
    codes, conditions = codes_of(trials["condition_id"])
    ours_of = [getattr(info.get(str(cid)), "block", None) == BLOCK for cid in conditions]
    ours = np.array([*ours_of, False])[codes]  # code -1 (missing) takes the last: not ours
    return trials[~ours], int(ours.sum())


#: The record fields :func:`~sceval_plugin.metrics.no_option_drops.no_option_frame` reads.
FRAME_FIELDS = ("model", "condition_id", "sample_id", "variant", "no_option", "invalid")


def _frame_fields(path: str) -> list[dict]:
    """:data:`FRAME_FIELDS` of every record of one no-option log (decoded in a worker: only
    these few fields travel back)."""
    return [
        {k: record[k] for k in FRAME_FIELDS if k in record}
        for record in (
            read_record(line, f"{path}:{number}")
            for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1)
            if line.strip()
        )
    ]


def read_no_option(run_dirs: Sequence[str | Path]) -> pd.DataFrame:
    """:func:`~sceval_plugin.metrics.no_option_drops.no_option_frame` of every no-option log under
    ``run_dirs``, models labelled as :func:`~sceval_plugin.report.reader.read_runs` labels them."""
    names = ModelNames.under(run_dirs)
    paths = [path for path in sample_files(run_dirs) if SAMPLES_MARK in path.name]
    records = []
    for path, fields in zip(paths, in_processes(_frame_fields, [str(p) for p in paths])):
        label = names.of(results_for(path))
        records += [{**r, "model": label} for r in fields] if label != "unknown" else fields
    return no_option_frame(records)


def _column(table: pd.DataFrame, name: str, p_holm: str, shown=drop) -> list[str]:
    """``↓48.9 [32.2, 65.6]**``: a drop (or, with ``shown=signed``, another difference) in points
    as every table writes it, its interval in the drop's sign and its Holm-adjusted mark."""
    return [
        f"{shown(m)} [{100 * lo:.1f}, {100 * hi:.1f}]{tables.significance_mark(p)}"
        for m, lo, hi, p in table[[name, f"{name}_low", f"{name}_high", p_holm]].itertuples(index=False)
    ]


def no_option_section(
    trials: pd.DataFrame, info: dict, run_dirs: Sequence[str | Path], no_option_trials: int, *, b: int, seed: int
) -> Section:
    """``no_option_transfer`` (Table 35), ``no_option_agreement`` and report.json's ``no_option``,
    when the logs hold no-option trials (``no_option_trials``, split off by :func:`split_trials`)."""
    if not no_option_trials:
        return Section()
    notes = [
        f"{no_option_trials} no-option trial(s) are reported in no_option_transfer and no_option_agreement "
        "only, not in the trial counts or any other table"
    ]
    frame = read_no_option(run_dirs)
    if frame.empty:
        return Section(notes=notes)
    transfer = transfer_table(trials, frame, info, manifest=current_manifest(), b=b, seed=seed)
    agreement = agreement_table(frame)
    scorers = sorted({tuple(s) for s in frame[["judge_1", "judge_2"]].dropna().itertuples(index=False)})
    found = []
    if transfer.empty:
        notes.append(
            "table no_option_transfer not written: no model has both multiple-choice and no-option runs of "
            "clean and a Table 35 cell (run --tasks sceval_no_option)"
        )
    else:
        shown = pd.DataFrame(
            {
                "model": transfer["model"],
                "condition": transfer["row"],
                "n": transfer["n_shared"],
                "MC drop (pp)": _column(transfer, "mc_drop", "p_holm_mc"),
                "no-option drop (pp)": _column(transfer, "no_option_drop", "p_holm_no_option"),
                "transfer Δ (pp)": _column(transfer, "transfer", "p_holm", signed),
            }
        )
        names = "; ".join(f"scorer 1 {first}, scorer 2 {second}" for first, second in scorers)
        found.append(
            Table(
                "no_option_transfer",
                "No-option generation control (Table 35): clean-to-corrupted drop on the shared gold-preserved subset "
                "(n samples), 95% bootstrap intervals; transfer Δ = no-option drop − MC drop; * p<.05, ** p<.01 (drops: "
                f"McNemar, Δ: bootstrap; Holm within model); graded by {names}",
                shown,
                transfer,
            )
        )
    if not agreement.empty:
        shown = agreement.assign(
            **{
                c: agreement[c].map(lambda x: "–" if pd.isna(x) else f"{x:.3f}")
                for c in ("agreement", "kappa", "kappa_without_exact_match")
            }
        )
        found.append(
            Table(
                "no_option_agreement",
                "No-option scorers: agreement and Cohen's κ over CORRECT/PARTIAL/INCORRECT/UNANSWERABLE (all graded "
                "trials, and those exact match did not decide), and the grading scorer's labels",
                shown,
                agreement,
            )
        )
    return Section(
        title="No-option control",
        tables=found,
        notes=notes,
        numbers={
            "no_option": {
                "transfer": json_records(transfer),
                "agreement": json_records(agreement),
                "scorers": [{"scorer_1": first, "scorer_2": second} for first, second in scorers],
                "subset": "samples with trials in MC clean, MC cell, no-option clean and no-option cell (the manifest "
                "removes invalid, unanswerable and not gold-preserved trials at build time, and again here when "
                "SCEVAL_MANIFEST is set)",
                "partial_credit": 0.0,
                "trials": int(len(frame)),
            }
        },
    )
