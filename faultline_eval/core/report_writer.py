"""The one report writer of both benchmarks (``sceval report``, ``c3po report``).

A report section is a pure function of the trials and numbers: it returns a :class:`Section`
value (its tables, figures, report.json entries and notes) and writes nothing. A
:class:`Report` is the sections of one folder in order; :func:`write_report` writes it:
every table (:func:`faultline_eval.core.tables.write_table`), every figure
(:class:`faultline_eval.core.figures.Figure`), any sub-report in a subfolder, and
``report.json``: the report's ``head`` entries, then ``notes`` (every section's, in order),
then each section's entries (and ``figure_captions`` when the report has figures).

Every folder also gets ``index.md``: what each file written there answers, section by section
(each :class:`Section`'s ``title``), which to open first (:attr:`Report.open_first`), and the
units-and-signs legend (report.json's ``conventions``). It is made from the same values that
write the files, so it lists exactly what was written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faultline_eval.core.figures import Figure
from faultline_eval.core.store import write_atomic
from faultline_eval.core.tables import Table, write_table

__all__ = ["INDEX", "Report", "Section", "write_report"]

#: The file every report folder gets that says what each of its files answers.
INDEX = "index.md"


@dataclass(frozen=True)
class Section:
    """What one part of a report found: ``tables`` and ``figures`` to write, ``numbers`` (its
    report.json entries; an entry another section also writes must be an object in both, and
    is merged key by key, e.g. ``settings``), ``notes`` (what could not be computed or was
    left out, and why), ``subreports`` (relative folder -> a :class:`Report` written there) and
    ``title``, its heading in the report's index."""

    tables: Sequence[Table] = ()
    figures: Sequence[Figure] = ()
    numbers: Mapping[str, Any] = field(default_factory=dict)
    notes: Sequence[str] = ()
    subreports: Mapping[str, Report] = field(default_factory=dict)
    title: str = ""


@dataclass(frozen=True)
class Report:
    """The sections of one report folder, in order (the order the index lists them: the story
    first), and ``head``: report.json's first entries (the settings, the units-and-signs
    ``conventions``, the counts), before the notes. ``title`` heads the index; ``open_first``
    names the files a reader should open first (``joint.md``, ``drop_heatmap.png``; those not
    written are left out)."""

    head: Mapping[str, Any]
    sections: Sequence[Section]
    title: str = "Report"
    open_first: Sequence[str] = ()

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
        captions = {figure.name: figure.caption for section in self.sections for figure in section.figures}
        if captions:
            merged["figure_captions"] = captions
        return merged


def write_report(out: Path, report: Report, *, figure_workers: int = 0) -> list[Path]:
    """Write ``report`` under ``out`` (see the module docstring); returns the paths written.
    With ``figure_workers``, figures are drawn in that many other processes while the tables
    are written (they take longest); otherwise one after the other, after their section's tables."""
    out.mkdir(parents=True, exist_ok=True)
    if figure_workers <= 0 or not any(section.figures for section in report.sections):
        files = _write_files(out, report, {})
    else:
        with ProcessPoolExecutor(max_workers=figure_workers) as pool:
            pending: dict[str, Future[list[Path]]] = {
                figure.name: pool.submit(figure.draw, out / figure.name)
                for section in report.sections
                for figure in section.figures
            }
            files = _write_files(out, report, pending)
    write_atomic(out / "report.json", json.dumps(report.json(), indent=1, default=str))
    write_atomic(out / INDEX, _index(out, report, files))
    return [path for _, paths in files for path in paths] + [out / INDEX, out / "report.json"]


#: Threads writing tables at once: each file is synced to disk before it replaces the old one,
#: and while one thread waits for the disk the others format and write.
TABLE_WRITERS = 4


def _write_tables(out: Path, tables: Sequence[Table]) -> dict[int, list[Path]]:
    """The paths each table wrote (by ``id``), the tables written by :data:`TABLE_WRITERS`
    threads; tables of one name by one thread, in order, so the last one's files stay."""
    by_name: dict[str, list[Table]] = {}
    for table in tables:
        by_name.setdefault(table.name, []).append(table)

    def write(group: list[Table]) -> list[tuple[int, list[Path]]]:
        return [(id(table), write_table(out, table)) for table in group]

    with ThreadPoolExecutor(max_workers=TABLE_WRITERS) as pool:
        return dict(pair for done in pool.map(write, by_name.values()) for pair in done)


#: What one entry of the index stands for (a table, a figure or a sub-report) and its files.
_Written = tuple[Table | Figure | str, list[Path]]


def _write_files(out: Path, report: Report, pending: Mapping[str, Future[list[Path]]]) -> list[_Written]:
    """Tables, sub-reports and figures (drawn here unless ``pending`` in other processes), each
    with the paths it wrote, in section order."""
    tables = _write_tables(out, [table for section in report.sections for table in section.tables])
    written: list[_Written] = []
    for section in report.sections:
        written += [(table, tables[id(table)]) for table in section.tables]
        written += [(folder, write_report(out / folder, sub)) for folder, sub in section.subreports.items()]
        if not pending:
            written += [(figure, figure.draw(out / figure.name)) for figure in section.figures]
    return written + [(f, pending[f.name].result()) for s in report.sections for f in s.figures if pending]


def _about(item: Table | Figure) -> str:
    """One line on what a table or figure answers."""
    text = item.caption if isinstance(item, Figure) else (item.question or item.caption)
    return " ".join(text.split()) or "(no description)"


def _index(out: Path, report: Report, written: list[_Written]) -> str:
    """``index.md``: open-first list, the units-and-signs legend, then every file by section."""

    def link(path: Path) -> str:
        name = path.relative_to(out).as_posix()
        return f"[{name}]({name})"

    def files(paths: list[Path]) -> str:
        """The first file by name, the others (same stem) by their kind: ``a.md (csv, tex)``."""
        rest = [f"[{p.name.split('.', 1)[-1]}]({p.relative_to(out).as_posix()})" for p in paths[1:]]
        return link(paths[0]) + (f" ({', '.join(rest)})" if rest else "")

    by_item = {id(item): paths for item, paths in written}
    by_file = {paths[0].name: item for item, paths in written if paths and not isinstance(item, str)}
    lines = [f"# {report.title}: what each file answers", ""]
    first = [by_file[name] for name in report.open_first if name in by_file]
    if first:
        lines += ["## Open first", ""]
        lines += [f"{k}. {link(by_item[id(i)][0])}: {_about(i)}" for k, i in enumerate(first, 1)] + [""]
    conventions = report.head.get("conventions")
    if isinstance(conventions, Mapping) and conventions:
        lines += ["## Units and signs (every table, figure and report.json)", ""]
        lines += [f"- **{topic}**: {text}" for topic, text in conventions.items()] + [""]
    for section in report.sections:
        items: list[Table | Figure] = [*section.figures, *section.tables]
        rows = [f"| {files(by_item[id(i)])} | {_about(i)} |" for i in items if by_item.get(id(i))]
        rows += [f"| {link(out / folder / INDEX)} | the same report for {folder} |" for folder in section.subreports]
        if rows:
            lines += [f"## {section.title or 'More'}", "", "| files | what it answers |", "|---|---|", *rows, ""]
    lines += [
        "## Every number",
        "",
        f"- {link(out / 'report.json')}: every number above as fractions, the settings, the units-and-signs "
        "legend (`conventions`) and the notes (what could not be computed, and why)",
        f"- {link(out / INDEX)}: this page",
        "",
    ]
    return "\n".join(lines)
