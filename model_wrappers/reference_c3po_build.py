"""``c3po_build_reference``: an offline stand-in for the generator, audio typer and auditor of ``c3po build``.

A **pipeline exerciser producing demo-quality items, not a benchmark generator**: it lets
``c3po build all BUILD --pool demo --generator lmms:c3po_build_reference`` run every stage
offline with no key (docs/tutorials/build-c3po.md). Like ``sceval_reference``
(:mod:`.reference`) it reads only what a real model is sent — the prompt text and the attached
media — and perceives the media with the same signal processing (:func:`.reference_perception.find_shapes`,
:func:`.reference_perception.find_tones`). Which of App. I's three prompts it got, it reads from the system text.

**Generator** (App. I's sample prompt). It finds the shapes in the base picture or video frames
(or the tones of a base sound) and picks, seeded by the sample id (blake2b, no global RNG), a
target shape whose colour no other shape has. The item disperses identity and selector: the
generated speech names the target's colour ("I mean the red one."), the base media show which
shape has it, the query asks for the shape ("Which shape is meant?"), the answer is its kind.
A base sound is the identity instead: the query asks how many tones, the answer is their count.
A template whose audio is a sound effect gets an empty transcript and a chime as style prompt; one
that generates a picture gets a caption of the target. Base media with no shape of a unique colour
(or a sound with no tone) gets App. I's "does not fit" sentence; otherwise the fit score is 4.
The self-audit is reported passed: nothing here can really run it.

**Audio typing** (App. I): an empty or placeholder transcript is SFX of :data:`SFX_SECONDS`
with the style prompt as its prompt, anything else TTS.

**Auditor** (App. C, I), checks it can really do, in pillar order, the first failure rejects:

1. Media Verifiability: every attached medium is there and not blank (a picture or frame whose
   pixels vary, audio whose RMS exceeds :data:`SILENT_RMS`), and a sample with generated audio
   or a generated picture has it attached.
2. Query Sanitization: the query has at most 12 words and none of App. I's banned words
   (the generate stage's own checks, :mod:`c3po_plugin.construction.generate`).
3. Coherence and Naturalness: a non-empty ground-truth answer.

(Template alignment it cannot judge: it passes.)

Difficulty of an ACCEPT (our rule, documented, not the paper's judgement): 2 per attached
modality (video, image, audio) plus the reasoning steps (``a -> b -> c`` is 3), clamped to 1-10.
"""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np

from c3po_plugin.construction.classify import PLACEHOLDER
from c3po_plugin.construction.generate import DOES_NOT_FIT, banned_word, query_words
from c3po_plugin.construction.settings import DEFAULTS
from c3po_plugin.eval_prompt import IMAGE_LABEL
from faultline_eval.model_wrappers.reference import _Reference
from faultline_eval.model_wrappers.reference_c3po import _VIDEO_LABEL
from faultline_eval.model_wrappers.reference_perception import audio_wave, find_shapes, find_tones, image_array

SFX_SECONDS = 3
SILENT_RMS = 1e-3
FIT_SCORE = 4
QUERY = "Which shape is meant?"


def _rng(sample_id: str) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.blake2b(sample_id.encode(), digest_size=8).digest(), "big"))


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0].strip() if start in text else ""


def _media(messages: list[dict]) -> tuple[list[np.ndarray], np.ndarray | None, str, str]:
    """(pictures and frames, audio wave, system text, user text) of a chat turn."""
    images, wave, system, user = [], None, "", []
    for message in messages:
        for part in message.get("content", []):
            if part.get("type") == "text":
                if message.get("role") == "system":
                    system += part["text"]
                else:
                    user.append(part["text"])
            elif part.get("type") == "image":
                images.append(image_array(part["url"]))
            elif part.get("type") == "audio":
                wave = audio_wave(part["url"])
    return images, wave, system, "\n".join(user)


# --- generator --------------------------------------------------------------------------------


def _target(images: list[np.ndarray], sample_id: str):
    """A shape of a colour no other shape in its picture or frame has, or None."""
    options = []
    for image in images:
        shapes = find_shapes(image)
        colours = [s.colour for s in shapes]
        options += [s for s in shapes if colours.count(s.colour) == 1]
    return options[int(_rng(sample_id).integers(len(options)))] if options else None


