"""What every C3PO judge is: a function from judge requests to YES/NO verdicts.

A judge is asked only when normalised exact match has failed. It decides whether the
prediction means the same as the gold answer in the context of the sample. A judge that cannot
decide returns a verdict with ``value=None`` and an ``error`` saying why; callers record it as
a judge error and never count it as YES.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

YES, NO = "YES", "NO"


@dataclass(frozen=True)
class JudgeRequest:
    """One question for a judge. ``context`` describes the sample (template, its logic, the
    modalities present) in words; it never contains the other modalities' misleading claims."""

    sample_id: str
    question: str
    gold: str
    prediction: str
    context: str = ""


@dataclass(frozen=True)
class Verdict:
    value: str | None  # YES, NO, or None when the judge failed
    judge_id: str
    raw: str = ""  # what the judge said (reply text, or the similarity for embedding judges)
    error: str | None = None  # why there is no value: "api_failure: ...", "unparseable: ..."
    cached: bool = False

    @property
    def equivalent(self) -> bool:
        return self.value == YES


class Judge(Protocol):
    #: Names the backend, model and every setting that changes verdicts (e.g. a threshold).
    judge_id: str
    #: Version of the prompt (or of the text an embedding judge compares); part of the cache key.
    prompt_version: str

    def judge(self, requests: Sequence[JudgeRequest]) -> list[Verdict]:
        """One verdict per request, in order. Must not raise for a single bad request."""
        ...
