"""The no-option generation control (SCEval Tables 33 and 35): conditions, reply parsing, blind grading.

Each condition of :data:`NO_OPTION_BASES` (Table 35's rows and their clean baseline, one list)
gets a twin ``no_option_<base>``: the same corruptions, media and question, but the options are
removed (prompt ``sceval-no-option-v1``, :data:`sceval_plugin.eval_prompts.NO_OPTION`) and the model
writes ``{"answer": "<short answer>", "evidence": "<one sentence>"}``. The conditions register
through ``sceval_register_conditions`` like a third party's; the ``sceval_no_option`` task tag
holds them and their multiple-choice bases, so one run gives both sides of Table 35.

Grading (Table 33: "two blinded scorers assess correctness, partial correctness, and
answerability"). Two scorers grade every answer through C3PO's judge machinery
(:func:`faultline_eval.judges.grade`: normalised exact match first, then the judge) on the graded
scale, CORRECT / PARTIAL / INCORRECT / UNANSWERABLE. The brief's three outcomes (correct,
partially correct, unanswerable) need a fourth for a plain wrong answer. The scorers are judge
specs as ``c3po judge`` takes them (``exact``, ``embedding``, ``lmms:<model>[:<args>]``,
``gemini:<model>``), set by ``SCEVAL_NO_OPTION_SCORER_1`` (default ``exact``: exact match, then
the abstention and partial-overlap rules) and ``SCEVAL_NO_OPTION_SCORER_2`` (default
``embedding``: the same rules, then the offline embedding judge). The second scorer's label is the
trial's grade; both labels and whether they agree are in the record. An LLM scorer must be
text-only (``judge_media=false``): it would otherwise need the C3PO item type for media.

Blindness: a scorer sees only what :func:`scorer_request` builds from the item: sample id, the
clean question and context, the gold option's text and the model's answer. Never the condition,
its corruption, the corrupted question or the model's evidence (which may describe the damage).

Parsing (:func:`parse_reply`): a JSON object with a string ``answer``; else a reply that is not
JSON is taken whole as the answer. An abstention ("cannot tell") is an answer, graded
UNANSWERABLE, not an invalid output. Invalid: ``empty``, ``parse_failure`` (a JSON object
without a usable answer), ``api_failure`` (the model layer), and ``judge_error`` (the grading
scorer could not decide: a malformed judge reply, an API failure), never counted correct.
"""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING

from faultline_eval.judges import grade, make_judge, open_cache
from faultline_eval.judges.base import CORRECT, JudgeRequest
from sceval_plugin.conditions import OPTION_ORDER_BASES, Condition, ConditionRegistry, variant
from sceval_plugin.hookspecs import hookimpl
from sceval_plugin.parsing import _FENCE, _json_objects
from sceval_plugin.sceval_environment import SCEVAL_NO_OPTION_SCORER_1, SCEVAL_NO_OPTION_SCORER_2

if TYPE_CHECKING:  # pragma: no cover
    from sceval_plugin.data.records import OmniItem

BLOCK = "no_option"  # one of sceval_plugin.conditions.BLOCKS
#: Table 35's rows (drop_words@70, noise@70, TV t30/v70, TV t70/v70, TVA t30/v70/a30) and clean: the
#: cells Table 33 runs under the four option orders, so one list serves both controls.
NO_OPTION_BASES = tuple(OPTION_ORDER_BASES)
TAG = "sceval_no_option"
SCORER_SETTINGS = (SCEVAL_NO_OPTION_SCORER_1, SCEVAL_NO_OPTION_SCORER_2)
SCORER_ENVS = tuple(setting.name for setting in SCORER_SETTINGS)
SCALE = "graded"


def condition_id(base: str) -> str:
    return f"no_option_{base}"


@hookimpl
def sceval_register_conditions(registry: ConditionRegistry) -> None:
    for base_id in NO_OPTION_BASES:
        removed = "options removed: the model writes a short answer and its evidence"
        registry.add(variant(registry.get(base_id), condition_id(base_id), BLOCK, removed, prompt="no_option"))


