"""``sceval_reference``: an offline model that answers the demo items by signal processing.

It reads only what a real model would be sent (the prompt text, the frames and the audio),
never the dataset document, so it cannot see the gold key. It finds saturated shapes in the
frames and tone events in the audio (:mod:`.reference_perception`) and reads a few keywords in
the question. Clean demo accuracy is near 100 %; corruption breaks each of those steps the way
it would break a perception pipeline, so the demo shows real fault lines. Its requests go
through the one request lifecycle (:mod:`.local_requests`) like every other model's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from c3po_plugin.eval_prompt import ANSWER_CUE
from faultline_eval.model_wrappers.chat_messages import visuals_and_context
from faultline_eval.model_wrappers.lmms_base import HostSideModel, lmms_base
from faultline_eval.model_wrappers.local_requests import answer_requests
from faultline_eval.model_wrappers.model_args import check_model_args
from faultline_eval.model_wrappers.reference_c3po import answer_c3po_messages, answer_c3po_visuals
from faultline_eval.model_wrappers.reference_perception import (
    HIGH_PITCH_HZ,
    Shape,
    Tone,
    conversation_media,
    find_shapes,
    find_tones,
    split_visuals,
)
from sceval_plugin.eval_prompts import NO_OPTION, NO_OPTION_CUE

# --- reading the prompt --------------------------------------------------------------------------

_OPTION = re.compile(r"^([A-D])\. (.+)$", re.MULTILINE)


def read_prompt(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(question, options) from the protocol's user prompt; the question may span lines."""
    body, _, options_part = text.partition("\nOptions:")
    question = body.split("Question: ", 1)[1] if "Question: " in body else ""
    return question, [(m.group(1), m.group(2).strip()) for m in _OPTION.finditer(options_part)]


#: An option line of lmms-eval's own prompts: "A. text", "(A) text", "A) text", "A: text".
_BASE_OPTION = re.compile(r"^\(?([A-F])[.):]\s*(.+)$", re.MULTILINE)


#: The media lines every SCEval protocol prompt carries (``PromptTemplate.render``'s ``{media}``).
_MEDIA_LINES = re.compile(r"^Visual input: .*\n(?:.*\n)*?Audio input: ", re.MULTILINE)


def is_protocol_prompt(text: str) -> bool:
    """Whether ``text`` is an SCEval protocol prompt (App. E): it states its visual and audio
    inputs, or has the protocol's ``Question: `` and ``Options:`` lines, or says no options are
    given. Anything else is a base lmms-eval task's own prompt (a wrapped or plain ``worldsense``,
    ``mme``, ``omni_bench`` ..., whose prompts may have an ``Options:`` section of their own)."""
    return (
        _MEDIA_LINES.search(text) is not None
        or ("Question: " in text and "\nOptions:" in text)
        or NO_OPTION_CUE in text
    )


def base_options(text: str) -> list[tuple[str, str]]:
    """The lettered options of a base task's prompt, in order (none for yes/no or open questions)."""
    return [(m.group(1), m.group(2).strip()) for m in _BASE_OPTION.finditer(text)]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


# --- deciding ------------------------------------------------------------------------------------


def _pick(options: list[tuple[str, str]], description: str | None) -> str | None:
    if description is None:
        return None
    exact = [k for k, t in options if t.lower() == description]
    if exact:
        return exact[0]
    colour = description.split()[0]
    partial = [k for k, t in options if colour in t.lower().split()]
    return partial[0] if len(partial) == 1 else None


#: What :func:`perceive` makes of one kind of question: (the answer it describes or None, reasoning).
Reading = tuple[str | None, str]


def _colour_at_beep_count(shapes: list[list[Shape]], tones: list[Tone]) -> Reading:
    """ "... beeps ... frame": the colour of the largest shape in the frame the beep count names."""
    count = len(tones)
    described = shapes[count - 1][0].colour if 1 <= count <= len(shapes) and shapes[count - 1] else None
    return described, f"heard {count} beep(s); looked at frame {count}"


