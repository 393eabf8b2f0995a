"""Re-grading logged answers with another judge, without re-running the model.

A verdicts file is JSONL, one line per judged trial::

    {"model": "qwen2_5_omni:Qwen/Qwen2.5-Omni-7B", "sample_id": "c3po-0042", "run": 0,
     "verdict": "YES", "exact_match": false, "judge_id": "gemini-3-flash"}

``model`` is the report's model label or the model name in the records; ``run`` the run index
(the trial entry's ``v``); ``verdict`` is ``"YES"``, ``"NO"`` or ``null`` (the judge failed);
``exact_match``, ``judge_id`` and ``folder`` are optional. With ``folder`` a line applies only to
the trials logged in that folder; without it, to that (model, sample, run) in every folder.

The join replaces the logged judge decision of every matching trial that had an answer to grade:

* an exact-match trial (logged ``x`` = 1, or the line's ``exact_match`` true) stays correct;
* ``YES`` makes it correct, ``NO`` wrong (its failure mode recomputed from the logged prediction
  and distractors), ``null`` ungradable (counted as a judge error, missing for accuracy);
* empty replies, refusals and API failures keep their grade: there was nothing to judge.

Trials without a line keep their logged decision; lines matching no trial are counted in a note.
Lines of the model ``Human`` (``c3po judge`` writes one per item with a human answer) re-grade
the item's human answer: exact match or ``YES`` correct, ``NO`` wrong, ``null`` ungraded.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from c3po_plugin.failure_modes import failure_mode
from c3po_plugin.metrics import HUMAN
from faultline_eval.core.run_logs import ReportError

_VALUES = {"YES": 1.0, "NO": 0.0, None: np.nan}


def read_verdicts(path: str | Path) -> pd.DataFrame:
    """The lines of a verdicts file as a frame (model, sample_id, run, value, exact_match, judge_id, folder)."""
    rows = []
    for number, text in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        where = f"{path}:{number}"
        try:
            line = json.loads(text)
            verdict = line.get("verdict")
            verdict = verdict.strip().upper() if isinstance(verdict, str) else verdict
            if verdict not in _VALUES:
                raise ValueError(f"verdict must be YES, NO or null, got {line.get('verdict')!r}")
            rows.append(
                {
                    "model": str(line["model"]),
                    "sample_id": line["sample_id"],
                    "run": int(line["run"]),
                    "value": _VALUES[verdict],
                    "exact_match": bool(line.get("exact_match")),
                    "judge_id": line.get("judge_id") or f"verdicts:{Path(path).name}",
                    "folder": line.get("folder"),
                }
            )
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ReportError(f"{where}: not a verdict line ({exc})") from None
    return pd.DataFrame(rows, columns=["model", "sample_id", "run", "value", "exact_match", "judge_id", "folder"])


def _resolved(folder: object) -> str | None:
    return None if folder is None or (isinstance(folder, float) and np.isnan(folder)) else str(Path(folder).resolve())


def apply_verdicts(
    trials: pd.DataFrame, verdicts: pd.DataFrame, source: str = "verdicts"
) -> tuple[pd.DataFrame, list[str]]:
    """``trials`` with the judge decisions of ``verdicts`` (see the module docstring) and notes."""
    t = trials.reset_index(drop=True)
    human = verdicts[verdicts["model"] == HUMAN]
    verdicts = verdicts[verdicts["model"] != HUMAN]
    notes = []
    if len(human):
        value = human.set_index("sample_id")["value"].where(~human.set_index("sample_id")["exact_match"], 1.0)
        has = t["sample_id"].isin(value.index)
        t.loc[has, "human_correct"] = t.loc[has, "sample_id"].map(value).to_numpy()
        notes.append(f"{source}: re-graded the human answers of {int(t.loc[has, 'sample_id'].nunique())} item(s)")
    t["_row"] = np.arange(len(t))
    t["_folder"] = t["folder"].map(_resolved)
    v = verdicts.assign(_folder=verdicts["folder"].map(_resolved), _line=np.arange(len(verdicts)))
    matches = []
    for key in ("model", "model_name"):  # a line may name the report label or the records' model
        joined = t.merge(
            v.drop(columns="folder"),
            left_on=[key, "sample_id", "run"],
            right_on=["model", "sample_id", "run"],
            suffixes=("", "_v"),
        )
        joined = joined[joined["_folder_v"].isna() | (joined["_folder_v"] == joined["_folder"])]
        matches.append(joined)
    every = pd.concat(matches)
    m = every.drop_duplicates("_row", keep="first")
    m = m[m["invalid"].isna()]  # nothing to judge in an empty reply, refusal or API failure
    exact = m["exact"].astype(bool) | m["exact_match"].astype(bool)
    value = np.where(exact, 1.0, m["value"])
    rows = m["_row"].to_numpy()
    t.loc[rows, "correct"] = value
    t.loc[rows, "judged"] = ~exact.to_numpy() & ~np.isnan(value)
    t.loc[rows, "judge_error"] = ~exact.to_numpy() & np.isnan(value)
    t.loc[rows, "judge_id"] = m["judge_id_v"].to_numpy()
    modes = [
        failure_mode(p or "", d or {}) if c == 0 else None for p, d, c in zip(m["prediction"], m["distractors"], value)
    ]
    t["failure_mode"] = t["failure_mode"].astype(object)
    t.loc[rows, "failure_mode"] = pd.Series(modes, index=rows, dtype=object)
    kept = int(((trials["judged"] | trials["judge_error"]).to_numpy() & ~np.isin(t["_row"], rows)).sum())
    notes.append(
        f"{source}: re-graded {len(rows)} trial(s); {kept} judged trial(s) had no line and keep the logged decision"
    )
    unused = len(v) - every["_line"].nunique()
    if unused > 0:
        notes.append(f"{source}: {unused} line(s) matched no trial")
    return t.drop(columns=["_row", "_folder"]), notes
