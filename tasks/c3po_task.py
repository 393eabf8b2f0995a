"""The functions every C3PO lmms-eval task calls (referenced by absolute ``!function`` paths).

A task selects items by template, category or category x tier (``process_docs__<selector>``);
each item becomes ``C3PO_RUNS`` rows (default 1), which aggregate like SCEval's variants: mean
over a sample's runs, then over samples. Every record is validated and every media file probed
and decoded when the task is built, so bad input is reported, by sample id, before any model
call. ``process_results`` grades the reply (exact match, then the judge named by ``C3PO_JUDGE``,
with cached verdicts), names the failure mode of a wrong answer and grades the human answer
when the item has one.
"""

from __future__ import annotations

import collections
import functools
import json
import os
import re
import threading
from typing import Any, Callable

import numpy as np

from c3po_plugin import eval_prompt as prompts
from c3po_plugin.data.records import C3POItem, item_from_row
from c3po_plugin.data.sources import SourceError, checked_items
from c3po_plugin.failure_modes import failure_mode
from faultline_eval.judges import Grade, grade, make_judge, open_cache
from faultline_eval.judges.base import JudgeRequest
from faultline_eval.judges.judge_prompt import describe_sample
from c3po_plugin.metrics import INVALID
from c3po_plugin.templates import CATEGORIES, Template
from faultline_eval.tasks import video_frame_parts
from faultline_eval.tasks.sceval_task import (coverage, excluded_trials, functions_by_name, invalid_count,
                                              mean_variant_accuracy, record_exclusions, valid_trials,
                                              worst_variant_accuracy)
from faultline_eval.core import telemetry
from faultline_eval.core.media import SAMPLE_RATE

RUNS_ENV = "C3PO_RUNS"


# --- docs ---------------------------------------------------------------------------------------

def selects(selector: str, template: Template) -> bool:
    """Whether a task selector (``all``, ``ic``, ``cc_t2``, a template's snake name) takes it."""
    if selector == "all":
        return True
    if selector in CATEGORIES:
        return template.category == selector
    match = re.fullmatch(r"(ic|cc)_t(\d)", selector)
    if match:
        return template.category == match.group(1) and template.tier == int(match.group(2))
    return template.snake_name == selector


def _item_json(item: C3POItem) -> str:
    return json.dumps({
        "sample_id": item.sample_id, "template": item.template_id, "question": item.question, "answer": item.answer,
        "source": item.source, "context": item.context, "distractors": dict(item.distractors),
        "difficulty": item.difficulty, "human_answer": item.human_answer, "hidden": dict(item.hidden),
        "root": item.root, **item.relative_media(),
    })


# sized as sceval_task._item (an LRU smaller than the dataset misses on every call)
@functools.lru_cache(maxsize=2**16)
def _item(item_json: str) -> C3POItem:
    row = json.loads(item_json)
    return item_from_row(row, row["root"])


def ledger_key(selector: str) -> str:
    """Where a task's exclusions are kept in SCEval's ledger (shared with its aggregation)."""
    return f"c3po:{selector}"


def runs() -> int:
    value = os.environ.get(RUNS_ENV, "1").strip() or "1"
    if not value.isdigit() or int(value) < 1:
        raise SourceError(f"{RUNS_ENV}={value!r}: expected a positive integer")
    return int(value)


def build_rows(selector: str) -> tuple[list[dict], collections.Counter]:
    """The rows of a task, and the samples excluded for bad input (by reason)."""
    from loguru import logger

    source, items, problems = checked_items()
    excluded = collections.Counter()
    for problem in problems:  # only reached with C3PO_ON_BAD_INPUT=exclude
        excluded[problem.reason] += 1
        logger.error(f"c3po {selector}: excluded, {problem}")
    dataset = f"{source.spec}#{source.fingerprint}"
    rows = [
        {"row_id": f"{selector}/{item.sample_id}/{run}", "sample_id": item.sample_id, "template_id": item.template_id,
         "run": run, "target": item.answer, "dataset": dataset, "item": _item_json(item)}
        for item in items if selects(selector, item.template) for run in range(runs())
    ]
    return rows, excluded


def process_docs(dataset: Any, selector: str) -> Any:
    import datasets

    rows, excluded = build_rows(selector)
    _judge_and_cache()  # a misconfigured judge (unknown spec, missing key) fails before any model call
    record_exclusions(ledger_key(selector), excluded)
    if not rows:
        raise SourceError(f"c3po_{selector}: the source has no items for this task")
    return datasets.Dataset.from_list(rows)


#: ``process_docs__<selector>``
__getattr__ = functions_by_name("process_docs__", process_docs)


