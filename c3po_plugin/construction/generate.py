"""Stage ``generate``: the generator LLM writes one item per base-media candidate (paper App. I).

For every ``ok`` candidate of the ``select`` ledger whose template has a generation spec, the
generator gets App. I's prompt (:mod:`c3po_plugin.construction.stage_prompts`): the system role, then the
task prompt with the template's App. G spec as ``{TEMPLATE}``, the base modality as
``{BASE_MODALITY_INPUT}``, the base file (relative to the build) as ``{BASE_MODALITY_FILE}``,
and the base media attached (video frames, picture and/or audio, as the evaluated models see
them). JSON response schema :data:`SCHEMA`, temperature 1.0 (App. I; setting
``generator_temperature``).

The sample id (ledger key) is ``{TEMPLATE_ID}_{idx}``: the template's paper id (``D_T1_001``,
:mod:`c3po_plugin.construction.specs`) and the candidate's position among the template's entries in
the select ledger (keys ``{template_id}/{base_id}``, in the order first written; one not ``ok``
keeps its number unused), zero-padded to 3 (``D_T1_001_007``).

Ledger data: App. I's output fields exactly, as the generator wrote them, with two fields set by
us: ``sample_id`` (the key, whatever the reply said) and ``template_id`` (the project's id,
e.g. ``IC02``, not the alias the prompt shows), plus ``candidate_id`` and ``fit_score`` (the
``#### S ####`` score of the rationale, an int 1-5)::

    sample_id, template_selection_rationale, template_id, template_name,
    base_modality {type, source_file, content_summary, processing_action},
    generated_components {audio {transcript, voice_style_prompt, logic_check} | null,
                          text {role, content, reasoning_required}, image: str | null},
    ground_truth {answer, evidence_modality, timestamp_evidence},
    self_audit {mute_test_passed, blind_test_passed, prior_test_passed, ambiguity_check_passed, notes}

Rules enforced in code; each failure is ``rejected`` with its reason, never an item:

- ``malformed reply: ...`` — not JSON after ``malformed_retries`` re-asks (an empty or refused
  reply is re-asked the same way, then ``rejected: empty reply`` / ``refusal``); we call a
  reply the model keeps getting wrong final, not transient.
- ``missing field <path>`` / ``field <path> must be <type>``.
- ``does not fit`` — the rationale contains App. I's sentence "THIS BASE MEDIA DOES NOT FIT THE
  GIVEN LOGIC"; ``no fit score`` without ``#### S ####``; ``fit score S below threshold T``.
- ``query has N words (at most 12)``; ``query uses banned word 'audio'`` (App. I's list, whole
  words and their plurals, case-insensitive).
- ``self-audit failed: blind_test_passed`` — App. I makes a failed self-audit inadmissible.
- a template whose spec generates audio needs ``generated_components.audio`` with a
  ``voice_style_prompt``; one that generates an image needs the image caption.

API failures (after the client's retries) and unreadable base media are ``failed``: a resumed
run asks again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from c3po_plugin.construction import settings as build_settings
from c3po_plugin.construction.client import Ask, run_stage_asks, stage_counts
from c3po_plugin.construction.ledger import Ledger
from c3po_plugin.construction.specs import GenerationSpec, resolve
from c3po_plugin.construction.stage_prompts import GENERATOR_SYSTEM, GENERATOR_TASK, fill

STAGE = "generate"
DOES_NOT_FIT = "THIS BASE MEDIA DOES NOT FIT THE GIVEN LOGIC"
FIT_SCORE = re.compile(r"####\s*<?\s*([1-5])\s*>?\s*####")

_STR, _BOOL = {"type": "string"}, {"type": "boolean"}
_NULLABLE_STR = {"type": ["string", "null"]}


def _object(properties: dict, nullable: bool = False) -> dict:
    return {
        "type": ["object", "null"] if nullable else "object",
        "properties": properties,
        "required": list(properties),
    }


#: App. I's output format as a JSON schema (every field required; audio and image may be null).
SCHEMA = _object(
    {
        "sample_id": _STR,
        "template_selection_rationale": _STR,
        "template_id": _STR,
        "template_name": _STR,
        "base_modality": _object(
            {"type": _STR, "source_file": _STR, "content_summary": _STR, "processing_action": _STR}
        ),
        "generated_components": _object(
            {
                "audio": _object(
                    {"transcript": _NULLABLE_STR, "voice_style_prompt": _STR, "logic_check": _STR}, nullable=True
                ),
                "text": _object({"role": _STR, "content": _STR, "reasoning_required": _STR}),
                "image": _NULLABLE_STR,
            }
        ),
        "ground_truth": _object({"answer": _STR, "evidence_modality": _STR, "timestamp_evidence": _NULLABLE_STR}),
        "self_audit": _object(
            {
                "mute_test_passed": _BOOL,
                "blind_test_passed": _BOOL,
                "prior_test_passed": _BOOL,
                "ambiguity_check_passed": _BOOL,
                "notes": _STR,
            }
        ),
    }
)

_JSON_TYPES = {"string": str, "boolean": bool, "object": dict, "null": type(None)}


def schema_error(value: Any, schema: dict = SCHEMA, where: str = "") -> str | None:
    """The first place ``value`` breaks ``schema`` (missing field, wrong type), or None."""
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if not any(isinstance(value, _JSON_TYPES[k]) for k in kinds):
        return f"field {where or '<reply>'} must be {' or '.join(kinds)}"
    if isinstance(value, dict) and "properties" in schema:
        for name, sub in schema["properties"].items():
            path = f"{where}.{name}" if where else name
            if name not in value:
                return f"missing field {path}"
            error = schema_error(value[name], sub, path)
            if error:
                return error
    return None


def query_words(query: str) -> int:
    return len(re.findall(r"[\w'’-]+", query))


def banned_word(query: str, banned: list[str]) -> str | None:
    """The first banned word ``query`` uses (whole word or plural, case-insensitive)."""
    for word in banned:
        if re.search(rf"\b{re.escape(word)}s?\b", query, flags=re.IGNORECASE):
            return word
    return None


def _fit_problem(rationale: str, config: dict) -> tuple[int | None, str | None]:
    """(fit score stated in the rationale, reason it rules the reply out or None)."""
    if DOES_NOT_FIT in rationale.upper():
        return None, "does not fit"
    found = FIT_SCORE.search(rationale)
    if found is None:
        return None, "no fit score (#### S ####) in the template selection rationale"
    fit = int(found.group(1))
    if fit < int(config["fit_threshold"]):
        return fit, f"fit score {fit} below threshold {config['fit_threshold']}"
    return fit, None


def _query_problem(query: str, config: dict) -> str | None:
    """Why the generated query breaks the length or banned-word rules, or None."""
    words = query_words(query)
    if not words:
        return "empty query"
    if words > int(config["max_query_words"]):
        return f"query has {words} words (at most {config['max_query_words']})"
    word = banned_word(query, config["banned_words"])
    if word:
        return f"query uses banned word {word!r}"
    return None


def _self_audit_problem(data: dict) -> str | None:
    failed = [k for k, v in data["self_audit"].items() if k.endswith("_passed") and v is not True]
    return f"self-audit failed: {', '.join(failed)}" if failed else None


def _components_problem(data: dict, spec: GenerationSpec) -> str | None:
    """Why the media the template generates, or the answer, is missing from the reply, or None."""
    generated = {m for m in spec.generation_spec if m not in (spec.base_modality, "text")}
    components = data["generated_components"]
    if "audio" in generated and not (components["audio"] and components["audio"]["voice_style_prompt"].strip()):
        return "the template generates audio but generated_components.audio has no voice_style_prompt"
    if "image" in generated and not (components["image"] or "").strip():
        return "the template generates an image but generated_components.image is empty"
    if not data["ground_truth"]["answer"].strip():
        return "empty ground_truth.answer"
    return None


def check_reply(data: dict, spec: GenerationSpec, config: dict) -> tuple[int | None, str | None]:
    """(fit score, rejection reason or None) of a parsed generator reply under App. I's rules."""
    error = schema_error(data)
    if error:
        return None, error
    fit, reason = _fit_problem(data["template_selection_rationale"], config)
    if reason:
        return fit, reason
    query = data["generated_components"]["text"]["content"]
    return fit, _query_problem(query, config) or _self_audit_problem(data) or _components_problem(data, spec)


