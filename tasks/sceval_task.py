"""The functions every SCEval lmms-eval task calls (referenced by absolute ``!function`` paths).

A task is one condition of the catalogue. ``process_docs__<condition id>`` replaces the
placeholder dataset lmms-eval loads with one row per trial (item x variant) from the configured
source, minus the trials the annotation manifest excludes (counted, with reasons). Bad records
and unusable media stop the build with the whole list (worded as ``sceval check`` prints it),
or, with ``SCEVAL_ON_BAD_INPUT=exclude``, are left out and counted by reason. Media are
corrupted lazily in ``doc_to_messages``/``doc_to_visual``; ``process_results`` parses the reply
and returns the per-sample record; the aggregations group trials by sample id (mean- and
worst-variant accuracy, coverage, invalid outputs by category, valid and excluded trials).
"""

from __future__ import annotations

import collections
import functools
import json
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from loguru import logger

if TYPE_CHECKING:
    import pandas as pd

from faultline_eval.core import telemetry
from faultline_eval.core.accuracy import mean_over_samples, worst_repeat_accuracy
from faultline_eval.core.intake import bad_input_policy, decode_problem, refuse
from faultline_eval.tasks import video_frame_parts
from faultline_eval.tasks.task_hooks import excluded_trials, functions_by_name, invalid_count, record_exclusions
from sceval_plugin import no_option_control as no_option
from sceval_plugin import probe_conditions as probes
from sceval_plugin.conditions import Condition, catalogue
from sceval_plugin.data.manifest import GOLD_PRESERVED, STRESS_ONLY, current_manifest, stress_only_policy
from sceval_plugin.data.records import OmniItem, check_media, item_from_row
from sceval_plugin.data.sources import BAD_INPUT_ENV, SourceError, load_source, media_paths
from sceval_plugin.eval_prompts import prompt_template
from sceval_plugin.operators import SAMPLE_RATE, seed_scheme
from sceval_plugin.parsing import INVALID_CATEGORIES, ParsedAnswer, parse_answer
from sceval_plugin.render import Trial, control_not_applicable, render, reorder_options
from sceval_plugin.sceval_environment import SCEVAL_ON_BAD_INPUT, SCEVAL_TRIALS
from sceval_plugin.sceval_trial import SCEvalTrial

# --- docs ---------------------------------------------------------------------------------------


def _item_json(item: OmniItem) -> str:
    return json.dumps(
        {
            "sample_id": item.sample_id,
            "source": item.source,
            "question": item.question,
            "options": dict(item.options),
            "gold_key": item.gold_key,
            "context": item.context,
            "visual": [str(Path(p).relative_to(item.root)) for p in item.visual],
            "audio": str(Path(item.audio).relative_to(item.root)),
            "root": item.root,
            "hidden": dict(item.hidden),
            "category": item.category,
            "key_frame_index": item.key_frame_index,
        }
    )


# A run visits every item once per task, in dataset order: an LRU smaller than the dataset
# would miss on every call (~0.7 ms each, 3-4 calls per request), so it holds 65,536.
@functools.lru_cache(maxsize=2**16)
def _item(item_json: str) -> OmniItem:
    row = json.loads(item_json)
    return item_from_row(row, row["root"])


