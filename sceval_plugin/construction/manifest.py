"""The annotation manifest, the filtering funnel and per-operator retention (Appendix D; Tables 1, 24, 25).

``sceval build manifest BUILD`` turns the imported passes into decisions and writes:

- ``BUILD/manifest.json`` (``sceval-manifest/2``, read by the tasks through ``SCEVAL_MANIFEST``):
  one entry per pool item and one per judged cell;
- ``BUILD/funnel.md`` / ``.csv``: the funnel per source and in total, the earlier stages read
  from ``BUILD/pool/funnel.json`` when present (examples -> converted -> eligible -> pooled),
  then the paper's three filters: clean validity / answerability (-> 285 in the paper),
  modality leakage (-> 277) and corruption interpretability (-> 273);
- ``BUILD/retention.md`` / ``.csv``: Table 24 (annotated, retained and retention per audio and
  vision operator) with Table 25's drop rate per severity;
- ``BUILD/rejected.csv``: every item rejected or excluded, with its id, source, stage, failure
  reason and adjudication note (nothing is removed silently).

Decisions: a field is decided when every full-pass annotator gave the same label, otherwise by
the adjudicator; a disagreement without an adjudication is an error. An item is kept when it is
valid, tri-modally answerable, its availability is "ok" (no missing modality, no text leakage),
and at least one variant of every audio and vision operator is interpretable (Appendix D,
"Filtering funnel"); an item failing only that last filter gets the failure reason "excessive
corruption" unless the annotators gave one. The manifest's ``valid`` is field 1, ``answerable``
is field 2 *and* the two later filters, so the tasks' rule (valid and answerable) keeps exactly
the final set; ``rejected_at`` names the stage. Retention is counted over the cells of items that
passed the clean filters (the paper's 277 x 72 = 19,944 cells).

A cell's ``gold_preserved`` is the full pass's field 5, replaced by the blind answer-first
audit's outcome where that audited it (majority of its raters: answerable *and* the original gold
remains valid; a tie is not preserved). Text cells enter the manifest only through the blind audit
(always interpretable). ``stress_only`` = interpretable and not gold-preserving.
"""

from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from pathlib import Path

from faultline_eval.core.preflight import FOLDER_TO_WRITE, path_rules
from faultline_eval.core.store import replacing, write_atomic
from sceval_plugin import operators
from sceval_plugin.construction import form
from sceval_plugin.construction.annotation_files import (
    BUILT_BY,
    AnnotationError,
    group_labels,
    operator_modalities,
    pool_items,
    read_labels,
    row_key,
)
from sceval_plugin.construction.simulate import MARKER
from sceval_plugin.data.manifest import SCHEMAS
from sceval_plugin.operators import CORRUPTING_SEVERITIES

STAGES = ("pool", "clean validity / answerability", "modality leakage", "corruption interpretability")


def _decide(build: Path, sheet: str) -> dict[tuple, dict]:
    """(sample id, cell) -> decided fields, ``adjudicated`` and ``notes``, for one full-pass sheet."""
    full = group_labels(read_labels(build, "full"))
    adjudicated = {row_key(l): l for l in read_labels(build, "adjudication", required=False) if l["sheet"] == sheet}
    fields = form.ITEM_FIELDS if sheet == "items" else form.CELL_FIELDS
    out, undecided = {}, []
    for (kind, key), by_annotator in full.items():
        if kind != sheet:
            continue
        labels = list(by_annotator.values())
        agreed = all(len({l[f] for l in labels}) == 1 for f in fields)
        if agreed:
            decided = {f: labels[0][f] for f in fields}
        elif key in adjudicated:
            decided = {f: adjudicated[key][f] for f in fields}
        else:
            undecided.append(key)
            continue
        notes = (
            [adjudicated[key]["note"]]
            if key in adjudicated and adjudicated[key]["note"]
            else [f"{a}: {l['note']}" for a, l in sorted(by_annotator.items()) if l.get("note")]
        )
        out[key] = {**decided, "adjudicated": not agreed, "notes": "; ".join(notes)}
    if undecided:
        raise AnnotationError(
            f"{len(undecided)} {sheet} row(s) of the full pass have disagreeing labels and no "
            f"adjudication (first: {undecided[0]}): sceval build annotate export {build} "
            "--pass adjudication --annotators <senior>, fill, import"
        )
    return out


