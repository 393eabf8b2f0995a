"""Annotation sheets on disk: CSV always, XLSX beside it when ``openpyxl`` is installed.

A sheet is a header row and one row per thing to judge. Reading one back validates it against
the columns and allowed values its form declares (:class:`Column`), and every problem is
reported with file, row (as a spreadsheet numbers it: the header is row 1) and column, all
problems of a file at once, so an annotator fixes a sheet in one go.
"""

from __future__ import annotations

import csv
import datetime
import importlib.util
import re
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from faultline_eval.core.store import replacing


class SheetError(ValueError):
    """A filled sheet that cannot be imported; the message lists every problem found."""


@dataclass(frozen=True)
class Column:
    """One column of a sheet. ``allowed``: the values an annotator may enter (None: free text);
    ``required``: must be filled; ``given``: filled by the export, read back only to match rows."""

    name: str
    allowed: tuple[str, ...] | None = None
    required: bool = False
    given: bool = False


def xlsx_available() -> bool:
    return importlib.util.find_spec("openpyxl") is not None


def write_sheet(path: Path, columns: Sequence[Column], rows: Iterable[dict]) -> list[Path]:
    """``path`` (.csv) and, with openpyxl, the same table as ``path.with_suffix('.xlsx')``, its
    answer columns offering their allowed values as a drop-down."""
    path.parent.mkdir(parents=True, exist_ok=True)
    names = [c.name for c in columns]
    rows = [{n: row.get(n, "") for n in names} for row in rows]
    with replacing(path) as temporary, temporary.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=names)
        writer.writeheader()
        writer.writerows(rows)
    written = [path]
    if xlsx_available():
        written.append(_write_xlsx(path.with_suffix(".xlsx"), columns, rows))
    return written


def _write_xlsx(path: Path, columns: Sequence[Column], rows: list[dict]) -> Path:
    from openpyxl import Workbook
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.datavalidation import DataValidation

    book = Workbook()
    sheet = book.active
    sheet.title = path.stem
    sheet.append([c.name for c in columns])
    for row in rows:
        sheet.append([row[c.name] for c in columns])
    for index, column in enumerate(columns, start=1):
        if column.allowed and len(rows):
            letter = get_column_letter(index)
            values = ",".join(v for v in column.allowed if v)
            check = DataValidation(type="list", formula1=f'"{values}"', allow_blank=True)
            check.add(f"{letter}2:{letter}{len(rows) + 1}")
            sheet.add_data_validation(check)
    sheet.freeze_panes = "B2"
    book.properties.created = _FIXED_TIME
    book.save(path)
    _without_times(path)
    return path


#: The time written into a workbook (its properties and zip entries): a constant, so exporting
#: a pass twice writes the same bytes.
_FIXED_TIME = datetime.datetime(2000, 1, 1)


def _without_times(path: Path) -> None:
    """Rewrite the workbook at ``path`` with its "modified" property and every zip entry dated
    :data:`_FIXED_TIME` (openpyxl and the zip writer stamp the current time on saving)."""
    stamp = _FIXED_TIME.strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    with zipfile.ZipFile(path) as source:
        entries = [(info, source.read(info)) for info in source.infolist()]
    entries = [
        (
            info,
            re.sub(rb"(<dcterms:modified[^>]*>)[^<]*", rb"\g<1>" + stamp, data)
            if info.filename == "docProps/core.xml"
            else data,
        )
        for info, data in entries
    ]
    with replacing(path) as temporary, zipfile.ZipFile(temporary, "w") as out:
        for info, data in entries:
            fixed = zipfile.ZipInfo(info.filename, date_time=_FIXED_TIME.timetuple()[:6])
            fixed.compress_type, fixed.external_attr = info.compress_type, info.external_attr
            out.writestr(fixed, data)


def read_sheet(path: Path, columns: Sequence[Column]) -> list[dict]:
    """The rows of a filled sheet (.csv or .xlsx), every value a stripped string, validated
    against ``columns``: missing columns, values outside ``allowed`` and empty required cells
    raise :class:`SheetError` naming each row and column. Rows keep their spreadsheet row
    number as ``_row``."""
    rows, problems = read_sheet_rows(path, columns)
    if problems:
        raise SheetError(sheet_problems(path, problems))
    return rows


