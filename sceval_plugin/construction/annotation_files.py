"""The files of SCEval's annotation rounds (Appendix D) under ``BUILD/annotation/<pass>/``: the
passes and their sheets, the round folder, the imported ``labels.jsonl``, and the key of a row.

Read by the round itself (:mod:`.annotate`: export, import), by the simulated annotators
(:mod:`.simulate`), by the manifest (:mod:`.manifest`) and by the agreement statistics
(:mod:`.annotator_agreement`), none of which needs another of them to read a round.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from faultline_eval.core.preflight import PathRule
from sceval_plugin import operators
from sceval_plugin.construction import form
from sceval_plugin.data.records import OmniItem
from sceval_plugin.data.sources import load_source

PASSES = ("pilot", "full", "adjudication", "audit", "blind", "reveal")
#: pass -> its sheets (file stem -> columns)
SHEETS = {
    "pilot": {"items": form.ITEM_COLUMNS, "cells": form.CELL_COLUMNS},
    "full": {"items": form.ITEM_COLUMNS, "cells": form.CELL_COLUMNS},
    "adjudication": {
        "items": (*form.ITEM_COLUMNS, form.Column("labels", given=True)),
        "cells": (*form.CELL_COLUMNS, form.Column("labels", given=True)),
    },
    "audit": {"audit": form.AUDIT_COLUMNS},
    "blind": {"blind": form.BLIND_COLUMNS},
    "reveal": {"reveal": form.REVEAL_COLUMNS},
}
#: sheet -> the fields it carries into labels.jsonl
FIELDS = {
    "items": form.ITEM_FIELDS,
    "cells": form.CELL_FIELDS,
    "audit": ("audit",),
    "blind": form.BLIND_FIELDS,
    "reveal": form.REVEAL_FIELDS,
}


class AnnotationError(ValueError):
    pass


# --- the round folder ---------------------------------------------------------------------------


def pass_dir(build: Path, name: str) -> Path:
    return Path(build) / "annotation" / name


#: What a build folder holds once a stage has run: the BUILD argument of the stages after it must
#: hold it (checked before they start, :func:`faultline_eval.core.preflight.check_path_arguments`).
BUILT_BY = {
    "convert": PathRule("folder", holds="converted/*", what="converted sources (run `sceval build convert` first)"),
    "pool": PathRule("folder", holds="pool/items.jsonl", what="candidate pool (run `sceval build pool` first)"),
    "annotate export": PathRule(
        "folder", holds="annotation/*", what="annotation sheets (run `sceval build annotate export` first)"
    ),
    "annotate import": PathRule(
        "folder", holds="annotation/*/labels.jsonl", what="imported labels (run `sceval build annotate import` first)"
    ),
}


def pool_items(build: Path) -> dict[str, OmniItem]:
    pool = Path(build) / "pool"
    if not (pool / "items.jsonl").is_file():
        raise AnnotationError(f"{pool}/items.jsonl: no candidate pool (sceval build pool {build} ...)")
    return {item.sample_id: item for item in load_source(str(pool.resolve())).items}


def read_labels(build: Path, name: str, *, required: bool = True) -> list[dict]:
    path = pass_dir(build, name) / "labels.jsonl"
    if not path.is_file():
        if required:
            raise AnnotationError(
                f"{path}: the {name} pass is not imported yet (sceval build annotate import {build} --pass {name})"
            )
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def cell_key(row: dict) -> tuple | None:
    return None if row.get("operator") in (None, "") else (row["operator"], int(row["severity"]), int(row["variant"]))


def row_key(row: dict) -> tuple:
    """(sample id, cell or None): what one row of any sheet judges."""
    return row["sample_id"], cell_key(row)


def operator_modalities(build: Path) -> dict[str, str]:
    """Operator -> modality, as the exports of ``build``'s passes recorded them, then today's
    registry for the rest: an operator plugin removed since an export still has the modality its
    annotated cells were judged under."""
    known = {name: operators.get(name).modality for name in operators.names()}
    for path in sorted((Path(build) / "annotation").glob("*/assignment.json")):
        for name, spec in json.loads(path.read_text(encoding="utf-8")).get("operators", {}).items():
            known.setdefault(name, spec["modality"])
    return known


def group_labels(labels: list[dict]) -> dict[tuple, dict[str, dict]]:
    """(sheet, (sample id, cell)) -> annotator -> that annotator's labels."""
    grouped: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for label in labels:
        grouped[(label["sheet"], row_key(label))][label["annotator"]] = label
    return grouped