def item_decisions(build: Path) -> dict[str, dict]:
    """Sample id -> the decided item fields, whether adjudicated, and notes (which filter rejects
    an item is :func:`item_stages`' business: it needs the cells too)."""
    return {
        sample: {**d, "failure_reason": d["failure_reason"] or None}
        for (sample, _), d in _decide(build, "items").items()
    }


def blind_outcomes(build: Path) -> dict[tuple, bool]:
    """(sample id, cell) -> gold preserved, by the blind audit (empty when it was not run)."""
    answers = read_labels(build, "blind", required=False)
    if not answers:
        return {}
    reveals = {(l["annotator"], row_key(l)): l for l in read_labels(build, "reveal")}
    votes: dict[tuple, list[bool]] = defaultdict(list)
    for a in answers:
        shown = reveals.get((a["annotator"], row_key(a)))
        votes[row_key(a)].append(a["answerable"] == "yes" and shown is not None and shown["gold_valid"] == "yes")
    return {key: sum(v) * 2 > len(v) for key, v in votes.items()}


def item_stages(
    build: Path, decisions: dict[str, dict] | None = None, cells: dict[tuple, dict] | None = None
) -> dict[str, tuple[str | None, str | None, str]]:
    """Sample id -> (the stage that rejected it or None, its failure reason, its notes), through
    the paper's three filters in order: clean validity / answerability, modality leakage,
    corruption interpretability (no interpretable variant of some audio or vision operator the
    annotators judged; "excessive corruption" unless they gave a reason)."""
    decisions = item_decisions(build) if decisions is None else decisions
    cells = _decide(build, "cells") if cells is None else cells
    # the operators the full pass asked about, not today's plugins: a plugin installed since has no cells
    judged = sorted({cell[0] for _, cell in cells})  # full-pass cells are audio and vision ones only
    alive = defaultdict(set)  # sample -> operators with an interpretable variant
    for (s, cell), c in cells.items():
        if c["interpretable"] == "yes":
            alive[s].add(cell[0])
    out = {}
    for sample, d in decisions.items():
        stage, reason, notes = None, d["failure_reason"], d["notes"]
        if d["valid"] == "no" or d["answerable"] == "no":
            stage = STAGES[1]
        elif d["availability"] != "ok":
            stage = STAGES[2]
        else:
            dead = [op for op in judged if op not in alive[sample]]
            if dead:
                stage, reason = STAGES[3], reason or "excessive corruption"
                notes = "; ".join(filter(None, [notes, f"no interpretable variant of {', '.join(dead)}"]))
        out[sample] = (stage, reason, notes)
    return out


