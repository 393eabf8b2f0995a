"""The judge prompts and their parser: C3PO's equivalence prompt (our wording of the paper's
Appendix I judge instructions, YES/NO) and the graded prompt of SCEval's no-option control
(Tables 33 and 35: correct, partially correct, incorrect or unanswerable)."""

from __future__ import annotations

import re
from typing import Protocol

from faultline_eval.judges.base import CORRECT, INCORRECT, NO, PARTIAL, SCALES, UNANSWERABLE, YES, JudgeRequest

#: v2: the judge is told that the sample's media are attached when they are (App. I).
PROMPT_VERSION = "c3po-judge-v2"

SYSTEM = (
    "You grade answers to questions about multimodal samples. Decide whether the model's answer "
    "means the same as the reference answer, given the sample, its media and the question: it is "
    "equivalent when it singles out the same thing (entity, value, action, cause) as the reference. "
    "Ignore differences of wording, formatting and units that do not change the meaning. Answers that "
    "are only partly right, add wrong details, hedge between alternatives or invent things are "
    "not equivalent. Reply with exactly one word: YES or NO."
)
#: The graded scale's prompt (SCEval no-option control); its version is part of the cache key.
GRADED_PROMPT_VERSION = "sceval-no-option-judge-v1"
GRADED_SYSTEM = (
    "You grade short free-form answers to questions about pictures and sound against a reference "
    "answer. Reply with exactly one word: CORRECT when the answer singles out the same thing as the "
    "reference (wording, formatting and harmless extra detail do not matter); PARTIAL when it gets "
    "part of the reference right and misses or contradicts the rest (for example the right colour "
    "but the wrong shape); UNANSWERABLE when it gives no answer, declines, or says the input does not "
    "allow one; INCORRECT otherwise, including answers that hedge between alternatives."
)
MEDIA_NOTE = "The sample's media are attached above."


def system_prompt(scale: str) -> str:
    """The judge's system prompt for a request scale."""
    return GRADED_SYSTEM if scale == "graded" else SYSTEM


def prompt_version(scale: str) -> str:
    return GRADED_PROMPT_VERSION if scale == "graded" else PROMPT_VERSION


class DescribedTemplate(Protocol):
    """What the judge is told of an item's kind (C3PO's ``Template`` is one)."""

    category_name: str
    tier: int
    name: str
    logical_form: str
    modalities: frozenset[str]


def describe_sample(template: DescribedTemplate, note: str = "") -> str:
    """How a judge sees the sample: the template's logic and modalities, plus any text note the
    model was shown; never the misleading modalities' claims (the distractors)."""
    shown = f" Text note shown to the model: {note}" if note else ""
    return (
        f"{template.category_name} item, tier {template.tier}, template {template.name}: "
        f"{template.logical_form} Inputs: {', '.join(sorted(template.modalities))}.{shown}"
    )


def user_text(request: JudgeRequest, *, with_media: bool = False) -> str:
    return (
        (f"{MEDIA_NOTE}\n" if with_media else "") + f"Sample: {request.context or 'not described'}\n"
        f"Question: {request.question}\n"
        f"Reference answer: {request.gold}\n"
        f"Model answer: {request.prediction}\n" + ("Grade?" if request.scale == "graded" else "Equivalent?")
    )


_FIRST_WORD = re.compile(r"^[\s*_`'\"(\[]*([A-Za-z]+)")
#: Chinese replies (Qwen models sometimes answer in Chinese): 是/对 yes, 否/不是/不对 no.
_CHINESE = re.compile(r"^[\s*_`'\"(\[「“]*(不是|不对|否|是|对)")
_CHINESE_VALUE = {"是": YES, "对": YES, "否": NO, "不是": NO, "不对": NO}
_END_THINK = re.compile(r"</think\s*>", re.IGNORECASE)
_OPEN_THINK = re.compile(r"<think\s*>", re.IGNORECASE)


#: Words a graded judge may open with, and the label each means.
_GRADED_WORDS = {
    "CORRECT": CORRECT,
    "PARTIAL": PARTIAL,
    "PARTIALLY": PARTIAL,
    "INCORRECT": INCORRECT,
    "UNANSWERABLE": UNANSWERABLE,
}


def parse_verdict(reply: str, scale: str = "equivalence") -> str | None:
    """The label when the reply opens with exactly one of its scale's words (markdown and quotes
    allowed around it); None otherwise, e.g. for "Yes and no" or an explanation without a
    verdict. ``"Yes." + trailing text`` is YES unless the text also says no; likewise a graded
    label is refused when another label's word follows it ("Partially correct" is PARTIAL).
    The equivalence scale also reads Chinese replies (Qwen models sometimes answer in Chinese)."""
    reply = reply or ""
    if scale == "graded":
        match = _FIRST_WORD.match(reply)
        first = _GRADED_WORDS.get(match.group(1).upper()) if match else None
        if first is None:
            return None
        rest = reply[match.end() :]
        if first == PARTIAL:  # "partially correct" names one label in two words
            rest = re.sub(r"^\W*correct\b", "", rest, flags=re.IGNORECASE)
        others = [w for w, label in _GRADED_WORDS.items() if label != first]
        return None if any(re.search(rf"\b{w}\b", rest, flags=re.IGNORECASE) for w in others) else first
    if scale not in SCALES:
        raise ValueError(f"unknown judge scale {scale!r}; choose from {sorted(SCALES)}")
    chinese = _CHINESE.match(reply)
    if chinese:
        first, rest = _CHINESE_VALUE[chinese.group(1)], reply[chinese.end() :]
        other = ("否", "不是", "不对") if first == YES else ("是的",)
        return None if any(word in rest for word in other) else first
    match = _FIRST_WORD.match(reply)
    if not match or match.group(1).upper() not in (YES, NO):
        return None
    first = match.group(1).upper()
    other = NO if first == YES else YES
    rest = reply[match.end() :]
    if re.search(rf"\b{other}\b", rest, flags=re.IGNORECASE):  # both verdicts given: undecided
        return None
    return first


def parse_reply(reply: str, *, thinking: bool = False, scale: str = "equivalence") -> tuple[str | None, str | None]:
    """``(verdict, error)`` of a judge's whole reply; exactly one of them is None.

    The verdict is read only after the reasoning: after the last ``</think>`` when there is one.
    An opened ``<think>`` that never closes was cut by the token budget (``cut_mid_thought``).
    A ``thinking`` judge's chat template usually opens ``<think>`` itself, so its reply without
    ``</think>`` is either a bare verdict word (accepted) or reasoning cut short
    (``cut_mid_thought``), never a verdict read off the first word of its reasoning.
    """
    text = reply or ""
    ends = list(_END_THINK.finditer(text))
    if ends:
        text = text[ends[-1].end() :]
    elif _OPEN_THINK.search(text) or (thinking and len(re.findall(r"\w+", text)) > 1):
        return None, (
            f"cut_mid_thought: no </think> in the reply ({len(text)} characters, ending "
            f"{text[-60:]!r}); raise judge_max_new_tokens"
        )
    text = text.strip()
    if not text:
        return None, "empty: the judge gave no verdict" + (" after its reasoning" if ends else "")
    value = parse_verdict(text, scale)
    return (value, None) if value else (None, f"unparseable: judge replied {text[:80]!r}")
