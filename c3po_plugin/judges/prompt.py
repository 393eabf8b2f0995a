"""The judge prompt (our wording of the paper's Appendix I judge instructions) and its parser."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from c3po_plugin.judges.base import NO, YES, JudgeRequest

if TYPE_CHECKING:  # pragma: no cover
    from c3po_plugin.templates import Template

PROMPT_VERSION = "c3po-judge-v1"

SYSTEM = (
    "You grade answers to questions about multimodal samples. Decide whether the model's answer "
    "means the same as the reference answer, given the sample and the question: it is equivalent "
    "when it singles out the same thing (entity, value, action, cause) as the reference. Ignore "
    "differences of wording, formatting and units that do not change the meaning. Answers that "
    "are only partly right, add wrong details, hedge between alternatives or invent things are "
    "not equivalent. Reply with exactly one word: YES or NO."
)


def describe_sample(template: "Template", note: str = "") -> str:
    """How a judge sees the sample: the template's logic and modalities, plus any text note the
    model was shown; never the misleading modalities' claims (the distractors)."""
    shown = f" Text note shown to the model: {note}" if note else ""
    return (f"{template.category_name} item, tier {template.tier}, template {template.name}: "
            f"{template.logical_form} Inputs: {', '.join(sorted(template.modalities))}.{shown}")


def user_text(request: JudgeRequest) -> str:
    return (
        f"Sample: {request.context or 'not described'}\n"
        f"Question: {request.question}\n"
        f"Reference answer: {request.gold}\n"
        f"Model answer: {request.prediction}\n"
        "Equivalent?"
    )


_FIRST_WORD = re.compile(r"^[\s*_`'\"(\[]*([A-Za-z]+)")


def parse_verdict(reply: str) -> str | None:
    """YES or NO when the reply opens with exactly one of them (markdown and quotes allowed
    around it); None otherwise, e.g. for "Yes and no" or an explanation without a verdict."""
    match = _FIRST_WORD.match(reply or "")
    if not match or match.group(1).upper() not in (YES, NO):
        return None
    first = match.group(1).upper()
    other = NO if first == YES else YES
    rest = reply[match.end():]
    if re.search(rf"\b{other}\b", rest, flags=re.IGNORECASE):  # both verdicts given: undecided
        return None
    return first