# --- what the model sees ------------------------------------------------------------------------

def _media(item: C3POItem) -> tuple[list, Any, dict | None]:
    from PIL import Image

    frames = [Image.fromarray(np.ascontiguousarray(f)) for f in item.frames()] if item.video else []
    picture = Image.fromarray(np.ascontiguousarray(item.picture())) if item.image else None
    audio = {"array": np.array(item.waveform(), dtype=np.float32), "sampling_rate": SAMPLE_RATE} if item.audio else None
    return frames, picture, audio


def media_content(item: C3POItem) -> list[dict]:
    """The media parts of a chat turn, each labelled, in order: video frames, picture, audio.
    The evaluated models and the LLM judge (which sees what they saw) share it."""
    frames, picture, audio = _media(item)
    content: list[dict] = []
    if frames:
        content.append({"type": "text", "text": prompts.video_label(item.frame_times())})
        content += video_frame_parts(frames, item.frame_times(), item.sample_id)
    if picture is not None:
        content += [{"type": "text", "text": prompts.IMAGE_LABEL}, {"type": "image", "url": picture}]
    if audio is not None:
        content += [{"type": "text", "text": prompts.AUDIO_LABEL}, {"type": "audio", "url": audio}]
    return content


def attachment_legend(item: C3POItem) -> str:
    """What a simple model's attachment list (:func:`doc_to_visual`) holds, in order."""
    return prompts.build(item.question).legend(item.frame_times() or (), bool(item.image), bool(item.audio))


