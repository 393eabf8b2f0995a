"""A scripted generator / audio-typer / auditor behind the fake Gemini server, and a select ledger.

:func:`write_candidates` writes what ``c3po build select`` leaves behind (the shared interface:
``ledger/select.jsonl`` entries with relative media paths) for base media made here, so the LLM
stages can be tested without the media stages. :class:`Scripted` answers each request by its
role (the system text says which prompt it is) and by the sample's index, from a table
``{idx: scenario}``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from c3po_fixtures import write_media

from c3po_plugin.construction.ledger import Ledger

SAMPLE_ID = re.compile(r'"sample_id": "([A-Z]_T\d_\d{3})_(\d{3})"')


def write_candidates(build_dir: Path, template_id: str, n: int) -> list[dict]:
    """``n`` selected candidates of ``template_id`` sharing one base video, image and audio."""
    paths = write_media(build_dir / "media" / "base" / "shared")
    paths = {k: f"media/base/shared/{v}" for k, v in paths.items()}
    from c3po_plugin.templates import registry

    base = registry().get(template_id).base_modality
    ledger = Ledger(build_dir, "select")
    out = []
    for i in range(n):
        data = {
            "candidate_id": f"{template_id}__b{i:02d}",
            "template_id": template_id,
            "base_id": f"b{i:02d}",
            "base_modality": base,
            "media": {base: paths[base]},
            "annotations": {"tags": ["objects"]},
            "source": {"pool": "test", "path": paths[base]},
        }
        ledger.record(f"{template_id}/b{i:02d}", "ok", data=data)
        out.append(data)
    return out


def item_reply(
    sample_id: str,
    *,
    query: str = "Which one is it?",
    fit: int | None = 4,
    rationale: str | None = None,
    transcript: str = "Grab the blue one, please.",
    style: str = "calm adult voice",
    answer: str = "the star logo",
    drop: str | None = None,
    audit_ok: bool = True,
) -> str:
    rationale = rationale or f"The picture has three mugs that differ by colour. #### {fit} ####"
    reply = {
        "sample_id": sample_id,
        "template_selection_rationale": rationale,
        "template_id": sample_id[:8],
        "template_name": "AttributeComposition",
        "base_modality": {
            "type": "image",
            "source_file": "photo.png",
            "content_summary": "three mugs",
            "processing_action": "Keep the image.",
        },
        "generated_components": {
            "audio": {"transcript": transcript, "voice_style_prompt": style, "logic_check": "names the colour only"},
            "text": {"role": "user_query", "content": query, "reasoning_required": "colour -> mug -> logo"},
            "image": None,
        },
        "ground_truth": {"answer": answer, "evidence_modality": "audio_visual_fusion", "timestamp_evidence": None},
        "self_audit": {
            "mute_test_passed": True,
            "blind_test_passed": audit_ok,
            "prior_test_passed": True,
            "ambiguity_check_passed": True,
            "notes": "needs both",
        },
    }
    if drop:
        reply.pop(drop)
    return json.dumps(reply)


GENERATOR = {
    "good": lambda sid, attempt: item_reply(sid),
    "malformed": lambda sid, attempt: '{"sample_id": "' + sid + '", "template_selection_rationale": ',
    "malformed-then-good": lambda sid, attempt: "not json at all" if attempt == 1 else item_reply(sid),
    "banned-word": lambda sid, attempt: item_reply(sid, query="What does the narrator pick?"),
    "does-not-fit": lambda sid, attempt: item_reply(
        sid, rationale="Only one mug. THIS BASE MEDIA DOES NOT FIT THE GIVEN LOGIC. #### 1 ####"
    ),
    "low-fit": lambda sid, attempt: item_reply(sid, fit=2),
    "long-query": lambda sid, attempt: item_reply(
        sid, query="Which of the three mugs on the shelf has the logo that you want now?"
    ),
    "missing-field": lambda sid, attempt: item_reply(sid, drop="ground_truth"),
    "self-audit-failed": lambda sid, attempt: item_reply(sid, audit_ok=False),
    "sfx": lambda sid, attempt: item_reply(sid, transcript="", style="a glass shattering on tiles"),
    "500": lambda sid, attempt: {"status": 500},
}


def audit_reply(decision: str, difficulty: int, pillar: str | None = None) -> str:
    return json.dumps(
        {
            "template_id": "D_T1_002",
            "decision": decision,
            "failure_pillar": pillar,
            "rationale": "scripted",
            "generation_confidence_score": "4",
            "difficulty_score": difficulty,
        }
    )


AUDITOR = {
    "accept": lambda attempt: audit_reply("ACCEPT", 6),
    "reject": lambda attempt: audit_reply("REJECT", -1, "Query Sanitization"),
    "accept-unusable-media": lambda attempt: audit_reply("ACCEPT", -1),
    "bad-decision": lambda attempt: audit_reply("MAYBE", 3),
}


class Scripted:
    """``FakeGemini(script=Scripted({...}, {...}))``: generator replies by sample index, audio
    typing by transcript (TTS when there is one, else SFX of 14 s), auditor replies by index."""

    def __init__(self, generator: dict[int, str], auditor: dict[int, str] | None = None) -> None:
        self.generator, self.auditor = generator, auditor or {}
        self.roles: list[str] = []

    def __call__(self, request: dict):
        system = " ".join(p.get("text", "") for p in request["body"].get("systemInstruction", {}).get("parts", []))
        text = request["texts"][-1]
        if "Omni-Modal Benchmark Architect" in system:
            self.roles.append("generate")
            template, idx = SAMPLE_ID.search(text).groups()
            return GENERATOR[self.generator.get(int(idx), "good")](f"{template}_{idx}", request["attempt"])
        if "audio processing director" in system:
            self.roles.append("classify")
            audio = json.loads(text)
            if audio["transcript"]:
                return json.dumps({"audio_type": "TTS", "duration_seconds": None, "sfx_prompt": None})
            return json.dumps({"audio_type": "SFX", "duration_seconds": 14, "sfx_prompt": "glass shattering"})
        if "Multimodal Benchmark Auditor" in system:
            self.roles.append("audit")
            idx = int(re.search(r'"sample_id": "[A-Z]_T\d_\d{3}_(\d{3})"', text).group(1))
            return AUDITOR[self.auditor.get(idx, "accept")](request["attempt"])
        raise AssertionError(f"unexpected request: {system[:80]!r}")
