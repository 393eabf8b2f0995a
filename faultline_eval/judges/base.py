"""What every C3PO judge is: a function from judge requests to YES/NO verdicts.

A judge is asked only when normalised exact match has failed. On the ``equivalence`` scale
(C3PO's) it decides whether the prediction means the same as the gold answer in the context of
the sample: YES or NO. On the ``graded`` scale (SCEval's no-option control, Tables 33 and 35:
"correctness, partial correctness, and answerability") it gives one of CORRECT, PARTIAL,
INCORRECT or UNANSWERABLE (the answer declines, or says the input does not allow an answer). A
judge that cannot decide returns a verdict with ``value=None`` and an ``error`` saying why;
callers record it as a judge error and never count it as YES or CORRECT.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

YES, NO = "YES", "NO"
CORRECT, PARTIAL, INCORRECT, UNANSWERABLE = "CORRECT", "PARTIAL", "INCORRECT", "UNANSWERABLE"
#: scale -> its labels, the label that counts as right first.
SCALES = {"equivalence": (YES, NO), "graded": (CORRECT, PARTIAL, INCORRECT, UNANSWERABLE)}


def positive(scale: str) -> str:
    """The label of ``scale`` that counts as a right answer (YES, CORRECT)."""
    return SCALES[scale][0]


def negative(scale: str) -> str:
    """The label of ``scale`` for a plain wrong answer (NO, INCORRECT)."""
    return NO if scale == "equivalence" else INCORRECT


#: The media kinds a judge that sees media may be shown.
MEDIA_KINDS = ("video", "image", "audio")


class JudgedItem(Protocol):
    """What a media-seeing judge needs of an item (C3PO's ``C3POItem`` is one)."""

    def media_path(self, kind: str) -> str | None:
        """The absolute path of the item's medium of ``kind`` (one of :data:`MEDIA_KINDS`), if any."""


@dataclass(frozen=True)
class JudgeRequest:
    """One question for a judge. ``context`` describes the sample (template, its logic, the
    modalities present) in words; it never contains the other modalities' misleading claims.
    ``item`` is the sample itself, whose media a judge that :attr:`Judge.sees_media` is shown
    (paper App. I: the judge gets "all associated media files"); None when it is not at hand."""

    sample_id: str
    question: str
    gold: str
    prediction: str
    context: str = ""
    item: JudgedItem | None = field(default=None, compare=False, repr=False)
    scale: str = "equivalence"  # a key of SCALES: which labels the judge answers with


@dataclass(frozen=True)
class Verdict:
    value: str | None  # a label of the request's scale (YES, NO, CORRECT, ...), or None when the judge failed
    judge_id: str
    raw: str = ""  # what the judge said (reply text, or the similarity for embedding judges)
    #: why there is no value, as "<category>: detail"; categories: api_failure, refusal, empty,
    #: unparseable, cut_mid_thought, media_unavailable, bad_request, model_failure
    error: str | None = None
    cached: bool = False

    @property
    def equivalent(self) -> bool:
        return self.value == YES


class Judge(Protocol):
    #: Names the backend, model and every setting that changes verdicts (e.g. a threshold).
    judge_id: str
    #: Version of the prompt (or of the text an embedding judge compares); part of the cache key.
    prompt_version: str
    #: Optional (default False): the judge is shown the sample's media, so their bytes are part
    #: of the cache key.
    sees_media: bool

    def judge(self, requests: Sequence[JudgeRequest]) -> list[Verdict]:
        """One verdict per request, in order. Must not raise for a single bad request."""
        ...
