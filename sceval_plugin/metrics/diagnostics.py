"""The SCEval paper's Appendix-C diagnostics (Tables 3, 10, 11, 14-16, 18-23) from a trial table.

The diagnostics live in :mod:`~sceval_plugin.metrics.drops` (how drops decompose),
:mod:`~sceval_plugin.metrics.reliability` (how far numbers and outputs can be trusted) and
:mod:`~sceval_plugin.metrics.humans` (the human reference). Each function is pure: it takes the
trial table (:data:`~sceval_plugin.metrics.protocol.TRIAL_COLUMNS`, plus ``confidence`` and
``source`` where the logs carry them), the per-sample table
(:func:`~sceval_plugin.metrics.protocol.per_sample`), the per-condition summary
(:func:`~sceval_plugin.metrics.protocol.condition_summary` with drops) and the condition catalogue,
and returns a frame. A partial run gives a smaller (possibly empty) frame, never an error;
:func:`appendix_c` runs them all and says, for each, what could not be computed and why.

Conventions follow :mod:`~sceval_plugin.metrics.protocol`: accuracies are fractions, invalid
outputs are missing for accuracy and incorrect for significance, intervals and p-values come from
the shared bootstrap of :mod:`~faultline_eval.core.stats`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from faultline_eval.core.stats import B_DEFAULT, SEED_DEFAULT
from sceval_plugin.metrics.drops import (
    accuracy_by_source,
    family_summary,
    interaction_cells,
    operator_groups,
    source_breakdown,
    steepest_channels,
    sub_additivity,
)
from sceval_plugin.metrics.humans import human_audit, human_excess_drop
from sceval_plugin.metrics.protocol import JOINT_BLOCKS, ConditionInfo
from sceval_plugin.metrics.reliability import (
    CONFIDENCE_VALUES,
    SHARED_HARD_FRACTION,
    calibration,
    failure_overlap,
    invalid_items,
    prompt_shift,
    seed_stability,
)


@dataclass
class Diagnostic:
    """One Appendix-C table: its numbers and what could not be computed (empty when complete)."""

    frame: pd.DataFrame
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DiagnosticOptions:
    """What the user supplies beyond the logs (``sceval report --families/--humans/...``)."""

    families: Mapping[str, str] | None = None
    human_trials: pd.DataFrame | None = None
    shared_fraction: float = SHARED_HARD_FRACTION
    confidence_values: Mapping[str, float] = field(default_factory=lambda: dict(CONFIDENCE_VALUES))
    variant_ddof: int = 1
    by_source: bool = False  # also write the whole report once per item source
    trust_reading: str = "donor_gold"  # what "follows the replaced modality" means (metrics.probes.TRUST_READINGS)
    holm_families: str = "model"  # one Holm family per model's block, or pooled over models (protocol.HOLM_FAMILIES)


def appendix_c(
    trials: pd.DataFrame,
    samples: pd.DataFrame,
    summary: pd.DataFrame,
    model_diagnostics: pd.DataFrame,
    info: Mapping[str, ConditionInfo],
    options: DiagnosticOptions | None = None,
    *,
    b: int = B_DEFAULT,
    seed: int = SEED_DEFAULT,
) -> dict[str, Diagnostic]:
    """Every diagnostic by table name, each with notes on what the run could not support."""
    options = options or DiagnosticOptions()
    present = set(summary["condition_id"])
    blocks = {info[c].block for c in present if c in info}
    models = sorted(set(summary["model"]))
    out: dict[str, Diagnostic] = {}

    def add(name: str, frame: pd.DataFrame, *why: tuple[bool, str]) -> None:
        out[name] = Diagnostic(frame, [reason for failed, reason in why if failed])

    no_clean = "clean" not in present
    stability = seed_stability(trials, summary, info, ddof=options.variant_ddof)
    add(
        "seed_stability",
        stability,
        ("single" not in blocks, "no single-modality cells were run: no weakest single cell per modality"),
        (not (stability["n_var"] > 1).any(), "no cell has more than one valid variant: no per-variant spread"),
    )
    run_canonical = {
        (m, c)
        for m, c in zip(summary["model"], summary["condition_id"])
        if c in info and info[c].block in JOINT_BLOCKS and info[c].role == "canonical"
    }
    cells = interaction_cells(summary, info)
    lacking = len(run_canonical) - len(cells)
    add(
        "sub_additivity",
        sub_additivity(samples, summary, info, b=b, seed=seed),
        (not run_canonical, "no canonical joint cells were run"),
        (no_clean and bool(run_canonical), "no clean run: no additive prediction"),
        (
            not no_clean and lacking > 0,
            f"{lacking} (model, canonical joint cell) pair(s) lack a clean accuracy or a "
            "single cell at the same severity and are left out",
        ),
    )
    has_confidence = "confidence" in trials and trials["confidence"].notna().any()
    add(
        "calibration",
        calibration(trials, values=options.confidence_values),
        (not has_confidence, "the logs carry no stated confidence (older logs, or no model gave one)"),
    )
    add(
        "failure_overlap",
        failure_overlap(samples, shared_fraction=options.shared_fraction),
        (len(models) < 2, "one model only: no pairwise Jaccard, and shared-hard/idiosyncratic counts are trivial"),
    )
    by_source = accuracy_by_source(samples, trials)
    no_source = "source" not in trials or trials["source"].isna().all()
    add(
        "accuracy_by_source",
        by_source,
        (no_source, "the logs carry no item source (logs written before the source was recorded)"),
    )
    add(
        "source_breakdown",
        source_breakdown(by_source, info),
        (no_source, "the logs carry no item source"),
        (not no_source and no_clean, "no clean run: no clean column or source-level drops"),
    )
    add(
        "steepest_channel",
        steepest_channels(model_diagnostics),
        ("single" not in blocks, "no single-modality cells were run: no fragility slopes"),
    )
    if options.families is not None:
        unmatched = sorted(set(models) - set(options.families))
        add(
            "families",
            family_summary(summary, model_diagnostics, info, options.families),
            (bool(unmatched), f"model(s) without a family, left out of the family means: {', '.join(unmatched)}"),
            (not set(models) & set(options.families), "no model of the runs is named in the families file"),
        )
    add(
        "operator_groups",
        operator_groups(summary, info),
        (
            no_clean
            or not any(c in info and info[c].block == "single" and info[c].corruptions[0][2] == 70 for c in present),
            "needs clean and severity-70 single cells",
        ),
    )
    add(
        "prompt_shift",
        prompt_shift(summary, info),
        ("prompt" not in blocks, "no prompt-variant cells (prompt_cot_*, prompt_open_*) were run"),
    )
    add("invalid_items", invalid_items(trials, info))
    if options.human_trials is not None:
        humans = options.human_trials
        human_conditions = set(humans["condition_id"].astype(str))
        add("human_audit", human_audit(humans), (humans.empty, "the human answers file holds no answers"))
        add(
            "human_excess_drop",
            human_excess_drop(samples, humans, b=b, seed=seed),
            ("clean" not in human_conditions, "no human answers on clean: no human drop"),
            (not (human_conditions - {"clean"}) & present, "no condition both humans and models answered"),
        )
    for d in out.values():
        if d.frame.empty and not d.notes:
            d.notes.append("nothing to compute: the cells it needs have no valid answers")
    return out
