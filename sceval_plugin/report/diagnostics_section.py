"""The Appendix-C diagnostic tables of ``sceval report`` (Markdown, CSV, LaTeX and report.json),
and the two inputs a user supplies beyond the logs: model families and human answers.

Families (``--families FILE``): a CSV with columns ``model,family`` or a JSON object
``{"model": "family"}``; the model names are the report's labels (as in conditions.csv).

Human answers (``--humans PATH``), either

- a CSV or JSONL file of per-item answers, one row per (item, condition, annotator): columns
  ``sample_id``, ``condition_id``, and ``correct`` (1/0; empty = no usable answer) or ``answer``
  and ``gold`` (option keys of the original option order); optional ``annotator`` (several per
  item are averaged like variants) and ``answer`` (for agreement); or
- an lmms-eval output folder whose per-sample logs record the humans' answers as a model's
  replies (e.g. replayed through lmms-eval): every trial in it is taken as the human reference.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from faultline_eval.core.report_writer import Report, Section
from faultline_eval.core.tables import Body, Table, TableSpec, drop, json_records, pp, signed, trial_links, trials_in
from sceval_plugin.conditions import PROMPT_BASES
from sceval_plugin.metrics.diagnostics import Diagnostic, DiagnosticOptions, appendix_c
from sceval_plugin.metrics.drops import ALL_MODELS, HIGH_REJECTION_OPERATORS
from sceval_plugin.metrics.humans import HUMAN
from sceval_plugin.metrics.protocol import (
    MODALITIES,
    TRIAL_COLUMNS,
    ConditionInfo,
    Numbers,
    compute,
    per_sample,
    split_not_applicable,
)
from sceval_plugin.metrics.reliability import GROUP_OF_BLOCK, prompt_variants
from sceval_plugin.report import protocol_section as protocol
from sceval_plugin.report.reader import ReportError, read_runs
from sceval_plugin.report.tables import cells_of, slope

#: A diagnostic's table builder: (its frame, the headline cells, the catalogue) -> the table's body
#: (its frame is the raw table).
Formatter = Callable[[pd.DataFrame, dict[str, str], dict[str, ConditionInfo]], Body]

COMBINATION = {"tv": "T+V", "ta": "T+A", "va": "V+A", "tva": "T+V+A"}


# --- inputs ---------------------------------------------------------------------------------------


def read_families(path: str | Path) -> dict[str, str]:
    """model -> family from a CSV (``model,family``) or a JSON object; errors name the file and row."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"{path}: cannot read the families file ({exc})") from None
    if path.suffix.lower() == ".json":
        try:
            mapping = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ReportError(f"{path}: not JSON ({exc})") from None
        if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
            raise ReportError(f"{path}: expected a JSON object mapping model names to family names")
        return {str(k): v for k, v in mapping.items()}
    rows = list(csv.DictReader(text.splitlines()))
    if not rows or not {"model", "family"} <= set(rows[0]):
        raise ReportError(f"{path}: expected a CSV with columns model,family")
    families: dict[str, str] = {}
    for line, row in enumerate(rows, start=2):
        model, family = (row.get("model") or "").strip(), (row.get("family") or "").strip()
        if not model or not family:
            raise ReportError(f"{path}:{line}: empty model or family")
        if families.get(model, family) != family:
            raise ReportError(f"{path}:{line}: model {model!r} is given two families")
        families[model] = family
    return families


def read_humans(path: str | Path, info: dict[str, ConditionInfo]) -> pd.DataFrame:
    """The human answers as a trial table (model ``human``; one variant per annotator)."""
    path = Path(path)
    if path.is_dir():
        trials, _ = read_runs([path], progress=False)
        return trials.assign(model=HUMAN)
    frame = _human_rows(path, info)
    first_line = 1 if path.suffix.lower() == ".jsonl" else 2
    correct = [_human_correct(row, f"{path}:{k + first_line}") for k, row in enumerate(frame.to_dict(orient="records"))]
    annotator = frame["annotator"].astype(str) if "annotator" in frame else pd.Series("0", index=frame.index)
    trials = pd.DataFrame(
        {
            "model": HUMAN,
            "condition_id": frame["condition_id"].astype(str),
            "sample_id": frame["sample_id"].astype(str),
            "variant": pd.factorize(annotator)[0],
            "correct": correct,
            "invalid": [None if np.isfinite(c) else "empty" for c in correct],
            "n_options": 4,
            "prompt_id": "human",
            "dataset": "human",
            "answer": frame["answer"].astype(str).replace("", None) if "answer" in frame else None,
            "not_applicable": None,
        }
    )
    return trials[list(TRIAL_COLUMNS)]


