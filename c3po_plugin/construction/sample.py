"""Stage 6 of a C3PO build: the human-evaluation sample and its answers (paper App. E).

**Stratified round-robin sampling** (App. E): the accepted items are stratified by category
(Information Composition, Counterfactual Conflict) and by the auditor's difficulty into four
buckets, ``< 2.5``, ``2.5-4.9``, ``5.0-7.4``, ``>= 7.5`` (the scores are integers 1-10, so these
are 1-2, 3-4, 5-7 and 8-10). Each of the 8 strata gets up to ``per_bucket`` items (default 25,
the paper's target), drawn round-robin over the stratum's templates (in id order, each template's
items in a seeded order, ``blake2b(seed, sample id)``) so that no template dominates a stratum.
A sparse stratum gives what it has (the paper reached 250 of 300) and is reported.

**Annotators** (App. E: three evaluators, equal disjoint subsets, one answer per sample): the
sampled items, in stratum order, are dealt to ``annotators`` sheets in turn, so each sheet is a
balanced mix of categories and difficulties and no item is on two sheets.

**Sheets**: ``<build dir>/sample/annotator_<k>.csv`` with ``sample_id``, the media paths
(relative to the sheet), the question and an empty ``human_answer`` column (never the gold
answer), beside ``instructions.md`` (App. E's instructions to the evaluators). The filled
sheets come back through :func:`import_answers`, which checks every row before taking any and
stores the answers in the ``sample`` ledger; ``export`` writes them as ``human_answer``.

Ledger entry (key = sample id): ``{"template_id", "category", "difficulty", "bucket",
"annotator", "sheet", "human_answer"?}``.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from pathlib import Path

from c3po_plugin.construction.assemble import accepted_items, project_template_id
from c3po_plugin.construction.ledger import Ledger
from faultline_eval.core.store import replacing, write_atomic

STAGE = "sample"
CATEGORIES = ("ic", "cc")
#: App. E's difficulty buckets: (label, lower bound inclusive, upper bound exclusive).
BUCKETS = (("<2.5", float("-inf"), 2.5), ("2.5-4.9", 2.5, 5.0), ("5.0-7.4", 5.0, 7.5), (">=7.5", 7.5, float("inf")))
SHEET_COLUMNS = ("sample_id", "video", "image", "audio", "question", "human_answer")
#: App. E's instructions to the human evaluators (verbatim).
INSTRUCTIONS = (
    "There are two types of samples: Information Composition (where the information to find the correct answer is "
    "spread across multiple modalities) and Counterfactuals (where at least two modalities present conflicting "
    "information, and the correct has to be determined by focusing precisely on what the question is asking). Pay "
    "careful attention to all the media files and the question.\n\n"
    "Answer the question directly, accurately, and concisely based ONLY on the provided media streams. Do not "
    "refuse to answer. Answer in only one word or few words, not in a full sentence. The ground truth answer is "
    "only one word or few words and your answer has to be semantically equivalent to the ground truth answer to be "
    "considered correct. If you believe there is insufficient information to answer the question, say "
    "**Insufficient Information**.\n"
)


class SheetError(ValueError):
    """An answer sheet failed validation; ``problems`` lists each as 'row N, column C: ...'."""

    def __init__(self, sheet: Path, problems: list[str]) -> None:
        self.problems = problems
        shown = "\n  ".join(problems[:50]) + (f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else "")
        super().__init__(f"{sheet}: {len(problems)} problem(s), nothing imported:\n  {shown}")


def bucket_of(difficulty: float) -> str:
    for label, low, high in BUCKETS:
        if low <= difficulty < high:
            return label
    raise ValueError(f"difficulty {difficulty!r} is in no bucket")


def _order(seed: int, sample_id: str) -> str:
    return hashlib.blake2b(json.dumps([seed, sample_id]).encode(), digest_size=8).hexdigest()


def stratified_round_robin(items: list, per_bucket: int, seed: int = 0) -> dict[tuple[str, str], list]:
    """``{(category, bucket): items}``: up to ``per_bucket`` per stratum, one template after
    another in turn (App. E). ``items`` need ``sample_id``, ``template_id``, ``category`` and
    ``difficulty``."""
    strata: dict[tuple[str, str], list] = {(c, b[0]): [] for c in CATEGORIES for b in BUCKETS}
    pools: dict[tuple[str, str], dict[str, list]] = {}
    for item in items:
        by_template = pools.setdefault((item.category, bucket_of(item.difficulty)), {})
        by_template.setdefault(item.template_id, []).append(item)
    for stratum, by_template in pools.items():
        queues = [sorted(group, key=lambda it: _order(seed, it.sample_id)) for _, group in sorted(by_template.items())]
        taken = strata.setdefault(stratum, [])
        while len(taken) < per_bucket and any(queues):
            for queue in queues:
                if queue and len(taken) < per_bucket:
                    taken.append(queue.pop(0))
    return strata


def run_sample(
    build_dir: str | Path,
    *,
    per_bucket: int = 25,
    annotators: int = 3,
    seed: int = 0,
    templates: list[str] | None = None,
) -> dict:
    """Draw the sample, record it, write the annotators' sheets; a build that already has a
    sample keeps it (rewriting the sheets) so answers never end up on a changed sheet. The draw
    counts as made once ``sample/drawn.json`` is written after its last entry: a draw a kill cut
    short is drawn again (the same draw, a pure function of the items and the seed) and completed."""
    if annotators < 1 or per_bucket < 1:
        raise ValueError(f"annotators and per_bucket must be >= 1 (got {annotators}, {per_bucket})")
    build_dir = Path(build_dir)
    ledger = Ledger(build_dir, STAGE)
    items, problems = accepted_items(
        build_dir, None if templates is None else {project_template_id(t) for t in templates}
    )
    by_id = {it.sample_id: it for it in items}
    existing = ledger.ok()
    counts = {"ok": 0, "rejected": 0, "failed": 0, "skipped": len(existing)}
    drawn_marker = build_dir / "sample" / "drawn.json"
    if not drawn_marker.is_file():  # no draw yet, or one a kill cut short: (re)draw, record what is missing
        strata = stratified_round_robin(items, per_bucket, seed)
        drawn = [(stratum, it) for stratum, chosen in strata.items() for it in chosen]
        for index, ((category, bucket), it) in enumerate(drawn):
            if it.sample_id in existing:
                continue
            annotator = index % annotators + 1
            ledger.record(
                it.sample_id,
                "ok",
                {
                    "template_id": it.template_id,
                    "category": category,
                    "difficulty": it.difficulty,
                    "bucket": bucket,
                    "annotator": annotator,
                    "sheet": f"annotator_{annotator}.csv",
                },
            )
            counts["ok"] += 1
        drawn_marker.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(
            drawn_marker,
            json.dumps(
                {"drawn": len(drawn), "per_bucket": per_bucket, "annotators": annotators, "seed": seed}, sort_keys=True
            )
            + "\n",
        )
        existing = ledger.ok()
    sheets = _write_sheets(build_dir, existing, by_id)
    strata_counts: dict[str, int] = {f"{c}/{b[0]}": 0 for c in CATEGORIES for b in BUCKETS}
    for data in existing.values():
        strata_counts[f"{data['category']}/{data['bucket']}"] += 1
    counts.update(
        strata=strata_counts,
        short=sorted(k for k, n in strata_counts.items() if n < per_bucket),
        sheets=[str(p.relative_to(build_dir)) for p in sheets],
        not_items=len(problems),
    )
    return counts


def _write_sheets(build_dir: Path, sampled: dict[str, dict], items: dict) -> list[Path]:
    folder = build_dir / "sample"
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / "instructions.md", "# Instructions for the human evaluators (C3PO App. E)\n\n" + INSTRUCTIONS)
    rows: dict[str, list[dict]] = {}
    for sample_id, data in sampled.items():
        it = items.get(sample_id)
        row = {"sample_id": sample_id, "question": it.question if it else "", "human_answer": ""}
        for kind in ("video", "image", "audio"):
            path = it.media.get(kind) if it else None
            row[kind] = os.path.relpath(path, folder) if path else ""
        rows.setdefault(data["sheet"], []).append(row)
    paths = []
    for sheet, sheet_rows in sorted(rows.items()):
        path = folder / sheet
        with replacing(path) as temporary, temporary.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=SHEET_COLUMNS)
            writer.writeheader()
            writer.writerows(sheet_rows)
        paths.append(path)
    return paths


def import_answers(build_dir: str | Path, sheet_csv: str | Path) -> dict:
    """Read a filled sheet back; every row is checked first (known sample id, no repeat, a
    non-empty answer) and any problem raises :class:`SheetError` naming its row and column, with
    nothing imported. Rows are numbered as a spreadsheet shows them (the header is row 1)."""
    build_dir, sheet = Path(build_dir), Path(sheet_csv)
    ledger = Ledger(build_dir, STAGE)
    sampled = ledger.ok()
    try:
        with sheet.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise SheetError(sheet, [f"cannot read the sheet: {exc}"]) from exc
    missing = [c for c in ("sample_id", "human_answer") if c not in header]
    if missing:
        raise SheetError(sheet, [f"row 1: column {c!r} is missing (header: {header})" for c in missing])
    problems, answers, first_row = [], {}, {}
    for number, row in enumerate(rows, start=2):
        sample_id = (row.get("sample_id") or "").strip()
        answer = (row.get("human_answer") or "").strip()
        if not sample_id:
            problems.append(f"row {number}, column 'sample_id': empty")
            continue
        if sample_id not in sampled:
            problems.append(
                f"row {number}, column 'sample_id': unknown sample id {sample_id!r} (not in this "
                "build's human-evaluation sample)"
            )
        elif sample_id in first_row:
            problems.append(f"row {number}, column 'sample_id': {sample_id!r} repeats row {first_row[sample_id]}")
        else:
            first_row[sample_id] = number
        if not answer:
            problems.append(
                f"row {number}, column 'human_answer': empty answer for {sample_id!r} (write "
                "'Insufficient Information' if it cannot be answered)"
            )
        answers.setdefault(sample_id, answer)
    if problems:
        raise SheetError(sheet, problems)
    for sample_id, answer in answers.items():
        ledger.record(sample_id, "ok", {**sampled[sample_id], "human_answer": answer, "answered_in": sheet.name})
    return {"imported": len(answers), "sheet": str(sheet)}
