"""Compare two evaluation output folders: did a change keep the behaviour the same?

Issue 26 (a redesign that must not change behaviour) runs the README's main job and
``--tasks sceval_panel,c3po_all --limit 10`` on the code before and after, each followed by
``sceval report DIR -o DIR/report/`` and ``c3po report DIR -o DIR/c3po-report/``, and then::

    python benchmarks/same_behaviour.py BEFORE_DIR AFTER_DIR

It compares every file of the two folders, matched by name with lmms-eval's timestamp prefix
(``20261202_111322_``) removed, so a per-sample log is matched by its task:

* per-sample JSONL (``*_samples_<task>.jsonl``): lines matched by ``doc_id``, every field compared
  value by value, except :data:`VARYING_RECORD_FIELDS`; trial entries (see
  :func:`normalise_trial_entry`) are normalised on both sides first;
* the results JSON: every value (metrics, sample counts, configs, sample hashes), except
  :data:`VARYING_RESULTS_FIELDS`; ``*_run_info.json`` except :data:`VARYING_RUN_INFO_FIELDS`;
* each report folder: ``report.json`` and ``*.trials.json`` value by value, CSV tables cell by
  cell, Markdown/LaTeX line by line, figures byte for byte (``--skip-figures`` leaves them out).

Before comparing, every string has the output folder's path (as typed and resolved) replaced by
``<OUTPUT>`` and the checkout's path by ``<REPO>``: runs in different folders or worktrees write
different absolute paths and nothing else. The checkout is detected from paths that differ only in
their leading folders (printed; ``--before-repo``/``--after-repo`` set it). Run both reports with the
same form of folder path (both absolute, as in the README job), since ``report.json`` records it as given.

A key ``schema_version`` may exist in AFTER only (the redesign versions its records); anywhere
else a key on one side only is a difference. Floats must be equal unless ``--float-tol`` is given.

Prints, per file, ``same`` or the first few differences with their path into the JSON (``--show N``),
then a summary; exit status 0 only when every file matches, 1 otherwise, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import collections
import csv
import io
import json
import math
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# --- what legitimately differs between two runs of the same code --------------------------------
# Found by running `--tasks sceval_panel,c3po_all --limit 10` and the README main job twice each on
# one checkout (tag pre26) and diffing every file; nothing else differed.

#: Keys dropped anywhere inside a per-sample line.
VARYING_RECORD_FIELDS = frozenset(
    {
        "latency_s",  # wall-clock seconds of the model call (sceval_record, c3po_record): timing, not behaviour
    }
)

#: Keys dropped anywhere inside ``*_run_info.json``: its request totals carry the run's wall-clock
#: latencies next to the counts (sent, restored, retries, failures), which are compared.
VARYING_RUN_INFO_FIELDS = frozenset({"latency_s", "mean_latency_s"})

#: Top-level keys of lmms-eval's ``*_results.json`` dropped before comparing.
VARYING_RESULTS_FIELDS = frozenset(
    {
        "date",  # the run's timestamp (also its files' name prefix)
        "start_time",
        "end_time",
        "total_evaluation_time_seconds",  # clock readings and duration
        "git_hash",
        "git_branch",
        "lmms_eval_version",  # the checkout's commit: differs before/after by design
    }
)

#: Function reprs in the results JSON's ``configs`` ("<function process_results at 0x7f...>"): the
#: address changes every run; the name is where code lives, not behaviour (the values the functions
#: produce are compared), so both are dropped.
_FUNCTION_REPR = re.compile(r"<function \S+ at 0x[0-9a-f]+>")

#: Tables whose row order is not defined today, compared as unordered: ``comparisons`` of
#: `sceval report` is built by iterating a Python set of (model, condition) tuples
#: (sceval_plugin/metrics/protocol.py:comparisons), so its order follows PYTHONHASHSEED. Its rows,
#: as a set, were equal in every repeat.
UNORDERED_TABLES = {
    "report/comparisons.csv": None,  # None: the whole table
    "report/report.json": ("comparisons",),  # this list inside the JSON
}

#: The harness's own per-sample keys (lmms-eval), never trial entries.
_LMMS_SAMPLE_KEYS = frozenset(
    {
        "doc_id",
        "doc",
        "target",
        "arguments",
        "resps",
        "filtered_resps",
        "doc_hash",
        "prompt_hash",
        "target_hash",
        "token_counts",
        "input",
    }
)

#: A key that may exist in AFTER only.
SCHEMA_VERSION_KEY = "schema_version"

_TIMESTAMP_PREFIX = re.compile(r"^\d{8}_\d{6}_")
_FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".jpg")


# === THE LEAD EXTENDS THIS ======================================================================
#: Schema-2 field -> schema-1 key of a trial entry (``SCHEMA_1_KEYS`` of sceval_plugin/sceval_trial.py, c3po_plugin/c3po_trial.py),
#: written out here so that the comparison does not depend on the code it checks.
SCEVAL_SCHEMA_1_KEYS = {
    "sample_id": "s",
    "variant": "v",
    "correct": "c",
    "invalid": "i",
    "answer_key": "a",
    "n_options": "n",
    "confidence": "f",
    "source": "o",
    "not_applicable": "u",
    "cohort": "k",
    "donor": "d",
    "follows_donor_key": "r",
    "donor_key_map": "m",
}
C3PO_SCHEMA_1_KEYS = {
    "sample_id": "s",
    "variant": "v",
    "correct": "c",
    "invalid": "i",
    "template_id": "t",
    "exact_match": "x",
    "judge_decided": "j",
    "judge_error": "e",
    "failure_mode": "m",
    "human_correct": "h",
    "has_human_answer": "hn",
}


def normalise_trial_entry(entry: dict) -> dict:
    """The trial entry of one per-sample line in its schema-1 form (single-letter keys).

    A trial entry is the small object every SCEval/C3PO metric field of a per-sample line holds
    (``sceval_accuracy``, ``c3po_accuracy``, ...): in schema 1 ``{"s": sample id, "v": variant/run,
    "c": correct, "i": invalid, "a": answer key, "n": options, ...}``. It is applied to the entries
    of BOTH folders, so it maps the redesign's typed, versioned trial record (schema 2: the field
    names of ``SCEvalTrial``/``C3POTrial``, a C3PO one recognised by its ``template_id``) back to
    schema 1 and leaves schema-1 entries unchanged. Schema 2 writes an optional field only when set,
    as schema 1 did, so key sets correspond one to one. ``schema_version`` is left in; the
    comparison ignores it on the AFTER side.
    """
    if entry.get("schema_version") != 2:
        return entry
    keys = C3PO_SCHEMA_1_KEYS if "template_id" in entry else SCEVAL_SCHEMA_1_KEYS
    return {keys.get(k, k): v for k, v in entry.items()}


# ================================================================================================


def is_trial_entry(key: str, value: Any) -> bool:
    """Whether a top-level field of a per-sample line is a trial entry: an object the harness
    did not write and that is not one of the full records (``sceval_record``, ``c3po_record``)."""
    return isinstance(value, dict) and key not in _LMMS_SAMPLE_KEYS and not key.endswith("_record")


# --- path substitution --------------------------------------------------------------------------


class Paths:
    """One side's absolute paths to replace by placeholders, longest first."""

    def __init__(self, replacements: dict[str, str]):
        self.pairs = sorted(
            ((p.rstrip("/"), tag) for p, tag in replacements.items() if p.rstrip("/")), key=lambda pair: -len(pair[0])
        )

    def __call__(self, text: str) -> str:
        for path, tag in self.pairs:
            if path in text:
                text = text.replace(path, tag)
        return text