def _human_rows(path: Path, info: dict[str, ConditionInfo]) -> pd.DataFrame:
    """The rows of a human-answers CSV or JSONL file, their columns and conditions checked."""
    if not path.is_file():
        raise ReportError(f"{path}: no such human-answers file or folder")
    try:
        if path.suffix.lower() == ".jsonl":
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            frame = pd.DataFrame(rows)
        else:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: cannot read the human answers ({exc})") from None
    for needed in ("sample_id", "condition_id"):
        if needed not in frame:
            raise ReportError(f"{path}: human answers need a {needed!r} column")
    if "correct" not in frame and not {"answer", "gold"} <= set(frame):
        raise ReportError(f"{path}: human answers need a 'correct' column, or 'answer' and 'gold'")
    unknown = sorted(set(frame["condition_id"].astype(str)) - set(info))
    if unknown:
        raise ReportError(f"{path}: conditions not in the catalogue: {', '.join(unknown[:5])}")
    return frame


def _human_correct(row: dict, where: str) -> float:
    """1.0 / 0.0 from a row's ``correct`` (or, when empty, its ``answer`` against its ``gold``);
    NaN when there is no usable answer."""
    value = row.get("correct")
    if value is None or str(value).strip() == "" or (isinstance(value, float) and np.isnan(value)):
        answer, gold = str(row.get("answer") or "").strip(), str(row.get("gold") or "").strip()
        return float(answer == gold) if answer and gold else np.nan
    if str(value).strip() in ("0", "1", "0.0", "1.0", "True", "False", "true", "false"):
        return float(str(value).strip().lower() in ("1", "1.0", "true"))
    raise ReportError(f"{where}: 'correct' must be 1, 0 or empty, not {value!r}")


# --- tables -----------------------------------------------------------------------------------------


def _pvalue(p: float) -> str:
    return "–" if p is None or not np.isfinite(p) else ("<.001" if p < 0.001 else f"{p:.3f}")


def _share(x: float) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{100 * x:.0f}%"


def _number(x: float, digits: int = 3) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def _seed_stability(f: pd.DataFrame, cells: dict[str, str], info: dict[str, ConditionInfo]) -> Body:
    frame, f = f, f[f["weakest_for"] != ""]  # the CSV keeps every stochastic cell
    shown = pd.DataFrame(
        {
            "model": f["model"],
            "modality": f["weakest_for"],
            "weakest cell": f["condition_id"],
            "mean acc": f["accuracy"].map(pp),
            "worst-variant": f["worst_variant_accuracy"].map(pp),
            "mean−worst": f["mean_worst_gap"].map(pp),
            "std": f["std"].map(pp),
            "median": f["median"].map(pp),
            "worst-2 mean": f["worst2_mean"].map(pp),
            "n_var": f["n_var"],
        }
    )
    labels = ("model", "modality", "n_var")
    return (
        shown,
        frame,
        trial_links(
            shown,
            [
                {c: trials_in([cid], m) for c in shown.columns if c not in labels}
                for m, cid in zip(f["model"], f["condition_id"])
            ],
        ),
    )


