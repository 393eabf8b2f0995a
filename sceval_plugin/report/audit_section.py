"""The modality-necessity audit as a report section and as ``faultline audit`` (issue 27; design
§8): the numbers of :mod:`sceval_plugin.metrics.modality_audit` as tables, the item list a
benchmark author can act on (``audit_items.csv``), and a stacked bar per control.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faultline_eval.core.figures import Figure, grid, pyplot, save
from faultline_eval.core.report_writer import Report, Section, write_report
from faultline_eval.core.tables import Table, TrialLinks, json_records, pp, trial_links, trials_in
from sceval_plugin.base_task import aggregate
from sceval_plugin.metrics.modality_audit import (
    SHARE_COLUMNS,
    answerable_items,
    control_shares,
    left_out_rows,
    outcome_shares,
    per_item,
    score_trials,
)
from sceval_plugin.report.wrapped_reader import WrappedRuns, condition_cell, read_wrapped_runs

__all__ = ["audit_section", "audit_report", "stacked_bars"]

#: The stacked bar's parts, bottom to top: (column of :func:`outcome_shares`, label, colour).
PARTS = (
    ("both", "answerable in clean and without it", "tab:red"),
    ("only_without", "answerable only without it", "tab:orange"),
    ("needs_it", "answerable in clean only (needs it)", "tab:blue"),
    ("neither", "answerable in neither", "#cccccc"),
)

STACKED_CAPTION = (
    "Per base task and model, one stacked bar per control: the share of items (%) answerable in clean and "
    "with the control, only with it, in clean only (they need what it takes away) and in neither; black "
    "tick: the items' chance rate (1/options listed, 1/2 for a yes/no gold; none for open answers and graded metrics)."
)


def stacked_bars(outcomes: pd.DataFrame, shares: pd.DataFrame, stem: Path) -> list[Path]:
    """One panel per (base task, model): per control, the items' (clean, control) outcomes as a
    stacked bar of shares, and the chance rate of their option counts as a black tick."""
    plt = pyplot()
    panels = list(outcomes.groupby(["base_task", "model"], sort=True))
    controls = list(dict.fromkeys(outcomes["control"]))
    fig, axes = grid(plt, len(panels), width=max(3.6, 0.9 * len(controls) + 1.4), height=3.6, sharey=True)
    for k, (ax, ((base, model), group)) in enumerate(zip(axes, panels)):
        group = group.set_index("control").reindex([c for c in controls if c in set(group["control"])])
        x = np.arange(len(group))
        bottom = np.zeros(len(group))
        for column, label, colour in PARTS:
            heights = 100 * group[column].to_numpy(float)
            ax.bar(x, heights, bottom=bottom, color=colour, label=label, edgecolor="white", linewidth=0.6)
            bottom += heights
        chance = shares[(shares["base_task"] == base) & (shares["model"] == model)].set_index("control")["chance"]
        for i, control in enumerate(group.index):
            if np.isfinite(chance.get(control, np.nan)):
                ax.plot([i - 0.42, i + 0.42], [100 * chance[control]] * 2, color="black", linewidth=1.6, label="chance")
        ax.set_xticks(x, [c.replace("_", "\n", 1) for c in group.index], fontsize=7)
        ax.set_ylim(0, 100)
        pad = max(0.0, (2 - len(group)) / 2)  # one control: a centred bar, not a wall
        ax.set_xlim(-0.6 - pad, len(group) - 0.4 + pad)
        ax.set_title(f"{base} — {model}", fontsize=9)
        if k % 4 == 0:
            ax.set_ylabel("items (%)")
    handles, labels = [], []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h), labels.append(label)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3, frameon=False, fontsize=8)
    fig.suptitle("Modality-necessity audit: what each control leaves answerable", fontsize=10)
    fig.tight_layout()
    return save(fig, stem)


def _shares_shown(shares: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "base task": shares["base_task"],
            "model": shares["model"],
            "kind": shares["kind"],
            "control": shares["control"].fillna("–"),
            "takes away": shares["takes_away"].fillna("–"),
            "items": shares["items"].map(lambda n: "–" if pd.isna(n) else str(int(n))),
            "answerable (%)": shares["answerable"].map(pp),
            "chance (%)": shares["chance"].map(pp),
            "clean-answerable items": shares["clean_answerable"].map(lambda n: "–" if pd.isna(n) else str(int(n))),
            "still answerable among them (%)": shares["answerable_among_clean"].map(pp),
            "needs it (%)": shares["needs"].map(pp),
            "note": shares["note"].fillna(""),
        }
    )


def _shares_links(shares: pd.DataFrame, shown: pd.DataFrame) -> TrialLinks:
    """The trials behind each share (the viewer's pages): the control's for its items, answerable
    share and chance; clean's for the clean-answerable count; both for the share among them and
    needs it."""
    rows = []
    for base, model, control in zip(shares["base_task"], shares["model"], shares["control"]):
        if not isinstance(control, str) or not control:  # a row of what was left out: no trials
            rows.append({})
            continue
        under = trials_in([condition_cell(base, control)], model)
        clean = trials_in([condition_cell(base, "clean")], model)
        both = trials_in([condition_cell(base, "clean"), condition_cell(base, control)], model)
        rows.append(
            {
                "items": under,
                "answerable (%)": under,
                "chance (%)": under,
                "clean-answerable items": clean,
                "still answerable among them (%)": both,
                "needs it (%)": both,
            }
        )
    return trial_links(shown, rows)


def _metrics_of(runs: WrappedRuns) -> dict[str, list[tuple[str, bool | None]]]:
    """Per base task, the metrics results.json reports for its wrapped tasks and whether higher
    is better, in the order reported."""
    out: dict[str, list[tuple[str, bool | None]]] = {}
    if runs.values.empty:
        return out
    for base, rows in runs.values.groupby("base_task", sort=False):
        firsts = rows.drop_duplicates("metric")
        out[str(base)] = [
            (m, None if pd.isna(h) else bool(h)) for m, h in zip(firsts["metric"], firsts["higher_is_better"])
        ]
    return out


def _aggregate_one(base: str, metric: str, item: Any) -> float:
    return aggregate(base, metric, [item])


def audit_numbers(
    runs: WrappedRuns, answerable_at: Mapping[str, float] | None = None, *, per_pair: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(items, shares, left out) of the audit of ``runs``: :func:`per_item`, the
    :func:`control_shares` and the :func:`left_out_rows`, each task scored by its metric's kind."""
    scored, kinds = score_trials(
        runs.trials, _metrics_of(runs), runs.items, _aggregate_one, answerable_at, per_pair=per_pair
    )
    items = per_item(scored, kinds)
    return items, control_shares(items, kinds), left_out_rows(scored, runs.trials, kinds)


def audit_section(
    runs: WrappedRuns,
    *,
    min_models: int | None = None,
    figures: bool = True,
    answerable_at: Mapping[str, float] | None = None,
    per_pair: bool = False,
) -> Section:
    """The audit's tables (``audit_shares``, with a row and its reason for each task, metric or
    control left out; ``audit_items``, CSV only; ``audit_per_item``, CSV only), its stacked-bar
    figure (``audit_stacked``) and report.json entries (``audit``: shares, outcomes, the rule of
    each kind, what was left out and why); ``answerable_at``: metric -> threshold for graded
    metrics and ``per_pair`` for yes/no pairs (:mod:`sceval_plugin.metrics.modality_audit`)."""
    items, shares, left_out = audit_numbers(runs, answerable_at, per_pair=per_pair)
    notes = [
        f"modality audit: {r.base_task} ({r.model})"
        + (f", {r.metric}" if r.metric else "")
        + (f", {r.control}" if isinstance(r.control, str) and r.control else "")
        + f": {r.note}"
        for r in left_out.itertuples()
    ]
    rules = _rules(shares, left_out)
    notes += [
        f"modality audit: {base}: {r['kind']} ({r['metric']}); answerable if {r['answerable_if']}"
        for base, r in rules.items()
    ]
    everything = pd.concat([shares, left_out], ignore_index=True)[SHARE_COLUMNS] if len(left_out) else shares
    numbers: dict[str, Any] = {
        "audit": {
            "shares": json_records(everything),
            "left_out": json_records(left_out),
            "rules": rules,
        }
    }
    if shares.empty:
        notes.append(
            "modality audit: the runs hold no control with a per-item value; run "
            "<base>__missing_audio, __missing_vision, __missing_text, __shortcut_visual_audio, "
            "__shortcut_question_options, __shortcut_options_only (and clean)"
        )
        tables = ([_shares_table(everything)] if len(left_out) else []) + (
            [_per_item_table(items)] if len(items) else []
        )
        return Section(tables=tables, notes=notes, numbers=numbers)
    listed = answerable_items(items, min_models)
    outcomes = outcome_shares(items)
    rule = "every model that ran it" if min_models is None else f"at least {min_models} model(s)"
    figures_ = (
        [Figure("audit_stacked", functools.partial(stacked_bars, outcomes, shares), STACKED_CAPTION)] if figures else []
    )
    if not figures:
        notes.append("figure audit_stacked not drawn: figures turned off (--no-figures)")
    elif outcomes.empty:
        figures_, notes = [], [*notes, "figure audit_stacked not drawn: no clean run beside the controls"]
    numbers["audit"].update(
        outcomes=json_records(outcomes),
        items_listed=int(len(listed)),
        item_rule=f"answerable under the control for {rule}",
    )
    return Section(
        tables=[
            _shares_table(everything),
            Table("audit_items", f"Items answerable under a control for {rule}", None, listed),
            _per_item_table(items),
        ],
        figures=figures_,
        notes=notes,
        numbers=numbers,
    )


def _shares_table(shares: pd.DataFrame) -> Table:
    shown = _shares_shown(shares)
    return Table(
        "audit_shares",
        "Modality-necessity audit: per task, model and control, the share of items the control leaves "
        "answerable (answerable if: the rule of the metric's kind), the chance rate (1/options, 1/2 for yes/no), "
        "the share still answerable among the items answerable in clean, and needs it = 1 − that share; "
        "a row without a control or numbers is what was left out, its note says why",
        shown,
        shares,
        trial_links=_shares_links(shares, shown),
    )


def _per_item_table(items: pd.DataFrame) -> Table:
    return Table(
        "audit_per_item",
        "Per task, model and item: answerable (1/0) under clean and each control, its chance rate, "
        "the metric's kind and rule, and why a cell is blank",
        None,
        items,
    )


def _rules(shares: pd.DataFrame, left_out: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Per base task: the metric audited, its kind and what "answerable" means for it."""
    both = pd.concat([shares, left_out], ignore_index=True)
    both = both[both["kind"].fillna("") != ""].drop_duplicates("base_task")
    return {
        r.base_task: {"metric": r.metric, "kind": r.kind, "answerable_if": r.answerable_if} for r in both.itertuples()
    }


def audit_report(
    run_dirs: Sequence[str | Path],
    out: str | Path,
    *,
    min_models: int | None = None,
    figures: bool = True,
    answerable_at: Mapping[str, float] | None = None,
    per_pair: bool = False,
) -> dict[str, Any]:
    """``faultline audit``: read the wrapped runs under ``run_dirs``, write the audit under ``out``;
    returns what was written, the notes and the shares."""
    runs = read_wrapped_runs(run_dirs)
    section = audit_section(
        runs, min_models=min_models, figures=figures, answerable_at=answerable_at, per_pair=per_pair
    )
    head = {
        "runs": [str(r) for r in run_dirs],
        "min_models": min_models,
        "answerable_at": dict(answerable_at or {}),
        "per_pair": per_pair,
    }
    written = write_report(Path(out), Report(head, [Section(notes=runs.notes), section]))
    return {"written": [str(p) for p in written], "notes": [*runs.notes, *section.notes], "audit": section.numbers}