def _shape_at_tone(which: str, shapes: list[list[Shape]], tones: list[Tone]) -> Reading:
    """ "... higher/lower ... tone": the largest shape in the frame where that tone starts."""
    if len(tones) < 2:
        return None, f"expected two tones, heard {len(tones)}"
    tone = (max if which == "higher" else min)(tones, key=lambda t: t.pitch_hz)
    index = min(int(tone.start_s), len(shapes) - 1)
    described = f"{shapes[index][0].colour} {shapes[index][0].kind}" if shapes and shapes[index] else None
    return described, f"the {which} tone starts at {tone.start_s:.2f}s, frame {index + 1}"


def _shape_by_size_if_pitch(named: str, asked: str, shapes: list[list[Shape]], tones: list[Tone]) -> Reading:
    """ "the largest/smallest shape if the tone is high/low" (the middle one otherwise)."""
    if not (tones and shapes and len(shapes[0]) == 3):
        return None, f"found {len(tones)} tone(s) and {len(shapes[0]) if shapes else 0} shape(s)"
    heard = "high" if max(tones, key=lambda t: t.length_s).pitch_hz > HIGH_PITCH_HZ else "low"
    by_size = shapes[0]  # largest first
    chosen = (by_size[0] if named == "largest" else by_size[2]) if heard == asked else by_size[1]
    return chosen.colour, f"heard a {heard} tone; the question asks for the {named} shape if it is {asked}"


def _read(q: set[str], shapes: list[list[Shape]], tones: list[Tone]) -> Reading:
    """The reading of the question whose keywords ``q`` holds (first match wins)."""
    if {"beeps", "frame"} <= q or {"beep", "frame"} <= q:
        return _colour_at_beep_count(shapes, tones)
    if ("higher" in q or "lower" in q) and "tone" in q:
        return _shape_at_tone("higher" if "higher" in q else "lower", shapes, tones)
    if ("largest" in q or "smallest" in q) and ("high" in q or "low" in q):
        return _shape_by_size_if_pitch(
            "largest" if "largest" in q else "smallest", "high" if "high" in q else "low", shapes, tones
        )
    return None, "no recognisable task in the question"


def perceive(question: str, frames: list[np.ndarray], wave: np.ndarray | None) -> tuple[str | None, str, list]:
    """What the pipeline makes of one item without looking at any options: the answer it
    describes ("green", "red circle"; None when a step failed), its reasoning, and the shapes
    it found per frame."""
    shapes = [find_shapes(f) for f in frames]
    tones = find_tones(wave) if wave is not None else []
    described, reasoning = _read(set(words(question)), shapes, tones)
    return described, reasoning, shapes


def decide(question: str, options: list[tuple[str, str]], frames: list[np.ndarray], wave: np.ndarray | None) -> dict:
    """The reply object for one item: answer key, confidence, reasoning."""
    described, reasoning, shapes = perceive(question, frames, wave)
    key = _pick(options, described)
    if key is not None:
        return {"answer": key, "confidence": "high", "reasoning": reasoning}
    # Fall back to the most visible colour among the options: a guess, and said to be one.
    seen = [s.colour for frame in shapes for s in frame]
    ranked = sorted(options, key=lambda kv: -sum(c in kv[1].lower().split() for c in seen))
    guess = ranked[0][0] if ranked else "A"
    return {"answer": guess, "confidence": "low", "reasoning": f"{reasoning}; guessing"}


#: The free-form answer when a perception step failed: with no options there is nothing to guess among.
CANNOT_TELL = "cannot tell from the input"


