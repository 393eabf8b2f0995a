"""Stage 7 of a C3PO build: the accepted items as a dataset, the funnel and the difficulty histogram.

**Dataset** (``<build dir>/export/`` unless ``out`` is given): every accepted item
(:func:`c3po_plugin.construction.assemble.accepted_items`) in the C3PO item schema
(:mod:`c3po_plugin.data.records`) with its media copied in under ``media/<kind>/``, written by
``datasets`` as ``items.parquet`` beside a dataset card (``README.md``) whose config names it
the ``test`` split. That folder is what the C3PO tasks read:

    C3PO_SOURCE=<export dir> lmms-eval --model c3po_reference --tasks c3po_all ...

(``C3PO_SOURCE=hf:<export dir>`` reads it through ``datasets.load_dataset`` instead, and
``push_to_hub="<user>/<name>"`` uploads the folder so ``hf:<user>/<name>`` reads it from the Hub;
only when asked, with a token from the environment.) Each row is validated with the tasks' own
reader before it is written; a row that fails is a ``failed`` export entry with the reason.
Per item the schema's ``difficulty`` is the auditor's score, ``human_answer`` the imported
answer (``c3po build import-answers``), and ``hidden`` keeps the provenance: base id, pool and
licence, fit score, evidence modality, timestamp evidence, synthesis backends.

**Funnel** (``funnel.md`` / ``.csv`` / ``.json``), per template and in total, each a count of
ledger entries: ``candidates`` (select ok) -> ``generated`` (generator replies settled:
generate ok + rejected) -> ``rule_rejected`` (generate rejected: the paper's rules, the fit
threshold, does-not-fit, and replies still malformed after the re-ask) -> ``audited`` (audit
ok + rejected by the auditor) -> ``accepted`` (ACCEPT) -> ``exported``; plus ``generate_failed``,
``classify_rejected``, ``synthesis_failed``, ``synthesis_rejected`` and ``unsettled`` (candidates
whose fate is not final yet: failed or not reached at some stage,
:func:`c3po_plugin.construction.assemble.sample_fates`), so every loss is visible: in a build every candidate is
exactly one of exported, rejected at one stage, or unsettled (``candidates = exported +
rule_rejected + classify_rejected + synthesis_rejected + (audited - accepted) + unsettled``), and
the export's ``note`` names the unsettled samples and where each stands. A rejection carried
from an earlier stage is counted where it was decided.

Rows are written in sample-id order and every file is a pure function of the ledgers'
content: two builds from the same inputs export the same bytes, however they were run.

**Difficulty histogram** (``difficulty.png`` / ``.pdf``, the paper's Fig. 7): accepted items per
difficulty score 1-10, stacked by category.
"""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from c3po_plugin.construction import settings as build_settings
from c3po_plugin.construction.assemble import (
    BuiltItem,
    accepted_items,
    project_template_id,
    sample_fates,
    template_id_of,
)
from c3po_plugin.construction.ledger import Ledger
from c3po_plugin.data.records import item_from_row
from c3po_plugin.templates import CATEGORIES
from faultline_eval.core import media
from faultline_eval.core.figures import pyplot, save
from faultline_eval.core.hub import push
from faultline_eval.core.store import replacing, write_atomic

STAGE = "export"
FUNNEL = ("candidates", "generated", "rule_rejected", "audited", "accepted", "exported")
LOSSES = ("generate_failed", "classify_rejected", "synthesis_failed", "synthesis_rejected", "unsettled")
CARD = """---
license: other
configs:
- config_name: default
  data_files:
  - split: test
    path: items.parquet
---
# C3PO items built with faultline-eval

Made by `c3po build` from the base media pool(s) {pools}; {n} items over {templates} templates.
Media licences: see each row's `hidden.license`. The funnel (`funnel.md`) and the difficulty
histogram (`difficulty.png`) describe how the items were filtered.

{models}
"""


def _pool_name(item: BuiltItem) -> str:
    """The pool's name without the builder's folders (``demo``, ``my_pool``, ``hf:user/set``)."""
    pool = str((item.base.get("source") or {}).get("pool") or "")
    return pool if pool.startswith("hf:") else Path(pool).name