def build_rows(condition: Condition) -> tuple[list[dict], collections.Counter]:
    """The trials of ``condition`` on the configured source, and the exclusions by reason.

    Every problem of the source (bad records, media that cannot be decoded or are over a
    limit) is found before any model call: the build stops with the whole list, or, with
    ``SCEVAL_ON_BAD_INPUT=exclude``, leaves those trials out and counts them by reason.
    """
    source = load_source()
    policy = bad_input_policy(SCEVAL_ON_BAD_INPUT)
    manifest = current_manifest()
    stress_only = stress_only_policy()
    trials, released_mode = _source_trials(source, condition)
    problems = list(source.problems)
    # a record that is not an item would have given one trial per variant (one released row)
    excluded = collections.Counter(
        {
            reason: n * (1 if released_mode else condition.variants)
            for reason, n in collections.Counter(p.reason for p in problems).items()
        }
    )
    donors = _donor_picker(source, condition)
    dataset = f"{source.spec}#{source.fingerprint}"  # hashes every item: once, not per trial
    rows = []
    for item, variant, released in trials:
        reason = (
            manifest.exclusion_reason(item.sample_id, condition, variant, stress_only=stress_only) if manifest else None
        )
        problem = None if reason else decode_problem(item, check_media, media_paths)
        if problem:
            reason = problem.reason
            if variant == 0 or released:  # one entry per item, however many trials it has
                problems.append(problem)
        if reason:
            excluded[reason] += 1
            continue
        cohort = manifest.cohort(item.sample_id, condition, variant) if manifest else GOLD_PRESERVED
        rows.append(
            _row(condition, item, variant, released, dataset, _donor_json(donors, item, condition, variant), cohort)
        )
    if problems and policy == "error":
        raise refuse(source.spec, problems, BAD_INPUT_ENV)
    scheduled = budgeted_round_trials()
    if scheduled is not None:  # a budgeted round (faultline_app/budgeted.py): not excluded, just not run now
        rows = [row for row in rows if row["row_id"] in scheduled]
    for problem in problems:
        logger.error(f"sceval {condition.id}: excluded, {problem}")
    return rows, excluded


def budgeted_round_trials() -> frozenset[str] | None:
    """The trial ids ``SCEVAL_TRIALS`` names (None when unset): a budgeted round runs only those."""
    if not SCEVAL_TRIALS.is_set():
        return None
    path = Path(SCEVAL_TRIALS.get()).expanduser()
    try:
        ids = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SourceError(f"{SCEVAL_TRIALS.name}={path}: not a readable JSON list of trial ids ({exc})") from exc
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise SourceError(f"{SCEVAL_TRIALS.name}={path}: expected a JSON list of 'condition/sample_id/variant' strings")
    return frozenset(ids)


def _source_trials(source: Any, condition: Condition) -> tuple[list[tuple[OmniItem, int, bool]], bool]:
    """(item, variant, released) per trial of ``condition``, and whether they are a release's
    pre-corrupted rows (a corrupting condition on a source that ships them)."""
    if source.released is None or not condition.corruptions:
        return [(item, v, False) for item in source.items for v in range(condition.variants)], False
    base = condition.base and catalogue().get(condition.base)
    wanted = (base or condition).id
    trials = [(r.item, r.variant, True) for r in source.released if r.condition_id == wanted]
    if not trials:
        raise SourceError(f"{source.spec}: the release has no pre-corrupted rows for {wanted!r}")
    return trials, True


def _donor_picker(source: Any, condition: Condition) -> probes.DonorPicker | None:
    """A probe that needs a second item gets it from the picker over this dataset's usable items
    (a donor whose media do not decode would break the trial it is lent to); the row keeps the choice."""
    if condition.probe is None:
        return None
    return probes.DonorPicker([it for it in source.items if not decode_problem(it, check_media, media_paths)])


def _row(
    condition: Condition, item: OmniItem, variant: int, released: bool, dataset: str, donor: str, cohort: str
) -> dict:
    """One trial's dataset row (what the task's functions get as ``doc``)."""
    _, shown_gold, _ = reorder_options(item.options, item.gold_key, condition.option_order)
    return {
        "row_id": f"{condition.id}/{item.sample_id}/{variant}",
        "condition_id": condition.id,
        "sample_id": item.sample_id,
        "source": item.source,
        "variant": variant,
        "released": released,
        "target": shown_gold,
        "dataset": dataset,
        "item": _item_json(item),
        "donor": donor,
        "cohort": cohort,
    }