def answer_freely(question: str, frames: list[np.ndarray], wave: np.ndarray | None) -> dict:
    """The reply object for a no-option prompt (SCEval Table 35): what :func:`perceive`
    describes, with its reasoning as the evidence; when a step failed, it says it cannot tell
    (the multiple-choice :func:`decide` would guess the most visible option instead)."""
    described, reasoning, _ = perceive(question, frames, wave)
    return {"answer": described or CANNOT_TELL, "evidence": reasoning}


def answer_base_prompt(text: str, frames: list[np.ndarray], wave: np.ndarray | None) -> str:
    """The reply to a base lmms-eval task's prompt, in the form those prompts ask for (a bare
    option letter, else a short answer): the same perception and fallback as SCEval's items,
    with the whole prompt as the question."""
    options = base_options(text)
    if options:
        return decide(text, options, frames, wave)["answer"]
    return answer_freely(text, frames, wave)["answer"]


def _reply(text: str, frames: list[np.ndarray], wave: np.ndarray | None) -> str:
    """The SCEval reply to a prompt: a free-form answer when the prompt says no options are given;
    a base task's prompt gets :func:`answer_base_prompt`."""
    if not is_protocol_prompt(text):
        return answer_base_prompt(text, frames, wave)
    question, options = read_prompt(text)
    if NO_OPTION_CUE in text:  # no options: the answer format follows the question
        return json.dumps(answer_freely(question.split(NO_OPTION.answer_format, 1)[0], frames, wave))
    return json.dumps(decide(question, options, frames, wave))


# --- lmms-eval models ----------------------------------------------------------------------------


def _is_c3po(texts: list[str]) -> bool:
    """C3PO prompts ask for a free-form answer (``prompts.ANSWER_CUE``); SCEval's for a choice."""
    return any(ANSWER_CUE in t for t in texts)


def answer_messages(messages: list[dict]) -> str:
    """The reply to lmms-eval chat messages (what doc_to_messages produced). Image, audio and
    video parts may hold PIL images, audio dicts or file paths (:func:`.reference_perception.item_media`)."""
    if _is_c3po([part.get("text", "") for message in messages for part in message.get("content", [])]):
        return answer_c3po_messages(messages)  # before decoding: C3PO's reader takes its own parts
    images, wave, texts = conversation_media(messages)
    return _reply("\n".join(texts), images, wave)


def answer_visuals(context: str, visuals: Iterable[Any]) -> str:
    """The reply for a simple-model request: prompt text plus doc_to_visual's list."""
    if _is_c3po([context]):
        return answer_c3po_visuals(context, visuals)
    images, wave = split_visuals(visuals)
    return _reply(context, images, wave)


class _Reference(HostSideModel, lmms_base()):  # type: ignore[misc]
    model_id = "sceval_reference"

    def __init__(self, **kwargs: Any) -> None:
        check_model_args(self.model_id, type(self), kwargs)
        super().__init__()

    def loglikelihood(self, requests):
        raise NotImplementedError(f"{self.model_id} only generates")

    def generate_until_multi_round(self, requests):
        raise NotImplementedError(f"{self.model_id} answers in one round")

    def answer(self, messages: list[dict]) -> str:
        """The reply to one request's messages (the simple path's: :func:`~faultline_eval.model_wrappers.chat_messages.messages_from_visuals`)."""
        raise NotImplementedError

    def generate_until(self, requests: list[Any]) -> list[str]:
        # The doc is touched for its row id only (telemetry, in the lifecycle); never for answers.
        return answer_requests(self, requests, lambda messages, gen_kwargs: self.answer(messages), self.model_id)


class ReferenceChat(_Reference):
    """Chat interface: reads the task's doc_to_messages (frames, audio, text)."""

    is_simple = False

    def answer(self, messages: list[dict]) -> str:
        return answer_messages(messages)


class ReferenceSimple(_Reference):
    """Simple interface (``--force_simple``): reads doc_to_visual's list and the prompt text."""

    is_simple = True

    def answer(self, messages: list[dict]) -> str:
        visuals, context = visuals_and_context(messages)
        return answer_visuals(context, visuals)