def base_file(candidate: dict) -> str:
    media = candidate.get("media", {})
    return media.get(candidate["base_modality"]) or next(iter(media.values()), "")


def sample_ids(build_dir: Path, specs: list[GenerationSpec]) -> list[tuple[str, GenerationSpec, dict]]:
    """``(sample id, spec, candidate)`` of every ``ok`` candidate of these templates, in template
    then idx order: the samples a build is made of (generated or not yet)."""
    # idx = the candidate's place among every select entry of its template, failed ones too, so a
    # candidate that becomes ok on a later select run does not shift the ids already given out
    by_template: dict[str, list[dict | None]] = {}
    for entry in Ledger(build_dir, "select").entries():
        template = entry["key"].split("/", 1)[0]
        by_template.setdefault(template, []).append(entry["data"] if entry["status"] == "ok" else None)
    return [
        (f"{spec.paper_id}_{idx:03d}", spec, candidate)
        for spec in specs
        for idx, candidate in enumerate(by_template.get(spec.template_id, []))
        if candidate is not None
    ]


def _asks(build_dir: Path, specs: list[GenerationSpec], ledger: Ledger) -> tuple[list[Ask], dict, int]:
    """(asks to send, {sample id: (spec, candidate)}, candidates already settled)."""
    asks, context, settled = [], {}, 0
    shown_of: dict[str, str] = {}
    for sample_id, spec, candidate in sample_ids(build_dir, specs):
        if ledger.settled(sample_id):
            settled += 1
            continue
        if spec.template_id not in shown_of:
            shown_of[spec.template_id] = json.dumps(spec.prompt_json(), indent=2, ensure_ascii=False)
        text = fill(
            GENERATOR_TASK,
            TEMPLATE=shown_of[spec.template_id],
            BASE_MODALITY_INPUT=spec.base_modality,
            BASE_MODALITY_FILE=base_file(candidate),
            TEMPLATE_ID=spec.paper_id,
            idx=sample_id.rsplit("_", 1)[1],
        )
        media = {k: str(build_dir / v) for k, v in candidate.get("media", {}).items()}
        asks.append(Ask(sample_id, spec.template_id, GENERATOR_SYSTEM, text, media, SCHEMA))
        context[sample_id] = (spec, candidate)
    return asks, context, settled