def read_sheet_rows(path: Path, columns: Sequence[Column]) -> tuple[list[dict], list[str]]:
    """:func:`read_sheet` without raising on its values: the rows and every problem of every
    row and column (an annotator then sees all of them at once, with the checks that need the
    rows). A file that cannot be read as a sheet at all still raises :class:`SheetError`."""
    if not path.is_file():
        raise SheetError(f"{path}: no such sheet")
    header, records = _read_xlsx(path) if path.suffix.lower() == ".xlsx" else _read_csv(path)
    missing = [c.name for c in columns if c.name not in header]
    if missing:
        raise SheetError(f"{path}: row 1: missing column(s) {', '.join(missing)}")
    problems, rows = [], []
    for number, values in records:
        row = {name: ("" if value is None else str(value).strip()) for name, value in zip(header, values)}
        if not any(row.values()):
            continue  # a blank line at the end of a sheet
        for column in columns:
            value = row.get(column.name, "")
            if column.allowed is not None and value and value not in column.allowed:
                problems.append(
                    f"row {number}, column {column.name!r}: {value!r} is not one of "
                    f"{', '.join(repr(v) for v in column.allowed if v)}"
                )
            elif column.required and not value:
                problems.append(f"row {number}, column {column.name!r}: empty")
        row["_row"] = number
        rows.append(row)
    return rows, problems


def sheet_problems(path: Path, problems: Sequence[str], limit: int = 40) -> str:
    more = f"\n  ... and {len(problems) - limit} more" if len(problems) > limit else ""
    return f"{path}: {len(problems)} problem(s):\n  " + "\n  ".join(problems[:limit]) + more


#: How a file that is not UTF-8 text starts, when a spreadsheet program saved it under .csv.
_NOT_TEXT = {
    b"PK\x03\x04": "an Excel workbook (.xlsx)",
    b"\x89PNG": "a PNG picture",
    b"\xd0\xcf\x11\xe0": "an old Excel workbook (.xls)",
    b"%PDF": "a PDF",
}


def _read_csv(path: Path) -> tuple[list[str], list[tuple[int, list]]]:
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            lines = list(csv.reader(handle))
    except UnicodeDecodeError as exc:
        raise SheetError(_not_utf8(path, exc)) from None
    if not lines:
        raise SheetError(f"{path}: empty file (no header row)")
    return [h.strip() for h in lines[0]], [(i, line) for i, line in enumerate(lines[1:], start=2)]


def _not_utf8(path: Path, exc: UnicodeDecodeError) -> str:
    """What a sheet that is not UTF-8 text is most likely to be, and how to bring it in."""
    head = path.read_bytes()[:8]
    kind = next((what for magic, what in _NOT_TEXT.items() if head.startswith(magic)), None)
    if kind is None:
        return (
            f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}; a spreadsheet's "
            "'CSV (Windows)' or 'CSV (Macintosh)' export is Latin-1). Save it again as 'CSV UTF-8 "
            "(comma delimited)', or fill the .xlsx beside it and import with --format xlsx"
        )
    fix = (
        "import the workbook with --format xlsx (named <sheet>.xlsx)"
        if "Excel" in kind
        else "put the filled sheet itself there, saved as 'CSV UTF-8 (comma delimited)'"
    )
    return f"{path}: this is {kind}, not a CSV sheet: {fix}"


def _read_xlsx(path: Path) -> tuple[list[str], list[tuple[int, list]]]:
    if not xlsx_available():
        raise SheetError(f"{path}: reading .xlsx needs openpyxl (pip install openpyxl), or import the .csv")
    from openpyxl import load_workbook

    sheet = load_workbook(path, read_only=True, data_only=True).active
    lines = list(sheet.iter_rows(values_only=True))
    if not lines:
        raise SheetError(f"{path}: empty workbook (no header row)")
    return ([str(h or "").strip() for h in lines[0]], [(i, list(line)) for i, line in enumerate(lines[1:], start=2)])
