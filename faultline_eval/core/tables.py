"""Report tables of both benchmarks: a :class:`Table` value, its writer (Markdown, CSV, LaTeX and
``<name>.trials.json``), the number formats the tables share and the trial links behind numbers.

A table is a value: ``shown`` (formatted, for Markdown and LaTeX), ``raw`` (the numbers, for CSV)
and ``trial_links``, per shown row and column the trials behind that number (a selector made by
:func:`trials_in`), which the results viewer (:mod:`faultline_app.viewer.site`) reads from
``<name>.trials.json`` and turns into links. Report sections build tables;
:func:`faultline_eval.core.report_writer.write_report` writes them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from faultline_eval.core.store import replacing, write_atomic

__all__ = [
    "CONVENTIONS",
    "Body",
    "ROW_KEYS",
    "Selector",
    "Table",
    "TrialLink",
    "TableSpec",
    "TrialLinks",
    "drop",
    "json_records",
    "pp",
    "row_trial_links",
    "signed",
    "trial_links",
    "trials_in",
    "write_table",
]

#: The trials behind one number: the condition (or template) ids in ``cells``, optionally a
#: ``model`` filter and other viewer column filters (see :func:`trials_in`).
Selector: TypeAlias = dict[str, Any]
#: A shown cell's link: one selector, one per number of a cell joined by `` / ``, or none.
TrialLink: TypeAlias = Selector | list[Selector | None] | None
#: Per shown row, per shown column (in column order), the cell's link.
TrialLinks: TypeAlias = list[list[TrialLink]]

#: The label columns of a raw table whose rows stand for one (model, condition) each (see
#: :func:`row_trial_links`).
ROW_KEYS = ("model", "condition_id")


#: The units and signs of every table, figure and report.json of both reports, stated once: in
#: report.json's ``conventions`` and at the top of the report's ``index.md``. A report adds its own
#: (SCEval: slopes); the formatters below are the only way a table writes these numbers.
CONVENTIONS: dict[str, str] = {
    "accuracy": "Accuracies and shares are percentages (%) in tables and figures, one decimal; report.json "
    "and the CSV files hold the same quantities as fractions (0.734 = 73.4%).",
    "points": "Differences between accuracies are percentage points (pp); report.json and the CSV files "
    "hold them as fractions (0.05 = 5 pp).",
    "drop": "A drop is positive when accuracy fell, as the paper defines it (SCEval eq. 5: "
    "Δbase = Acc_clean − Acc(c); eq. 6: Δsingle = Acc_worst single − Acc(c)); fault-line scores and "
    "group drops are means of drops. Tables write a drop with an arrow: ↓x (x pp lower than the "
    "reference), ↑x (x pp higher, an apparent gain), ±0; figures plot it signed, positive = worse; "
    "report.json and the CSV files hold the signed fraction.",
    "difference": "Every other difference (a gap, an effect, Δint, an excess drop, a transfer Δ) is written "
    "signed, +x or -x pp; its caption says which way is better.",
    "interval": "Intervals are 95% bootstrap intervals, [low, high], in the unit and sign of the number before them.",
    "significance": "* p<.05, ** p<.01 after Holm's adjustment within the family the caption names.",
}


def pp(x: float | None) -> str:
    """A fraction as percentage points, one decimal."""
    return "–" if x is None or not np.isfinite(x) else f"{100 * x:.1f}"


def drop(x: float | None) -> str:
    """A drop (positive = worse) with an arrow, in points."""
    if x is None or not np.isfinite(x):
        return "–"
    return f"↓{100 * x:.1f}" if x > 0 else (f"↑{-100 * x:.1f}" if x < 0 else "±0")


def signed(x: float | None) -> str:
    """A difference in points with its sign."""
    return "–" if x is None or not np.isfinite(x) else f"{100 * x:+.1f}"


def json_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as JSON-ready dicts: NumPy scalars unwrapped, NaN and infinities as None."""

    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if hasattr(v, "item"):
            return clean(v.item())
        return v

    return [{str(k): clean(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def trials_in(cells: Iterable[str | None], model: str | Iterable[str] | None = None, **where: str) -> Selector | None:
    """The selector of the trials behind one number: those of the ``cells`` (condition or
    template ids; a number over a block, a modality or a tier), of ``model`` only when given (a
    label, or several: a number over a model family), and matching ``where`` (the viewer's
    trial-table columns, e.g. ``failure_mode="audio_dominance"``; a value starting with ``=``
    must match whole, otherwise it is found within the column's text, ``!`` excludes it;
    alternatives joined by ``|``, e.g. ``verdict="=correct|=wrong"``, match either).
    None when no cell is named: nothing to link."""
    named = sorted({str(c) for c in cells if isinstance(c, str) and c})
    if not named:
        return None
    models = [model] if isinstance(model, str) else list(model or ())
    return {"cells": named, **({"model": "|".join(f"={m}" for m in models)} if models else {}), **where}


def trial_links(shown: pd.DataFrame, rows: Sequence[Mapping[str, TrialLink]]) -> TrialLinks:
    """Per row of ``shown``, ``{column: trials_in(...)}`` for its numbers (columns left out are
    not linked; a list of selectors for a cell of several numbers joined by `` / ``, one each),
    as the table's :attr:`Table.trial_links` (in column order)."""
    if len(rows) != len(shown):
        raise ValueError(f"{len(rows)} rows of trial links for a table of {len(shown)} rows")
    return [[row.get(str(c)) for c in shown.columns] for row in rows]


def row_trial_links(shown: pd.DataFrame, raw: pd.DataFrame) -> TrialLinks | None:
    """For a table whose raw rows are one (model, condition) each and line up with the shown rows:
    every cell but the labels (and a test's p-value, not a trial aggregate) links to that row's
    trials. None for any other table."""
    if len(raw) != len(shown) or not set(ROW_KEYS) <= set(raw.columns) or not len(shown):
        return None
    labels = {"model", "condition", "condition_id", "family", "probe", "parameter"}

    def linked(column: str) -> bool:
        return column not in labels and not column.startswith("p ")

    return [
        [trials_in([cid], model) if linked(str(c)) else None for c in shown.columns]
        for model, cid in zip(raw["model"].astype(str), raw["condition_id"].astype(str))
    ]


@dataclass(frozen=True)
class Table:
    """One table of a report. ``shown`` (formatted) is written as Markdown and LaTeX under
    ``caption``, ``raw`` as CSV; ``shown`` None writes the CSV only (a table too long to read).
    ``trial_links``: per shown row and column the trials behind that number; None links each
    row's (model, condition) when ``raw`` has one per shown row (:func:`row_trial_links`).
    ``question``: the question the table answers, for the report index (the caption when empty)."""

    name: str
    caption: str
    shown: pd.DataFrame | None
    raw: pd.DataFrame
    trial_links: TrialLinks | None = None
    question: str = ""

    def links(self) -> TrialLinks | None:
        """The links written to ``<name>.trials.json``; None when no number links anywhere."""
        if self.shown is None:
            return None
        links = self.trial_links or row_trial_links(self.shown, self.raw)
        return links if links and any(any(row) for row in links) else None


#: What every table builder of both reports returns: ``shown`` (formatted; None writes the CSV
#: only), ``raw`` (the numbers) and the shown cells' trial links (None: :func:`row_trial_links`).
#: A :class:`TableSpec` makes it a :class:`Table`.
Body: TypeAlias = tuple[pd.DataFrame | None, pd.DataFrame, TrialLinks | None]


@dataclass(frozen=True)
class TableSpec:
    """What a report table is, declared once: its file ``name``, ``caption`` and the
    ``question`` it answers; :meth:`of` fills it with a builder's :data:`Body`."""

    name: str
    caption: str
    question: str = ""

    def of(self, body: Body) -> Table:
        """The table of this name, caption and question holding ``body``."""
        shown, raw, links = body
        return Table(self.name, self.caption, shown, raw, links, question=self.question)


def _markdown(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows]) + "\n"


_LATEX_ESCAPE = {
    "&": r"\&",
    "%": r"\%",
    "_": r"\_",
    "#": r"\#",
    "↓": r"$\downarrow$",
    "↑": r"$\uparrow$",
    "±": r"$\pm$",
    "–": "--",
    "×": r"$\times$",
    "Δ": r"$\Delta$",
    "†": r"$\dagger$",
    "‡": r"$\ddagger$",
}


def _latex_cell(value: object) -> str:
    text = str(value)
    for raw, escaped in _LATEX_ESCAPE.items():
        text = text.replace(raw, escaped)
    return text


def _latex(frame: pd.DataFrame, caption: str) -> str:
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        rf"\begin{{tabular}}{{l{'r' * (len(frame.columns) - 1)}}}",
        r"\toprule",
        " & ".join(_latex_cell(c) for c in frame.columns) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(_latex_cell(v) for v in row) + r" \\" for row in frame.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{_latex_cell(caption)}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def write_table(out: Path, table: Table) -> list[Path]:
    """Write ``table`` under ``out``: ``<name>.md`` and ``<name>.tex`` (shown), ``<name>.csv``
    (raw) and, where a number links to trials, ``<name>.trials.json``
    (``{"columns": [...], "rows": trial_links}``). Returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    csv = out / f"{table.name}.csv"
    written = []
    if table.shown is not None:
        md, tex = out / f"{table.name}.md", out / f"{table.name}.tex"
        write_atomic(md, f"**{table.caption}**\n\n" + _markdown(table.shown))
        write_atomic(tex, _latex(table.shown, table.caption))
        written += [md, csv, tex]
    else:
        written.append(csv)
    with replacing(csv) as temporary:
        table.raw.to_csv(temporary, index=False)
    links = table.links()
    if links is not None and table.shown is not None:
        side = out / f"{table.name}.trials.json"
        write_atomic(side, json.dumps({"columns": [str(c) for c in table.shown.columns], "rows": links}))
        written.append(side)
    return written
