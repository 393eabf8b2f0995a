"""The modality-necessity audit as a report section and as ``faultline audit`` (issue 27; design
§8): the numbers of :mod:`sceval_plugin.metrics.modality_audit` as tables, the item list a
benchmark author can act on (``audit_items.csv``), and a stacked bar per control.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faultline_eval.core.figures import Figure, grid, pyplot, save
from faultline_eval.core.report_writer import Report, Section, write_report
from faultline_eval.core.tables import Table, TrialLinks, json_records, pp, trial_links, trials_in
from sceval_plugin.metrics.modality_audit import answerable_items, control_shares, outcome_shares, per_item
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
    "tick: the chance rate of the items' option counts."
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
            "control": shares["control"],
            "takes away": shares["takes_away"],
            "items": shares["items"],
            "answerable (%)": shares["answerable"].map(pp),
            "chance (%)": shares["chance"].map(pp),
            "clean-answerable items": shares["clean_answerable"].map(lambda n: "–" if pd.isna(n) else str(int(n))),
            "still answerable among them (%)": shares["answerable_among_clean"].map(pp),
            "needs it (%)": shares["needs"].map(pp),
        }
    )


def _shares_links(shares: pd.DataFrame, shown: pd.DataFrame) -> TrialLinks:
    """The trials behind each share (the viewer's pages): the control's for its items, answerable
    share and chance; clean's for the clean-answerable count; both for the share among them and
    needs it."""
    rows = []
    for base, model, control in zip(shares["base_task"], shares["model"], shares["control"]):
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


def audit_section(runs: WrappedRuns, *, min_models: int | None = None, figures: bool = True) -> Section:
    """The audit's tables (``audit_shares``; ``audit_items``, CSV only; ``audit_per_item``, CSV
    only), its stacked-bar figure (``audit_stacked``) and report.json entries; notes when the
    runs hold no control or no 0/1 per-doc score."""
    items = per_item(runs.trials)
    shares = control_shares(items)
    if shares.empty:
        return Section(
            notes=[
                "modality audit: the runs hold no control with a 0/1 per-doc score; run "
                "<base>__missing_audio, __missing_vision, __missing_text, __shortcut_question_options, "
                "__shortcut_options_only (and clean) with a task whose adapter scores each doc"
            ]
        )
    listed = answerable_items(items, min_models)
    outcomes = outcome_shares(items)
    notes = []
    if shares["chance"].isna().any():
        notes.append(
            "modality audit: no chance rate where the prompts the model got list no lettered options "
            "(A./(A)/A) at a line start); the option count is read from the prompt"
        )
    rule = "every model that ran it" if min_models is None else f"at least {min_models} model(s)"
    shown = _shares_shown(shares)
    figures_ = (
        [Figure("audit_stacked", functools.partial(stacked_bars, outcomes, shares), STACKED_CAPTION)] if figures else []
    )
    if not figures:
        notes.append("figure audit_stacked not drawn: figures turned off (--no-figures)")
    elif outcomes.empty:
        figures_, notes = [], [*notes, "figure audit_stacked not drawn: no clean run beside the controls"]
    return Section(
        tables=[
            Table(
                "audit_shares",
                "Modality-necessity audit: share of items each control leaves answerable (chance: 1/options), "
                "among the items answerable in clean, and needs it = 1 − that share",
                shown,
                shares,
                trial_links=_shares_links(shares, shown),
            ),
            Table("audit_items", "", None, listed),
            Table("audit_per_item", "", None, items),
        ],
        figures=figures_,
        notes=notes,
        numbers={
            "audit": {
                "shares": json_records(shares),
                "outcomes": json_records(outcomes),
                "items_listed": int(len(listed)),
                "item_rule": f"answered correctly under the control by {rule}",
            }
        },
    )


def audit_report(
    run_dirs: Sequence[str | Path], out: str | Path, *, min_models: int | None = None, figures: bool = True
) -> dict[str, Any]:
    """``faultline audit``: read the wrapped runs under ``run_dirs``, write the audit under ``out``;
    returns what was written, the notes and the shares."""
    runs = read_wrapped_runs(run_dirs)
    section = audit_section(runs, min_models=min_models, figures=figures)
    head = {"runs": [str(r) for r in run_dirs], "min_models": min_models}
    written = write_report(Path(out), Report(head, [Section(notes=runs.notes), section]))
    return {"written": [str(p) for p in written], "notes": [*runs.notes, *section.notes], "audit": section.numbers}
