"""Grading a C3PO reply into the per-sample record (paper §3.2, Appendix C).

The reply's answer is its first line without reasoning blocks or an ``Answer:`` label. An API
failure, an empty answer or a refusal is invalid (no answer to grade; only the API failure is
ungradable, the other two are wrong). Otherwise exact match grades it, then the configured judge
with cached verdicts; a wrong answer gets its failure mode, and an item's human answer is graded
the same way.

lmms-eval computes a task's metrics from the values its per-sample hook returns, so the judge
is called there, in lmms-eval's scoring thread pool (``--process_docs_parallel``): the
:class:`Grader` serialises its judge and cache behind one lock.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

from c3po_plugin import eval_prompt as prompts
from c3po_plugin.data.records import C3POItem
from c3po_plugin.failure_modes import failure_mode
from faultline_eval.core import telemetry
from faultline_eval.judges import Grade, Judge, grade, make_judge, open_cache
from faultline_eval.judges.base import JudgeRequest
from faultline_eval.judges.judge_prompt import describe_sample
from faultline_eval.tasks.c3po_settings import task_settings

_REFUSAL = re.compile(
    r"^\s*(i('m| am) sorry|i can(no|')t (help|answer|assist)|i('m| am) (unable|not able) to)", re.IGNORECASE
)
_ANSWER_PREFIX = re.compile(r"^\s*(final answer|answer)\s*[:\-]\s*", re.IGNORECASE)


def clean_reply(reply: str) -> str:
    """The answer in a reply: reasoning blocks dropped, first non-empty line, no 'Answer:' label."""
    text = re.sub(r"<think>.*?</think>", "", reply or "", flags=re.DOTALL | re.IGNORECASE)
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return _ANSWER_PREFIX.sub("", lines[0]).strip().strip("*").strip() if lines else ""


def invalid_reason(answer: str, call: telemetry.Call | None) -> str | None:
    """Why there is no answer to grade: the model call's failure, ``empty`` or ``refusal``."""
    if call is not None and call.failure:
        return call.failure
    if not answer:
        return "empty"
    return "refusal" if _REFUSAL.match(answer) else None


class Grader:
    """Exact match, then the judge, with its verdict cache; thread-safe."""

    def __init__(self, judge: Judge):
        self.judge, self.cache = judge, open_cache(judge)
        self._lock = threading.Lock()

    def __call__(self, item: C3POItem, answer: str) -> Grade:
        request = JudgeRequest(
            item.sample_id, item.question, item.answer, answer, describe_sample(item.template, item.context), item=item
        )
        with self._lock:
            return grade([request], self.judge, self.cache)[0]


@functools.lru_cache(maxsize=1)
def grader() -> Grader:
    """The grader of the configured judge (built on first use; a misconfigured judge raises)."""
    return Grader(make_judge(task_settings().judge))


def _judged(graded: Grade | None) -> dict[str, Any]:
    """The record's grading fields (all empty when there was no answer to grade)."""
    verdict = graded.verdict if graded else None
    return {
        "exact_match": bool(graded and graded.exact_match),
        "decided_by": graded.decided_by if graded else None,
        "judge_id": verdict.judge_id if verdict else None,
        "judge_verdict": verdict.value if verdict else None,
        "judge_raw": verdict.raw if verdict else None,
        "judge_error": graded.judge_error if graded else None,
    }


def graded_reply(item: C3POItem, reply: str, call: telemetry.Call | None, grade_answer: Grader) -> dict[str, Any]:
    """The record's fields saying what came back and how it was graded (see the module doc)."""
    answer = clean_reply(reply)
    invalid = invalid_reason(answer, call)
    graded = grade_answer(item, answer) if invalid is None else None
    if graded is not None:
        correct = None if graded.correct is None else int(graded.correct)
    else:  # no answer to grade: an API failure is missing data, an empty reply or refusal is wrong
        correct = None if invalid == "api_failure" else 0
    return {
        "raw_response": reply,
        "prediction": answer,
        "invalid": invalid,
        **_judged(graded),
        "correct": correct,
        "failure_mode": failure_mode(answer, item.distractors) if correct == 0 and invalid is None else None,
    }


def human_correct(item: C3POItem, grade_answer: Grader) -> int | None:
    """The item's human answer graded like a model's (None: no human answer, or ungradable)."""
    human = grade_answer(item, item.human_answer) if item.human_answer else None
    return None if human is None or human.correct is None else int(human.correct)


def trial_record(
    doc: dict, item: C3POItem, reply: str, call: telemetry.Call | None, grade_answer: Grader
) -> dict[str, Any]:
    """The per-sample record of one C3PO trial (``c3po_record``)."""
    template = item.template
    graded = graded_reply(item, reply, call, grade_answer)
    return {
        "model": telemetry.RUN_CONTEXT.get("model"),
        "prompt_id": prompts.PROMPT_ID,
        "sample_id": item.sample_id,
        "template_id": template.id,
        "template": template.name,
        "category": template.category,
        "tier": template.tier,
        "run": doc["run"],
        "dataset": doc["dataset"],
        "media": item.relative_media(),
        "frame_times_s": item.frame_times(),
        "media_notes": item.media_notes(),
        "question": item.question,
        "context": item.context,
        "gold": item.answer,
        **graded,
        "distractors": dict(item.distractors),
        "difficulty": item.difficulty,
        "human_answer": item.human_answer,
        "human_correct": human_correct(item, grade_answer),
        "latency_s": call.latency_s if call else None,
        "retries": call.retries if call else None,
        "failure_detail": call.detail if call else "",
    }
