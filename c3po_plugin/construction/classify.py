"""Stage ``classify``: is each item's audio speech (TTS) or a sound effect (SFX)? (paper App. B, I)

The generator puts speech and sound effects into the same fields (``transcript``,
``voice_style_prompt``) and does not always leave the transcript empty for a sound; the paper
therefore ran every audio component through an LLM (Gemma-3-12B) with App. I's audio-typing
prompt, which returns ``audio_type`` (TTS or SFX), ``duration_seconds`` (1-10 for SFX, null for
TTS: AudioLDM2 needs a duration) and ``sfx_prompt`` (a clean text-to-audio prompt for SFX, null
for TTS). This stage asks the ``classifier`` model (default: the generator's) the same through
the build's client; an item without generated audio is ``kind: none`` without a call.

Ledger data (key = sample id)::

    {"kind": "tts" | "sfx" | "none", "transcript": str | None, "voice_style_prompt": str | None,
     "sfx_prompt": str | None, "duration_s": float | None}

``duration_s`` is the SFX duration clamped into 1-10 s (App. I's range) and null for TTS and
none; ``transcript`` is the generator's for TTS, null otherwise.

``classifier="rules"`` is a deterministic fallback, never the default: an empty transcript or a
bracketed placeholder (``[non-speech audio]``) is SFX with the style prompt as its prompt and
:data:`RULE_SFX_SECONDS`; anything else is TTS.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from c3po_plugin.construction import settings as build_settings
from c3po_plugin.construction.client import Ask, run_stage_asks, stage_counts
from c3po_plugin.construction.ledger import Ledger
from c3po_plugin.construction.specs import resolve
from c3po_plugin.construction.stage_prompts import AUDIO_TYPING

STAGE = "classify"
RULES = "rules"
RULE_SFX_SECONDS = 5.0
MIN_SFX_S, MAX_SFX_S = 1.0, 10.0
PLACEHOLDER = re.compile(r"^\s*(\[[^\]]*\]|\(?null\)?|none|n/?a)?\s*$", re.IGNORECASE)

#: App. I's audio-typing output format.
SCHEMA = {
    "type": "object",
    "required": ["audio_type", "duration_seconds", "sfx_prompt"],
    "properties": {
        "audio_type": {"type": "string", "enum": ["TTS", "SFX"]},
        "duration_seconds": {"type": ["integer", "null"]},
        "sfx_prompt": {"type": ["string", "null"]},
    },
}


def audio_of(item: dict) -> dict | None:
    audio = (item.get("generated_components") or {}).get("audio")
    return audio if isinstance(audio, dict) else None


def classified(audio: dict, audio_type: str, duration: Any, sfx_prompt: str | None) -> tuple[dict | None, str | None]:
    """The ledger data for a classifier's answer, or None and why it is unusable."""
    kind = str(audio_type).strip().lower()
    if kind not in ("tts", "sfx"):
        return None, f"audio_type must be TTS or SFX, got {audio_type!r}"
    if kind == "tts":
        if not (audio.get("transcript") or "").strip():
            return None, "TTS without a transcript"
        return {
            "kind": "tts",
            "transcript": audio["transcript"].strip(),
            "voice_style_prompt": audio.get("voice_style_prompt"),
            "sfx_prompt": None,
            "duration_s": None,
        }, None
    prompt = (sfx_prompt or "").strip() or (audio.get("voice_style_prompt") or "").strip()
    if not prompt:
        return None, "SFX without a prompt"
    try:
        seconds = float(duration)
    except (TypeError, ValueError):
        return None, f"SFX duration_seconds must be a number of seconds, got {duration!r}"
    return {
        "kind": "sfx",
        "transcript": None,
        "voice_style_prompt": audio.get("voice_style_prompt"),
        "sfx_prompt": prompt,
        "duration_s": min(MAX_SFX_S, max(MIN_SFX_S, seconds)),
    }, None


def by_rules(audio: dict) -> dict:
    transcript = audio.get("transcript") or ""
    if PLACEHOLDER.match(transcript):
        return classified(audio, "SFX", RULE_SFX_SECONDS, audio.get("voice_style_prompt"))[0] or {}
    return classified(audio, "TTS", None, None)[0] or {}


NONE = {"kind": "none", "transcript": None, "voice_style_prompt": None, "sfx_prompt": None, "duration_s": None}


def run_classify(
    build_dir: str | Path,
    *,
    classifier: str | None = None,
    concurrency: int | None = None,
    templates: list[str] | None = None,
    model_instance: Any = None,
    **options: Any,
) -> dict:
    """Type the audio of every generated item not yet classified; returns the counts."""
    import json

    build_dir = Path(build_dir)
    config = build_settings.resolve(build_dir, classifier=classifier, concurrency=concurrency, **options)
    specs, _ = resolve(templates)
    prefixes = {s.paper_id for s in specs}
    ledger = Ledger(build_dir, STAGE)
    asks, audios, settled = [], {}, 0
    model = build_settings.model_for(config, "classifier")
    for sample_id, item in Ledger(build_dir, "generate").ok().items():
        if sample_id.rsplit("_", 1)[0] not in prefixes:
            continue
        if ledger.settled(sample_id):
            settled += 1
            continue
        audio = audio_of(item)
        if audio is None or not any((audio.get(k) or "").strip() for k in ("transcript", "voice_style_prompt")):
            ledger.record(sample_id, "ok", data=dict(NONE))
        elif model == RULES:
            ledger.record(sample_id, "ok", data=by_rules(audio))
        else:
            audios[sample_id] = audio
            text = json.dumps(
                {"transcript": audio.get("transcript"), "voice_style_prompt": audio.get("voice_style_prompt")},
                ensure_ascii=False,
            )
            asks.append(Ask(sample_id, item["template_id"], AUDIO_TYPING, text, {}, SCHEMA))

    def finish(ask: Ask, answer: dict) -> str | None:
        data, unusable = classified(
            audios[ask.key], answer.get("audio_type"), answer.get("duration_seconds"), answer.get("sfx_prompt")
        )
        if data is not None:
            ledger.record(ask.key, "ok", data=data)
        return unusable

    run_stage_asks(
        build_dir,
        STAGE,
        model,
        asks,
        ledger,
        config,
        temperature=config["classifier_temperature"],
        finish=finish,
        model_instance=model_instance,
    )
    return stage_counts(ledger, specs, settled)