def _sub_additivity(f: pd.DataFrame, cells: dict[str, str], info: dict[str, ConditionInfo]) -> Body:
    shown = pd.DataFrame(
        {
            "model": f["model"],
            "combo": f["block"].map(COMBINATION),
            "n_cells": f["n_cells"],
            "mean actual": f["mean_actual"].map(pp),
            "mean additive pred.": f["mean_additive"].map(pp),
            "mean Δint": f["mean_delta_int"].map(signed),
            "% sub-additive": f["share_sub_additive"].map(_share),
            "paired bootstrap p": f["p_bootstrap"].map(_pvalue),
        }
    )
    single_of = {c.corruptions[0]: cid for cid, c in info.items() if c.block == "single"}
    links = []
    for model, block in zip(f["model"], f["block"]):
        canonical = [cid for cid, c in info.items() if c.block == block and c.role == "canonical"]
        # the additive prediction: clean and the single cells of the same operators and severities
        parts = ["clean", *canonical, *(single_of.get(x) for cid in canonical for x in info[cid].corruptions)]
        every = trials_in(parts, model)
        links.append(
            {
                "mean actual": trials_in(canonical, model),
                "mean additive pred.": every,
                "mean Δint": every,
                "% sub-additive": every,
            }
        )
    return shown, f, trial_links(shown, links)


def _label(cid: str, info: dict[str, ConditionInfo]) -> str:
    """A short name for a cell, as the paper's tables write them: ``noise@70``, ``TV t30/v70``."""
    c = info[cid]
    if c.block == "single":
        return f"{c.corruptions[0][1]}@{c.corruptions[0][2]}"
    if c.block in COMBINATION:
        letters = {"text": "t", "vision": "v", "audio": "a"}
        return f"{c.block.upper()} " + "/".join(f"{letters[m]}{sev}" for m, _, sev in c.corruptions)
    return cid


def _headline_cells(present: set[str], summary: pd.DataFrame, info: dict[str, ConditionInfo]) -> dict[str, str]:
    """Clean and the prompt-robustness subset (G.6), then the canonical trimodal cell with the
    lowest mean accuracy over the models (Table 22's and 23's "joint-TVA worst"), with short labels."""
    cells = [c for c in PROMPT_BASES if c in present]
    tva = summary[
        summary["condition_id"].map(lambda c: c in info and info[c].block == "tva" and info[c].role == "canonical")
    ]
    means = tva.groupby("condition_id")["accuracy"].mean().dropna()
    if not means.empty and means.idxmin() not in cells:
        cells.append(means.idxmin())
    return {c: _label(c, info) for c in cells}


def _calibration(f: pd.DataFrame, cells: dict[str, str], info: dict[str, ConditionInfo]) -> Body:
    cells = {"clean": "clean", **cells}
    by = f.set_index(["model", "condition_id"])
    rows = []
    for model in sorted(f["model"].unique()):
        row = {"model": model}
        for metric, name in (("ece", "ECE"), ("rho_oc", "ρ_oc")):
            row.update({f"{name} {label}": pp(by[metric].get((model, cid), np.nan)) for cid, label in cells.items()})
        rows.append(row)
    links = [
        {f"{name} {label}": trials_in([cid], model) for name in ("ECE", "ρ_oc") for cid, label in cells.items()}
        for model in sorted(f["model"].unique())
    ]
    shown = pd.DataFrame(rows)
    return shown, f, trial_links(shown, links)


def _failure_overlap(f: pd.DataFrame, cells: dict[str, str], info: dict[str, ConditionInfo]) -> Body:
    frame = f  # the CSV keeps every condition
    if cells:
        order = list(cells)
        f = f[f["condition_id"].isin(order)].sort_values("condition_id", key=lambda c: c.map(order.index))
    shown = pd.DataFrame(
        {
            "condition": f["condition_id"].map(lambda c: cells.get(c, c)),
            "models": f["models"],
            "mean Jaccard": f["mean_jaccard"].map(lambda x: _number(x, 2)),
            "shared-hard": [
                f"{a}/{n} (≥{t})" for a, n, t in zip(f["shared_hard"], f["items"], f["shared_hard_threshold"])
            ],
            "idiosyncratic (=1)": [f"{a}/{n}" for a, n in zip(f["idiosyncratic"], f["items"])],
            "union": [f"{a}/{n}" for a, n in zip(f["union"], f["items"])],
        }
    )
    return (
        shown,
        frame,
        trial_links(
            shown,
            [
                {
                    c: trials_in([cid])
                    for c in ("condition", "mean Jaccard", "shared-hard", "idiosyncratic (=1)", "union")
                }
                for cid in f["condition_id"]
            ],
        ),
    )