def in_tag(condition: Condition) -> bool:
    """Whether ``condition`` belongs to the ``sceval_no_option`` tag (a no-option twin or its base)."""
    return condition.block == BLOCK or condition.id in NO_OPTION_BASES


# --- parsing ------------------------------------------------------------------------------------


def parse_reply(reply: object) -> tuple[str | None, str | None, str | None]:
    """``(answer, evidence, invalid)`` of a no-option reply (see the module docstring)."""
    if not isinstance(reply, str) or not reply.strip():
        return None, None, "empty"
    text = _FENCE.sub("", reply.strip())
    for obj in _json_objects(text):
        answer, evidence = obj.get("answer"), obj.get("evidence")
        evidence = evidence if isinstance(evidence, str) else None
        if isinstance(answer, (int, float)) and not isinstance(answer, bool):
            answer = str(answer)
        if isinstance(answer, str) and answer.strip():
            return answer.strip(), evidence, None
        return None, evidence, "parse_failure"
    if text.lstrip().startswith("{"):  # JSON cut short or malformed: not a free-form answer
        return None, None, "parse_failure"
    return text, None, None


# --- blind grading ------------------------------------------------------------------------------


def scorer_request(item: OmniItem, answer: str) -> JudgeRequest:
    """What a scorer is shown: built from the clean item and the answer alone, so it cannot
    know the condition (this function is never given one)."""
    return JudgeRequest(
        item.sample_id, item.question, dict(item.options)[item.gold_key], answer, context=item.context, scale=SCALE
    )


def scorer_specs() -> tuple[str, str]:
    return tuple(setting.get() for setting in SCORER_SETTINGS)


@functools.lru_cache(maxsize=4)
def _scorers(specs: tuple[str, ...]):
    built = []
    for env, spec in zip(SCORER_ENVS, specs):
        judge = make_judge(spec)
        if getattr(judge, "sees_media", False):
            raise ValueError(
                f"{env}={spec!r}: no-option scorers grade text alone (blind to the corrupted media); "
                "add judge_media=false to the judge's arguments"
            )
        built.append((spec, judge, open_cache(judge)))
    return tuple(built)


def scorers():
    """The two scorers ``(spec, judge, verdict cache)``, built once per process; a misconfigured
    one (unknown spec, a judge that would see media) fails here, before any model call."""
    return _scorers(scorer_specs())


_lock = threading.Lock()


def grade_answer(item: OmniItem, answer: str) -> list[dict]:
    """Both scorers' grades of ``answer``: spec, judge id, label (None on a scorer failure),
    whether exact match decided, the judge's raw reply and error category."""
    request = scorer_request(item, answer)
    out = []
    with _lock:  # lmms-eval scores in a thread pool; the judges and caches are shared
        for spec, judge, cache in scorers():
            graded = grade([request], judge, cache)[0]
            verdict = graded.verdict
            out.append(
                {
                    "spec": spec,
                    "judge_id": judge.judge_id,
                    "label": graded.label,
                    "exact_match": graded.exact_match,
                    "raw": verdict.raw if verdict else "",
                    "error": graded.judge_error,
                }
            )
    return out


def score(item: OmniItem, reply: object, failure: str | None = None) -> dict:
    """The record's ``no_option`` entry for one reply (``failure``: the model layer's category,
    e.g. ``api_failure``), with ``correct`` (1/0, None when invalid) and ``invalid``."""
    answer, evidence, invalid = parse_reply(reply)
    invalid = failure or invalid
    grades = grade_answer(item, answer) if invalid is None else []
    labels = [g["label"] for g in grades]
    label = labels[-1] if labels else None
    if invalid is None and label is None:
        invalid = "judge_error"
    return {
        "answer": answer,
        "evidence": evidence,
        "gold_text": dict(item.options)[item.gold_key],
        "scorers": grades,
        "label": label,
        "agree": (labels[0] == labels[1]) if len(labels) == 2 and None not in labels else None,
        "correct": None if invalid else int(label == CORRECT),
        "invalid": invalid,
    }
