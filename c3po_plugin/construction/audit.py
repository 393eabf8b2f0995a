"""Stage ``audit``: an auditor model judges each generated item with its real media (paper App. C, I).

The auditor gets App. I's auditor prompt — the four pillars (media verifiability, query
sanitisation, template alignment, coherence and naturalness), the bypass tests, and the
generator's fit score as ``{SCORE}``, which the prompt turns into maximum scrutiny at 4-5 — with
the template's App. G spec as ``{TEMPLATE_LOGIC}`` and the item (App. I's generator fields) as
``{SAMPLE_DATA}``, and the *files*: the base media from ``select`` and the synthesized audio /
image from ``synthesize``, attached as the evaluated models get them (App. C: it "re-verifies
... against the actual generated media rather than relying only on textual descriptions").
The rubric is the system text, the sample part the user text. Default auditor: the generator's
model; the paper's was Qwen3-Omni-30B-A3B-Thinking (``lmms:faultline_qwen3_omni,pretrained=...``),
whose thoughts before ``</think>`` are skipped. Temperature 0.

Ledger data (key = sample id)::

    {"decision": "ACCEPT" | "REJECT", "failing_pillar": str | None, "rationale": str,
     "fit_score": int, "difficulty": int}

``difficulty`` is 1-10 for ACCEPT and -1 for REJECT (App. C). A REJECT is ``rejected`` with
reason ``"<pillar>: <rationale>"`` and keeps its data. App. I lets the auditor give -1 to media
"too blurry, noisy, unintelligible, or ambiguous to fairly evaluate"; an ACCEPT with -1 is
therefore recorded as a REJECT on ``Media Verifiability``. A reply without a usable decision or
difficulty is handled like a malformed one (asked again, then ``rejected``). An item whose
template generates media that ``synthesize`` rejected (itself, or carried from ``classify``) is
``rejected`` here with that reason, never sent; one that ``synthesize`` has not produced yet (no
entry, or a failed one) is ``waiting``, audited by a later run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from c3po_plugin.construction import settings as build_settings
from c3po_plugin.construction.client import Ask, run_stage_asks, stage_counts
from c3po_plugin.construction.ledger import Ledger, Upstream
from c3po_plugin.construction.specs import GenerationSpec, resolve
from c3po_plugin.construction.stage_prompts import AUDITOR, fill

STAGE = "audit"
SPLIT_AT = "**SAMPLE TO AUDIT**"
MEDIA_PILLAR = "Media Verifiability"
#: Our fields on a generate entry that App. I's sample does not have (not shown to the auditor).
OURS = ("candidate_id", "fit_score")

#: App. I's auditor output format.
SCHEMA = {
    "type": "object",
    "required": [
        "template_id",
        "decision",
        "failure_pillar",
        "rationale",
        "generation_confidence_score",
        "difficulty_score",
    ],
    "properties": {
        "template_id": {"type": "string"},
        "decision": {"type": "string", "enum": ["ACCEPT", "REJECT"]},
        "failure_pillar": {"type": ["string", "null"]},
        "rationale": {"type": "string"},
        "generation_confidence_score": {"type": "string"},
        "difficulty_score": {"type": "integer"},
    },
}


def prompt_parts(spec: GenerationSpec, item: dict) -> tuple[str, str]:
    """(system text: the rubric, user text: the filled sample part) of App. I's auditor prompt."""
    rubric, _, sample = AUDITOR.partition(SPLIT_AT)
    shown = {k: v for k, v in item.items() if k not in OURS}
    shown["template_id"] = spec.paper_id
    text = fill(
        SPLIT_AT + sample,
        SCORE=item.get("fit_score"),
        TEMPLATE_LOGIC=json.dumps(spec.prompt_json(), indent=2, ensure_ascii=False),
        SAMPLE_DATA=json.dumps(shown, indent=2, ensure_ascii=False),
    )
    return rubric.strip(), text