def _source_breakdown(f: pd.DataFrame, cells: dict[str, str], info: dict[str, ConditionInfo]) -> Body:
    shown = pd.DataFrame(
        {
            "model": f["model"],
            "source": f["source"],
            "clean": f["clean"].map(pp),
            "TV (panel)": f["tv_mean"].map(pp),
            "TVA (panel)": f["tva_mean"].map(pp),
            "strongest drop": [
                f"{drop(d)} ({c})" if isinstance(c, str) else "–"
                for d, c in zip(f["strongest_drop"], f["strongest_condition"])
            ],
        }
    )
    # the trials of the model's items of that source (the viewer's source column), per cell set
    return (
        shown,
        f,
        trial_links(
            shown,
            [
                {
                    "clean": trials_in(["clean"], m, source=f"={src}"),
                    "TV (panel)": trials_in(cells_of(info, "tv", panel=True), m, source=f"={src}"),
                    "TVA (panel)": trials_in(cells_of(info, "tva", panel=True), m, source=f"={src}"),
                    "strongest drop": trials_in(["clean", at], m, source=f"={src}") if isinstance(at, str) else None,
                }
                for m, src, at in zip(f["model"], f["source"], f["strongest_condition"])
            ],
        ),
    )


def _families(f: pd.DataFrame, cells: dict[str, str], info: dict[str, ConditionInfo]) -> Body:
    gap = f["family"].str.startswith("gap (")
    shown = pd.DataFrame(
        {
            "family": f["family"],
            "n": f["n"].map(lambda n: "–" if not np.isfinite(n) else str(int(n))),
            "mean clean": [signed(x) if g else pp(x) for x, g in zip(f["clean"], gap)],
            **{
                f"Δ{m}": [signed(x) if g else drop(x) for x, g in zip(f[f"delta_{m}"], gap)]
                for m in ("text", "vision", "audio")
            },
            **{f"F_{s}": [signed(x) if g else drop(x) for x, g in zip(f[f"FS_{s}"], gap)] for s in COMBINATION},
            "steepest channel": f["steepest"].fillna("–"),
        }
    )
    # a family's numbers average its models' trials; a gap row compares the two families' models
    members = dict(zip(f["family"], f["models"].map(lambda m: m.split(", ") if isinstance(m, str) else [])))
    links = []
    for family in f["family"]:
        pair = re.fullmatch(r"gap \((.+) − (.+)\)", family)
        models = [m for name in (pair.groups() if pair else (family,)) for m in members.get(name, [])]
        links.append(
            {
                "mean clean": trials_in(["clean"], models),
                **{
                    f"Δ{m}": trials_in(["clean", *cells_of(info, "single", modality=m, severity=70)], models)
                    for m in ("text", "vision", "audio")
                },
                **{f"F_{b}": trials_in(["clean", *cells_of(info, b, panel=True)], models) for b in COMBINATION},
            }
        )
    return shown, f, trial_links(shown, links)


def _steepest(f: pd.DataFrame, cells: dict[str, str], info: dict[str, ConditionInfo]) -> Body:
    shown = pd.DataFrame(
        {
            "model": f["model"],
            **{f"S_{m} (pp/sev)": f[f"S_{m}"].map(slope) for m in "tva"},
            "steepest channel": f["steepest"].fillna("–"),
        }
    )
    return (
        shown,
        f,
        trial_links(
            shown,
            [
                {
                    f"S_{letter} (pp/sev)": trials_in(["clean", *cells_of(info, "single", modality=modality)], m)
                    for letter, modality in MODALITIES.items()
                }
                for m in f["model"]
            ],
        ),
    )


def _operator_groups(f: pd.DataFrame, cells: dict[str, str], info: dict[str, ConditionInfo]) -> Body:
    wide = f.pivot_table(index="model", columns="group", values="mean_drop", aggfunc="first", sort=False)
    counts = f.groupby("group")["operators"].max()
    names = {"primary": "primary", "all": "all operators", "stress": "high-rejection stress set"}
    order = [g for g in ("primary", "all", "stress") if g in wide.columns]
    models = [m for m in wide.index if m != ALL_MODELS] + ([ALL_MODELS] if ALL_MODELS in wide.index else [])
    shown = pd.DataFrame(
        {"model": models, **{f"{names[g]} ({counts[g]})": [drop(wide.loc[m, g]) for m in models] for g in order}}
    )
    at70 = {cid: c.corruptions[0][1] for cid, c in info.items() if c.block == "single" and c.corruptions[0][2] == 70}
    members = {
        "primary": [cid for cid, op in at70.items() if op not in HIGH_REJECTION_OPERATORS],
        "all": list(at70),
        "stress": [cid for cid, op in at70.items() if op in HIGH_REJECTION_OPERATORS],
    }
    return (
        shown,
        f,
        trial_links(
            shown,
            [
                {
                    f"{names[g]} ({counts[g]})": trials_in(["clean", *members[g]], None if m == ALL_MODELS else m)
                    for g in order
                }
                for m in models
            ],
        ),
    )


