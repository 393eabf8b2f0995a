"""The modality-necessity audit of a wrapped benchmark (issue 27; design §8; every metric kind:
issue 36): which items stay answerable when a modality, the question, or everything but the
question and options, is taken away.

Input: a trial table of wrapped runs (:mod:`sceval_plugin.report.wrapped_reader`: ``model``,
``task``, ``base_task``, ``condition_id``, ``variant``, ``sample_id``, ``doc_id``, ``unit``,
``score``, ``correct``, ``n_options``, ``target``) holding ``clean`` and any of the
:data:`CONTROLS` (SCEval's control ids, ``sceval_plugin.conditions.CONTROLS``).

**What "answerable" means depends on the metric's kind** (:func:`score_trials`; every output
row states its kind and rule, :data:`RULES`):

* a 0/1 per-doc score: **accuracy** (the prompt lists lettered options), **yes/no** (the gold is
  yes or no; **yes/no pairs** when the adapter's unit pairs the questions of an image, MME: each
  question counts on its own, as MME's acc does; the other reading, the pair as the item,
  answerable when both its questions are, as MME's acc+ counts, is ``per_pair``: ``faultline
  audit --per-pair``), **exact match** (open answers, clotho_aqa): the trial is answerable when
  its score is 1 (correct);
* a graded per-item value: **error rate** (WER/CER, lower is better: the task's own aggregation
  of the one item, so its text normalisation applies) and **score** (a per-doc score that is not
  0/1, or a per-item aggregation where higher is better): by default a trial is answerable when
  its value is **no worse than the same item's in clean** (a threshold would have to be in each
  metric's own units: librispeech reports WER in %, others as a fraction). So every item counts
  as answerable in clean and ``needs`` is the share of items a control makes worse. The other
  reading, a threshold in the metric's units (``answerable_at={"wer": 50}``: per-item WER at
  most 50), is ``faultline audit --answerable-at METRIC=VALUE``.

An item (a doc of the base task) is answerable under a condition when it is answerable in a
majority of the condition's variants (a control has one). Per base task, model and control
(:func:`control_shares`):

* ``answerable``: the share of items answerable under the control, with ``chance``, the mean
  chance rate of the same items (1/options for lettered options, 1/2 for a yes/no gold; none
  for open answers and graded metrics: ``note`` says so);
* ``answerable_among_clean``: the share still answerable among the items answerable in clean;
* ``needs``: 1 − ``answerable_among_clean``, "how much of this benchmark needs the audio" for
  ``missing_audio`` (vision, text: ``missing_vision``, ``missing_text``; the question:
  ``shortcut_visual_audio``; the media as a whole: ``shortcut_question_options``).

Nothing is left out silently: a task or metric the audit cannot score, a task run without any
control, a control whose items have no value, is a row of the shares with ``note`` saying why
(:func:`left_out_rows`), and a blank cell of the per-item table is explained in its ``blank``
column. :func:`answerable_items` lists the items answered with a modality removed by at least
``k`` of the ``m`` models, for a benchmark author to act on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sceval_plugin import conditions

__all__ = [
    "CONTROLS",
    "NEEDS",
    "RULES",
    "SHARE_COLUMNS",
    "TaskKind",
    "score_trials",
    "per_item",
    "control_shares",
    "left_out_rows",
    "answerable_items",
    "outcome_shares",
]

#: The controls the audit reads, in the catalogue's order (SCEval's ids, Appendix G.4/G.5).
CONTROLS = tuple(conditions.CONTROLS)
#: What each control takes away, as "needs the ..." reads it.
NEEDS = {
    "missing_vision": "vision",
    "missing_audio": "audio",
    "missing_text": "text context",
    "shortcut_question_options": "media and context",
    "shortcut_text_only": "media",
    "shortcut_visual_audio": "question",
    "shortcut_options_only": "question, context and media",
}
#: What "answerable" means for each metric kind (stated in every output row).
RULES = {
    "accuracy": "correct (per-doc score 1); chance 1/options listed",
    "yes/no": "correct (per-doc score 1); chance 1/2",
    "yes/no pairs": "each question correct on its own (per-doc score 1, as the task's acc counts it); chance 1/2",
    "exact match": "exact match (per-doc score 1); no chance rate for an open answer (1/2 for a yes/no gold)",
    "error rate": "per-item {metric} no higher than in clean (the task's aggregation of the one item)",
    "score": "per-item {metric} no lower than in clean",
}
#: The rule of yes/no pairs read per pair (``per_pair``).
PAIR_RULE = "every question of the pair correct (the item is the pair, as the task's acc+ counts it); chance 1/2 per question, multiplied"
#: The rule of a graded kind under a threshold (``answerable_at``).
THRESHOLD_RULES = {
    "error rate": "per-item {metric} at most {at:g} (the task's aggregation of the one item, in its units)",
    "score": "per-item {metric} at least {at:g} (in its units)",
}
#: An item is a doc of the base task: its row index pairs the conditions of a run (the sample id
#: is the adapter's key, which two docs may share: MME's two questions of an image).
_KEYS = ["base_task", "model", "doc_id"]
_YES_NO = re.compile(r"^\W*(yes|no)\W*$", re.IGNORECASE)
SHARE_COLUMNS = [
    "base_task",
    "model",
    "metric",
    "kind",
    "answerable_if",
    "control",
    "takes_away",
    "items",
    "answerable",
    "chance",
    "clean_answerable",
    "answerable_among_clean",
    "needs",
    "note",
]


@dataclass(frozen=True)
class TaskKind:
    """How the audit scores one base task: the metric read, its kind, the "answerable" rule as
    stated in the outputs, and the task's metrics it leaves out (metric -> why)."""

    base_task: str
    metric: str
    kind: str
    rule: str
    left_out: dict[str, str] = field(default_factory=dict)