def _donor_json(donors: probes.DonorPicker | None, item: OmniItem, condition: Condition, variant: int) -> str:
    """The donor item of a probe trial as the row stores it ("" when the probe needs none or
    none fits)."""
    donor = donors(item.sample_id, condition.probe, variant) if donors is not None else None
    return _item_json(donor) if donor is not None else ""


def process_docs(dataset: Any, condition_id: str) -> Any:
    import datasets

    condition = catalogue().get(condition_id)
    if condition.block == no_option.BLOCK:
        no_option.scorers()  # a misconfigured scorer fails before any model call
    rows, excluded = build_rows(condition)
    record_exclusions(condition_id, excluded)
    if excluded:
        logger.warning(
            f"sceval {condition_id}: {sum(excluded.values())} trial(s) excluded, by reason: {dict(excluded)}"
        )
    if not rows:
        raise SourceError(f"sceval {condition_id}: every trial is excluded ({dict(excluded)}); nothing to evaluate")
    return datasets.Dataset.from_list(rows)


#: ``process_docs__<condition id>``
__getattr__ = functions_by_name("process_docs__", process_docs)


# --- what the model sees ------------------------------------------------------------------------


def trial_for(doc: dict, *, with_media: bool = True) -> tuple[Condition, Trial]:
    condition = catalogue().get(doc["condition_id"])
    shown = condition
    if doc["released"]:  # media and question already carry the corruption
        shown = replace(condition, corruptions=())
    variant = 0 if doc["released"] else doc["variant"]
    donor = _item(doc["donor"]) if doc.get("donor") else None
    return condition, render(
        _item(doc["item"]), shown, variant, with_media=with_media, donors=probes.fixed_donor(donor)
    )


def _prompt(condition: Condition, trial: Trial) -> tuple[str, str]:
    return prompt_template(condition.prompt).render(
        trial.question,
        trial.options,
        visual=trial.visual_kind,
        audio=trial.audio_shown,
        context=trial.context,
        frame_times=trial.frame_times,
    )


def _images(trial: Trial) -> list:
    from PIL import Image

    return [] if trial.frames is None else [Image.fromarray(np.ascontiguousarray(f)) for f in trial.frames]


def _audio(trial: Trial) -> dict | None:
    if trial.audio is None:
        return None
    return {"array": np.asarray(trial.audio, dtype=np.float32), "sampling_rate": SAMPLE_RATE}