def run_generate(
    build_dir: str | Path,
    *,
    generator: str | None = None,
    fit_threshold: int | None = None,
    concurrency: int | None = None,
    templates: list[str] | None = None,
    model_instance: Any = None,
    **options: Any,
) -> dict:
    """Generate an item for every selected candidate not yet settled; returns the ledger's counts
    (for these templates) and ``skipped``: candidates settled by an earlier run."""
    from loguru import logger

    build_dir = Path(build_dir)
    config = build_settings.resolve(
        build_dir, generator=generator, fit_threshold=fit_threshold, concurrency=concurrency, **options
    )
    specs, without = resolve(templates)
    for template in without:
        logger.warning(f"c3po build generate: template {template} has no generation spec; skipped")
    ledger = Ledger(build_dir, STAGE)
    asks, context, settled = _asks(build_dir, specs, ledger)

    def finish(ask: Ask, data: dict) -> None:  # a reply breaking a rule is final: never re-asked
        spec, candidate = context[ask.key]
        fit, reason = check_reply(data, spec, config)
        data = {
            **data,
            "sample_id": ask.key,
            "template_id": spec.template_id,
            "candidate_id": candidate["candidate_id"],
            "fit_score": fit,
        }
        ledger.record(ask.key, "rejected" if reason else "ok", data=data, reason=reason)

    run_stage_asks(
        build_dir,
        STAGE,
        config["generator"],
        asks,
        ledger,
        config,
        temperature=config["generator_temperature"],
        finish=finish,
        model_instance=model_instance,
    )
    return stage_counts(ledger, specs, settled)
