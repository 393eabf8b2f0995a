"""The protocol's prompts, as versioned, replaceable templates (our own wording of Appendix H).

A :class:`PromptTemplate` turns a question, its options and a description of the attached
media into a system and a user message. Every per-sample record carries the template's id, and
the report refuses to mix ids in one comparison.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from faultline_eval.core.media import describe_frame_times
from sceval_plugin.sceval_environment import SCEVAL_PROMPT_TEMPLATE

JSON_SCHEMA_LINE = (
    'Reply with exactly one JSON object: {"answer": "<option key>", "confidence": "<low | medium | high>", '
    '"reasoning": "<one or two short sentences>"}. No Markdown and no text outside the object.'
)


@dataclass(frozen=True)
class PromptTemplate:
    """``system`` and ``user`` are ``str.format`` templates. ``user`` receives ``{media}``,
    ``{context}``, ``{question}``, ``{options}`` and ``{answer_format}``."""

    id: str
    system: str
    user: str
    answer_format: str
    expects_json: bool

    def render(
        self,
        question: str,
        options: Sequence[tuple[str, str]],
        *,
        visual: str | None,
        audio: bool,
        context: str = "",
        frame_times: Sequence[float] | None = None,
    ) -> tuple[str, str]:
        """(system, user) text. ``visual`` is "image", "video frames" or None (not attached);
        ``frame_times`` (seconds into the clip, for frames sampled from a video) are stated."""
        media = [
            f"Visual input: attached as {'an image' if visual == 'image' else 'a sequence of video frames, in order'}"
            f"{describe_frame_times(frame_times) if visual == 'video frames' else ''}."
            if visual
            else "Visual input: none.",
            "Audio input: attached as one audio clip." if audio else "Audio input: none.",
        ]
        return self.system, self.user.format(
            media="\n".join(media),
            context=f"Context: {context}\n" if context else "",
            question=f"Question: {question}\n" if question else "",
            options="\n".join(f"{key}. {text}" for key, text in options),
            answer_format=self.answer_format,
        )


_SYSTEM = (
    "You are a careful assistant that answers questions about pictures and sound. Each task gives "
    "one question with lettered options, exactly one of which is correct. Base the answer only on "
    "the inputs provided; some of them may be damaged or degraded, and you should still choose the "
    "option the remaining evidence supports best."
)
_USER = (
    "Answer the multiple-choice question using the attached inputs. The question text, the visual "
    "input or the audio may be partly corrupted; read what is there carefully and do not assume "
    "anything that is not given.\n{media}\n{context}{question}Options:\n{options}\n{answer_format}"
)

STANDARD = PromptTemplate("sceval-json-v1", _SYSTEM, _USER, JSON_SCHEMA_LINE, expects_json=True)
CHAIN_OF_THOUGHT = PromptTemplate(
    "sceval-cot-v1",
    _SYSTEM,
    _USER,
    "First think step by step about what each input shows, then give your final choice as one JSON "
    'object: {"answer": "<option key>", "confidence": "<low | medium | high>", "reasoning": "<your '
    'reasoning>"}. The JSON object must be the last thing you write.',
    expects_json=True,
)
OPEN_FORM = PromptTemplate(
    "sceval-open-v1",
    _SYSTEM,
    _USER,
    "Answer with the letter of the correct option.",
    expects_json=False,
)

#: Says in the prompt that no options are given (a reader of the prompt, such as the offline
#: reference model, tells a no-option task by it).
NO_OPTION_CUE = "No answer options are given."
#: The no-option generation control (Tables 33, 35): the options are removed, and the model writes
#: a short answer and the evidence for it. The question, media and context are as in the standard
#: prompt, so a no-option condition differs from its multiple-choice base only in the options.
NO_OPTION = PromptTemplate(
    "sceval-no-option-v1",
    "You are a careful assistant that answers questions about pictures and sound. Each task gives one "
    "question and no answer options. Base the answer only on the inputs provided; some of them may be "
    "damaged or degraded. Give the most specific answer the remaining evidence supports, and say so "
    "when it supports none.",
    "Answer the question using the attached inputs, in a few words. The question text, the visual input "
    "or the audio may be partly corrupted; read what is there carefully and do not assume anything "
    f"that is not given. {NO_OPTION_CUE}\n{{media}}\n{{context}}{{question}}{{answer_format}}",
    'Reply with exactly one JSON object: {"answer": "<a short answer, a few words>", "evidence": "<what in '
    'the inputs supports it, one short sentence>"}. No Markdown and no text outside the object.',
    expects_json=True,
)

PROMPTS = {p.id: p for p in (STANDARD, CHAIN_OF_THOUGHT, OPEN_FORM, NO_OPTION)}
#: Short names used in condition ids and task names.
PROMPT_VARIANTS = {"json": STANDARD, "cot": CHAIN_OF_THOUGHT, "open": OPEN_FORM, "no_option": NO_OPTION}
#: The instruction that replaces the question in the "generic instruction" controls.
GENERIC_INSTRUCTION = "Choose the option that the attached inputs support."
#: Its wording for a wrapped task that lists no options (MME's yes/no questions, clotho_aqa's open
#: answers): the visual+audio shortcut still removes the question there (issue 36).
GENERIC_OPEN_INSTRUCTION = "Answer from the attached inputs."


@functools.lru_cache(maxsize=4)
def _template_from_file(path: str) -> PromptTemplate:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        template = PromptTemplate(
            id=data["id"],
            system=data["system"],
            user=data["user"],
            answer_format=data["answer_format"],
            expects_json=bool(data.get("expects_json", True)),
        )
        template.render("q", [("A", "x"), ("B", "y")], visual="image", audio=True)
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError, IndexError) as exc:
        raise ValueError(
            f"{SCEVAL_PROMPT_TEMPLATE.name}={path}: not a usable prompt template ({type(exc).__name__}: {exc}); "
            "needs id, system, user (with {media} {context} {question} {options} "
            "{answer_format}) and answer_format"
        ) from exc
    if template.id in {p.id for p in PROMPT_VARIANTS.values()}:
        raise ValueError(f"{SCEVAL_PROMPT_TEMPLATE.name}={path}: give the replacement its own id, not {template.id!r}")
    return template


def prompt_template(variant: str) -> PromptTemplate:
    """The template of a prompt variant (``json``, ``cot`` or ``open``); ``$SCEVAL_PROMPT_TEMPLATE``
    replaces the standard ``json`` one, and every record then carries the replacement's id."""
    override = SCEVAL_PROMPT_TEMPLATE.get()
    if variant == "json" and override:
        return _template_from_file(override)
    return PROMPT_VARIANTS[variant]