def doc_to_messages(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> list[dict]:
    """System prompt; then the frames in order, the audio clip and the question with options."""
    condition, trial = trial_for(doc)
    system, user = _prompt(condition, trial)
    images = _images(trial)
    content: list[dict] = (
        [{"type": "image", "url": image} for image in images]
        if trial.visual_kind == "image"
        else video_frame_parts(images, trial.frame_times, doc["sample_id"])
    )
    audio = _audio(trial)
    if audio is not None:
        content.append({"type": "audio", "url": audio})
    content.append({"type": "text", "text": user})
    return [
        {"role": "system", "content": [{"type": "text", "text": system}]},
        {"role": "user", "content": content},
    ]


def doc_to_visual(doc: dict) -> list:
    """For simple models: the frames (PIL, in order), then the audio as an HF-style dict."""
    _, trial = trial_for(doc)
    audio = _audio(trial)
    return _images(trial) + ([audio] if audio is not None else [])


def doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    """System and user prompt as one string (simple models; lmms-eval's request context)."""
    condition, trial = trial_for(doc, with_media=False)
    system, user = _prompt(condition, trial)
    return f"{system}\n\n{user}"


def doc_to_target(doc: dict) -> str:
    return doc["target"]


# --- scoring ------------------------------------------------------------------------------------


def process_results(doc: dict, results: list) -> dict:
    """Parse the reply and return the per-sample record (never raises: lmms-eval retries)."""
    condition = catalogue().get(doc["condition_id"])
    item = _item(doc["item"])
    # a probe changes what is shown (frame budget: other frames at other times): render it to record that
    probed = trial_for(doc, with_media=False)[1] if condition.probe is not None else None
    graded, free = _graded_reply(doc, condition, item, results[0] if results else "")
    record = {**_trial_context(doc, condition, item, probed), **graded}
    if free is not None:  # the no-option control's answer, evidence and both scorers' grades
        record["no_option"] = free
    if condition.probe is not None:
        record["probe"] = probe_record(doc, condition, item, probed)
    # Small values: lmms-eval writes every metric's value into each per-sample line. The typed
    # trial entry (sceval_plugin.sceval_trial) carries what the aggregations and `sceval report`
    # read (invalid category, original answer key, option count, stated confidence, item source,
    # a probe's donor), so the report need not decode the whole record.
    trial = SCEvalTrial.from_record(record).to_json()
    out = dict.fromkeys(TRIAL_METRICS, trial)
    out.update({f"sceval_invalid_{c}": record["invalid"] for c in INVALID_CATEGORIES})
    out["sceval_excluded_trials"] = condition.id
    out["sceval_record"] = record
    return out


def _trial_context(doc: dict, condition: Condition, item: OmniItem, probed: Trial | None) -> dict:
    """The record's fields saying what was asked: model, prompt, item, condition, variant, media."""
    return {
        "model": telemetry.RUN_CONTEXT.get("model"),
        "prompt_id": condition.prompt_id,
        "sample_id": doc["sample_id"],
        "source": doc["source"],
        "dataset": doc["dataset"],
        "condition_id": condition.id,
        "block": condition.block,
        "operators": {c.modality: {"operator": c.operator, "severity": c.severity} for c in condition.corruptions},
        "control": condition.control,
        # set when the control has nothing to act on for this item (the report counts, not scores, it)
        "control_not_applicable": control_not_applicable(item, condition),
        "option_order": condition.option_order,
        "variant": doc["variant"],
        "cohort": doc.get("cohort", GOLD_PRESERVED),
        "released_variant": bool(doc["released"]),
        "seed_scheme": seed_scheme(),  # how the variant's random draws were made
        "probe_readings": probes.READINGS if condition.probe is not None else None,
        "media": {
            "root": item.root,
            "visual": [str(Path(p).relative_to(item.root)) for p in item.visual],
            "audio": str(Path(item.audio).relative_to(item.root)),
        },
        # the times of the frames sent (None: not stated, e.g. a frame list or an added distractor frame)
        "frame_times_s": item.frame_times() if probed is None else probed.frame_times,
        "media_notes": item.media_notes(),
    }


def _graded_reply(doc: dict, condition: Condition, item: OmniItem, reply: str) -> tuple[dict, dict | None]:
    """The record's fields saying what came back and how it scored, and the no-option control's
    grades (None for a multiple-choice trial)."""
    options, gold, original = reorder_options(item.options, item.gold_key, condition.option_order)
    call = telemetry.take(doc["row_id"])
    failure = call.failure if call is not None and call.failure else None
    free = no_option.score(item, reply, failure) if condition.block == no_option.BLOCK else None
    parsed = parse_answer(reply, options) if free is None else ParsedAnswer(None, free["invalid"])
    invalid = failure or parsed.invalid
    answer = None if invalid else parsed.answer
    correct = free["correct"] if free is not None else None if answer is None else int(answer == gold)
    return {
        "raw_response": reply,
        "parsed_answer": answer,
        "parsed_answer_original_key": None if answer is None else original[[k for k, _ in options].index(answer)],
        "confidence": parsed.confidence,
        "gold_key": gold,
        "n_options": len(options),
        "correct": correct,
        "invalid": invalid,
        "latency_s": call.latency_s if call else None,
        "retries": call.retries if call else None,
        "failure_detail": call.detail if call else "",
    }, free


def probe_record(doc: dict, condition: Condition, item: OmniItem, trial: Trial) -> dict:
    """The probe part of a record: family, probe and parameter; why it did not apply (if so);
    and, with a donor, what the report needs to tell whether the answer followed it (G.9): the
    item's option key whose text is the donor's gold answer, and, per donor option in key order,
    the item's key with the same text. Both leave out (None, "-") what no option matches and the
    item's own gold key: an answer there cannot tell following the donor from following the item."""
    call = condition.probe  # ``trial``: the rendered probe (its applicability may depend on the media)
    out = {
        "family": probes.get(call.name).family,
        "name": call.name,
        "parameter": call.parameter,
        "not_applicable": trial.not_applicable,
        "donor": trial.donor_id,
    }
    if trial.donor_id is not None:
        donor = _item(doc["donor"])
        out["donor_gold_key"] = donor.gold_key
        same = [probes.option_key_of(item, probes.option_text(t)) for _, t in donor.options]
        same = [k if k != item.gold_key else None for k in same]
        out["follows_donor_key"] = same[donor.option_keys.index(donor.gold_key)]
        out["donor_key_map"] = "".join(k or "-" for k in same)
    return out


def _scored(items: list[dict]) -> pd.DataFrame:
    """The trials the headline metrics score, as a trial table (sample_id, variant, correct):
    those of the gold-preserved cohort (the stress-only ones are counted by stress_only_trials
    and reported by ``sceval report --cohort``) whose control or probe applied to their item (a
    no-text control on an item without text beyond question and options would only repeat
    clean, so it is not scored)."""
    import pandas as pd  # heavy: only the metric hooks need it, not `sceval` commands that list tasks

    trials = [t for t in map(SCEvalTrial.from_json, items) if t.scored]
    return pd.DataFrame(
        {
            "sample_id": [t.sample_id for t in trials],
            "variant": [t.variant for t in trials],
            "correct": np.array([np.nan if t.correct is None else t.correct for t in trials], float),
        }
    )


def mean_variant_accuracy(items: list[dict]) -> float:
    """Paper eq. 3: mean over each sample's valid variants, then over samples with one."""
    return mean_over_samples(_scored(items))


def worst_variant_accuracy(items: list[dict]) -> float:
    """Paper eq. 4: the lowest accuracy among the variant indices (each over its valid samples)."""
    return worst_repeat_accuracy(_scored(items))


def coverage(items: list[dict]) -> float:
    correct = _scored(items)["correct"]
    return int(correct.notna().sum()) / len(correct) if len(correct) else math.nan


def valid_trials(items: list[dict]) -> int:
    return int(_scored(items)["correct"].notna().sum())


invalid_api_failure = invalid_count("api_failure")
invalid_parse_failure = invalid_count("parse_failure")
invalid_refusal = invalid_count("refusal")
invalid_empty = invalid_count("empty")


def stress_only_trials(items: list[dict]) -> int:
    """Trials run on stress-only cells (interpretable, original gold not preserved; Appendix D):
    recorded, but outside every other metric of the task."""
    return sum(SCEvalTrial.from_json(it).cohort == STRESS_ONLY for it in items)


#: The metrics whose per-sample value is the trial entry.
TRIAL_METRICS = (
    "sceval_accuracy",
    "sceval_worst_variant_accuracy",
    "sceval_coverage",
    "sceval_valid_trials",
    "sceval_stress_only_trials",
)
#: metric name -> aggregation; the task template lists exactly these.
METRICS: dict[str, Callable[[list[dict]], float]] = {
    "sceval_accuracy": mean_variant_accuracy,
    "sceval_worst_variant_accuracy": worst_variant_accuracy,
    "sceval_coverage": coverage,
    "sceval_valid_trials": valid_trials,
    "sceval_stress_only_trials": stress_only_trials,
    **{f"sceval_invalid_{c}": globals()[f"invalid_{c}"] for c in INVALID_CATEGORIES},
    "sceval_excluded_trials": excluded_trials,
}
