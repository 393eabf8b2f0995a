"""Annotation rounds (Appendix D): sheets out to annotators, filled sheets back in, validated.

``sceval build annotate export BUILD --pass P --annotators a,b,c`` writes, per annotator,
``BUILD/annotation/<P>/<annotator>/<sheet>.csv`` (and ``.xlsx`` when openpyxl is installed) and
the round's ``assignment.json``; ``sceval build annotate import BUILD --pass P`` reads them all
back and writes ``BUILD/annotation/<P>/labels.jsonl``. The passes, in order:

- ``pilot``: a seeded subsample (``--items``, default 30 as in the paper) to every annotator,
  for aligning the guidelines; imported and measured, never used for decisions;
- ``full``: every pool item to ``--per-item`` (>= 2) annotators, item sheet (fields 1-3, 6) and
  cell sheet (fields 4-5; :mod:`.form`);
- ``adjudication``: what the full pass disagreed on, to one senior annotator (the rows show
  the labels given); after it every item and cell has one decision;
- ``audit``: the authors' spot-check of a seeded random ``--fraction`` (default 10 %) of the
  accept/reject decisions plus every rejected item, at whichever filter (clean validity /
  answerability, leakage, corruption interpretability), each row naming the stage and reason;
- ``blind``: the answer-first answer-preservation audit: severity-``--severity`` cells (default
  70, variant 0, every operator, text included) whose corrupted media are written as files; each annotator
  answers from the corrupted input with no gold on the sheet, and sees at most one version of a
  base example; ``reveal`` (export after the blind import) then shows each annotator their
  locked answer and the gold, and asks whether the original gold remains defensible.

The sheets carry media paths relative to the build folder; ``--previews`` adds contact sheets
(operators x severities, one per modality and variant index, made with the renderer's own keys
so they show exactly what a model is given) for the cell judgements. An annotator works in
their own folder; what goes to them should be that folder and the media it names (not the pool's
``items.jsonl``, which holds the gold).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from pathlib import Path

from faultline_eval.core import media
from faultline_eval.core.preflight import FOLDER_TO_WRITE, path_rules
from faultline_eval.core.store import write_atomic
from sceval_plugin import operators
from sceval_plugin.conditions import catalogue, single_id
from sceval_plugin.construction import form, simulate
from sceval_plugin.construction.annotation_files import (
    BUILT_BY,
    FIELDS,
    PASSES,
    SHEETS,
    AnnotationError,
    cell_key,
    group_labels,
    pass_dir,
    pool_items,
    read_labels,
    row_key,
)
from sceval_plugin.construction.manifest import item_stages
from sceval_plugin.construction.sheets import (
    SheetError,
    read_sheet_rows,
    sheet_problems,
    write_sheet,
)
from sceval_plugin.contact_sheet import grid
from sceval_plugin.data.records import OmniItem
from sceval_plugin.render import render

# --- assignments --------------------------------------------------------------------------------


def _shuffled(values, seed: int, salt: str) -> list:
    values = sorted(values)
    random.Random(f"{seed}/{salt}").shuffle(values)  # seeded by a string: no hash(), stable across runs
    return values


def assign(
    name: str,
    items: dict[str, OmniItem],
    annotators: list[str],
    *,
    seed: int,
    per_item: int,
    pilot_items: int,
    fraction: float,
    severity: int,
    build: Path,
) -> dict[str, list[dict]]:
    """Annotator -> the rows they get (sample id, and the cell for cell sheets)."""
    if len(set(annotators)) != len(annotators) or not annotators:
        raise AnnotationError(f"--annotators: give distinct names, got {annotators}")
    if name in ("pilot", "full"):
        ids = _shuffled(items, seed, "pilot")[:pilot_items] if name == "pilot" else sorted(items)
        if name == "full" and not 2 <= per_item <= len(annotators):
            raise AnnotationError(
                f"--per-item {per_item}: the full pass needs at least 2 annotators per item "
                f"and at most the {len(annotators)} given"
            )
        out: dict[str, list[dict]] = {a: [] for a in annotators}
        for i, sample in enumerate(_shuffled(ids, seed, name)):
            chosen = annotators if name == "pilot" else [annotators[(i + k) % len(annotators)] for k in range(per_item)]
            for a in chosen:
                out[a].append({"sample_id": sample})
        return out
    if name in ("adjudication", "audit"):
        if len(annotators) != 1:
            raise AnnotationError(f"the {name} pass goes to one person (--annotators senior), got {annotators}")
        rows = _disagreements(build) if name == "adjudication" else _audit_rows(build, seed, fraction)
        return {annotators[0]: rows}
    if name == "blind":
        return _blind_assignment(items, annotators, seed=seed, per_item=per_item, severity=severity)
    locked = read_labels(build, "blind")  # reveal: each annotator's own blind rows
    out = defaultdict(list)
    for label in locked:
        out[label["annotator"]].append({k: label[k] for k in ("sample_id", "operator", "severity", "variant")})
    return dict(out)


def _blind_assignment(items, annotators, *, seed, per_item, severity) -> dict[str, list[dict]]:
    """Per sample, as many severity-``severity`` cells as ``per_item`` raters each allow with
    every annotator seeing at most one version of the sample (Appendix D)."""
    if severity not in operators.CORRUPTING_SEVERITIES:
        raise AnnotationError(f"--severity {severity}: one of {operators.CORRUPTING_SEVERITIES}")
    if not 1 <= per_item <= len(annotators):
        raise AnnotationError(f"--per-item {per_item}: between 1 and the {len(annotators)} annotators given")
    versions = len(annotators) // per_item
    out: dict[str, list[dict]] = {a: [] for a in annotators}
    for sample in sorted(items):
        cells = _shuffled([(op, severity, 0) for op in operators.names()], seed, f"blind/{sample}")[:versions]
        raters = _shuffled(annotators, seed, f"raters/{sample}")
        for index, (op, sev, variant) in enumerate(cells):
            for a in raters[index * per_item : (index + 1) * per_item]:
                out[a].append({"sample_id": sample, "operator": op, "severity": sev, "variant": variant})
    return out


def _disagreements(build: Path) -> list[dict]:
    grouped = group_labels(read_labels(build, "full"))
    rows = []
    for (sheet, key), by_annotator in sorted(grouped.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        fields = FIELDS[sheet]
        if any(len({labels[f] for labels in by_annotator.values()}) > 1 for f in fields):
            shown = "; ".join(
                f"{a}: " + ", ".join(f"{f}={labels[f] or '-'}" for f in fields)
                for a, labels in sorted(by_annotator.items())
            )
            sample, cell = key
            row = {"sheet": sheet, "sample_id": sample, "labels": shown}
            if cell:
                row.update(operator=cell[0], severity=cell[1], variant=cell[2])
            rows.append(row)
    return rows


def _audit_rows(build: Path, seed: int, fraction: float) -> list[dict]:
    """Pass iii: a seeded ``fraction`` of the decisions plus every rejected item, whichever
    filter rejected it (corruption interpretability included)."""
    stages = item_stages(build)
    if not 0 <= fraction <= 1:
        raise AnnotationError(f"--fraction {fraction}: a share between 0 and 1")
    spot = set(_shuffled(stages, seed, "audit")[: round(fraction * len(stages))])
    rejected = {s for s, (stage, _, _) in stages.items() if stage}
    return [{"sample_id": s} for s in sorted(spot | rejected)]


# --- export -------------------------------------------------------------------------------------


def _options(item: OmniItem) -> str:
    return " | ".join(f"{k}: {t}" for k, t in item.options)


def _rel(build: Path, path: str | Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(build).resolve()))
    except ValueError:
        return str(path)


def export(
    build: Path,
    name: str,
    annotators: list[str],
    *,
    seed: int = 0,
    per_item: int = 2,
    pilot_items: int = 30,
    fraction: float = 0.1,
    severity: int = 70,
    previews: bool = False,
    force: bool = False,
) -> list[Path]:
    """Write the sheets of pass ``name``; returns the files written."""
    build = Path(build)
    folder = pass_dir(build, name)
    if (folder / "assignment.json").is_file() and not force:
        raise AnnotationError(
            f"{folder}: pass {name!r} was exported already; its sheets may be filled. Move the "
            "folder away or pass --force to write it again"
        )
    items = pool_items(build)
    plan = assign(
        name,
        items,
        annotators,
        seed=seed,
        per_item=per_item,
        pilot_items=pilot_items,
        fraction=fraction,
        severity=severity,
        build=build,
    )
    written = []
    stages = None
    if name == "audit":
        stages = item_stages(build)
    locked = {(l["annotator"], row_key(l)): l for l in read_labels(build, "blind")} if name == "reveal" else {}
    for annotator, rows in plan.items():
        sheets: dict[str, list[dict]] = defaultdict(list)
        for row in rows:
            item = items[row["sample_id"]]
            if name in ("pilot", "full"):
                sheets["items"].append(_item_row(build, item, previews))
                sheets["cells"] += [_cell_row(build, item, cell, previews) for cell in form.media_cells(item.sample_id)]
            elif name == "adjudication":
                if row["sheet"] == "items":
                    sheets["items"].append({**_item_row(build, item, previews), "labels": row["labels"]})
                else:
                    cell = cell_key(row)
                    sheets["cells"].append({**_cell_row(build, item, cell, previews), "labels": row["labels"]})
            elif name == "audit":
                stage, reason, _ = stages[item.sample_id]
                sheets["audit"].append(
                    {
                        "sample_id": item.sample_id,
                        "source": item.source,
                        "decision": "reject" if stage else "accept",
                        "stage": stage or "",
                        "failure_reason": (reason or "") if stage else "",
                    }
                )
            else:
                blind = _blind_row(build, item, cell_key(row))
                if name == "blind":
                    sheets["blind"].append(blind)
                else:
                    answer = locked[(annotator, row_key(row))]
                    sheets["reveal"].append(
                        {**blind, "locked_answer": answer["answer"] or "(could not answer)", "gold": item.gold_key}
                    )
        for sheet, columns in SHEETS[name].items():
            written += write_sheet(folder / annotator / f"{sheet}.csv", columns, sheets.get(sheet, []))
    write_atomic(
        folder / "assignment.json",
        json.dumps(
            {
                "pass": name,
                "seed": seed,
                "per_item": per_item,
                "severity": severity,
                "annotators": annotators,
                "rows": plan,
                **_asked_manifest(name, plan),
            },
            indent=1,
        )
        + "\n",
    )
    return [folder / "assignment.json", *written]


def _item_row(build: Path, item: OmniItem, previews: bool) -> dict:
    return {
        "sample_id": item.sample_id,
        "source": item.source,
        "question": item.question,
        "options": _options(item),
        "gold": item.gold_key,
        "visual": "; ".join(_rel(build, p) for p in item.visual),
        "audio": _rel(build, item.audio),
        "preview": _rel(build, _preview(build, item, "vision", 0)) if previews else "",
    }


def _cell_row(build: Path, item: OmniItem, cell: tuple, previews: bool) -> dict:
    op, severity, variant = cell
    modality = operators.get(op).modality
    return {
        "sample_id": item.sample_id,
        "modality": modality,
        "operator": op,
        "severity": severity,
        "variant": variant,
        "preview": _rel(build, _preview(build, item, modality, variant)) if previews else "",
    }


def _preview(build: Path, item: OmniItem, modality: str, variant: int) -> Path:
    """Contact sheet of ``item``: the ``modality`` operators having variant ``variant``, at every
    severity (written once, reused by every annotator's sheet)."""
    path = build / "annotation" / "previews" / item.sample_id / f"{modality}_v{variant}.png"
    if not path.is_file():
        names = [n for n in operators.names(modality) if operators.get(n).variants > variant]
        data = item.frames() if modality == "vision" else item.waveform()
        path.parent.mkdir(parents=True, exist_ok=True)
        grid(
            data,
            modality,
            names=names,
            variant=variant,
            key=item.sample_id,
            progress=False,
            title=f"{item.sample_id}: {modality}, variant {variant}",
        ).save(path)
    return path


def _blind_row(build: Path, item: OmniItem, cell: tuple) -> dict:
    """The corrupted input of one cell, as the model gets it (the project's renderer), written
    under ``annotation/blind/media``; the row holds no gold."""
    op, severity, variant = cell
    trial = render(item, catalogue().get(single_id(op, severity)), variant)
    folder = build / "annotation" / "blind" / "media" / item.sample_id / f"{op}@{severity}#{variant}"
    if not folder.is_dir():
        media.write_frames(folder / "frames", trial.frames)
        media.write_audio(folder / "audio.wav", trial.audio)
    return {
        "sample_id": item.sample_id,
        "modality": operators.get(op).modality,
        "operator": op,
        "severity": severity,
        "variant": variant,
        "question": trial.question,
        "options": " | ".join(f"{k}: {t}" for k, t in trial.options),
        "media": _rel(build, folder),
    }


# --- import -------------------------------------------------------------------------------------


def import_pass(build: Path, name: str, *, fmt: str = "csv", notes: list[str] | None = None) -> Path:
    """Read every annotator's filled sheets of pass ``name``, validate them against the rows the
    export asked for (``assignment.json``'s ``asked``, not today's operators), write
    ``labels.jsonl``. All problems of all sheets are reported together (:class:`SheetError`);
    ``notes`` receives what the user should know but does not stop the import (operator plugins
    installed or removed since the export)."""
    build = Path(build)
    notes = [] if notes is None else notes
    folder = pass_dir(build, name)
    assignment_path = folder / "assignment.json"
    if not assignment_path.is_file():
        raise AnnotationError(f"{assignment_path}: pass {name!r} was not exported")
    assignment = json.loads(assignment_path.read_text(encoding="utf-8"))
    asked = exported_rows(assignment_path, assignment, name, notes)
    items = pool_items(build)
    labels, errors = [], []
    for annotator in assignment["rows"]:
        for sheet, columns in SHEETS[name].items():
            path = folder / annotator / f"{sheet}.{fmt}"
            wanted = asked[annotator][sheet]
            if not path.is_file():
                if wanted:
                    errors.append(f"{path}: missing sheet of annotator {annotator!r} ({len(wanted)} row(s) assigned)")
                continue
            try:
                rows, problems = read_sheet_rows(path, columns)
            except SheetError as exc:
                errors.append(f"annotator {annotator!r}, {exc}")
                continue
            problems += _check_rows(name, sheet, rows, wanted, items)
            if problems:
                errors.append(f"annotator {annotator!r}, {sheet_problems(path, problems)}")
                continue
            for row in rows:
                entry = {
                    "pass": name,
                    "sheet": sheet,
                    "annotator": annotator,
                    "sample_id": row["sample_id"],
                    "source": items[row["sample_id"]].source,
                }
                key = cell_key(row)
                entry.update(operator=key[0], severity=key[1], variant=key[2]) if key else entry.update(
                    operator=None, severity=None, variant=None
                )
                entry.update({f: row[f] for f in FIELDS[sheet]})
                entry["note"] = row.get("note", "")
                labels.append(entry)
    if errors:
        raise SheetError(
            f"pass {name!r}: {len(errors)} sheet(s) cannot be imported; nothing was written.\n" + "\n".join(errors)
        )
    out = folder / "labels.jsonl"
    write_atomic(out, "".join(json.dumps(l) + "\n" for l in labels))
    return out


# --- what the export asked for ------------------------------------------------------------------


def _asked_manifest(name: str, plan: dict[str, list[dict]]) -> dict:
    """The rows each annotator's sheets hold, as the export wrote them, with the operators,
    severities and variants they were drawn from and a digest of the rows. Import checks the
    filled sheets against this, so installing or removing an operator plugin after the export
    changes nothing about what the annotators were asked."""
    asked = {
        a: {
            sheet: sorted(([s] if cell is None else [s, *cell]) for s, cell in _expected_rows(name, sheet, planned))
            for sheet in SHEETS[name]
        }
        for a, planned in plan.items()
    }
    return {
        "asked": asked,
        "asked_digest": _digest(asked),
        "operators": _operator_table(),
        "severities": list(operators.CORRUPTING_SEVERITIES),
    }


def _operator_table() -> dict[str, dict]:
    return {
        n: {"modality": operators.get(n).modality, "variants": operators.get(n).variants} for n in operators.names()
    }


def _digest(asked: dict) -> str:
    return hashlib.blake2b(json.dumps(asked, sort_keys=True).encode(), digest_size=16).hexdigest()


def exported_rows(path: Path, assignment: dict, name: str, notes: list[str]) -> dict[str, dict[str, set[tuple]]]:
    """Annotator -> sheet -> the row keys the export asked for (``assignment.json`` at ``path``).
    A change of operator plugins since the export goes to ``notes``; an assignment written before
    the export kept its rows is read with today's operators (and a note saying so)."""
    if "asked" not in assignment:
        notes.append(
            f"{path}: written before exports recorded their rows; the rows are derived from today's "
            "operator plugins (install the same plugins as at export time, or re-export)"
        )
        return {
            a: {sheet: _expected_rows(name, sheet, planned) for sheet in SHEETS[name]}
            for a, planned in assignment["rows"].items()
        }
    if _digest(assignment["asked"]) != assignment.get("asked_digest"):
        raise AnnotationError(
            f"{path}: its 'asked' rows do not match their digest (edited by hand?); re-export the "
            "pass or restore the file"
        )
    then, now = assignment.get("operators", {}), _operator_table()
    added, removed = sorted(set(now) - set(then)), sorted(set(then) - set(now))
    changed = sorted(n for n in set(now) & set(then) if now[n] != then[n])
    if added or removed or changed:
        parts = [
            f"{label}: {', '.join(names)}"
            for label, names in (("installed since", added), ("removed since", removed), ("changed since", changed))
            if names
        ]
        notes.append(
            f"pass {name!r}: operator plugins differ from the export ({'; '.join(parts)}); the sheets are "
            "checked against the rows exported, not today's operators"
        )
    return {
        a: {
            sheet: {(r[0], None if len(r) == 1 else (r[1], int(r[2]), int(r[3]))) for r in rows}
            for sheet, rows in sheets.items()
        }
        for a, sheets in assignment["asked"].items()
    }


def _expected_rows(name: str, sheet: str, planned: list[dict]) -> set[tuple]:
    if name in ("pilot", "full"):
        ids = [r["sample_id"] for r in planned]
        return {(s, None) for s in ids} if sheet == "items" else {(s, c) for s in ids for c in form.media_cells(s)}
    if name == "adjudication":
        return {row_key(r) for r in planned if r["sheet"] == sheet}
    return {row_key(r) if sheet != "audit" else (r["sample_id"], None) for r in planned}


def _check_rows(name: str, sheet: str, rows: list[dict], wanted: set[tuple], items: dict[str, OmniItem]) -> list[str]:
    """Unknown ids, rows not assigned, duplicates, missing rows, two versions of one base example
    (blind), and the form's own rules."""
    problems, seen, versions = [], {}, {}
    for row in rows:
        where = f"row {row['_row']}"
        if row["sample_id"] not in items:
            problems.append(f"{where}, column 'sample_id': unknown sample id {row['sample_id']!r} (not in the pool)")
            continue
        try:
            key = (row["sample_id"], cell_key(row)) if sheet != "audit" else (row["sample_id"], None)
        except (KeyError, ValueError):
            problems.append(f"{where}, columns 'severity'/'variant': not whole numbers")
            continue
        if key not in wanted:
            problems.append(f"{where}, column 'sample_id': {_show(key)} was not assigned to this annotator")
            continue
        if key in seen:
            problems.append(f"{where}: duplicate of row {seen[key]} ({_show(key)})")
            continue
        seen[key] = row["_row"]
        if name == "blind" and row["sample_id"] in versions:
            problems.append(
                f"{where}, column 'sample_id': a second version of base example {row['sample_id']!r} "
                f"(row {versions[row['sample_id']]}): one version per annotator"
            )
        versions.setdefault(row["sample_id"], row["_row"])
        kind = f"adjudication_{sheet}" if name == "adjudication" else sheet
        problems += form.row_problems(kind, row, items[row["sample_id"]].option_keys)
    problems += [f"missing row for {_show(k)}" for k in sorted(wanted - set(seen), key=str)]
    return problems


def _show(key: tuple) -> str:
    sample, cell = key
    return sample if cell is None else f"{sample} {cell[0]}@{cell[1]} variant {cell[2]}"


# --- command line -------------------------------------------------------------------------------


def add_parser(stages) -> None:
    parser = stages.add_parser(
        "annotate", help="annotation rounds: sheets out, filled sheets back (Appendix D)", description=__doc__
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    out = actions.add_parser("export", help="write the sheets of one pass, one folder per annotator")
    path_rules(
        out.add_argument("build", type=Path, help="the build folder (BUILD/pool holds the candidate pool)"),
        BUILT_BY["pool"],
        FOLDER_TO_WRITE,
    )
    out.add_argument(
        "--pass",
        dest="pass_name",
        required=True,
        choices=PASSES,
        help="the pass whose sheets to write: %(choices)s (in order)",
    )
    out.add_argument(
        "--annotators", default="", help="comma-separated annotator names (reveal: those of the blind pass, always)"
    )
    out.add_argument("--seed", type=int, default=0, help="seed of the subsamples and assignments (default %(default)s)")
    out.add_argument("--per-item", type=int, default=2, help="annotators per item (full, >= 2) or cell (blind)")
    out.add_argument("--items", type=int, default=30, help="pilot subsample size (default 30, as in the paper)")
    out.add_argument("--fraction", type=float, default=0.1, help="audit: share of decisions spot-checked")
    out.add_argument("--severity", type=int, default=70, help="blind: severity of the audited cells")
    out.add_argument("--previews", action="store_true", help="write contact sheets for the cell judgements")
    out.add_argument("--force", action="store_true", help="write the pass again over its sheets (filled or not)")
    out.set_defaults(func=_cmd_export)
    back = actions.add_parser("import", help="read the filled sheets of one pass back, validated")
    path_rules(
        back.add_argument("build", type=Path, help="the build folder (BUILD/annotation/PASS holds the sheets)"),
        BUILT_BY["annotate export"],
        FOLDER_TO_WRITE,
    )
    back.add_argument(
        "--pass", dest="pass_name", required=True, choices=PASSES, help="the pass whose sheets to read: %(choices)s"
    )
    back.add_argument("--format", choices=("csv", "xlsx"), default="csv", help="which of the two sheets was filled")
    back.set_defaults(func=_cmd_import)

    simulate.add_parser(actions)


def _cmd_export(args) -> int:
    names = [a.strip() for a in args.annotators.split(",") if a.strip()]
    if args.pass_name == "reveal":
        names = sorted({label["annotator"] for label in read_labels(args.build, "blind")})
    elif not names:
        raise AnnotationError(f"--annotators: who gets the {args.pass_name} sheets (comma-separated names)")
    written = export(
        args.build,
        args.pass_name,
        names,
        seed=args.seed,
        per_item=args.per_item,
        pilot_items=args.items,
        fraction=args.fraction,
        severity=args.severity,
        previews=args.previews,
        force=args.force,
    )
    print(
        f"{args.pass_name}: wrote {len(written)} files for {len(names)} annotator(s) under "
        f"{pass_dir(args.build, args.pass_name)}"
    )
    return 0


def _cmd_import(args) -> int:
    notes: list[str] = []
    out = import_pass(args.build, args.pass_name, fmt=args.format, notes=notes)
    for note in notes:
        print(f"note: {note}")
    n = sum(1 for _ in out.open(encoding="utf-8"))
    print(f"{args.pass_name}: {n} label row(s) imported -> {out}")
    return 0