def _prompt_shift(f: pd.DataFrame, cells: dict[str, str], info: dict[str, ConditionInfo]) -> Body:
    kinds = [c.removeprefix("accuracy_") for c in f.columns if c.startswith("accuracy_")]
    label = {"json": "Std. JSON", "cot": "CoT", "open": "Open-form"}
    shown = pd.DataFrame(
        {
            "model": f["model"],
            "cells": f["bases"],
            **{label.get(k, k): f[f"accuracy_{k}"].map(pp) for k in kinds},
            **{f"coverage {label.get(k, k)}": f[f"coverage_{k}"].map(pp) for k in kinds},
            "invalid shift": f["invalid_shift"].map(drop),
            "worst prompt": f["worst_prompt"].fillna("–"),
        }
    )
    variant_of = prompt_variants(info)
    links = []
    for model, bases, worst in zip(f["model"], f["base_cells"], f["worst_prompt"]):
        bases = set(bases.split(",")) if isinstance(bases, str) and bases else set()
        # each prompt's cells: the common bases themselves (json) or their variants under that prompt
        under = {
            k: sorted(bases) if k == "json" else sorted(c for c, (b, p) in variant_of.items() if p == k and b in bases)
            for k in kinds
        }
        link = {label.get(k, k): trials_in(under[k], model) for k in kinds}
        link.update({f"coverage {label.get(k, k)}": trials_in(under[k], model) for k in kinds})
        if isinstance(worst, str) and worst in under:
            link["invalid shift"] = trials_in([*under.get("json", []), *under[worst]], model)
        links.append(link)
    return shown, f, trial_links(shown, links)


def _invalid_items(f: pd.DataFrame, cells: dict[str, str], info: dict[str, ConditionInfo]) -> Body:
    shown = pd.DataFrame(
        {
            "model": f["model"],
            "group": f["group"],
            "API": f["items_api_failure"],
            "Parse": f["items_parse_failure"],
            "Refusal": f["items_refusal"],
            "Empty": f["items_empty"],
            "valid items": [f"{v}/{n}" for v, n in zip(f["valid_items"], f["items"])],
            "answered": [f"{v}/{n}" for v, n in zip(f["answered_items"], f["items"])],
        }
    )
    links = []
    for row in f.itertuples(index=False):
        group = [cid for cid, c in info.items() if GROUP_OF_BLOCK.get(c.block, "controls") == row.group]
        kinds = {"API": "api_failure", "Parse": "parse_failure", "Refusal": "refusal", "Empty": "empty"}
        links.append(
            {
                "valid items": trials_in(group, row.model),
                "answered": trials_in(group, row.model),
                **{
                    c: trials_in(group, row.model, verdict=f"=invalid: {k}") if getattr(row, f"items_{k}") else None
                    for c, k in kinds.items()
                },
            }
        )
    return shown, f, trial_links(shown, links)


def _human_audit(f: pd.DataFrame, cells: dict[str, str], info: dict[str, ConditionInfo]) -> Body:
    shown = pd.DataFrame(
        {
            "condition": f["condition_id"],
            "N": f["items"],
            "human acc.": f["human_accuracy"].map(pp),
            "annotators / item": f["annotators_per_item"].map(lambda x: _number(x, 1)),
            "agreement": f["agreement"].map(pp),
            "items with ≥2 answers": f["agreement_items"],
        }
    )
    return shown, f, None


