"""``c3po report``: C3PO's numbers (Table 3, per template, failure modes) from lmms-eval output folders.

Reads the per-sample logs of one or many models (:mod:`.reader`; several folders of one model are
repeated runs), optionally re-grades them with another judge's verdicts (:mod:`.verdicts`),
computes everything with :mod:`c3po_plugin.metrics` and writes, under ``out``:

* ``tier_table``, ``template_table``, ``failure_modes``, ``overall`` as ``.md``, ``.csv``, ``.tex``
  (and ``.trials.json``, the trials behind each number);
* ``template_accuracy``, ``tier_accuracy``, ``failure_modes``, ``dominance_split`` and, where
  items carry difficulty scores, ``difficulty`` as ``.png`` (200 dpi) and ``.pdf``;
* ``report.json`` with every number, the settings, the units (``conventions``), the logs'
  fingerprints and which judge graded;
* ``index.md``: what each file answers and which to open first.

Each part is a :class:`~faultline_eval.core.report_writer.Section` value; the core's
:func:`~faultline_eval.core.report_writer.write_report` writes them, as for ``sceval report``.

The summary and ``report.json`` name the judge behind every model's numbers; the embedding
judge is flagged as the offline stand-in it is (not the paper's Qwen3-Omni judge).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from c3po_plugin import metrics
from c3po_plugin.report import plots, tables
from c3po_plugin.report.reader import read_runs
from c3po_plugin.report.verdicts import apply_verdicts, read_verdicts
from faultline_eval.core.figures import Figure
from faultline_eval.core.report_writer import Report, Section, write_report
from faultline_eval.core.run_logs import ReportError
from faultline_eval.core.stats import B_DEFAULT, SEED_DEFAULT
from faultline_eval.core.tables import CONVENTIONS, TableSpec, json_records, pp

__all__ = ["ReportError", "build_report", "compute"]


def compute(trials: pd.DataFrame, *, b: int = B_DEFAULT, seed: int = SEED_DEFAULT) -> dict[str, pd.DataFrame]:
    """Every table of the report from a trial table: ``accuracy`` (long, all levels), ``tier``
    (Table 3, wide), ``coverage``, ``failure_modes`` and ``overall``."""
    acc = metrics.accuracy(trials, b=b, seed=seed)
    cov = metrics.coverage(trials)
    return {
        "accuracy": acc,
        "tier": metrics.tier_table(acc),
        "coverage": cov,
        "failure_modes": metrics.failure_modes(trials),
        "overall": metrics.overall(acc, cov),
    }


def fingerprints(trials: pd.DataFrame) -> list[dict]:
    """Per model: prompt id, dataset, judges, folders and runs behind its numbers."""
    out = []
    for model, t in trials.groupby("model", sort=True):
        out.append(
            {
                "model": model,
                "prompt_id": t["prompt_id"].dropna().unique().tolist(),
                "dataset": t["dataset"].dropna().unique().tolist(),
                "judge_ids": sorted(map(str, t["judge_id"].dropna().unique())),
                "folders": sorted(t["folder"].unique()),
                "tasks": sorted(t["task"].unique()),
                "runs_per_folder": sorted(map(int, t["run"].unique())),
                "trials": len(t),
                "samples": int(t["sample_id"].nunique()),
            }
        )
    return out


#: What the report says about a judge whose id starts with a key.
JUDGE_CAVEATS = {
    "embedding:": "an offline stand-in, not the paper's Qwen3-Omni judge: it fails synonyms "
    "(scarlet vs red); use --verdicts from `c3po judge --judge lmms:...` for paper numbers",
    "exact": "exact match only: every answer that is not a normalised exact match is wrong",
}


def graded_by(trials: pd.DataFrame) -> dict[str, list[str]]:
    """Per model (and Human, graded with every model's judges): the judge ids behind its numbers."""
    judges = {str(m): sorted(map(str, t["judge_id"].dropna().unique())) for m, t in trials.groupby("model")}
    judges[metrics.HUMAN] = sorted({j for ids in judges.values() for j in ids})
    return judges


def judge_notes(judges: dict[str, list[str]]) -> list[str]:
    ids = sorted({j for found in judges.values() for j in found})
    notes = [f"graded by normalised exact match, then the judge {', '.join(ids) or '(none was asked)'}"]
    for judge_id in ids:
        caveat = next((text for prefix, text in JUDGE_CAVEATS.items() if judge_id.startswith(prefix)), None)
        if caveat:
            notes.append(f"judge {judge_id} is {caveat}")
    return notes


def summary_text(numbers: dict[str, pd.DataFrame], out: Path, notes: list[str]) -> str:
    """A few lines for the terminal: each model's overall, IC and CC accuracy with coverage and,
    where they differ, the accuracy with ungradable trials counted as missing."""
    lines = [f"C3PO report in {out}"]
    for row in numbers["overall"].itertuples(index=False):
        coverage = "" if pd.isna(row.coverage) else f", coverage {100 * row.coverage:.1f}%"
        gradable = (
            ""
            if pd.isna(row.accuracy_gradable) or abs(row.accuracy_gradable - row.accuracy) < 1e-12
            else f"; {pp(row.accuracy_gradable)} with ungradable trials as missing"
        )
        lines.append(
            f"  {row.model}: {tables.with_ci(row.accuracy, row.ci_low, row.ci_high)} overall "
            f"(IC {pp(row.ic_accuracy)}, CC {pp(row.cc_accuracy)}, n={row.n_samples}{coverage}{gradable})"
        )
    return "\n".join(lines + [f"  note: {n}" for n in notes])


def tables_section(trials: pd.DataFrame, numbers: dict[str, pd.DataFrame], judges: dict[str, list[str]]) -> Section:
    """Table 3's layout, the per-template table, failure modes and the overall table, each number
    linked to its trials (the templates of its group, :func:`.tables.template_groups`)."""
    groups = tables.template_groups(trials)
    return Section(
        tables=[
            TableSpec(
                "tier_table",
                "C3PO accuracy (%) per category and tier (Table 3 layout)",
                question="How accurate is each model per category (IC, CC) and tier, and overall (Table 3)?",
            ).of(tables.tier_table(numbers["accuracy"], groups)),
            TableSpec(
                "template_table",
                "Accuracy (%) per template with 95% bootstrap interval and sample count",
                question="Which templates does each model get right or wrong, and on how many samples?",
            ).of(tables.template_table(numbers["accuracy"])),
            TableSpec(
                "failure_modes",
                "Failure modes of wrong answers: share per template (Table 12 columns)",
                question="When a model is wrong, which modality dominated, or did fusion stay incomplete (Table 12)?",
            ).of(tables.failure_table(numbers["failure_modes"], groups)),
            TableSpec(
                "overall",
                "Overall accuracy (%) as #YES/#Total and with ungradable trials as missing, exact-match-only "
                "accuracy, coverage, judge use and the judge",
                question="Each model's overall accuracy, how it was graded (judge, exact match) and how many "
                "trials were invalid or ungradable",
            ).of(tables.overall_table(numbers["overall"], judges, groups)),
        ],
        title="Tables",
    )


def figures_section(trials: pd.DataFrame, numbers: dict[str, pd.DataFrame]) -> Section:
    """Accuracy per template and per tier, failure modes, the dominance split and, where items
    carry difficulty scores, their histogram (otherwise a note)."""
    drawn = [
        Figure(
            "tier_accuracy",
            functools.partial(plots.tier_accuracy, numbers["accuracy"]),
            "Accuracy (%) per category and tier (Table 3) and overall, one bar per model with its 95% bootstrap "
            "interval and sample count.",
        ),
        Figure(
            "template_accuracy",
            functools.partial(plots.template_accuracy, numbers["accuracy"]),
            "Accuracy (%) per template (id and name, IC before CC), one bar per model with its 95% bootstrap "
            'interval, accuracy and sample count; a mark on the axis is a measured 0%, "no data" a template '
            "without answers. With more than four models, a templates x models grid of accuracy and n instead.",
        ),
        Figure(
            "dominance_split",
            functools.partial(plots.dominance_split, numbers["failure_modes"]),
            "Per model, its wrong answers split by failure mode (%): one modality dominating vs incomplete "
            "fusion vs other (§4.3).",
        ),
        Figure(
            "failure_modes",
            functools.partial(plots.failure_modes, numbers["failure_modes"]),
            "Per model and template, the share (%) of each failure mode among its wrong answers (Table 12).",
        ),
    ]
    if trials["difficulty"].notna().any():
        difficulty = Figure(
            "difficulty",
            functools.partial(plots.difficulty_histogram, trials),
            "How many items have each difficulty score (1-10), by category (the paper's Fig. 7).",
        )
        return Section(figures=[*drawn, difficulty], title="Figures")
    return Section(
        figures=drawn, notes=["no item carries a difficulty score: no difficulty histogram"], title="Figures"
    )


def head(
    trials: pd.DataFrame,
    judges: dict[str, list[str]],
    run_dirs: Sequence[str | Path],
    *,
    b: int,
    seed: int,
    verdicts: str | Path | None,
) -> dict[str, Any]:
    """report.json's first entries: the settings, which judge graded each model, the counts."""
    return {
        "settings": {
            "bootstrap_resamples": b,
            "seed": seed,
            "ci_level": 0.95,
            "runs": [str(r) for r in run_dirs],
            "verdicts": None if verdicts is None else str(verdicts),
            "accuracy": "per sample: mean over its runs; then mean over samples",
            "not_gradable": "accuracy (#YES/#Total, paper §3.2) counts API failures and judge errors as not "
            "correct; accuracy_gradable counts them as missing; empty replies and refusals "
            "are wrong in both",
        },
        "conventions": {key: CONVENTIONS[key] for key in ("accuracy", "points", "interval")},
        "graded_by": judges,
        "counts": {
            "trials": len(trials),
            "models": sorted(map(str, trials["model"].unique())),
            "samples": int(trials["sample_id"].nunique()),
        },
    }


def build_report(
    run_dirs: Sequence[str | Path],
    out: str | Path,
    *,
    b: int = B_DEFAULT,
    seed: int = SEED_DEFAULT,
    verdicts: str | Path | None = None,
) -> dict[str, Any]:
    """Read ``run_dirs``, optionally re-grade with ``verdicts``, compute and write everything
    under ``out``. Returns what was written (``written``), ``notes``, ``trials``, ``models``,
    ``seconds`` and a printable ``summary``. Raises :class:`ReportError` on unusable input."""
    start = time.perf_counter()
    out = Path(out)
    trials, notes = read_runs(run_dirs)
    if verdicts is not None:
        trials, more = apply_verdicts(trials, read_verdicts(verdicts), source=str(verdicts))
        notes += more
    numbers = compute(trials, b=b, seed=seed)
    judges = graded_by(trials)
    report = Report(
        head(trials, judges, run_dirs, b=b, seed=seed, verdicts=verdicts),
        [
            Section(notes=[*notes, *judge_notes(judges)]),
            figures_section(trials, numbers),
            tables_section(trials, numbers, judges),
            Section(
                numbers={
                    "fingerprints": fingerprints(trials),
                    "tier_table": json_records(numbers["tier"].reset_index(names="model")),
                    **{
                        name: json_records(numbers[name])
                        for name in ("accuracy", "overall", "coverage", "failure_modes")
                    },
                }
            ),
        ],
        title="C3PO report",
        open_first=("tier_accuracy.png", "template_accuracy.png", "overall.md", "tier_table.md", "dominance_split.png"),
    )
    written = write_report(out, report)
    return {
        "written": [str(p) for p in written],
        "notes": report.notes,
        "trials": len(trials),
        "models": sorted(map(str, trials["model"].unique())),
        "seconds": time.perf_counter() - start,
        "summary": summary_text(numbers, out, report.notes),
    }