def _row(item: BuiltItem, out: Path, human: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "sample_id": item.sample_id,
        "template": item.template_id,
        "question": item.question,
        "answer": item.answer,
        "video": None,
        "image": None,
        "audio": None,
        "difficulty": item.difficulty,
        "human_answer": human,
        "source": "c3po-build",
    }
    for kind, path in item.media.items():
        rel = Path("media") / kind / f"{item.sample_id}{path.suffix.lower()}"
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out / rel)
        row[kind] = rel.as_posix()
    truth = item.generated.get("ground_truth") or {}
    row["hidden"] = json.dumps(
        {
            "base_id": item.base.get("base_id"),
            "candidate_id": item.base.get("candidate_id"),
            "pool": _pool_name(item),
            "license": (item.base.get("source") or {}).get("license"),
            "fit_score": item.audit.get("fit_score"),
            "evidence_modality": truth.get("evidence_modality"),
            "timestamp_evidence": truth.get("timestamp_evidence"),
            "audio_kind": item.synthesized.get("audio_kind"),
            "backends": item.synthesized.get("backends"),
            # what was spoken and drawn: the mechanistic probes' reference text (`faultline probe e2|e3`)
            "transcript": item.synthesized.get("transcript"),
            "image_description": item.synthesized.get("image_description"),
        },
        sort_keys=True,
    )
    return row


def run_export(
    build_dir: str | Path,
    *,
    out: str | Path | None = None,
    push_to_hub: str | None = None,
    templates: list[str] | None = None,
    figures: bool = True,
) -> dict:
    """Write the dataset, the funnel and the histogram; returns the counts and the paths."""
    build_dir = Path(build_dir)
    out = Path(out) if out is not None else build_dir / "export"
    wanted = None if templates is None else {project_template_id(t) for t in templates}
    items, problems = accepted_items(build_dir, wanted)
    if (out / "media").exists():  # an export is rebuilt whole from the ledgers
        shutil.rmtree(out / "media")
    out.mkdir(parents=True, exist_ok=True)
    rows, exported, counts = _export_items(build_dir, out, items, problems)
    fates = sample_fates(build_dir, templates)
    funnel = funnel_counts(build_dir, {it.sample_id for it in exported}, fates, wanted)
    written = write_funnel(funnel, out)  # also when nothing was accepted: it shows where items were lost
    unsettled = {sid: v for sid, (_, v) in fates.items() if v.waiting}
    if unsettled:
        shown = "; ".join(f"{sid}: {v.reason}" for sid, v in list(unsettled.items())[:5])
        counts["unsettled"] = len(unsettled)
        counts["note"] = f"{len(unsettled)} candidate(s) not settled yet, rerun the build to finish them: {shown}" + (
            " ..." if len(unsettled) > 5 else ""
        )
    if not rows:
        (out / "items.parquet").unlink(missing_ok=True)
        (out / "README.md").unlink(missing_ok=True)
        counts.update(
            files=[str(p) for p in written],
            out=None,
            note=counts.get("note", "")
            + ("; " if counts.get("note") else "")
            + "no accepted item to export: no dataset written (see funnel.md and ledger/export.jsonl)",
        )
        return counts
    _write_dataset(build_dir, out, rows, exported)
    if figures:
        written += difficulty_histogram(exported, out / "difficulty")
    counts["files"] = [str(p) for p in written]
    counts["out"] = str(out)
    if push_to_hub:
        counts["hub"] = push(out, push_to_hub)
    return counts


def _export_items(
    build_dir: Path, out: Path, items: list[BuiltItem], problems: list[tuple[str, str]]
) -> tuple[list[dict], list[BuiltItem], dict]:
    """Each accepted item's row and media under ``out``, checked as the task will read them, and
    every item's fate (``problems``: the accepted ones that cannot be exported) in the export
    ledger. Returns the rows, their items and the counts."""
    ledger = Ledger(build_dir, STAGE)
    answers = {k: v.get("human_answer") for k, v in Ledger(build_dir, "sample").ok().items()}
    counts: dict[str, Any] = {"ok": 0, "rejected": 0, "failed": 0, "skipped": 0}
    rows, exported = [], []
    for sample_id, reason in problems:
        ledger.record(sample_id, "failed", reason=reason)
        counts["failed"] += 1
    for item in items:
        try:
            row = _row(item, out, answers.get(item.sample_id))
            checked = item_from_row(row, out)
            for path in checked.relative_media().values():
                media.probe(out / path)
        except (ValueError, OSError) as exc:  # RecordError and MediaError are ValueErrors
            ledger.record(item.sample_id, "failed", reason=f"{type(exc).__name__}: {exc}")
            counts["failed"] += 1
            continue
        ledger.record(item.sample_id, "ok", {"files": [row[k] for k in ("video", "image", "audio") if row[k]]})
        rows.append(row)
        exported.append(item)
        counts["ok"] += 1
    return rows, exported, counts


def _write_dataset(build_dir: Path, out: Path, rows: list[dict], exported: list[BuiltItem]) -> None:
    """``items.parquet`` and the dataset card."""
    import datasets  # heavy: only an export with items needs it

    with replacing(out / "items.parquet") as temporary:
        datasets.Dataset.from_list(rows).to_parquet(str(temporary))
    pools = sorted({_pool_name(it) for it in exported})
    write_atomic(
        out / "README.md",
        CARD.format(
            pools=", ".join(pools),
            n=len(rows),
            templates=len({it.template_id for it in exported}),
            models=build_settings.card_section(build_dir),
        ),
    )