def _human_excess(f: pd.DataFrame, cells: dict[str, str], info: dict[str, ConditionInfo]) -> Body:
    shown = pd.DataFrame(
        {
            "model": f["model"],
            "condition": f["condition_id"],
            "n (G_c)": f["n"],
            "model drop": f["model_drop"].map(drop),
            "human drop": f["human_drop"].map(drop),
            "excess drop": f["excess_drop"].map(signed),
            "95% CI": [f"[{signed(lo)}, {signed(hi)}]" for lo, hi in zip(f["ci_low"], f["ci_high"])],
        }
    )
    return shown, f, None


#: table name -> (caption, formatter(frame, headline cells, info)); ``None`` writes the CSV only
#: (too long to read as a table).
TABLES: dict[str, tuple[str, Formatter | None]] = {
    "seed_stability": (
        "Seed stability at each model's weakest single-modality cell (C.9, Table 18; std, median "
        "and worst-2 mean over per-variant accuracies, pp; CSV: every stochastic cell)",
        _seed_stability,
    ),
    "sub_additivity": (
        "Sub-additivity on the canonical joint grids (C.11, Table 21): additive prediction "
        "Acc_clean − Σ Δ_m from single drops at the same severity; Δint = actual − additive",
        _sub_additivity,
    ),
    "calibration": (
        "Calibration (C.11, Table 22): ECE over the three confidence levels (pp) and ρ_oc, the share of "
        "wrong answers given with high confidence (%), clean and the prompt-robustness cells",
        _calibration,
    ),
    "failure_overlap": (
        "Cross-model failure overlap (Table 23): mean pairwise Jaccard of failure sets, shared-hard, "
        "idiosyncratic and union counts of items (CSV: every condition)",
        _failure_overlap,
    ),
    "source_breakdown": (
        "Per-source breakdown (Table 11): clean, panel T+V and T+V+A mean accuracy (%) and the "
        "strongest source-level drop (pp)",
        _source_breakdown,
    ),
    "accuracy_by_source": ("Accuracy of every (model, condition) by item source", None),
    "families": (
        "Model families (Table 20): mean clean (%), severity-70 drops per modality and fault-line scores "
        "(pp), steepest channel; gap rows: positive means the first family is better",
        _families,
    ),
    "steepest_channel": ("Fragility slopes S_m (pp per severity unit) and the steepest channel (Table 19)", _steepest),
    "operator_groups": ("Severity-70 drops (pp) by operator group, coverage-aware (Table 3)", _operator_groups),
    "prompt_shift": (
        "Prompt robustness (Table 10): accuracy (%) and valid-output coverage per prompt over the same "
        "cells; invalid shift = JSON coverage minus the worst variant's (pp)",
        _prompt_shift,
    ),
    "invalid_items": (
        "Invalid outputs per item (Table 16): items with at least one invalid output of each category, "
        "items with none, and items with at least one valid answer, by group of conditions",
        _invalid_items,
    ),
    "human_audit": (
        "Human reference (Table 14): items answered, human accuracy (%), annotators per item and agreement",
        _human_audit,
    ),
    "human_excess_drop": (
        "Human-normalised drops (Table 15) on the cohort G_c both answered under clean and the "
        "condition: excess drop = model drop − human drop (positive: the model loses more), "
        "95% paired-bootstrap CI (pp)",
        _human_excess,
    ),
}


#: table name -> the question it answers (the report index's line for it).
QUESTIONS = {
    "seed_stability": "How much does each model's weakest cell depend on the random variant (seed)?",
    "sub_additivity": "Do joint corruptions cost less than the single drops added up (sub-additive)?",
    "calibration": "Does corruption make the models' stated confidence less calibrated?",
    "failure_overlap": "Do the models fail on the same items?",
    "source_breakdown": "Does the fault-line pattern hold on each item source?",
    "accuracy_by_source": "Every (model, condition) accuracy split by item source (fractions)",
    "families": "Do model families differ in clean accuracy, per-modality drops and fault lines?",
    "steepest_channel": "Which modality's accuracy decays fastest with severity, per model?",
    "operator_groups": "Are the drops driven by the high-rejection operators, or do the primary ones show them too?",
    "prompt_shift": "Does the fault-line pattern survive chain-of-thought and open-form prompts?",
    "invalid_items": "How many items got invalid outputs, of which kind, per group of conditions?",
    "human_audit": "How well do humans answer the corrupted items?",
    "human_excess_drop": "Do models lose more than humans under the same corruption?",
}