#: ``aggregate_one(base task, metric, item)``: the task's own aggregation of one per-doc item.
AggregateOne = Callable[[str, str, Any], float]


def _is_yes_no(target: Any) -> bool:
    return isinstance(target, str) and _YES_NO.match(target) is not None


def _chance(trials: pd.DataFrame) -> pd.Series:
    """Per trial: 1/options where the prompt lists lettered options, 1/2 where the gold is yes or
    no, else NaN (an open answer)."""
    options = pd.to_numeric(trials["n_options"], errors="coerce")
    yes_no = trials["target"].map(_is_yes_no).astype(bool)
    return (1.0 / options).where(options.notna(), np.where(yes_no, 0.5, np.nan))


def _binary_kind(trials: pd.DataFrame) -> str:
    if pd.to_numeric(trials["n_options"], errors="coerce").notna().all():
        return "accuracy"
    if trials["target"].map(_is_yes_no).astype(bool).all():
        run = trials[trials["condition_id"] == trials["condition_id"].iloc[0]]
        shared = run.groupby(["model", "task"])["unit"].agg(lambda u: u.duplicated().any())
        return "yes/no pairs" if shared.any() else "yes/no"
    return "exact match"


def _graded_values(
    trials: pd.DataFrame,
    metrics: list[tuple[str, bool | None]],
    items: Mapping[tuple[str, str, str], list[Any]],
    aggregate_one: AggregateOne,
) -> tuple[str | None, bool, pd.Series, dict[str, str]]:
    """The first of ``metrics`` whose per-item value the task's aggregation gives on every item
    (one item at a time): (metric, higher is better, value per trial, metrics left out -> why)."""
    left_out: dict[str, str] = {}
    chosen: tuple[str, bool, pd.Series] | None = None
    for metric, higher in metrics:
        if chosen is not None:
            left_out[metric] = f"the audit reads one graded metric per task ({chosen[0]})"
            continue
        values = pd.Series(np.nan, index=trials.index)
        try:
            for (model, task), rows in trials.groupby(["model", "task"], sort=False):
                logged = items.get((model, task, metric))
                if logged is None or len(logged) != len(rows):
                    raise ValueError(f"{task} of {model} logs no per-doc {metric} item for every doc")
                values.loc[rows.index] = [
                    np.nan if item is None else aggregate_one(rows["base_task"].iloc[0], metric, item)
                    for item in logged
                ]
        except Exception as exc:  # any aggregation's failure on one item is the reason, named
            left_out[metric] = (
                f"no per-item value: the task's aggregation of one item failed ({type(exc).__name__}: {exc})"
            )
            continue
        chosen = (metric, higher is not False, values)
    if chosen is None:
        return None, True, pd.Series(np.nan, index=trials.index), left_out
    return chosen[0], chosen[1], chosen[2], left_out


def _graded(
    rows: pd.DataFrame,
    score: pd.Series,
    metrics: list[tuple[str, bool | None]],
    items: Mapping[tuple[str, str, str], list[Any]],
    aggregate_one: AggregateOne,
) -> tuple[str | None, bool, pd.Series, dict[str, str]]:
    """(metric, higher is better, value per trial, metrics left out -> why) of a task without a
    0/1 per-doc score: its graded per-doc score (partial credit, a per-doc error rate) where it
    has one, else the per-item aggregation of :func:`_graded_values`."""
    if score.isna().all():
        return _graded_values(rows, metrics, items, aggregate_one)
    if len(metrics) == 1:
        return metrics[0][0], metrics[0][1] is not False, score, {}
    return "per-doc score", True, score, {}