# --- funnel -------------------------------------------------------------------------------------------


def funnel_counts(
    build_dir: Path, exported: set[str], fates: dict[str, tuple[str, Any]], templates: set[str] | None = None
) -> dict[str, dict[str, int]]:
    """``{template id: {column: n}}`` (see the module docstring), plus ``"total"``; ``exported``:
    the sample ids this export wrote; ``fates`` (:func:`~c3po_plugin.construction.assemble.sample_fates`)
    give ``unsettled``.
    A rejection a stage carried from an earlier one is counted once, where it was decided."""
    table: dict[str, dict[str, int]] = {}

    def bump(template_id: str, column: str) -> None:
        if templates is None or template_id in templates:
            table.setdefault(template_id, dict.fromkeys(FUNNEL + LOSSES, 0))[column] += 1

    for entry in Ledger(build_dir, "select").entries("ok"):
        bump(template_id_of(entry["key"].split("/", 1)[0]), "candidates")
    generated = {}
    for entry in Ledger(build_dir, "generate").entries():
        template = template_id_of(entry["key"], entry.get("data"))
        generated[entry["key"]] = template
        if entry["status"] == "failed":
            bump(template, "generate_failed")
        else:
            bump(template, "generated")
            if entry["status"] == "rejected":
                bump(template, "rule_rejected")

    def own(stage: str) -> Iterator[tuple[str, dict]]:
        """``stage``'s entries with their template, without the rejections it carried from upstream."""
        for entry in Ledger(build_dir, stage).entries():
            if not entry.get("origin"):
                yield generated.get(entry["key"]) or template_id_of(entry["key"], entry.get("data")), entry

    for template, entry in own("classify"):
        if entry["status"] == "rejected":
            bump(template, "classify_rejected")
    for template, entry in own("synthesize"):
        if entry["status"] != "ok":
            bump(template, f"synthesis_{entry['status']}")
    for template, entry in own("audit"):
        if entry["status"] in ("ok", "rejected"):
            bump(template, "audited")
        if entry["status"] == "ok" and str((entry.get("data") or {}).get("decision", "")).upper() == "ACCEPT":
            bump(template, "accepted")
    for key in sorted(exported):
        bump(generated.get(key) or template_id_of(key), "exported")
    for template, verdict in fates.values():
        if verdict.waiting:
            bump(template, "unsettled")
    total = dict.fromkeys(FUNNEL + LOSSES, 0)
    for row in table.values():
        for column, n in row.items():
            total[column] += n
    return {**dict(sorted(table.items())), "total": total}


def write_funnel(funnel: dict[str, dict[str, int]], out: Path) -> list[Path]:
    columns = FUNNEL + LOSSES
    paths = [out / "funnel.json", out / "funnel.csv", out / "funnel.md"]
    write_atomic(paths[0], json.dumps(funnel, indent=2) + "\n")
    with replacing(paths[1]) as temporary, temporary.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(("template",) + columns)
        for template, row in funnel.items():
            writer.writerow((template,) + tuple(row[c] for c in columns))
    lines = [
        "# C3PO build funnel",
        "",
        "candidates (select) -> generated (settled generator replies) -> rule_rejected (rules, fit threshold, "
        "malformed) -> audited -> accepted -> exported; the last columns are losses outside that chain "
        "(unsettled: failed or not yet reached at some stage; a rerun finishes them).",
        "",
        "| template | " + " | ".join(columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for template, row in funnel.items():
        name = f"**{template}**" if template == "total" else template
        lines.append(f"| {name} | " + " | ".join(str(row[c]) for c in columns) + " |")
    write_atomic(paths[2], "\n".join(lines) + "\n")
    return paths


# --- figure -------------------------------------------------------------------------------------------


def difficulty_histogram(items: list[BuiltItem], stem: Path) -> list[Path]:
    """The paper's Fig. 7: items per difficulty score (1-10), stacked by category."""
    plt = pyplot()
    scores = np.arange(1, 11)
    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    bottom = np.zeros(len(scores))
    for category, colour in (("ic", "tab:blue"), ("cc", "tab:orange")):
        n = np.array([sum(1 for it in items if it.category == category and it.difficulty == s) for s in scores])
        if n.any():
            ax.bar(scores, n, bottom=bottom, color=colour, label=f"{CATEGORIES[category]} ({n.sum()})")
            bottom += n
    ax.set_ylim(0, max(1, bottom.max()) * 1.15)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.set_xticks(scores)
    ax.set_xlim(0.4, 10.6)
    ax.set_xlabel("difficulty score (auditor, 1-10)")
    ax.set_ylabel("accepted items")
    ax.set_title(f"Difficulty of the {len(items)} accepted items")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return save(fig, stem)