def verdict(answer: dict, fit_score: int | None) -> tuple[dict | None, str | None]:
    """(ledger data, None) of an auditor answer, or (None, why it is unusable)."""
    decision = str(answer.get("decision", "")).strip().upper()
    if decision not in ("ACCEPT", "REJECT"):
        return None, f"decision must be ACCEPT or REJECT, got {answer.get('decision')!r}"
    try:
        difficulty = int(answer.get("difficulty_score"))
    except (TypeError, ValueError):
        return None, f"difficulty_score must be an integer, got {answer.get('difficulty_score')!r}"
    rationale = str(answer.get("rationale") or "").strip()
    pillar = answer.get("failure_pillar")
    pillar = str(pillar).strip() if pillar not in (None, "", "null") else None
    if decision == "ACCEPT" and difficulty == -1:
        decision, pillar = "REJECT", MEDIA_PILLAR
        rationale = f"difficulty -1: media not fit to evaluate. {rationale}".strip()
    if decision == "ACCEPT" and not 1 <= difficulty <= 10:
        return None, f"an ACCEPT needs difficulty_score 1-10, got {difficulty}"
    return {
        "decision": decision,
        "failing_pillar": pillar if decision == "REJECT" else None,
        "rationale": rationale,
        "fit_score": fit_score,
        "difficulty": difficulty if decision == "ACCEPT" else -1,
    }, None


def _media(build_dir: Path, candidate: dict, synthesized: dict | None) -> dict[str, str]:
    media = dict(candidate.get("media", {}))
    for kind in ("audio", "image"):
        if synthesized and synthesized.get(kind):
            media[kind] = synthesized[kind]
    return {k: str(build_dir / v) for k, v in media.items()}


def run_audit(
    build_dir: str | Path,
    *,
    auditor: str | None = None,
    concurrency: int | None = None,
    templates: list[str] | None = None,
    model_instance: Any = None,
    **options: Any,
) -> dict:
    """Audit every generated item whose media are ready; returns the counts (``skipped``: settled
    before; ``waiting``: for synthesis)."""
    build_dir = Path(build_dir)
    config = build_settings.resolve(build_dir, auditor=auditor, concurrency=concurrency, **options)
    specs, _ = resolve(templates)
    by_paper_id = {s.paper_id: s for s in specs}
    candidates = {c["candidate_id"]: c for c in Ledger(build_dir, "select").ok().values()}
    synthesized = Ledger(build_dir, "synthesize").ok()
    upstream = Upstream(build_dir, ["synthesize"])
    ledger = Ledger(build_dir, STAGE)
    asks, fits, skipped, waiting = [], {}, 0, 0
    for sample_id, item in Ledger(build_dir, "generate").ok().items():  # sorted by sample id
        spec = by_paper_id.get(sample_id.rsplit("_", 1)[0])
        if spec is None:
            continue
        if ledger.settled(sample_id):
            skipped += 1
            continue
        if any(m in spec.generation_spec for m in ("audio", "image") if m != spec.base_modality):
            media_made = upstream.verdict(sample_id)
            if media_made.status == "rejected":
                ledger.carry(sample_id, media_made)
                continue
            if media_made.waiting:
                waiting += 1
                continue
        candidate = candidates.get(item["candidate_id"])
        if candidate is None:
            ledger.record(sample_id, "failed", reason=f"candidate {item['candidate_id']!r} is not in the select ledger")
            continue
        system, text = prompt_parts(spec, item)
        fits[sample_id] = item.get("fit_score")
        asks.append(
            Ask(
                sample_id,
                spec.template_id,
                system,
                text,
                _media(build_dir, candidate, synthesized.get(sample_id)),
                SCHEMA,
            )
        )

    def finish(ask: Ask, answer: dict) -> str | None:
        data, unusable = verdict(answer, fits[ask.key])
        if data is None:
            return unusable
        if data["decision"] == "REJECT":
            ledger.record(
                ask.key,
                "rejected",
                data=data,
                reason=f"{data['failing_pillar'] or 'unnamed pillar'}: {data['rationale']}",
            )
        else:
            ledger.record(ask.key, "ok", data=data)
        return None

    run_stage_asks(
        build_dir,
        STAGE,
        build_settings.model_for(config, "auditor"),
        asks,
        ledger,
        config,
        temperature=config["auditor_temperature"],
        finish=finish,
        model_instance=model_instance,
    )
    return {**stage_counts(ledger, specs, skipped), "waiting": waiting}
