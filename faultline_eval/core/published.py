"""The papers' published per-model numbers, read from a versioned data file each benchmark ships
(``<benchmark>/data/published/<version>.json``). One transcription, one loader: reports place a user's
model among these rows, tests check the rows against the papers' own arithmetic, and a normalised
score pins its reference to a row here by name and version.

A file holds ``format: faultline.published``, ``format_version``, ``benchmark``, ``version``, ``paper``,
``tables`` (per table: title, the paper's definition and cohort, severities) and ``values``: one entry per
printed number with its provenance (table, row = model, column, quantity, value; optional group and the
paper's printed drop)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

FORMAT = "faultline.published"
FORMAT_VERSION = 1
#: Said beside every published number placed in a report: the rows are the paper's, not a re-run.
PUBLISHED_MARK = "published, not re-run"


@dataclass(frozen=True)
class PublishedValue:
    table: str
    row: str
    column: str
    quantity: str
    value: float | str
    group: str | None = None
    printed_drop: float | None = None

    def provenance(self, source: PublishedTables) -> str:
        return f"{source.paper_id} Table {self.table}, row {self.row!r}, column {self.column!r} ({source.version})"


@dataclass(frozen=True)
class PublishedTables:
    benchmark: str
    version: str
    paper_id: str
    tables: dict[str, dict[str, Any]]
    values: tuple[PublishedValue, ...] = field(repr=False)
    #: Operator -> modality, in the paper's column order (benchmarks with corruption operators).
    operators: dict[str, str] = field(default_factory=dict)

    def column(self, table: str, column: str) -> dict[str, float]:
        """Model -> the number printed in ``column`` of ``table`` (numeric entries only)."""
        return {
            v.row: float(v.value)
            for v in self.values
            if v.table == table and v.column == column and not isinstance(v.value, str)
        }

    def row(self, table: str, row: str) -> dict[str, PublishedValue]:
        return {v.column: v for v in self.values if v.table == table and v.row == row}

    def models(self, table: str) -> list[str]:
        return list(dict.fromkeys(v.row for v in self.values if v.table == table))

    def value(self, table: str, row: str, column: str) -> PublishedValue:
        for v in self.values:
            if (v.table, v.row, v.column) == (table, row, column):
                return v
        raise KeyError(
            f"{self.version}: no published value at Table {table}, row {row!r}, column {column!r}; "
            f"rows of Table {table}: {', '.join(self.models(table)) or 'none'}"
        )


class _Readable(Protocol):
    """A file path or a package resource (importlib.resources' Traversable)."""

    def read_text(self, encoding: str | None = None) -> str: ...

    def is_file(self) -> bool: ...

    def __truediv__(self, child: str) -> _Readable: ...


def load_packaged(data_folder: _Readable, version: str) -> PublishedTables:
    """``<data_folder>/published/<version>.json``: a benchmark's data folder (``files(__package__)``)."""
    path = data_folder / "published" / f"{version}.json"
    if not path.is_file():
        raise FileNotFoundError(f"no published-rows file {version}.json in {data_folder}/published/")
    return load_published(path)


def load_published(path: Path | _Readable) -> PublishedTables:
    """Read one published-rows file; a file of another format or version is refused by name."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    if doc.get("format") != FORMAT or doc.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path}: not a {FORMAT} file of format_version {FORMAT_VERSION} "
            f"(found format={doc.get('format')!r}, format_version={doc.get('format_version')!r})"
        )
    tables = doc["tables"]
    values = []
    for i, entry in enumerate(doc["values"]):
        if entry["table"] not in tables:
            raise ValueError(f"{path}: values[{i}] names Table {entry['table']}, which 'tables' does not describe")
        values.append(PublishedValue(**entry))
    return PublishedTables(
        doc["benchmark"], doc["version"], doc["paper"]["id"], tables, tuple(values), doc.get("operators", {})
    )
