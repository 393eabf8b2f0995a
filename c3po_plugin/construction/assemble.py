"""Joining a build's ledgers into the items it has made (used by ``sample`` and ``export``).

An item is a sample the auditor accepted (``audit`` ok, decision ACCEPT) together with its
generator output (``generate``), its base media (``select``, through the sample's
``candidate_id``) and its synthesised media (``synthesize``). Its media are exactly the
modalities its template takes (:mod:`c3po_plugin.templates`): the video from the base; the
image and the audio synthesised, or from the base when the base is that modality. An accepted
sample that lacks any piece is a problem with its reason, never an item.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from c3po_plugin.construction.generate import sample_ids
from c3po_plugin.construction.ledger import Ledger, Upstream
from c3po_plugin.construction.specs import resolve, template_id
from c3po_plugin.templates import registry

MEDIA = ("video", "image", "audio")


@dataclass(frozen=True)
class BuiltItem:
    sample_id: str
    template_id: str
    category: str  # "ic" or "cc"
    question: str
    answer: str
    media: dict[str, Path]  # kind -> absolute file
    difficulty: int
    generated: dict = field(default_factory=dict)
    base: dict = field(default_factory=dict)
    synthesized: dict = field(default_factory=dict)
    audit: dict = field(default_factory=dict)


def project_template_id(key: str) -> str:
    """The project's template id for an id, a name or a paper id (``D_T1_001``, through the spec
    registry); an unknown key comes back as it is."""
    try:
        return template_id(key)
    except KeyError:
        return key


def template_id_of(key: str, data: Any = None) -> str:
    """The project's template id of a ledger entry: its data's ``template_id``, else the sample
    id's prefix (``{TEMPLATE_ID}_{idx}``)."""
    raw = data.get("template_id") if isinstance(data, dict) and data.get("template_id") else key.rsplit("_", 1)[0]
    return project_template_id(raw)


def nested(data: Any, *keys: str) -> Any:
    """``data[k1][k2]...``, or None where a level is missing or not a mapping."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _text(data: Any, *keys: str) -> str:
    value = nested(data, *keys)
    return value.strip() if isinstance(value, str) else ""


def accepted_items(
    build_dir: str | Path, templates: set[str] | None = None
) -> tuple[list[BuiltItem], list[tuple[str, str]]]:
    """(items, ``(sample id, reason)`` of accepted samples that cannot be items), in audit order."""
    build_dir = Path(build_dir)
    generated = Ledger(build_dir, "generate").ok()
    synthesized = Ledger(build_dir, "synthesize").ok()
    bases = {data["candidate_id"]: data for data in Ledger(build_dir, "select").ok().values()}
    items, problems = [], []
    for sample_id, verdict in Ledger(build_dir, "audit").ok().items():
        if not isinstance(verdict, dict) or str(verdict.get("decision", "")).upper() != "ACCEPT":
            continue
        sample = generated.get(sample_id)
        if sample is None:
            problems.append((sample_id, "accepted by the audit but has no ok generate entry"))
            continue
        template_id = template_id_of(sample_id, sample)
        if templates is not None and template_id not in templates:
            continue
        if template_id not in registry():
            problems.append((sample_id, f"unknown template {template_id!r}"))
            continue
        template = registry().get(template_id)
        base = bases.get(sample.get("candidate_id"))
        synth = synthesized.get(sample_id)
        question = _text(sample, "generated_components", "text", "content")
        answer = _text(sample, "ground_truth", "answer")
        difficulty = verdict.get("difficulty")
        missing = [
            what
            for what, ok in (
                ("base media (select)", base is not None),
                ("synthesized media (synthesize)", synth is not None),
                ("question (generated_components.text.content)", bool(question)),
                ("answer (ground_truth.answer)", bool(answer)),
                ("difficulty 1-10 (audit)", isinstance(difficulty, (int, float)) and 1 <= difficulty <= 10),
            )
            if not ok
        ]
        if missing:
            problems.append((sample_id, "missing " + ", ".join(missing)))
            continue
        found: dict[str, Path] = {}
        for kind in MEDIA:
            if kind not in template.modalities:
                continue
            rel = synth.get(kind) or base["media"].get(kind)
            if not rel:
                problems.append(
                    (sample_id, f"template {template.id} needs {kind}, which neither the base nor the synthesis made")
                )
                break
            found[kind] = build_dir / rel
        else:
            items.append(
                BuiltItem(
                    sample_id,
                    template.id,
                    template.category,
                    question,
                    answer,
                    found,
                    int(difficulty),
                    sample,
                    base,
                    synth,
                    verdict,
                )
            )
    return items, problems


#: The stages a sample passes after ``select``, in order; its fate is decided by the first one
#: whose entry is not ``ok`` (:func:`sample_fates`).
SAMPLE_STAGES = ("generate", "classify", "synthesize", "audit", "export")


def sample_fates(build_dir: str | Path, templates: list[str] | None = None) -> dict[str, tuple[str, Any]]:
    """``{sample id: (template id, verdict)}`` for every selected candidate of these templates
    (``select`` ok, numbered as ``generate`` numbers them), whether or not any later stage has
    seen it: the verdict (:class:`~c3po_plugin.construction.ledger.Verdict`) is ``ok`` for an exported
    item, ``rejected`` with the stage that decided, or ``failed`` / ``missing`` (waiting) at the
    first stage with a failed entry or none. Every candidate has exactly one fate, so none can
    vanish unseen."""
    build_dir = Path(build_dir)
    specs, _ = resolve(templates)
    chain = Upstream(build_dir, SAMPLE_STAGES)
    return {
        sample_id: (spec.template_id, chain.verdict(sample_id)) for sample_id, spec, _ in sample_ids(build_dir, specs)
    }
