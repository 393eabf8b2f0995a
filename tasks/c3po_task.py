"""The functions every C3PO lmms-eval task calls (referenced by absolute ``!function`` paths).

A task selects items by template, category or category x tier (``process_docs__<selector>``);
each item becomes ``C3PO_RUNS`` rows (default 1; settings: :mod:`faultline_eval.tasks.c3po_settings`),
which aggregate like SCEval's variants: mean over a sample's runs, then over samples. Every
record is validated and every media file probed and decoded when the task is built, so bad input
is reported, by sample id, before any model call. ``process_results`` grades the reply
(:mod:`faultline_eval.tasks.c3po_grading`: exact match, then the judge named by ``C3PO_JUDGE``,
with cached verdicts) and returns the record and the typed trial entry
(:class:`c3po_plugin.c3po_trial.C3POTrial`) the aggregations read.
"""

from __future__ import annotations

import collections
import functools
import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from loguru import logger

from c3po_plugin import eval_prompt as prompts
from c3po_plugin import metrics
from c3po_plugin.c3po_trial import C3POTrial
from c3po_plugin.data.records import C3POItem, item_from_row
from c3po_plugin.data.sources import SourceError, checked_items
from c3po_plugin.metrics import INVALID
from c3po_plugin.templates import CATEGORIES, Template
from faultline_eval.core import telemetry
from faultline_eval.core.media import SAMPLE_RATE
from faultline_eval.tasks import video_frame_parts
from faultline_eval.tasks.c3po_grading import grader, trial_record
from faultline_eval.tasks.c3po_settings import task_settings
from faultline_eval.tasks.task_hooks import excluded_trials, functions_by_name, invalid_count, record_exclusions

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
    return json.dumps(
        {
            "sample_id": item.sample_id,
            "template": item.template_id,
            "question": item.question,
            "answer": item.answer,
            "source": item.source,
            "context": item.context,
            "distractors": dict(item.distractors),
            "difficulty": item.difficulty,
            "human_answer": item.human_answer,
            "hidden": dict(item.hidden),
            "root": item.root,
            **item.relative_media(),
        }
    )


# sized as sceval_task._item (an LRU smaller than the dataset misses on every call)
@functools.lru_cache(maxsize=2**16)
def _item(item_json: str) -> C3POItem:
    row = json.loads(item_json)
    return item_from_row(row, row["root"])


def ledger_key(selector: str) -> str:
    """Where a task's exclusions are kept in SCEval's ledger (shared with its aggregation)."""
    return f"c3po:{selector}"


def build_rows(selector: str) -> tuple[list[dict], collections.Counter]:
    """The rows of a task, and the samples excluded for bad input (by reason)."""
    source, items, problems = checked_items()
    excluded = collections.Counter()
    for problem in problems:  # only reached with C3PO_ON_BAD_INPUT=exclude
        excluded[problem.reason] += 1
        logger.error(f"c3po {selector}: excluded, {problem}")
    dataset, runs = f"{source.spec}#{source.fingerprint}", task_settings().runs
    rows = [
        {
            "row_id": f"{selector}/{item.sample_id}/{run}",
            "sample_id": item.sample_id,
            "template_id": item.template_id,
            "run": run,
            "target": item.answer,
            "dataset": dataset,
            "item": _item_json(item),
        }
        for item in items
        if selects(selector, item.template)
        for run in range(runs)
    ]
    return rows, excluded


def process_docs(dataset: Any, selector: str) -> Any:
    import datasets

    rows, excluded = build_rows(selector)
    grader()  # a misconfigured judge (unknown spec, missing key) fails before any model call
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
    return [
        {"role": "system", "content": [{"type": "text", "text": prompts.SYSTEM}]},
        {"role": "user", "content": content},
    ]


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


# --- scoring ------------------------------------------------------------------------------------


def process_results(doc: dict, results: list) -> dict:
    """Grade the reply and return the per-sample record (never raises: lmms-eval retries). The
    judge is called here: lmms-eval computes the metrics from what this returns."""
    item = _item(doc["item"])
    reply = results[0] if results else ""
    record = trial_record(
        doc, item, reply if isinstance(reply, str) else str(reply), telemetry.take(doc["row_id"]), grader()
    )
    # The typed trial entry `c3po report` and the aggregations read (lmms-eval writes each metric
    # value into every per-sample line).
    trial = C3POTrial.from_record(record).to_json()
    out: dict[str, Any] = dict.fromkeys(TRIAL_METRICS, trial)
    out.update({f"c3po_invalid_{c}": record["invalid"] for c in INVALID})
    out["c3po_excluded"] = ledger_key(doc["row_id"].split("/", 1)[0])
    out["c3po_record"] = record
    return out


# --- aggregations -------------------------------------------------------------------------------


def _trial_table(items: list[dict]) -> pd.DataFrame:
    """The trial entries as :mod:`c3po_plugin.metrics`' trial table (one model)."""
    trials = [C3POTrial.from_json(it) for it in items]

    def number(values: list[int | None]) -> np.ndarray:
        return np.array([np.nan if v is None else v for v in values], dtype=float)

    return pd.DataFrame(
        {
            "model": "",
            "sample_id": [t.sample_id for t in trials],
            "run": [t.variant for t in trials],
            "correct": number([t.correct for t in trials]),
            "exact": [t.exact_match for t in trials],
            "human_correct": number([t.human_correct for t in trials]),
            "has_human_answer": [t.has_human_answer for t in trials],
        }
    )


def accuracy(items: list[dict]) -> float:
    """The paper's accuracy, #YES / #Total (§3.2): :func:`c3po_plugin.metrics.model_accuracy`
    (an ungradable trial counts as not correct; per sample over its runs, then over samples).
    ``c3po_accuracy_gradable`` is the other reading, ungradable trials as missing."""
    return metrics.model_accuracy(_trial_table(items))


def mean_variant_accuracy(items: list[dict]) -> float:
    """``c3po_accuracy_gradable``: accuracy with ungradable trials as missing (SCEval's eq. 3)."""
    return metrics.model_accuracy(_trial_table(items), score="score_gradable")


def worst_run_accuracy(items: list[dict]) -> float:
    """The lowest accuracy among the run indices, ungradable trials counted as not correct."""
    return metrics.worst_run_accuracy(_trial_table(items))


def exact_match_accuracy(items: list[dict]) -> float:
    """Accuracy had only exact match been used (same averaging as c3po_accuracy)."""
    return metrics.model_accuracy(_trial_table(items), score="exact")


def coverage(items: list[dict]) -> float:
    """The share of trials that are gradable."""
    return sum(C3POTrial.from_json(it).correct is not None for it in items) / len(items) if items else float("nan")


def valid_trials(items: list[dict]) -> int:
    """Gradable trials."""
    return sum(C3POTrial.from_json(it).correct is not None for it in items)


def judge_decisions(items: list[dict]) -> int:
    return sum(C3POTrial.from_json(it).judge_decided for it in items)


def judge_errors(items: list[dict]) -> int:
    return sum(C3POTrial.from_json(it).judge_error for it in items)


def human_accuracy(items: list[dict]) -> float:
    """Accuracy of the items' human answers (graded like the model's, a judge error counted as
    not correct), over the items that have one."""
    return metrics.model_accuracy(metrics.human_trials(_trial_table(items)))


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
