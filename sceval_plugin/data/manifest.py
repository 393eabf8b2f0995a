"""The annotation manifest: which samples and which corruption cells count.

``SCEVAL_MANIFEST`` points at a JSON file (or JSON lines, one entry per line)::

    {"schema": "sceval-manifest/2",
     "samples": [{"sample_id": "s1", "valid": true, "answerable": false, "failure_reason": "text leakage",
                  "adjudication_note": null, "source": "omnibench"}, ...],
     "cells":   [{"sample_id": "s1", "operator": "occlusion", "severity": 70, "variant": 2,
                  "interpretable": false, "gold_preserved": true, "stress_only": false}, ...]}

(schema 1, the same without ``schema``, ``failure_reason``, ``adjudication_note``, ``source`` and
``stress_only``, reads the same way; ``sceval build manifest`` writes schema 2.)

A trial (sample x condition x variant) is excluded when its sample is invalid or unanswerable,
or when any of its corruption cells is marked uninterpretable. Nothing is dropped silently:
:meth:`Manifest.exclusion_reason` names the reason, and the task records every exclusion, which
lmms-eval reports as the ``excluded_trials`` metric.

Cohorts (Appendix D, blind answer-first audit; G.7): a trial whose cells are all interpretable
but one of which does not preserve the original gold is *stress-only*; the others are
*gold-preserved*. The paper reports robustness on the gold-preserved cohort and keeps stress-only
variants "for descriptive stress-test analysis". So by default stress-only trials are run and
recorded with ``cohort: "stress_only"``, left out of the headline metrics (``sceval_accuracy``
and the other per-trial metrics), counted by ``sceval_stress_only_trials``, and reported by
``sceval report --cohort stress``. ``SCEVAL_STRESS_ONLY=exclude`` is the other reading: exclude
them like uninterpretable cells (no model calls for them; reason ``cell_gold_not_preserved``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

from faultline_eval.core.intake import SourceError, read_text
from sceval_plugin import operators
from sceval_plugin.conditions import Condition
from sceval_plugin.sceval_environment import SCEVAL_MANIFEST, SCEVAL_STRESS_ONLY
from sceval_plugin.sceval_trial import STRESS_ONLY

STRESS_ONLY_POLICIES = SCEVAL_STRESS_ONLY.choices
SCHEMAS = ("sceval-manifest/1", "sceval-manifest/2")
GOLD_PRESERVED = "gold_preserved"


class ManifestError(ValueError):
    pass


@dataclass
class Manifest:
    samples: dict[str, dict] = field(default_factory=dict)
    cells: dict[tuple[str, str, int, int], dict] = field(default_factory=dict)

    def exclusion_reason(
        self, sample_id: str, condition: Condition, variant: int, *, stress_only: str = "exclude"
    ) -> str | None:
        """Why the trial is not in the cohort kept (None: kept). ``stress_only="exclude"`` (the
        default) keeps the gold-preserved cohort only; ``"run"`` keeps stress-only trials too
        (:meth:`cohort` then tells them apart)."""
        sample = self.samples.get(sample_id, {})
        if sample.get("valid") is False:
            return "sample_invalid"
        if sample.get("answerable") is False:
            return "sample_unanswerable"
        for c, cell in self._cells(sample_id, condition, variant):
            if cell.get("interpretable") is False:
                return f"cell_uninterpretable:{c.operator}@{c.severity}"
        if stress_only == "exclude":
            for c, cell in self._cells(sample_id, condition, variant):
                if _breaks_gold(cell):
                    return f"cell_gold_not_preserved:{c.operator}@{c.severity}"
        return None

    def cohort(self, sample_id: str, condition: Condition, variant: int) -> str:
        """``"stress_only"`` when one of the trial's cells is interpretable but does not preserve
        the original gold (Appendix D), else ``"gold_preserved"``."""
        return (
            STRESS_ONLY
            if any(_breaks_gold(cell) for _, cell in self._cells(sample_id, condition, variant))
            else GOLD_PRESERVED
        )

    def _cells(self, sample_id: str, condition: Condition, variant: int):
        for c in condition.corruptions:
            cell_variant = min(variant, operators.get(c.operator).variants - 1)
            yield c, self.cells.get((sample_id, c.operator, c.severity, cell_variant), {})


def _breaks_gold(cell: dict) -> bool:
    """Schema 2 says it (``stress_only``); schema 1 only has ``gold_preserved``."""
    return bool(cell.get("stress_only")) or cell.get("gold_preserved") is False


def parse_manifest(path: Path) -> Manifest:
    try:
        text = read_text(path)
        try:
            data = json.loads(text)
        except json.JSONDecodeError:  # JSON lines: one sample or cell entry per line
            entries = [json.loads(line) for line in text.splitlines() if line.strip()]
            data = {
                "samples": [e for e in entries if "operator" not in e],
                "cells": [e for e in entries if "operator" in e],
            }
    except (SourceError, json.JSONDecodeError) as exc:
        raise ManifestError(f"{path}: unreadable annotation manifest: {exc}") from exc
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: expected an object with 'samples' and/or 'cells'")
    schema = data.get("schema", SCHEMAS[0])
    if schema not in SCHEMAS:
        raise ManifestError(f"{path}: schema {schema!r} is not one this version reads ({', '.join(SCHEMAS)})")
    manifest = Manifest()
    for i, entry in enumerate(data.get("samples", [])):
        if "sample_id" not in entry:
            raise ManifestError(f"{path}: samples[{i}] has no sample_id")
        manifest.samples[str(entry["sample_id"])] = entry
    for i, entry in enumerate(data.get("cells", [])):
        try:
            key = (
                str(entry["sample_id"]),
                str(entry["operator"]),
                int(entry["severity"]),
                int(entry.get("variant", 0)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ManifestError(
                f"{path}: cells[{i}] needs sample_id, operator, severity (and variant): {exc}"
            ) from None
        manifest.cells[key] = entry
    return manifest


@functools.lru_cache(maxsize=4)
def _load(path: str) -> Manifest:
    return parse_manifest(Path(path))


def current_manifest() -> Manifest | None:
    path = SCEVAL_MANIFEST.get()
    return _load(path) if path else None


def stress_only_policy() -> str:
    """``run`` (default: stress-only trials are run, recorded and kept out of the headline
    metrics) or ``exclude`` (left out before any model call)."""
    policy = SCEVAL_STRESS_ONLY.get().lower()
    if policy not in STRESS_ONLY_POLICIES:
        raise ManifestError(f"{SCEVAL_STRESS_ONLY.name}={policy!r}: use 'run' or 'exclude'")
    return policy
