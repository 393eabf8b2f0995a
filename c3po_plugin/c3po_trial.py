"""C³PO's trial: one run of one item (:class:`C3POTrial`).

A :class:`faultline_eval.core.trial.Trial` entry (schema 2, schema 1 still read), registered as the
trial kind ``c3po`` (entries under ``c3po_accuracy``) when this module is imported, which importing
:mod:`c3po_plugin` does.

Schema 1's keys (besides the shared ``s``, ``v``, ``c``, ``i``): ``t`` template id, ``x`` exact
match, ``j`` judge decided, ``e`` judge error, ``m`` failure mode, ``h`` human correct, ``hn`` has a
human answer (older logs lack ``hn``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from faultline_eval.core.trial import Trial, register_trial_kind

__all__ = ["C3POTrial"]


@dataclass(frozen=True)
class C3POTrial(Trial):
    """A C³PO trial (paper §3.2): one run of one item. ``correct`` None is ungradable (an API
    failure or a judge error); an empty reply or a refusal is graded 0."""

    #: The item's template id (``IC01``, ...).
    template_id: str
    #: 1 when exact match decided the grade correct, else 0.
    exact_match: int
    #: Whether the judge decided the grade.
    judge_decided: bool
    #: Whether the judge failed (the trial is ungradable).
    judge_error: bool
    #: The failure mode of a wrong answer, or None.
    failure_mode: str | None
    #: The item's human answer graded like the model's (1, 0, None: none or ungradable).
    human_correct: int | None
    #: Whether the item has a human answer.
    has_human_answer: bool

    BENCHMARK: ClassVar[str] = "C3PO"
    SCHEMA_1_KEYS: ClassVar[dict[str, str]] = {
        **Trial.SCHEMA_1_KEYS,
        "template_id": "t",
        "exact_match": "x",
        "judge_decided": "j",
        "judge_error": "e",
        "failure_mode": "m",
        "human_correct": "h",
        "has_human_answer": "hn",
    }

    @classmethod
    def _schema_1_defaults(cls, entry: dict[str, Any]) -> dict[str, Any]:
        # "hn" came later: before it, an item had a human answer when it had a human grade
        return {
            "invalid": None,
            "failure_mode": None,
            "human_correct": None,
            "has_human_answer": entry.get("human_correct") is not None,
            **entry,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> C3POTrial:
        """The trial of a full ``c3po_record``."""
        return cls(
            sample_id=record["sample_id"],
            variant=record["run"],
            correct=record["correct"],
            invalid=record["invalid"],
            template_id=record["template_id"],
            exact_match=int(record["exact_match"]),
            judge_decided=record["decided_by"] == "judge",
            judge_error=record["judge_error"] is not None,
            failure_mode=record["failure_mode"],
            human_correct=record["human_correct"],
            has_human_answer=record["human_answer"] is not None,
        )


register_trial_kind("c3po", C3POTrial, "c3po_accuracy")