def diagnostics_section(
    numbers: Numbers,
    trials: pd.DataFrame,
    info: dict[str, ConditionInfo],
    options: DiagnosticOptions | None,
    *,
    b: int,
    seed: int,
    delta_single: str = "modality",
) -> Section:
    """Every Appendix-C diagnostic: its table (what the run supports), its rows in report.json,
    a note for each one that could not be (fully) computed, the options in the settings and,
    with ``options.by_source``, the whole report once per item source."""
    scored, _ = split_not_applicable(trials)  # a control that does not apply to an item is counted, never scored
    found: dict[str, Diagnostic] = appendix_c(
        scored, per_sample(scored), numbers.summary, numbers.diagnostics, info, options, b=b, seed=seed
    )
    cells = _headline_cells(set(numbers.summary["condition_id"]), numbers.summary, info)
    tables: list[Table] = []
    notes: list[str] = []
    for name, d in found.items():
        notes += [f"{name}: {n}" for n in d.notes]
        if not d.frame.empty:
            caption, formatter = TABLES[name]
            tables.append(_table(name, caption, formatter, d.frame, cells, info))
    entries = {"appendix_c": {name: {"rows": json_records(d.frame), "notes": d.notes} for name, d in found.items()}}
    if options is not None:
        entries["settings"] = {
            "shared_hard_fraction": options.shared_fraction,
            "confidence_values": dict(options.confidence_values),
            "variant_std_ddof": options.variant_ddof,
            "families": dict(options.families) if options.families else None,
        }
    subreports: dict[str, Report] = {}
    if options is not None and options.by_source:
        subreports, more = by_source_reports(trials, info, options, b=b, seed=seed, delta_single=delta_single)
        notes += more
    return Section(tables=tables, numbers=entries, notes=notes, subreports=subreports, title="Appendix-C diagnostics")


def _table(
    name: str,
    caption: str,
    formatter: Formatter | None,
    frame: pd.DataFrame,
    cells: dict[str, str],
    info: dict[str, ConditionInfo],
) -> Table:
    """A diagnostic's table: its formatted rows with their trial links, or the CSV only."""
    spec = TableSpec(name, caption, QUESTIONS.get(name, ""))
    return spec.of(formatter(frame, cells, info) if formatter is not None else (None, frame, None))


def by_source_reports(
    trials: pd.DataFrame,
    info: dict[str, ConditionInfo],
    options: DiagnosticOptions,
    *,
    b: int,
    seed: int,
    delta_single: str = "modality",
) -> tuple[dict[str, Report], list[str]]:
    """Every table and report.json once per item source, as reports for ``by_source/<source>/``
    (Table 11's split applied to the whole report; figures are drawn for the full report only),
    and the note when the logs carry no source."""
    if "source" not in trials or trials["source"].isna().all():
        return {}, ["by_source: the logs carry no item source; nothing to split"]
    ops = protocol.operator_names()
    reports: dict[str, Report] = {}
    for source in sorted(trials["source"].dropna().astype(str).unique()):
        subset = trials[(trials["source"].astype(str) == source).to_numpy()].reset_index(drop=True)
        folder = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in source)
        numbers = compute(
            subset,
            info,
            b=b,
            seed=seed,
            model_pairs=False,
            delta_single=delta_single,
            holm_families=options.holm_families,
        )
        reports[f"by_source/{folder}"] = Report(
            protocol.head(numbers, subset, [], b=b, seed=seed, delta_single=delta_single),
            [
                Section(
                    notes=[f"items of source {source!r} only; figures are drawn for the full report only"],
                    numbers={"figures_skipped": {}},
                ),
                protocol.tables_section(numbers, info, ops, delta_single),
                diagnostics_section(
                    numbers, subset, info, replace(options, by_source=False), b=b, seed=seed, delta_single=delta_single
                ),
            ],
            title=f"SCEval report, items of source {source!r} only",
            open_first=("single_modality_s70.md", "panel.md", "joint.md", "diagnostics.md"),
        )
    return reports, []