def doc_to_messages(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> list[dict]:
    """System prompt; then, labelled and in order, the video frames, the picture, the audio;
    then the optional note and the question."""
    item = _item(doc["item"])
    content = media_content(item) + [{"type": "text", "text": prompts.build(item.question, item.context).user}]
    return [{"role": "system", "content": [{"type": "text", "text": prompts.SYSTEM}]},
            {"role": "user", "content": content}]


def media_list(item: C3POItem) -> list:
    """A simple model's attachments: frames, then the picture, then the audio as an HF-style dict
    (shared, like :func:`media_content`, with the LLM judge)."""
    frames, picture, audio = _media(item)
    return frames + ([picture] if picture is not None else []) + ([audio] if audio is not None else [])


def doc_to_visual(doc: dict) -> list:
    """For simple models: :func:`media_list`."""
    return media_list(_item(doc["item"]))


def doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    """System prompt, the legend of the attachments, the question (simple models)."""
    item = _item(doc["item"])
    prompt = prompts.build(item.question, item.context)
    return f"{prompt.system}\n\n{attachment_legend(item)}\n{prompt.user}"


def doc_to_target(doc: dict) -> str:
    return doc["target"]


# --- grading ------------------------------------------------------------------------------------

_REFUSAL = re.compile(r"^\s*(i('m| am) sorry|i can(no|')t (help|answer|assist)|i('m| am) (unable|not able) to)",
                      re.IGNORECASE)
_ANSWER_PREFIX = re.compile(r"^\s*(final answer|answer)\s*[:\-]\s*", re.IGNORECASE)


def clean_reply(reply: str) -> str:
    """The answer in a reply: reasoning blocks dropped, first non-empty line, no 'Answer:' label."""
    text = re.sub(r"<think>.*?</think>", "", reply or "", flags=re.DOTALL | re.IGNORECASE)
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return _ANSWER_PREFIX.sub("", lines[0]).strip().strip("*").strip() if lines else ""


_judge_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _judge_and_cache():
    judge = make_judge()
    return judge, open_cache(judge)


def grade_answer(item: C3POItem, answer: str) -> Grade:
    """Exact match, then the configured judge (thread-safe; lmms-eval scores in a thread pool)."""
    request = JudgeRequest(item.sample_id, item.question, item.answer, answer, describe_sample(item.template, item.context),
                           item=item)
    with _judge_lock:
        judge, cache = _judge_and_cache()
        return grade([request], judge, cache)[0]


def process_results(doc: dict, results: list) -> dict:
    """Grade the reply and return the per-sample record (never raises: lmms-eval retries)."""
    item = _item(doc["item"])
    template = item.template
    reply = results[0] if results else ""
    reply = reply if isinstance(reply, str) else str(reply)
    call = telemetry.take(doc["row_id"])
    answer = clean_reply(reply)
    invalid = call.failure if call is not None and call.failure else None
    if invalid is None and not answer:
        invalid = "empty"
    elif invalid is None and _REFUSAL.match(answer):
        invalid = "refusal"
    graded: Grade | None = None
    if invalid is None:
        graded = grade_answer(item, answer)
        correct = None if graded.correct is None else int(graded.correct)
    else:  # no answer to grade: an API failure is missing data, an empty reply or refusal is wrong
        correct = None if invalid == "api_failure" else 0
    mode = failure_mode(answer, item.distractors) if correct == 0 and invalid is None else None
    human = grade_answer(item, item.human_answer) if item.human_answer else None
    record = {
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
        "raw_response": reply,
        "prediction": answer,
        "invalid": invalid,
        "exact_match": bool(graded and graded.exact_match),
        "decided_by": graded.decided_by if graded else None,
        "judge_id": graded.verdict.judge_id if graded and graded.verdict else None,
        "judge_verdict": graded.verdict.value if graded and graded.verdict else None,
        "judge_raw": graded.verdict.raw if graded and graded.verdict else None,
        "judge_error": graded.judge_error if graded else None,
        "correct": correct,
        "failure_mode": mode,
        "distractors": dict(item.distractors),
        "difficulty": item.difficulty,
        "human_answer": item.human_answer,
        "human_correct": None if human is None or human.correct is None else int(human.correct),
        "latency_s": call.latency_s if call else None,
        "retries": call.retries if call else None,
        "failure_detail": call.detail if call else "",
    }
    # The compact entry `c3po report` reads (lmms-eval writes each metric value into every
    # per-sample line); "s"/"v"/"c" are the keys SCEval's variant aggregations read.
    trial = {"s": item.sample_id, "v": doc["run"], "c": correct, "i": invalid, "t": template.id,
             "x": int(record["exact_match"]), "j": record["decided_by"] == "judge",
             "e": record["judge_error"] is not None, "m": mode, "h": record["human_correct"],
             "hn": item.human_answer is not None}
    out: dict[str, Any] = {name: trial for name in TRIAL_METRICS}
    out.update({f"c3po_invalid_{c}": invalid for c in INVALID})
    out["c3po_excluded"] = ledger_key(doc["row_id"].split("/", 1)[0])
    out["c3po_record"] = record
    return out


# --- aggregations -------------------------------------------------------------------------------

def _ungradable_as_wrong(items: list[dict], key: str = "c") -> list[dict]:
    return [{**it, "c": 0 if it[key] is None else it[key]} for it in items]


def accuracy(items: list[dict]) -> float:
    """The paper's accuracy, #YES / #Total (§3.2): an ungradable trial (API failure, judge
    error) counts as not correct. Averaged like SCEval's variants: per sample over its runs, then
    over samples. ``c3po_accuracy_gradable`` is the other reading, ungradable trials as missing."""
    return mean_variant_accuracy(_ungradable_as_wrong(items))


def worst_run_accuracy(items: list[dict]) -> float:
    """The lowest accuracy among the run indices, ungradable trials counted as not correct."""
    return worst_variant_accuracy(_ungradable_as_wrong(items))


def exact_match_accuracy(items: list[dict]) -> float:
    """Accuracy had only exact match been used (same averaging as c3po_accuracy)."""
    return mean_variant_accuracy([{**it, "c": it["x"]} for it in items])


def judge_decisions(items: list[dict]) -> int:
    return sum(bool(it["j"]) for it in items)


def judge_errors(items: list[dict]) -> int:
    return sum(bool(it["e"]) for it in items)


def human_accuracy(items: list[dict]) -> float:
    """Accuracy of the items' human answers (graded like the model's, a judge error counted as
    not correct), over the items that have one."""
    return accuracy([{**it, "c": it["h"]} for it in items if it.get("hn", it["h"] is not None)])


invalid_api_failure = invalid_count("api_failure")
invalid_empty = invalid_count("empty")
invalid_refusal = invalid_count("refusal")

#: metric name -> (aggregation, higher is better); the task template lists exactly these.
METRICS: dict[str, tuple[Callable[[list], float], bool]] = {
    "c3po_accuracy": (accuracy, True),
    "c3po_accuracy_gradable": (mean_variant_accuracy, True),
    "c3po_worst_run_accuracy": (worst_run_accuracy, True),
    "c3po_exact_match_accuracy": (exact_match_accuracy, True),
    "c3po_coverage": (coverage, True),
    "c3po_graded": (valid_trials, True),
    "c3po_judge_decisions": (judge_decisions, True),
    "c3po_judge_errors": (judge_errors, False),
    "c3po_human_accuracy": (human_accuracy, True),
    **{f"c3po_invalid_{c}": (globals()[f"invalid_{c}"], False) for c in INVALID},
    "c3po_excluded": (excluded_trials, False),
}
TRIAL_METRICS = [m for m in METRICS if not m.startswith("c3po_invalid_") and m != "c3po_excluded"]