def _graded_answerable(trials: pd.DataFrame, values: pd.Series, higher: bool, at: float | None) -> pd.Series:
    """Per trial 1/0 (NaN: no value, or no clean value to compare with) under the threshold
    ``at`` or, without one, against the same item's mean value in clean."""
    if at is not None:
        better = values >= at if higher else values <= at
        return better.astype(float).where(values.notna())
    keyed = trials[["model", "doc_id"]].assign(value=values)
    clean = keyed[trials["condition_id"] == "clean"].groupby(["model", "doc_id"])["value"].mean()
    reference = pd.Series(
        [clean.get((m, d), np.nan) for m, d in zip(trials["model"], trials["doc_id"])], index=trials.index
    )
    slack = 1e-9 * np.maximum(1.0, reference.abs())
    better = values >= reference - slack if higher else values <= reference + slack
    return better.astype(float).where(values.notna() & reference.notna())


def score_trials(
    trials: pd.DataFrame,
    metrics: Mapping[str, list[tuple[str, bool | None]]],
    items: Mapping[tuple[str, str, str], list[Any]],
    aggregate_one: AggregateOne,
    answerable_at: Mapping[str, float] | None = None,
    *,
    per_pair: bool = False,
) -> tuple[pd.DataFrame, dict[str, TaskKind]]:
    """The trials of clean and the controls with ``answerable`` (1/0; NaN: no value), ``value``
    (the graded per-item value) and ``chance`` per trial, and each base task's :class:`TaskKind`.

    ``metrics``: per base task, its metrics and whether higher is better (as results.json says);
    ``items``: per (model, wrapped task, metric), the per-doc items in the trials' order;
    ``aggregate_one``: the task's own aggregation of one item; ``answerable_at``: metric ->
    threshold, for the threshold reading of a graded metric (see the module docstring);
    ``per_pair``: yes/no pairs are scored per pair (:data:`PAIR_RULE`), one row per pair."""
    answerable_at = dict(answerable_at or {})
    t = trials[trials["condition_id"].isin(("clean", *CONTROLS))].copy()
    t["answerable"], t["value"], t["chance"] = np.nan, np.nan, np.nan
    kinds: dict[str, TaskKind] = {}
    pair_tasks: list[str] = []
    for base, rows in t.groupby("base_task", sort=True):
        names = [m for m, _ in metrics.get(base, [])]
        score = pd.to_numeric(rows["score"], errors="coerce")
        # a per-doc error rate of 0 or 1 (WER of a one-word transcript) is no 0/1 correctness
        lower_is_better = any(higher is False for _, higher in metrics.get(base, []))
        binary = not lower_is_better and score.notna().any() and score.dropna().isin((0.0, 1.0)).all()
        if binary:
            kind = _binary_kind(rows)
            metric = ", ".join(names) or "per-doc score"
            t.loc[rows.index, "answerable"] = score
            t.loc[rows.index, "chance"] = _chance(rows)
            pairs = per_pair and kind == "yes/no pairs"
            kinds[base] = TaskKind(base, metric, kind, PAIR_RULE if pairs else RULES[kind])
            if pairs:
                pair_tasks.append(base)
            continue
        metric, higher, values, left_out = _graded(rows, score, metrics.get(base, []), items, aggregate_one)
        if metric is None:
            reason = "; ".join(f"{m}: {why}" for m, why in left_out.items()) or "the runs report no metric for it"
            kinds[base] = TaskKind(base, ", ".join(names), "", "", {**left_out, "": f"no per-item value ({reason})"})
            continue
        kind = "score" if higher else "error rate"
        at = answerable_at.get(metric)
        rule = (THRESHOLD_RULES[kind] if at is not None else RULES[kind]).format(metric=metric, at=at)
        t.loc[rows.index, "value"] = values
        t.loc[rows.index, "answerable"] = _graded_answerable(rows, values, higher, at)
        kinds[base] = TaskKind(base, metric, kind, rule, left_out)
    _check_thresholds(answerable_at, kinds)
    for base in pair_tasks:
        t = pd.concat([t[t["base_task"] != base], _pairs(t[t["base_task"] == base])], ignore_index=True)
    return t, kinds


