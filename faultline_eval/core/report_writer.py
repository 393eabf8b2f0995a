"""The one report writer of both benchmarks (``sceval report``, ``c3po report``).

A report section is a pure function of the trials and numbers: it returns a :class:`Section`
value (its tables, figures, report.json entries and notes) and writes nothing. A
:class:`Report` is the sections of one folder in order; :func:`write_report` writes it:
every table (:func:`faultline_eval.core.tables.write_table`), every figure
(:class:`faultline_eval.core.figures.Figure`), any sub-report in a subfolder, and
``report.json``: the report's ``head`` entries, then ``notes`` (every section's, in order),
then each section's entries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faultline_eval.core.figures import Figure
from faultline_eval.core.store import write_atomic
from faultline_eval.core.tables import Table, write_table

__all__ = ["Report", "Section", "write_report"]


@dataclass(frozen=True)
class Section:
    """What one part of a report found: ``tables`` and ``figures`` to write, ``numbers`` (its
    report.json entries; an entry another section also writes must be an object in both, and
    is merged key by key, e.g. ``settings``), ``notes`` (what could not be computed or was
    left out, and why) and ``subreports`` (relative folder -> a :class:`Report` written there)."""

    tables: Sequence[Table] = ()
    figures: Sequence[Figure] = ()
    numbers: Mapping[str, Any] = field(default_factory=dict)
    notes: Sequence[str] = ()
    subreports: Mapping[str, Report] = field(default_factory=dict)


@dataclass(frozen=True)
class Report:
    """The sections of one report folder, in order, and ``head``: report.json's first entries
    (the settings and counts), before the notes."""

    head: Mapping[str, Any]
    sections: Sequence[Section]

    @property
    def notes(self) -> list[str]:
        """Every section's notes, in section order."""
        return [note for section in self.sections for note in section.notes]

    def json(self) -> dict[str, Any]:
        """report.json's content: ``head``, ``notes``, then each section's entries."""
        merged: dict[str, Any] = {**self.head, "notes": self.notes}
        for section in self.sections:
            for key, value in section.numbers.items():
                if key not in merged:
                    merged[key] = value
                elif isinstance(merged[key], Mapping) and isinstance(value, Mapping):
                    merged[key] = {**merged[key], **value}
                else:
                    raise ValueError(f"two report sections write the report.json entry {key!r}")
        return merged


def write_report(out: Path, report: Report, *, figure_workers: int = 0) -> list[Path]:
    """Write ``report`` under ``out`` (see the module docstring); returns the paths written.
    With ``figure_workers``, figures are drawn in that many other processes while the tables
    are written (they take longest); otherwise one after the other, after their section's tables."""
    out.mkdir(parents=True, exist_ok=True)
    if figure_workers <= 0 or not any(section.figures for section in report.sections):
        return _write_files(out, report, drawn=True)
    with ProcessPoolExecutor(max_workers=figure_workers) as pool:
        pending: list[Future[list[Path]]] = [
            pool.submit(figure.draw, out / figure.name) for section in report.sections for figure in section.figures
        ]
        written = _write_files(out, report, drawn=False)
        return written + [path for future in pending for path in future.result()]


def _write_files(out: Path, report: Report, *, drawn: bool) -> list[Path]:
    """Tables, sub-reports, figures (when ``drawn``) and report.json."""
    written: list[Path] = []
    for section in report.sections:
        for table in section.tables:
            written += write_table(out, table)
        for folder, subreport in section.subreports.items():
            written += write_report(out / folder, subreport)
        if drawn:
            for figure in section.figures:
                written += figure.draw(out / figure.name)
    write_atomic(out / "report.json", json.dumps(report.json(), indent=1, default=str))
    return [*written, out / "report.json"]