def generate_item(text: str, images: list[np.ndarray], wave: np.ndarray | None) -> dict:
    """App. I's output fields for the generator prompt ``text`` and the base media it came with."""
    template = json.loads(_between(text, "<template>", "</template>"))
    sample_id = re.search(r'"sample_id": "([^"]+)"', text).group(1)
    base = _between(text, "<base_input_modality>", "</base_input_modality>")
    spec = template.get("generation_spec", {})
    target = _target(images, sample_id)
    tones = find_tones(wave) if wave is not None else []
    if base == "audio":  # the sound is the identity: how many tones; a picture or speech selects nothing
        fits, summary = bool(tones), f"{len(tones)} tones"
        query, answer, reasoning = "How many tones are heard?", str(len(tones)), "tones -> count"
        colour, kind = "grey", "circle"
    else:
        fits = target is not None
        summary = f"shapes, among them one {target.colour} {target.kind}" if fits else "no shape of a colour of its own"
        colour, kind = (target.colour, target.kind) if fits else ("grey", "shape")
        query, answer, reasoning = QUERY, kind, "colour -> shape -> kind"
    rationale = (
        f"The base {base} shows {summary}; the selector can come from another stream. #### {FIT_SCORE} ####"
        if fits
        else f"The base {base} shows {summary}. {DOES_NOT_FIT}. #### 1 ####"
    )
    audio_spec = spec.get("audio") if base != "audio" else None
    audio = None
    if isinstance(audio_spec, dict):
        sfx = "SFX" in str(audio_spec.get("source_type", ""))
        audio = {
            "transcript": "" if sfx else f"I mean the {colour} one.",
            "voice_style_prompt": "a short bright chime" if sfx else "calm adult voice, even pace",
            "logic_check": "names the colour only; the shape is seen",
        }
    image = f"A {colour} {kind} on a plain white background." if "image" in spec and base != "image" else None
    return {
        "sample_id": sample_id,
        "template_selection_rationale": rationale,
        "template_id": template.get("template_id", ""),
        "template_name": template.get("template_name", ""),
        "base_modality": {
            "type": base,
            "source_file": _between(text, "<base_input_file>", "</base_input_file>"),
            "content_summary": summary,
            "processing_action": "Keep as selected.",
        },
        "generated_components": {
            "audio": audio,
            "text": {"role": "user_query", "content": query, "reasoning_required": reasoning},
            "image": image,
        },
        "ground_truth": {"answer": answer, "evidence_modality": "audio_visual_fusion", "timestamp_evidence": None},
        "self_audit": {
            "mute_test_passed": True,
            "blind_test_passed": True,
            "prior_test_passed": True,
            "ambiguity_check_passed": True,
            "notes": "demo item from c3po_build_reference",
        },
    }


# --- audio typing -----------------------------------------------------------------------------


def type_audio(text: str) -> dict:
    """App. I's audio-typing answer for the ``{"transcript", "voice_style_prompt"}`` JSON ``text``."""
    audio = json.loads(text)
    if PLACEHOLDER.match(audio.get("transcript") or ""):
        return {
            "audio_type": "SFX",
            "duration_seconds": SFX_SECONDS,
            "sfx_prompt": audio.get("voice_style_prompt") or "a short chime",
        }
    return {"audio_type": "TTS", "duration_seconds": None, "sfx_prompt": None}


# --- auditor ----------------------------------------------------------------------------------


def _failure(item: dict, images: list[np.ndarray], wave: np.ndarray | None) -> tuple[str, str] | None:
    components = item.get("generated_components") or {}
    if any(float(np.std(image)) < 1.0 for image in images):
        return "Media Verifiability", "a picture or frame is blank"
    if wave is not None and float(np.sqrt(np.mean(np.square(wave)))) <= SILENT_RMS:
        return "Media Verifiability", "the audio is silent"
    if components.get("audio") and wave is None:
        return "Media Verifiability", "the generated audio is not attached"
    if components.get("image") and not images:
        return "Media Verifiability", "the generated picture is not attached"
    query = (components.get("text") or {}).get("content") or ""
    if query_words(query) > DEFAULTS["max_query_words"]:
        return "Query Sanitization", f"the query has {query_words(query)} words"
    word = banned_word(query, DEFAULTS["banned_words"])
    if word:
        return "Query Sanitization", f"the query uses {word!r}"
    if not str((item.get("ground_truth") or {}).get("answer") or "").strip():
        return "Coherence and Naturalness", "no ground-truth answer"
    return None


def audit_item(text: str, images: list[np.ndarray], wave: np.ndarray | None, modalities: int) -> dict:
    """The verdict on the sample in the auditor's ``text``; ``modalities``: how many of video,
    image and audio are attached."""
    item = json.loads(_between(text, "**Sample Information:**", "Evaluate this sample"))
    logic = json.loads(_between(text, "**Generation Logic:**", "**Sample Information:**"))
    score = _between(text, "**Generation Confidence Score:**", "/ 5")
    failure = _failure(item, images, wave)
    if failure:
        return {
            "template_id": logic.get("template_id", ""),
            "decision": "REJECT",
            "failure_pillar": failure[0],
            "rationale": failure[1],
            "generation_confidence_score": score,
            "difficulty_score": -1,
        }
    reasoning = str(((item.get("generated_components") or {}).get("text") or {}).get("reasoning_required") or "")
    steps = len([s for s in reasoning.split("->") if s.strip()])
    return {
        "template_id": logic.get("template_id", ""),
        "decision": "ACCEPT",
        "failure_pillar": None,
        "rationale": "media present and not blank; query within the rules",
        "generation_confidence_score": score,
        "difficulty_score": int(min(10, max(1, 2 * modalities + steps))),
    }


def reply(messages: list[dict]) -> str:
    """The JSON reply to one of App. I's build prompts (chat messages from the build client)."""
    images, wave, system, text = _media(messages)
    if "Omni-Modal Benchmark Architect" in system:
        return json.dumps(generate_item(text, images, wave))
    if "audio processing director" in system:
        return json.dumps(type_audio(text))
    if "Multimodal Benchmark Auditor" in system:
        labels = [line.strip() for line in text.splitlines()]
        seen = any(_VIDEO_LABEL.fullmatch(line) for line in labels) + (IMAGE_LABEL in labels)
        return json.dumps(audit_item(text, images, wave, seen + (wave is not None)))
    raise ValueError("c3po_build_reference answers only c3po build's generator, audio-typing and auditor prompts")


class BuildReferenceChat(_Reference):
    """Chat interface: reads the build stage's messages (system prompt, media, text)."""

    is_simple = False
    model_id = "c3po_build_reference"

    def answer(self, messages: list[dict]) -> str:
        return reply(messages)