def _check_thresholds(answerable_at: Mapping[str, float], kinds: Mapping[str, TaskKind]) -> None:
    """A threshold for a metric that no task's graded metric is would leave the default reading
    in place unnoticed (a typo): an error naming the graded metrics there are."""
    graded = sorted({k.metric for k in kinds.values() if k.kind in THRESHOLD_RULES})
    unused = sorted(set(answerable_at) - set(graded))
    if unused:
        raise ValueError(
            f"answerable_at names {', '.join(unused)}, which is no graded metric of the runs "
            f"(graded metrics audited: {', '.join(graded) or 'none'})"
        )


def _pairs(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per pair (model, task, unit), keyed by its first question's doc id and named by the
    unit: answerable when every question of it is (NaN when one has no value); chance the
    product of its questions'."""
    keys = ["model", "task", "unit"]
    rest = {c: (c, "first") for c in rows.columns if c not in (*keys, "answerable", "chance")}
    out = rows.groupby(keys, sort=False).agg(
        **rest,
        answerable=("answerable", lambda a: np.nan if a.isna().any() else float((a == 1).all())),
        chance=("chance", lambda c: c.prod(skipna=False)),
    )
    out = out.reset_index()
    return out.assign(sample_id=out["unit"])[list(rows.columns)]


def per_item(scored: pd.DataFrame, kinds: Mapping[str, TaskKind]) -> pd.DataFrame:
    """One row per (base task, model, item = doc): per condition (clean and the controls run)
    whether the item is answerable (1/0), its sample id, option count, chance rate, the kind and
    rule of :func:`score_trials` (whose trials ``scored`` is), and ``blank``: why a condition's
    cell is empty (not run for this task and model, or no value)."""
    answerable = scored.groupby([*_KEYS, "condition_id"], observed=True)["answerable"].mean()
    wide = (answerable >= 0.5).astype(float).where(answerable.notna()).unstack("condition_id")
    first = scored.groupby(_KEYS, observed=True)[["sample_id", "n_options", "chance"]].first()
    items = wide.join(first).reset_index()
    items["kind"] = items["base_task"].map(lambda b: kinds[b].kind if b in kinds else "")
    items["answerable_if"] = items["base_task"].map(lambda b: kinds[b].rule if b in kinds else "")
    ran = scored.groupby(["base_task", "model"])["condition_id"].agg(set)
    columns = [c for c in ("clean", *CONTROLS) if c in items]
    items["blank"] = [
        _blank(row, columns, ran.get((row["base_task"], row["model"]), set())) for _, row in items.iterrows()
    ]
    return items


def _blank(row: pd.Series, columns: list[str], ran: set[str]) -> str:
    not_run = [c for c in columns if c not in ran]
    no_value = [c for c in columns if c in ran and pd.isna(row[c])]
    parts = [f"{', '.join(not_run)}: not run for this task and model"] if not_run else []
    if no_value:
        parts.append(f"{', '.join(no_value)}: no value (no per-doc score, or no clean value to compare with)")
    return "; ".join(parts)


def control_shares(items: pd.DataFrame, kinds: Mapping[str, TaskKind]) -> pd.DataFrame:
    """Per (base task, model, control run): the metric, kind and rule (``answerable_if``), items
    scored, ``answerable`` and ``chance``, ``clean_answerable`` (items answerable in clean among
    those), ``answerable_among_clean`` and ``needs`` (see the module docstring); ``note``: why a
    number is blank. A control run whose items have no value is a row with its reason."""
    rows = []
    for (base, model), group in items.groupby(["base_task", "model"], sort=True):
        kind = kinds[base]
        head = {"base_task": base, "model": model, "metric": kind.metric, "kind": kind.kind, "answerable_if": kind.rule}
        for control in (c for c in CONTROLS if c in group):
            scored = group[group[control].notna()]
            if scored.empty:
                continue  # not run by this model on this task, or no value (left_out_rows says which)
            row = {
                **head,
                "control": control,
                "takes_away": NEEDS[control],
                "items": len(scored),
                "answerable": scored[control].mean(),
                "chance": np.nan,
                "clean_answerable": np.nan,
                "answerable_among_clean": np.nan,
                "needs": np.nan,
                "note": "",
            }
            notes = []
            chance = scored["chance"]
            if chance.notna().all():
                row["chance"] = chance.mean()
            elif kind.kind in ("error rate", "score"):
                notes.append("no chance rate for a graded metric")
            else:
                notes.append(f"no chance rate: {int(chance.isna().sum())} of {len(scored)} items have an open answer")
            if "clean" in scored and scored["clean"].notna().any():
                in_clean = scored[scored["clean"] == 1]
                row["clean_answerable"] = len(in_clean)
                if len(in_clean):
                    row["answerable_among_clean"] = in_clean[control].mean()
                    row["needs"] = 1.0 - row["answerable_among_clean"]
                else:
                    notes.append("no item is answerable in clean")
            else:
                notes.append("clean was not run: nothing to compare with")
            row["note"] = "; ".join(notes)
            rows.append(row)
    return pd.DataFrame(rows, columns=SHARE_COLUMNS)


def left_out_rows(scored: pd.DataFrame, trials: pd.DataFrame, kinds: Mapping[str, TaskKind]) -> pd.DataFrame:
    """The rows of the shares for what the audit could not score, each with its reason: a task
    (and model) run without any control, a control whose items have no value, a task or metric
    without a per-item value. ``trials``: every trial read (all conditions); ``scored``:
    :func:`score_trials`'s."""
    rows = []
    for (base, model), group in trials.groupby(["base_task", "model"], sort=True):
        kind = kinds.get(base)
        head = {
            "base_task": base,
            "model": model,
            "metric": "",
            "kind": kind.kind if kind else "",
            "answerable_if": kind.rule if kind else "",
        }
        run = list(dict.fromkeys(group["condition_id"]))
        controls = [c for c in CONTROLS if c in run]
        if not controls:
            rows.append({**head, "note": f"left out: no control was run (conditions run: {', '.join(run)})"})
            continue
        mine = scored[(scored["base_task"] == base) & (scored["model"] == model)]
        for metric, why in (kind.left_out if kind else {}).items():
            rows.append({**head, "metric": metric or (kind.metric if kind else ""), "note": f"left out: {why}"})
        if kind is None or not kind.kind:
            continue
        for control in controls:
            if mine.loc[mine["condition_id"] == control, "answerable"].isna().all():
                rows.append(
                    {
                        **head,
                        "metric": kind.metric,
                        "control": control,
                        "takes_away": NEEDS[control],
                        "note": "left out: no item of this control has a value (see audit_per_item's blank)",
                    }
                )
    return pd.DataFrame(rows, columns=SHARE_COLUMNS)


def outcome_shares(items: pd.DataFrame) -> pd.DataFrame:
    """Per (base task, model, control): the shares of items in each (clean, control) outcome:
    ``both`` answerable, ``only_without`` (answerable only with the modality removed),
    ``needs_it`` (answerable in clean only) and ``neither`` (the stacked-bar figure's bars)."""
    rows = []
    for (base, model), group in items.groupby(["base_task", "model"], sort=True):
        if "clean" not in group:
            continue
        for control in (c for c in CONTROLS if c in group):
            both = group[group[control].notna() & group["clean"].notna()]
            if both.empty:
                continue
            c, x = both["clean"] == 1, both[control] == 1
            rows.append(
                {
                    "base_task": base,
                    "model": model,
                    "control": control,
                    "both": float((c & x).mean()),
                    "only_without": float((~c & x).mean()),
                    "needs_it": float((c & ~x).mean()),
                    "neither": float((~c & ~x).mean()),
                }
            )
    return pd.DataFrame(rows, columns=["base_task", "model", "control", "both", "only_without", "needs_it", "neither"])


def answerable_items(items: pd.DataFrame, min_models: int | None = None) -> pd.DataFrame:
    """Items answered correctly under a control by at least ``min_models`` of the models that ran
    it (default: every one), per base task and control, most models first: ``models_correct``,
    ``models`` (that ran it), ``correct_in_clean`` (how many of those answered it in clean) and
    the models' names."""
    rows = []
    for (base, doc), group in items.groupby(["base_task", "doc_id"], sort=True):
        for control in (c for c in CONTROLS if c in group):
            ran = group[group[control].notna()]
            if ran.empty:
                continue
            right = ran[ran[control] == 1]
            needed = len(ran) if min_models is None else min_models
            if len(right) >= max(1, needed):
                rows.append(
                    {
                        "base_task": base,
                        "control": control,
                        "sample_id": ran["sample_id"].iloc[0],
                        "doc_id": int(doc),
                        "models_correct": len(right),
                        "models": len(ran),
                        "correct_in_clean": int((right.get("clean", pd.Series(dtype=float)) == 1).sum()),
                        "model_names": ";".join(sorted(map(str, right["model"]))),
                    }
                )
    frame = pd.DataFrame(
        rows,
        columns=[
            "base_task",
            "control",
            "sample_id",
            "doc_id",
            "models_correct",
            "models",
            "correct_in_clean",
            "model_names",
        ],
    )
    return frame.sort_values(
        ["base_task", "control", "models_correct", "doc_id"], ascending=[True, True, False, True]
    ).reset_index(drop=True)
