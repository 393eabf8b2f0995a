"""Writing and comparing verdict files (the format is described in
:mod:`c3po_plugin.report.verdicts`, which also applies them to a report).

``c3po judge RUN_DIR ... --judge SPEC -o FILE`` re-grades finished runs with another judge (no
model is re-run), human answers included (one line per item, model ``Human``); each line also
carries the folder, question, gold answer and prediction, so the file reads on its own. ``c3po judge-agreement A B`` compares two such files.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from c3po_plugin.data.sources import current_spec, load_source
from c3po_plugin.metrics import HUMAN
from c3po_plugin.report.reader import read_runs
from c3po_plugin.report.verdicts import read_verdicts
from c3po_plugin.templates import registry
from faultline_eval.core.agreement import agreement_rate, cohen_kappa
from faultline_eval.core.identity import matching_source
from faultline_eval.core.store import replacing
from faultline_eval.judges import grade, open_cache
from faultline_eval.judges.base import YES, Judge, JudgeRequest
from faultline_eval.judges.judge_prompt import describe_sample

if TYPE_CHECKING:  # pragma: no cover
    from c3po_plugin.data.records import C3POItem

JOIN = ["model", "sample_id", "run", "folder"]


def logged_items(trials) -> dict[tuple[str, str], C3POItem]:
    """The items behind the logs, for a judge that is shown their media: each logged dataset
    (``spec#fingerprint``) is loaded again and used only if its fingerprint still matches, so a
    judge never sees media other than those the model saw (the fingerprint is the items' content:
    a copy in another folder, named by ``C3PO_SOURCE``, serves as well). Items not found are left out; their
    requests become ``media_unavailable`` judge errors."""
    from loguru import logger

    found = {}
    for dataset in trials["dataset"].dropna().unique():
        try:  # the logged spec, else C3PO_SOURCE: the run's items moved or copied elsewhere
            source, note = matching_source(dataset, load_source, [str(dataset).rpartition("#")[0], current_spec()])
        except LookupError as exc:
            logger.error(f"c3po judge: {exc}; its trials are judged without media: media_unavailable")
            continue
        if note:
            logger.warning(f"c3po judge: {note}")
        found.update({(dataset, item.sample_id): item for item in source.items})
    return found


def regrade(run_dirs: Sequence[str | Path], judge: Judge, out: str | Path, *, batch: int = 64) -> dict:
    """Grade every answered trial of the runs with ``judge`` (cached) and write a verdict file.
    Trials with nothing to grade (API failure, empty reply, refusal) are written with verdict
    null and the reason."""
    from tqdm.auto import tqdm

    trials, _ = read_runs(run_dirs)
    answered = trials[trials["invalid"].isna()]
    counts = {
        "trials": len(trials),
        "unanswered": len(trials) - len(answered),
        "yes": 0,
        "no": 0,
        "errors": 0,
        "exact_match": 0,
    }
    cache = open_cache(judge)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def line(row, verdict, exact, error) -> str:
        return (
            json.dumps(
                {
                    "model": row.model,
                    "sample_id": row.sample_id,
                    "run": int(row.run),
                    "folder": str(Path(row.folder).resolve()) if row.folder else None,
                    "question": row.question,
                    "gold": row.gold,
                    "prediction": row.prediction or "",
                    "exact_match": exact,
                    "judge_id": judge.judge_id,
                    "verdict": verdict,
                    "error": error,
                }
            )
            + "\n"
        )

    items = logged_items(trials) if getattr(judge, "sees_media", False) else {}
    with replacing(out) as temporary, temporary.open("w") as f:  # a killed regrade leaves the old file
        for row in trials[trials["invalid"].notna()].itertuples():
            f.write(line(row, None, False, f"no answer: {row.invalid}"))
        # The items' human answers are graded by the same judge, once per item (model "Human").
        humans = trials[trials["human_answer"].notna()].drop_duplicates("sample_id")
        humans = humans.assign(model=HUMAN, run=0, folder="", prediction=humans["human_answer"])
        rows = list(answered.itertuples()) + list(humans.itertuples())
        for start in tqdm(range(0, len(rows), batch), desc=f"judging with {judge.judge_id}", unit="batch"):
            chunk = rows[start : start + batch]
            requests = [
                JudgeRequest(
                    r.sample_id,
                    r.question,
                    r.gold,
                    r.prediction or "",
                    describe_sample(registry().get(r.template_id), r.context),
                    item=items.get((r.dataset, r.sample_id)),
                )
                for r in chunk
            ]
            for row, graded in zip(chunk, grade(requests, judge, cache)):
                value = YES if graded.exact_match else graded.verdict.value
                counts["exact_match"] += graded.exact_match
                counts["errors"] += value is None
                counts["yes" if value == YES else "no"] += value is not None
                f.write(line(row, value, graded.exact_match, graded.judge_error))
    counts["human"] = len(humans)
    return counts


def _agreement_of(decided) -> dict:
    """Agreement, kappa and confusion counts of the decided pairs of one group."""
    labels_a, labels_b = list(decided["value_a"] == 1.0), list(decided["value_b"] == 1.0)
    confusion = {
        f"{x}/{y}": int(((decided["value_a"] == vx) & (decided["value_b"] == vy)).sum())
        for x, vx in (("YES", 1.0), ("NO", 0.0))
        for y, vy in (("YES", 1.0), ("NO", 0.0))
    }
    return {
        "compared": len(decided),
        "agreement": agreement_rate(labels_a, labels_b) if len(decided) else math.nan,
        "kappa": cohen_kappa(labels_a, labels_b) if len(decided) else math.nan,
        "confusion": confusion,
    }


def agreement(path_a: str | Path, path_b: str | Path, *, include_exact: bool = False) -> dict:
    """Judge validation as in the paper's Appendix D: agreement rate and Cohen's kappa between
    two judges **per evaluated model**, and their mean, minimum and maximum across the models
    (the paper: mean agreement 93 %, kappa mean 0.88, min 0.74, max 0.98 over four models).

    ``per_model`` has one row per model (the pseudo-model ``Human`` included, but left out of the
    summary: the paper validated the judge on model answers); ``pooled`` is every trial together.
    Trials either judge failed on are left out and counted (``either_failed``). Exact-match
    trials, which neither judge was asked about, are left out by default (``include_exact=False``:
    agreement on the judges' own decisions); ``include_exact=True`` counts them as YES by both
    (agreement on the final grades, the other reading of App. D)."""
    a, b = read_verdicts(path_a), read_verdicts(path_b)
    for frame in (a, b):
        frame["folder"] = frame["folder"].fillna("")
    both = a.merge(b, on=JOIN, suffixes=("_a", "_b"))
    exact = both["exact_match_a"] | both["exact_match_b"]
    if include_exact:
        both.loc[exact, ["value_a", "value_b"]] = 1.0
    counted = both if include_exact else both[~exact]
    failed = counted["value_a"].isna() | counted["value_b"].isna()
    decided = counted[~failed]
    per_model = []
    for model in sorted(map(str, both["model"].unique()), key=lambda m: (m == HUMAN, m)):
        row = {
            "model": model,
            **_agreement_of(decided[decided["model"] == model]),
            "either_failed": int(failed[counted["model"] == model].sum()),
            "exact_match_trials": int(exact[both["model"] == model].sum()),
        }
        per_model.append(row)
    validated = [r for r in per_model if r["model"] != HUMAN and r["compared"]]

    def spread(key: str) -> dict:
        values = [r[key] for r in validated if not math.isnan(r[key])]
        return (
            {"mean": sum(values) / len(values), "min": min(values), "max": max(values)}
            if values
            else {"mean": math.nan, "min": math.nan, "max": math.nan}
        )

    return {
        "judge_a": a["judge_id"].iloc[0] if len(a) else None,
        "judge_b": b["judge_id"].iloc[0] if len(b) else None,
        "include_exact": include_exact,
        "models": len(validated),
        "agreement": spread("agreement"),
        "kappa": spread("kappa"),
        "per_model": per_model,
        "pooled": _agreement_of(decided),
        "compared": len(decided),
        "exact_match_trials": int(exact.sum()),
        "either_failed": int(failed.sum()),
        "only_in_a": len(a) - len(both),
        "only_in_b": len(b) - len(both),
    }