def results_file(folder: Path) -> Path | None:
    found = sorted(folder.glob("*_results.json"))
    return found[-1] if found else None


def typed_output_path(folder: Path) -> str | None:
    """The output folder as typed on the command line (the results JSON records it)."""
    found = results_file(folder)
    if found is None:
        return None
    args = json.loads(found.read_text()).get("config", {}).get("resolved_cli_args", {})
    return args.get("output_path")


def _path_leaves(value: Any, at: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _path_leaves(v, f"{at}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _path_leaves(v, f"{at}[{i}]")
    elif isinstance(value, str) and value.startswith("/"):
        yield at, value


def detect_repos(before: Path, after: Path, out_before: Paths, out_after: Paths) -> tuple[str, str] | None:
    """The two checkouts' paths, from absolute paths at the same place in the results JSON and the
    first line of each per-sample log that differ only in their leading folders (e.g. the demo
    media root, the task's placeholder data file): the most common (before, after) prefix pair."""
    votes: collections.Counter = collections.Counter()
    pairs = []
    rb, ra = results_file(before), results_file(after)
    if rb and ra:
        pairs.append((json.loads(rb.read_text()), json.loads(ra.read_text())))
    after_logs = {logical_name(p): p for p in after.glob("*_samples_*.jsonl")}
    for p in before.glob("*_samples_*.jsonl"):
        q = after_logs.get(logical_name(p))
        if q is not None:
            pairs.append((_first_json_line(p), _first_json_line(q)))
    for b_value, a_value in pairs:
        a_leaves = dict(_path_leaves(a_value))
        for at, b_path in _path_leaves(b_value):
            a_path = a_leaves.get(at)
            if a_path is None:
                continue
            b_path, a_path = out_before(b_path), out_after(a_path)
            if b_path == a_path or "<OUTPUT>" in b_path:
                continue
            b_parts, a_parts = Path(b_path).parts, Path(a_path).parts
            common = 0
            while common < min(len(b_parts), len(a_parts)) - 1 and b_parts[-1 - common] == a_parts[-1 - common]:
                common += 1
            if common:
                votes[(str(Path(*b_parts[: len(b_parts) - common])), str(Path(*a_parts[: len(a_parts) - common])))] += 1
    return votes.most_common(1)[0][0] if votes else None


def _first_json_line(path: Path) -> Any:
    with path.open() as handle:
        line = handle.readline()
    try:
        return json.loads(line)
    except ValueError:
        return None


# --- value comparison ---------------------------------------------------------------------------


class Differences:
    """The differences of one file: counted in full, the first ``show`` kept for printing."""

    def __init__(self, show: int):
        self.show, self.count = show, 0
        self.first: list[str] = []

    def add(self, where: str, before: Any, after: Any) -> None:
        self.count += 1
        if len(self.first) < self.show:
            self.first.append(f"{where}: before={_short(before)} after={_short(after)}")


def _short(value: Any) -> str:
    text = value if isinstance(value, str) and value.startswith("<") and value.endswith(">") else json.dumps(value)
    return text if len(text) <= 160 else text[:157] + "..."


_MISSING = "<missing>"


class Comparer:
    def __init__(self, before_paths: Paths, after_paths: Paths, float_tol: float):
        self.before_paths, self.after_paths, self.float_tol = before_paths, after_paths, float_tol

    def values(self, before: Any, after: Any, where: str, diffs: Differences, drop: frozenset = frozenset()) -> None:
        """Compare two JSON values recursively; ``drop``: keys ignored at any depth."""
        if isinstance(before, dict) and isinstance(after, dict):
            for key in list(before) + [k for k in after if k not in before]:
                if key in drop:
                    continue
                if key == SCHEMA_VERSION_KEY and key not in before:
                    continue  # allowed in AFTER only
                self.values(before.get(key, _MISSING), after.get(key, _MISSING), f"{where}.{key}", diffs, drop)
        elif isinstance(before, list) and isinstance(after, list):
            if len(before) != len(after):
                diffs.add(f"{where} (length)", len(before), len(after))
            for i, (b, a) in enumerate(zip(before, after)):
                self.values(b, a, f"{where}[{i}]", diffs, drop)
        elif not self.scalars_equal(before, after):
            diffs.add(where, before, after)

    def scalars_equal(self, before: Any, after: Any) -> bool:
        """Strings after path substitution; numbers of the same type exactly (an int that becomes
        a float, 1 -> 1.0, is a difference), or any two numbers within --float-tol when given."""
        if isinstance(before, str) and isinstance(after, str):
            return self.before_paths(before) == self.after_paths(after)
        if _is_number(before) and _is_number(after):
            if _is_nan(before) and _is_nan(after):
                return True
            if self.float_tol:
                return math.isclose(before, after, rel_tol=self.float_tol, abs_tol=self.float_tol)
        return type(before) is type(after) and before == after

    def cells_equal(self, before: str, after: str) -> bool:
        """A CSV cell: its text (paths substituted), or, with --float-tol, two numbers within it."""
        if self.before_paths(before) == self.after_paths(after):
            return True
        b, a = _number(before), _number(after)
        return bool(self.float_tol) and b is not None and a is not None and self.scalars_equal(b, a)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


# --- per kind of file ---------------------------------------------------------------------------


def compare_samples(before: Path, after: Path, cmp: Comparer, diffs: Differences) -> None:
    """Per-sample lines matched by doc_id; trial entries normalised; varying fields dropped."""
    b_lines, a_lines = _samples_by_doc(before), _samples_by_doc(after)
    for doc_id in list(b_lines) + [d for d in a_lines if d not in b_lines]:
        b, a = b_lines.get(doc_id), a_lines.get(doc_id)
        where = f"doc_id={doc_id}"
        if b is None or a is None:
            diffs.add(f"{where} (line)", "present" if b else _MISSING, "present" if a else _MISSING)
            continue
        cmp.values(_normalise_line(b), _normalise_line(a), where, diffs, drop=VARYING_RECORD_FIELDS)


def _samples_by_doc(path: Path) -> dict[Any, dict]:
    lines: dict[Any, dict] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            raise SystemExit(f"{path}:{number}: not JSON ({error})") from None
        doc_id = record.get("doc_id", f"line{number}")
        if doc_id in lines:
            raise SystemExit(f"{path}:{number}: doc_id {doc_id!r} appears twice (a resumed or merged log?)")
        lines[doc_id] = record
    return lines


def _normalise_line(record: dict) -> dict:
    return {k: normalise_trial_entry(v) if is_trial_entry(k, v) else v for k, v in record.items()}


def compare_results(before: Path, after: Path, cmp: Comparer, diffs: Differences) -> None:
    b, a = (
        _strip_functions({k: v for k, v in json.loads(p.read_text()).items() if k not in VARYING_RESULTS_FIELDS})
        for p in (before, after)
    )
    cmp.values(b, a, "", diffs)


def _strip_functions(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_functions(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip_functions(v) for v in value]
    if isinstance(value, str):
        return _FUNCTION_REPR.sub("<function>", value)
    return value


def compare_json(before: Path, after: Path, name: str, cmp: Comparer, diffs: Differences) -> None:
    b, a = json.loads(before.read_text()), json.loads(after.read_text())
    unordered = UNORDERED_TABLES.get(name)
    if unordered is not None:
        for value in (b, a):
            _sort_list_at(value, unordered)
    cmp.values(b, a, "", diffs)


def _sort_list_at(value: Any, keys: tuple[str, ...]) -> None:
    *parents, last = keys
    for key in parents:
        value = value.get(key, {}) if isinstance(value, dict) else {}
    if isinstance(value, dict) and isinstance(value.get(last), list):
        value[last] = sorted(value[last], key=lambda row: json.dumps(row, sort_keys=True))


def compare_csv(before: Path, after: Path, name: str, cmp: Comparer, diffs: Differences) -> None:
    b_rows, a_rows = (list(csv.reader(io.StringIO(p.read_text()))) for p in (before, after))
    if name in UNORDERED_TABLES:
        b_rows, a_rows = (rows[:1] + sorted(rows[1:]) for rows in (b_rows, a_rows))
    if len(b_rows) != len(a_rows):
        diffs.add("rows", len(b_rows), len(a_rows))
    header = b_rows[0] if b_rows else []
    for number, (b, a) in enumerate(zip(b_rows, a_rows)):
        if len(b) != len(a):
            diffs.add(f"row {number} (columns)", b, a)
            continue
        for column, (x, y) in enumerate(zip(b, a)):
            if not cmp.cells_equal(x, y):
                label = header[column] if number and column < len(header) else column
                diffs.add(f"row {number} [{label}]", x, y)


def compare_text(before: Path, after: Path, cmp: Comparer, diffs: Differences) -> None:
    b_lines = cmp.before_paths(before.read_text()).splitlines()
    a_lines = cmp.after_paths(after.read_text()).splitlines()
    if len(b_lines) != len(a_lines):
        diffs.add("lines", len(b_lines), len(a_lines))
    for number, (b, a) in enumerate(zip(b_lines, a_lines), 1):
        if b != a:
            diffs.add(f"line {number}", b, a)


def compare_bytes(before: Path, after: Path, diffs: Differences) -> None:
    if before.read_bytes() != after.read_bytes():
        diffs.add("bytes", f"<{before.stat().st_size} bytes>", f"<{after.stat().st_size} bytes>")


def compare_file(before: Path, after: Path, name: str, cmp: Comparer, diffs: Differences) -> str:
    """Compare one matched pair; returns the kind of file."""
    if "_samples_" in name and name.endswith(".jsonl"):
        compare_samples(before, after, cmp, diffs)
        return "per-sample log"
    if name == "results.json":
        compare_results(before, after, cmp, diffs)
        return "results"
    if name.endswith(".json"):
        compare_json(before, after, name, cmp, diffs)
        return "report JSON"
    if name.endswith(".csv"):
        compare_csv(before, after, name, cmp, diffs)
        return "table (CSV)"
    if name.endswith(_FIGURE_SUFFIXES):
        compare_bytes(before, after, diffs)
        return "figure"
    compare_text(before, after, cmp, diffs)
    return "table (text)"


# --- folders ------------------------------------------------------------------------------------


def logical_name(path: Path, root: Path | None = None) -> str:
    """A file's name relative to its folder with lmms-eval's timestamp prefix removed (``samples_``
    logs keep their ``_samples_`` marker: ``20261202_111322_samples_x.jsonl`` -> ``_samples_x.jsonl``)."""
    relative = path.relative_to(root) if root else Path(path.name)
    stripped = _TIMESTAMP_PREFIX.sub("", relative.name)
    if stripped.startswith("samples_"):
        stripped = "_" + stripped
    return str(relative.with_name(stripped))


def index(folder: Path, skip_figures: bool) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if skip_figures and path.suffix in _FIGURE_SUFFIXES:
            continue
        name = logical_name(path, folder)
        if name in files:
            raise SystemExit(
                f"{folder}: {files[name].name} and {path.name} are the same task's log (two runs in "
                "one folder?); compare folders holding one run each"
            )
        files[name] = path
    return files


def smoke_folders(work: Path) -> tuple[Path, Path]:
    """``--smoke``: one real run (3 items of ``sceval_clean`` and ``c3po_ic_t1``, both reports) and a copy of it."""
    import provenance  # here: the module is also imported by path

    before = provenance.demo_main_job(work / "before", smoke=True)
    shutil.copytree(before, work / "after")
    return before, work / "after"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("before", type=Path, nargs="?", help="output folder of the code before the change")
    parser.add_argument("after", type=Path, nargs="?", help="output folder of the code after the change")
    parser.add_argument("--before-repo", help="checkout that produced BEFORE (default: detected)")
    parser.add_argument("--after-repo", help="checkout that produced AFTER (default: detected)")
    parser.add_argument(
        "--float-tol",
        type=float,
        default=0.0,
        help="relative and absolute tolerance for floats (default 0: exactly equal)",
    )
    parser.add_argument("--show", type=int, default=5, help="differences printed per file (default 5)")
    parser.add_argument("--skip-figures", action="store_true", help="do not compare figures (png, pdf, svg)")
    parser.add_argument("--quiet", action="store_true", help="print only differing files and the summary")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a CI-sized check of the whole path: a 2-item run with both reports, compared with a copy of itself",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the counts as JSON with their provenance")
    args = parser.parse_args(argv)
    if args.smoke:
        with tempfile.TemporaryDirectory() as work:
            args.before, args.after = smoke_folders(Path(work))
            return compare_folders(parser, args, argv)
    if args.before is None or args.after is None:
        parser.error("give BEFORE and AFTER (or --smoke)")
    return compare_folders(parser, args, argv)


def compare_folders(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str] | None) -> int:
    import provenance  # here: the module is also imported by path

    record = provenance.Record(__file__, peer=None, argv=argv)
    for folder in (args.before, args.after):
        if not folder.is_dir():
            parser.error(f"{folder}: not a folder")
    if bool(args.before_repo) != bool(args.after_repo):
        parser.error("give both --before-repo and --after-repo, or neither (detected)")

    def outputs(folder: Path) -> dict[str, str]:
        found = {str(folder.resolve()): "<OUTPUT>", str(folder): "<OUTPUT>"}
        typed = typed_output_path(folder)
        if typed:
            found[typed] = "<OUTPUT>"
        return found

    out_before, out_after = Paths(outputs(args.before)), Paths(outputs(args.after))
    repos = (
        (args.before_repo, args.after_repo)
        if args.before_repo and args.after_repo
        else detect_repos(args.before, args.after, out_before, out_after)
    )
    if repos:
        print(f"checkouts: {repos[0]} (before) and {repos[1]} (after) are both read as <REPO>")
    before_paths = Paths({**outputs(args.before), **({repos[0]: "<REPO>"} if repos else {})})
    after_paths = Paths({**outputs(args.after), **({repos[1]: "<REPO>"} if repos else {})})
    cmp = Comparer(before_paths, after_paths, args.float_tol)

    b_files, a_files = index(args.before, args.skip_figures), index(args.after, args.skip_figures)
    tally: collections.Counter = collections.Counter()
    differing = []
    for name in sorted(set(b_files) | set(a_files)):
        if name not in a_files or name not in b_files:
            side = "AFTER" if name not in a_files else "BEFORE"
            print(f"MISSING in {side}: {name}")
            tally["missing"] += 1
            differing.append(name)
            continue
        diffs = Differences(args.show)
        kind = compare_file(b_files[name], a_files[name], name, cmp, diffs)
        if diffs.count:
            tally[f"{kind}: differ"] += 1
            differing.append(name)
            print(f"DIFFERS {name} ({kind}, {diffs.count} difference{'s' * (diffs.count != 1)})")
            for line in diffs.first:
                print(f"    {line}")
        else:
            tally[f"{kind}: same"] += 1
            if not args.quiet:
                print(f"same    {name}")
    print("\nsummary: " + ", ".join(f"{n} {k}" for k, n in sorted(tally.items())))
    record.figure("files", len(set(b_files) | set(a_files)), "files", "files compared")
    record.figure("differing", len(differing), "files", "files that differ or are missing")
    record.write(args.json, smoke=args.smoke)
    if differing:
        print(f"NOT THE SAME: {len(differing)} of {len(set(b_files) | set(a_files))} files differ or are missing")
        return 1
    print(f"THE SAME: all {len(b_files)} files match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