def build_manifest(build: Path) -> dict:
    """The manifest, the funnel rows, the retention rows and the rejected list of ``build``."""
    build = Path(build)
    items = pool_items(build)
    decisions = item_decisions(build)
    missing = sorted(set(items) - set(decisions))
    if missing:
        raise AnnotationError(f"{len(missing)} pool item(s) have no full-pass labels (first: {missing[0]})")
    cells = _decide(build, "cells")
    blind = blind_outcomes(build)
    stages = item_stages(build, decisions, cells)
    modality = operator_modalities(build)
    samples, stage_of = [], {}
    for sample in sorted(items):
        d = decisions[sample]
        stage, reason, notes = stages[sample]
        stage_of[sample] = stage
        samples.append(
            {
                "sample_id": sample,
                "source": items[sample].source,
                "valid": d["valid"] == "yes",
                "answerable": d["answerable"] == "yes" and stage is None,
                "availability": d["availability"],
                "rejected_at": stage,
                "failure_reason": reason if stage else None,
                "adjudication_note": (notes or None) if stage or d["adjudicated"] else None,
                "adjudicated": d["adjudicated"],
            }
        )
    entries = []
    for (sample, (op, severity, variant)), c in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        interpretable = c["interpretable"] == "yes"
        preserved = (
            blind.get((sample, (op, severity, variant)), c["gold_preserved"] == "yes") if interpretable else False
        )
        entries.append(_cell(sample, op, severity, variant, interpretable, preserved))
    for (sample, (op, severity, variant)), preserved in sorted(blind.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if modality[op] == "text":
            entries.append(_cell(sample, op, severity, variant, True, preserved))
    manifest = {
        "schema": SCHEMAS[-1],
        "simulated": _simulated(build),
        "audit": audit_summary(build),
        "samples": samples,
        "cells": entries,
    }
    return {
        "manifest": manifest,
        "funnel": funnel_rows(build, samples),
        "retention": retention_rows(
            [e for e in entries if stage_of[e["sample_id"]] in (None, STAGES[3]) and modality[e["operator"]] != "text"],
            modality,
        ),
        "rejected": rejected_rows(build, samples),
    }


def audit_summary(build: Path) -> dict | None:
    """The author audit pass (Appendix D, pass iii): decisions checked and those the auditor
    disagreed with (with notes); None when it was not run. It does not change decisions: a
    disagreement is for the authors to resolve (re-adjudicate) and is listed in the funnel."""
    labels = read_labels(build, "audit", required=False)
    if not labels:
        return None
    return {
        "checked": len(labels),
        "disagreed": [{"sample_id": l["sample_id"], "note": l["note"]} for l in labels if l["audit"] == "disagree"],
    }


def _cell(sample, op, severity, variant, interpretable, preserved) -> dict:
    return {
        "sample_id": sample,
        "operator": op,
        "severity": severity,
        "variant": variant,
        "interpretable": interpretable,
        "gold_preserved": bool(interpretable and preserved),
        "stress_only": bool(interpretable and not preserved),
    }


def _simulated(build: Path) -> list[str]:
    """The passes whose labels came from the simulator (never mistaken for human annotation)."""
    return sorted(p.parent.name for p in (build / "annotation").glob(f"*/{MARKER}"))


def funnel_rows(build: Path, samples: list[dict]) -> list[dict]:
    """One row per stage: count per source and in total (``300 -> 285 -> 277 -> 273`` style)."""
    sources = sorted({s["source"] for s in samples})
    rows = []
    earlier = build / "pool" / "funnel.json"
    if earlier.is_file():
        per_source = json.loads(earlier.read_text(encoding="utf-8")).get("sources", {})
        for stage in ("examples", "converted", "eligible"):
            counts = {src: int(per_source.get(src, {}).get(stage, 0)) for src in sources}
            rows.append({"stage": f"source {stage}", **counts, "total": sum(counts.values())})
    remaining = list(samples)
    for stage in STAGES:
        if stage != "pool":
            remaining = [s for s in remaining if s["rejected_at"] != stage]
        counts = Counter(s["source"] for s in remaining)
        rows.append(
            {
                "stage": stage if stage == "pool" else f"after {stage}",
                **{src: counts.get(src, 0) for src in sources},
                "total": len(remaining),
            }
        )
    return rows


def retention_rows(cells: list[dict], modality_of: dict[str, str] | None = None) -> list[dict]:
    """Table 24 per audio and vision operator, with Table 25's drop rate by severity: today's
    operators, then any other the cells judged (a plugin removed since; ``modality_of`` names
    its modality)."""
    modality_of = modality_of or {}
    rows = []
    for modality in ("audio", "vision"):
        group = []
        judged = sorted({c["operator"] for c in cells if modality_of.get(c["operator"]) == modality})
        for op in [*operators.names(modality), *(o for o in judged if o not in operators.names(modality))]:
            mine = [c for c in cells if c["operator"] == op]
            group += mine
            rows.append(_retention(modality, op, mine))
        rows.append(_retention(modality, f"{modality} subtotal", group))
    rows.append(_retention("audio + vision", "total", list(cells)))
    return rows


def _retention(modality: str, name: str, cells: list[dict]) -> dict:
    kept = sum(c["interpretable"] for c in cells)
    row = {
        "modality": modality,
        "operator": name,
        "annotated": len(cells),
        "retained": kept,
        "retain_pct": round(100 * kept / len(cells), 1) if cells else None,
    }
    for severity in CORRUPTING_SEVERITIES:
        at = [c for c in cells if c["severity"] == severity]
        row[f"drop_pct_sev{severity}"] = (
            round(100 * sum(not c["interpretable"] for c in at) / len(at), 1) if at else None
        )
    return row


def rejected_rows(build: Path, samples: list[dict]) -> list[dict]:
    rows = [
        {
            "sample_id": s["sample_id"],
            "source": s["source"],
            "stage": s["rejected_at"],
            "failure_reason": s["failure_reason"],
            "adjudication_note": s["adjudication_note"] or "",
        }
        for s in samples
        if s["rejected_at"]
    ]
    earlier = build / "pool" / "funnel.json"
    if earlier.is_file():
        for e in json.loads(earlier.read_text(encoding="utf-8")).get("excluded", []):
            rows.append(
                {
                    "sample_id": e.get("sample_id") or e.get("source_ref"),
                    "source": e.get("source"),
                    "stage": e.get("stage"),
                    "failure_reason": e.get("reason"),
                    "adjudication_note": "",
                }
            )
    return rows


def markdown_table(rows: list[dict]) -> str:
    columns = list(rows[0]) if rows else []

    def show(v: object) -> str:
        return "—" if v is None else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(show(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_table(path: Path, rows: list[dict], title: str, notes: str = "") -> list[Path]:
    """``path`` as .csv and .md (title, optional notes, the table)."""
    csv_path, md_path = path.with_suffix(".csv"), path.with_suffix(".md")
    with replacing(csv_path) as temporary, temporary.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["empty"])
        writer.writeheader()
        writer.writerows(rows)
    write_atomic(md_path, f"# {title}\n\n{notes}{markdown_table(rows)}")
    return [csv_path, md_path]


def write_outputs(build: Path) -> dict:
    build = Path(build)
    done = build_manifest(build)
    manifest = done["manifest"]
    write_atomic(build / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    warning = (
        f"**SIMULATED annotation** in pass(es) {', '.join(manifest['simulated'])}: not human judgements.\n\n"
        if manifest["simulated"]
        else ""
    )
    audit = manifest["audit"]
    audit_note = (
        ""
        if audit is None
        else (
            f"Author audit: {audit['checked']} decision(s) checked, {len(audit['disagreed'])} disagreed"
            + "".join(f"; {d['sample_id']} ({d['note'] or 'no note'})" for d in audit["disagreed"])
            + ".\n\n"
        )
    )
    write_table(build / "funnel", done["funnel"], "Filtering funnel (Appendix D)", warning + audit_note)
    write_table(
        build / "retention", done["retention"], "Per-operator interpretability retention (Tables 24, 25)", warning
    )
    with replacing(build / "rejected.csv") as temporary, temporary.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(
            handle, fieldnames=["sample_id", "source", "stage", "failure_reason", "adjudication_note"]
        )
        writer.writeheader()
        writer.writerows(done["rejected"])
    return done


def add_parser(stages) -> None:
    parser = stages.add_parser(
        "manifest", help="decisions -> manifest.json, funnel, retention, rejected list", description=__doc__
    )
    path_rules(
        parser.add_argument("build", type=Path, help="the build folder (with the annotation passes imported)"),
        BUILT_BY["annotate import"],
        FOLDER_TO_WRITE,
    )
    parser.set_defaults(func=_cmd_manifest)


def _cmd_manifest(args) -> int:
    done = write_outputs(args.build)
    counts = " -> ".join(str(r["total"]) for r in done["funnel"])
    stress = sum(c["stress_only"] for c in done["manifest"]["cells"])
    total = done["retention"][-1]
    print(
        f"funnel {counts}; {total['retained']}/{total['annotated']} audio+vision cells interpretable "
        f"({total['retain_pct']}%), {stress} stress-only cell(s); {len(done['rejected'])} rejected/excluded "
        f"item(s) in rejected.csv; wrote {args.build / 'manifest.json'}"
    )
    if done["manifest"]["simulated"]:
        print(f"note: SIMULATED labels in pass(es) {', '.join(done['manifest']['simulated'])}")
    return 0
