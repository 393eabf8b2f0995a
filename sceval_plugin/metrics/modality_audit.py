"""The modality-necessity audit of a wrapped benchmark (issue 27; design §8): which items stay
answerable when a modality, or everything but the question and options, is taken away.

Input: a trial table of wrapped runs (columns ``model``, ``base_task``, ``condition_id``,
``variant``, ``sample_id``, ``doc_id``, ``correct``, ``n_options``) holding ``clean`` and any of the
:data:`CONTROLS` (SCEval's control ids, ``sceval_plugin.conditions.CONTROLS``). An item is
*answerable* under a condition when the model answers it correctly in a majority of the
condition's variants (a control has one variant: when it is correct). Per base task, model and
control (:func:`control_shares`):

* ``answerable``: the share of items answerable under the control, with ``chance``, the mean of
  1/(option count) over the same items (what guessing would reach);
* ``answerable_among_clean``: the share still answerable among the items answerable in clean;
* ``needs``: 1 − ``answerable_among_clean``, "how much of this benchmark needs the audio" for
  ``missing_audio`` (vision, text: ``missing_vision``, ``missing_text``; the media as a whole:
  ``shortcut_question_options``).

:func:`answerable_items` lists the items answered with a modality removed by at least ``k`` of
the ``m`` models, for a benchmark author to act on.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sceval_plugin import conditions

__all__ = ["CONTROLS", "NEEDS", "per_item", "control_shares", "answerable_items", "outcome_shares"]

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
#: An item is a doc of the base task: its row index pairs the conditions of a run (the sample id
#: is the adapter's key, which two docs may share: MME's two questions of an image).
_KEYS = ["base_task", "model", "doc_id"]


def per_item(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per (base task, model, item = doc): per condition (clean and the controls run)
    whether the item is answerable (1/0; NaN: not run or no 0/1 score), its sample id and option
    count."""
    t = trials[trials["condition_id"].isin(("clean", *CONTROLS))]
    t = t.assign(correct=pd.to_numeric(t["correct"], errors="coerce"))
    answerable = t.groupby([*_KEYS, "condition_id"], observed=True)["correct"].mean()
    wide = (answerable >= 0.5).astype(float).where(answerable.notna()).unstack("condition_id")
    first = t.groupby(_KEYS, observed=True)[["sample_id", "n_options"]].first()
    return wide.join(first).reset_index()


def control_shares(items: pd.DataFrame) -> pd.DataFrame:
    """Per (base task, model, control run): items scored, ``answerable`` and ``chance``,
    ``clean_answerable`` (items answerable in clean among those), ``answerable_among_clean`` and
    ``needs`` (see the module docstring); NaN where clean was not run."""
    rows = []
    for (base, model), group in items.groupby(["base_task", "model"], sort=True):
        for control in (c for c in CONTROLS if c in group and group[c].notna().any()):
            scored = group[group[control].notna()]
            chance = (1.0 / scored["n_options"]).mean() if scored["n_options"].notna().all() else np.nan
            row = {
                "base_task": base,
                "model": model,
                "control": control,
                "takes_away": NEEDS[control],
                "items": len(scored),
                "answerable": scored[control].mean(),
                "chance": chance,
                "clean_answerable": np.nan,
                "answerable_among_clean": np.nan,
                "needs": np.nan,
            }
            if "clean" in scored and scored["clean"].notna().any():
                in_clean = scored[scored["clean"] == 1]
                row["clean_answerable"] = len(in_clean)
                if len(in_clean):
                    row["answerable_among_clean"] = in_clean[control].mean()
                    row["needs"] = 1.0 - row["answerable_among_clean"]
            rows.append(row)
    return pd.DataFrame(
        rows,
        columns=[
            "base_task",
            "model",
            "control",
            "takes_away",
            "items",
            "answerable",
            "chance",
            "clean_answerable",
            "answerable_among_clean",
            "needs",
        ],
    )


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
