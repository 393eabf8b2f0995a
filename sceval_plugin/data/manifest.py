"""The annotation manifest: which samples and which corruption cells count.

``SCEVAL_MANIFEST`` points at a JSON file (or JSON lines, one entry per line)::

    {"samples": [{"sample_id": "s1", "valid": true, "answerable": false}, ...],
     "cells":   [{"sample_id": "s1", "operator": "occlusion", "severity": 70, "variant": 2,
                  "interpretable": false, "gold_preserved": true}, ...]}

A trial (sample x condition x variant) is excluded when its sample is invalid or unanswerable,
or when any of its corruption cells is marked uninterpretable or not gold-preserving. Nothing
is dropped silently: :func:`exclusion_reason` names the reason, and the task records every
exclusion, which lmms-eval reports as the ``excluded_trials`` metric.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from sceval_plugin import operators
from sceval_plugin.conditions import Condition
from sceval_plugin.data.intake import SourceError, read_text

MANIFEST_ENV = "SCEVAL_MANIFEST"


class ManifestError(ValueError):
    pass


@dataclass
class Manifest:
    samples: dict[str, dict] = field(default_factory=dict)
    cells: dict[tuple[str, str, int, int], dict] = field(default_factory=dict)

    def exclusion_reason(self, sample_id: str, condition: Condition, variant: int) -> str | None:
        sample = self.samples.get(sample_id, {})
        if sample.get("valid") is False:
            return "sample_invalid"
        if sample.get("answerable") is False:
            return "sample_unanswerable"
        for c in condition.corruptions:
            cell_variant = min(variant, operators.get(c.operator).variants - 1)
            cell = self.cells.get((sample_id, c.operator, c.severity, cell_variant), {})
            if cell.get("interpretable") is False:
                return f"cell_uninterpretable:{c.operator}@{c.severity}"
            if cell.get("gold_preserved") is False:
                return f"cell_gold_not_preserved:{c.operator}@{c.severity}"
        return None


def parse_manifest(path: Path) -> Manifest:
    try:
        text = read_text(path)
        try:
            data = json.loads(text)
        except json.JSONDecodeError:  # JSON lines: one sample or cell entry per line
            entries = [json.loads(line) for line in text.splitlines() if line.strip()]
            data = {"samples": [e for e in entries if "operator" not in e],
                    "cells": [e for e in entries if "operator" in e]}
    except (SourceError, json.JSONDecodeError) as exc:
        raise ManifestError(f"{path}: unreadable annotation manifest: {exc}") from exc
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: expected an object with 'samples' and/or 'cells'")
    manifest = Manifest()
    for i, entry in enumerate(data.get("samples", [])):
        if "sample_id" not in entry:
            raise ManifestError(f"{path}: samples[{i}] has no sample_id")
        manifest.samples[str(entry["sample_id"])] = entry
    for i, entry in enumerate(data.get("cells", [])):
        try:
            key = (str(entry["sample_id"]), str(entry["operator"]), int(entry["severity"]), int(entry.get("variant", 0)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ManifestError(f"{path}: cells[{i}] needs sample_id, operator, severity (and variant): {exc}") from None
        manifest.cells[key] = entry
    return manifest


@functools.lru_cache(maxsize=4)
def _load(path: str) -> Manifest:
    return parse_manifest(Path(path))


def current_manifest() -> Manifest | None:
    path = os.environ.get(MANIFEST_ENV, "").strip()
    return _load(path) if path else None
