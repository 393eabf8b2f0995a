"""Reading item tables and collecting every problem in them, for SCEval and C3PO alike.

A source is read in full before anything runs: every row is validated and every media file
probed (:func:`faultline_eval.core.media.probe`), and each failure becomes a :class:`Problem` that
names the sample (or the row's line), the field or file, and the reason. ``sceval check`` and
``c3po check`` print them; the task builders refuse to start on any, or, with
``<PROJECT>_ON_BAD_INPUT=exclude``, run the rest and count each exclusion in the run's metrics.

JSON lines are read line by line, so a line that is not UTF-8 or not JSON is one problem with
its file, line and column rather than a failure of the whole table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from faultline_eval.core import media
from faultline_eval.core.record_fields import RecordError
from faultline_eval.core.settings import Setting

__all__ = [
    "Identified",
    "REASONS",
    "SourceError",
    "Problem",
    "read_text",
    "items_table",
    "Row",
    "read_rows",
    "numbered",
    "media_reason",
    "collect",
    "decode_problem",
    "decoding_problems",
    "bad_input_policy",
    "refuse",
    "check_command",
]


class Identified(Protocol):
    """A parsed record (SCEval's or C3PO's): all :func:`collect` needs of it is its sample id."""

    @property
    def sample_id(self) -> str: ...


Item = TypeVar("Item", bound=Identified)

#: Why an item is not run. ``record``: a field is malformed (or the row is not a record);
#: ``media_unreadable``: a file is missing or cannot be decoded; ``media_too_large``: a file is
#: over a media limit (``FAULTLINE_MAX_*``).
REASONS = ("record", "media_unreadable", "media_too_large")
POLICIES = ("error", "exclude")


class SourceError(ValueError):
    """The configured source cannot be read; the message says which and why."""


@dataclass(frozen=True)
class Problem:
    sample_id: str  # the sample id, or "<file line N>" / "<row N>" when the row has none
    reason: str  # one of REASONS
    detail: str  # names the sample, the field or file, and what is wrong

    def __str__(self) -> str:
        return f"{self.reason}: {self.detail}"


# --- text and tables ------------------------------------------------------------------------------

#: The table names a source folder holds its items in, in the order they are looked for.
TABLE_NAMES = ("items.jsonl", "items.parquet")
TABLE_SUFFIXES = (".jsonl", ".json", ".parquet")


def items_table(spec: str, setting: str, other_forms: str) -> Path:
    """The items table a source ``spec`` names as a path: a folder holding ``items.jsonl`` or
    ``items.parquet``, or such a file; found without reading a row (the check before a run and
    the loader's first step). A spec that is no such path, or names an empty table, is a
    :class:`SourceError` naming ``setting`` and the forms it takes (``other_forms``: the
    non-path ones, e.g. ``'demo', 'hf:<repo>'``)."""
    path = Path(spec).expanduser()
    forms = f"give {other_forms}, a folder holding {' or '.join(TABLE_NAMES)}, or such a file"
    if path.is_dir():
        table = next((path / name for name in TABLE_NAMES if (path / name).is_file()), None)
        if table is None:
            raise SourceError(f"{setting}={spec}: folder has no {' or '.join(TABLE_NAMES)}; {forms}")
    elif path.is_file() and path.suffix in TABLE_SUFFIXES:
        table = path
    elif path.exists():
        raise SourceError(f"{setting}={spec!r} is not a {'/'.join(TABLE_SUFFIXES)} table; {forms}")
    else:
        raise SourceError(f"{setting}={spec!r} does not exist; {forms}")
    if table.stat().st_size == 0:
        raise SourceError(f"{setting}={spec}: {table} is empty, it holds no items")
    return table


def text_position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based (line, column) of byte ``offset`` in ``data`` (the column counts bytes)."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, offset - line_start + 1


def decode_utf8(data: bytes, path: Path | str) -> str:
    """``data`` as text; bytes that are not UTF-8 raise naming the file, line and column."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = text_position(data, exc.start)
        raise SourceError(
            f"{path}:{line}:{column}: not UTF-8 text ({exc.reason}: byte 0x{data[exc.start]:02x})"
        ) from None


def read_text(path: Path | str) -> str:
    """A UTF-8 text file; a decoding error names the file, line and column."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return decode_utf8(data, path)


Row = tuple[str, Any]  # (where it is, e.g. "items.jsonl line 3"; the parsed row or a Problem)


def read_rows(path: Path) -> Iterator[Row]:
    """The rows of a ``.jsonl``, ``.json`` (an array of objects) or ``.parquet`` table.

    A JSON line that cannot be decoded or parsed, or is not an object, is yielded as a
    :class:`Problem` in place of its row.
    """
    if path.suffix == ".parquet":
        yield from _parquet_rows(path)
        return
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if path.suffix == ".json" and data.lstrip().startswith(b"["):
        try:
            rows = json.loads(decode_utf8(data, path))
        except json.JSONDecodeError as exc:
            raise SourceError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
        for index, row in enumerate(rows):
            yield (
                f"{path.name} item {index}",
                row
                if isinstance(row, Mapping)
                else _not_an_object(f"{path}: item {index}", f"<{path.name} item {index}>", row),
            )
        return
    for number, raw in enumerate(data.split(b"\n"), start=1):
        where = f"{path.name} line {number}"
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield (
                where,
                Problem(
                    f"<{where}>",
                    "record",
                    f"{path}:{number}:{exc.start + 1}: not UTF-8 text ({exc.reason}: byte 0x{raw[exc.start]:02x})",
                ),
            )
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as exc:
            yield where, Problem(f"<{where}>", "record", f"{path}:{number}:{exc.colno}: invalid JSON: {exc.msg}")
            continue
        yield where, row if isinstance(row, Mapping) else _not_an_object(f"{path}:{number}", f"<{where}>", row)


def _not_an_object(where: str, label: str, row: Any) -> Problem:
    return Problem(label, "record", f"{where}: a record must be a JSON object, got {type(row).__name__}")


def _parquet_rows(path: Path) -> Iterator[Row]:
    import datasets

    try:
        table = datasets.load_dataset("parquet", data_files=str(path), split="train")
    except Exception as exc:
        raise SourceError(f"{path}: cannot be read as parquet: {type(exc).__name__}: {exc}") from exc
    for index, row in enumerate(table):
        yield f"{path.name} row {index}", row


def numbered(rows: Iterable[Mapping[str, Any]], name: str = "row") -> Iterator[Row]:
    """Label the rows of an in-memory table (a hub dataset) ``"<name> <index>"``."""
    return ((f"{name} {index}", row) for index, row in enumerate(rows))


# --- validation ---------------------------------------------------------------------------------


def media_reason(exc: BaseException) -> str:
    """The :data:`REASONS` entry of a media failure (its cause, when wrapped); a record the decoded
    media contradict (a key frame past the last frame decoded) is a ``record`` problem."""
    cause = exc if isinstance(exc, media.MediaError) else exc.__cause__
    if not isinstance(cause, media.MediaError):
        return "record"
    return "media_too_large" if isinstance(cause, media.MediaTooLarge) else "media_unreadable"


def collect(
    rows: Iterable[Row],
    parse: Callable[[Mapping[str, Any]], Item],
    media_paths: Callable[[Item], Iterable[tuple[str, str]]],
) -> tuple[list[Item], list[Problem]]:
    """Every valid item of ``rows`` and a :class:`Problem` for each row that is not.

    ``parse`` turns a row into an item or raises :class:`RecordError`; ``media_paths`` lists
    an item's ``(field, path)`` pairs, each probed from its header. A repeated sample id is
    a problem of the repeat; the first stays.
    """
    items: list[Item] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    for where, row in rows:
        if isinstance(row, Problem):
            problems.append(row)
            continue
        sample = row.get("sample_id")
        label = sample if isinstance(sample, str) and sample.strip() else f"<{where}>"
        try:
            item = parse(row)
        except RecordError as exc:
            detail = str(exc) if label == sample else f"{where}: {exc}"
            problems.append(Problem(label, "record", detail))
            continue
        if item.sample_id in seen:
            problems.append(
                Problem(item.sample_id, "record", f"sample {item.sample_id!r}: duplicate sample_id ({where})")
            )
            continue
        seen.add(item.sample_id)
        problem = probe_problem(item.sample_id, media_paths(item))
        if problem:
            problems.append(problem)
            continue
        items.append(item)
    return items, problems


def probe_problem(sample_id: str, paths: Iterable[tuple[str, str]]) -> Problem | None:
    """The first media file of a sample that :func:`media.probe` refuses, as a Problem."""
    for field_name, path in paths:
        try:
            media.probe(path)
        except media.MediaError as exc:
            return Problem(sample_id, media_reason(exc), f"sample {sample_id!r}: field {field_name!r}: {exc}")
    return None


_decoded: dict[tuple[str, tuple[tuple[str, str], ...]], Problem | None] = {}


def decode_problem(
    item: Any, check_media: Callable[[Any], None], media_paths: Callable[[Any], Iterable[tuple[str, str]]]
) -> Problem | None:
    """Why an item's media fail to decode in full (``check_media`` raises :class:`RecordError`),
    or None; decoded once per process for each sample id and set of files."""
    key = (item.sample_id, tuple(media_paths(item)))
    if key not in _decoded:
        try:
            check_media(item)
            _decoded[key] = None
        except RecordError as exc:
            _decoded[key] = Problem(item.sample_id, media_reason(exc), str(exc))
    return _decoded[key]


def decoding_problems(
    items: Iterable[Any], check_media: Callable[[Any], None], media_paths: Callable[[Any], Iterable[tuple[str, str]]]
) -> list[Problem]:
    """:func:`decode_problem` of every item that has one."""
    return [p for item in items if (p := decode_problem(item, check_media, media_paths))]


# --- policy ---------------------------------------------------------------------------------------


def bad_input_policy(setting: Setting) -> str:
    """``error`` (the default: refuse to run on any problem) or ``exclude`` (run the rest)."""
    policy = setting.get()
    if policy not in POLICIES:
        raise SourceError(f"{setting.name}={policy!r}: use 'error' or 'exclude'")
    return policy


def refuse(spec: str, problems: list[Problem], env: str, *, shown: int = 50) -> SourceError:
    """The error a task builder raises on bad input: every problem, worded as ``check`` prints them."""
    lines = "\n  ".join(str(p) for p in problems[:shown])
    more = f"\n  ... and {len(problems) - shown} more" if len(problems) > shown else ""
    return SourceError(
        f"{spec}: {len(problems)} bad record(s), found before any model call "
        f"(set {env}=exclude to run the rest):\n  {lines}{more}"
    )


def check_command(
    source: Any, check_media: Callable[[Any], None], media_paths: Callable[[Any], Iterable[tuple[str, str]]]
) -> int:
    """``sceval check`` and ``c3po check``: print every problem of ``source`` (its load-time
    problems, then each item whose media fail to decode in full) and a summary line; the exit
    status is 1 on any problem, else 0."""
    decoding = decoding_problems(source.items, check_media, media_paths)
    problems = [*source.problems, *decoding]
    for problem in problems:
        print(problem)
    print(f"{source.spec}: {len(source.items) - len(decoding)} usable item(s), {len(problems)} problem(s)")
    return 1 if problems else 0
