"""The report on a wrapped task's own metrics (issue 27; design §7): ``sceval report`` on runs of
``<base>__<condition>__var<k>`` tasks.

Per base task, model and metric the base task reports, per condition:

* **value**: the base task's own aggregate (lmms-eval's, from results.json) per variant; the
  **mean** and the **worst** over the ``__var<k>`` variants;
* **drop** from clean, one sign convention: **clean − condition** where higher is better,
  **condition − clean** where lower is better (WER) — positive is always a loss; for the worst
  variant too;
* a **95 % paired bootstrap interval** of the mean-variant drop that resamples the adapter's unit
  with the same draws in clean and condition and recomputes the metric with the base task's own
  aggregation (:mod:`sceval_plugin.metrics.task_metrics`; the fast path when the metric is the
  plain mean of the per-doc 0/1 score);
* **coverage**: the share of docs with a reply (no ``empty``/``api_failure``), since base parsers
  hide failures (worldsense scores an unparseable reply as "A"; mvbench drops empty replies from
  its denominator);
* the unwrapped base task's value, when the folders hold a run of it: the effect of wrapping
  itself (16 kHz audio, re-encoded video) as one more row.

And the fault-line figures of :mod:`sceval_plugin.report.plots` (severity curves, severity-70
drop heatmap, modality × severity heatmap, joint scatter) per base task and metric, in the
metric's own units.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faultline_eval.core.figures import Figure
from faultline_eval.core.report_writer import Section
from faultline_eval.core.stats import percentile_interval, resample_weights
from faultline_eval.core.tables import Table, TrialLinks, json_records, trial_links, trials_in
from sceval_plugin.base_task import MetricSpec, aggregate, metric_specs
from sceval_plugin.conditions import BLOCKS
from sceval_plugin.metrics.protocol import ConditionInfo, Numbers, catalogue_info
from sceval_plugin.metrics.task_metrics import aggregate_drops, drop_sign, mean_factor, mean_score_drops
from sceval_plugin.report import plots
from sceval_plugin.report.protocol_section import operator_names
from sceval_plugin.report.wrapped_reader import WrappedRuns, condition_cell

__all__ = ["UNWRAPPED", "LEGEND", "metric_rows", "task_metric_section", "wrapped_head"]

#: The row of the unwrapped base task (the effect of wrapping itself), beside the conditions.
UNWRAPPED = "(unwrapped base task)"
#: The sign convention, stated once in every table caption and in report.json.
LEGEND = (
    "drop = clean − condition where higher is better, condition − clean where lower is better (e.g. WER): "
    "a positive drop is a loss, in the metric's own units"
)
#: Replies that are no reply: coverage leaves them out.
NO_REPLY = ("empty", "api_failure")

Aggregate = Callable[[list[Any]], float]


def _docs(runs: WrappedRuns, model: str, task: str, metric: str) -> pd.DataFrame:
    """The task's trial rows with this metric's items (column ``item``), by doc_id."""
    rows = runs.trials[(runs.trials["model"] == model) & (runs.trials["task"] == task)].copy()
    rows["item"] = runs.items.get((model, task, metric), [None] * len(rows))
    return rows.set_index("doc_id")


def _interval(
    runs: WrappedRuns,
    model: str,
    clean_tasks: list[str],
    tasks: list[str],
    spec: MetricSpec,
    aggregate_items: Aggregate,
    *,
    b: int,
    seed: int,
) -> tuple[float, float, str, str | None]:
    """(low, high, path, note) of the paired bootstrap interval of a condition's mean-variant drop."""
    frames = [_docs(runs, model, t, spec.name) for t in [*clean_tasks, *tasks]]
    docs = sorted(set.intersection(*(set(f.index[f["item"].notna()]) for f in frames)))
    note = None
    if any(len(f.index[f["item"].notna()]) != len(docs) for f in frames):
        note = (
            f"{model} {tasks[0].rsplit('__', 1)[0]} {spec.name}: clean and condition hold different docs; "
            f"the interval pairs the {len(docs)} both hold"
        )
    if not docs:
        return np.nan, np.nan, "no paired docs", note
    units = frames[0].loc[docs, "unit"].astype(str).tolist()
    weights = resample_weights(len(set(units)), b=b, seed=seed)
    item_lists = [f.loc[docs, "item"].tolist() for f in frames]
    score_lists = [f.loc[docs, "score"].tolist() for f in frames]
    factors = {mean_factor(i, s, aggregate_items) for i, s in zip(item_lists, score_lists)}
    k = len(clean_tasks)
    if len(factors) == 1 and None not in factors:
        factor = float(next(iter(factors)))  # type: ignore[arg-type]
        drops = mean_score_drops(
            score_lists[:k], score_lists[k:], units, weights, factor=factor, higher_is_better=spec.higher_is_better
        )
        path = "mean of the per-doc score"
    else:
        drops = aggregate_drops(
            item_lists[:k], item_lists[k:], units, aggregate_items, weights, higher_is_better=spec.higher_is_better
        )
        path = "the task's aggregation"
    low, high = percentile_interval(drops)
    return float(low), float(high), path, note


def _not_applied_notes(base: str, model: str, trials: pd.DataFrame) -> list[str]:
    """A note per condition whose probe did not apply to some docs (one frame where order is
    probed, audio too short): the base task scored them as shown, unchanged."""
    notes = []
    for cid, group in trials[trials["not_applicable"].notna()].groupby("condition_id", sort=True):
        total = int((trials["condition_id"] == cid).sum())
        reasons = ", ".join(f"{r} ({n})" for r, n in group["not_applicable"].value_counts().sort_index().items())
        notes.append(
            f"{base} ({model}) {cid}: the probe did not apply to {len(group)} of {total} trials ({reasons}); "
            "they were shown unchanged and the base metric counts them"
        )
    return notes


def metric_rows(
    runs: WrappedRuns,
    *,
    b: int,
    seed: int,
    specs: Callable[[str], list[MetricSpec]] = metric_specs,
    aggregate_of: Callable[[str, str], Aggregate] | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """One row per (base task, model, metric, condition): value (mean/worst variant), drop
    (mean/worst) with its interval, coverage; and notes. ``specs``/``aggregate_of`` give the base
    task's metrics and aggregation (Contract B, :mod:`sceval_plugin.base_task`)."""
    aggregate_of = aggregate_of or (lambda task, metric: functools.partial(aggregate, task, metric))
    values, trials = runs.values, runs.trials
    rows, notes = [], []
    for (base, model), group in values.groupby(["base_task", "model"], sort=True):
        reply = trials[(trials["base_task"] == base) & (trials["model"] == model)]
        coverage = (
            reply.assign(replied=~reply["invalid"].isin(NO_REPLY)).groupby("condition_id")["replied"].mean().to_dict()
        )
        notes += _not_applied_notes(base, model, reply)
        clean = group[group["condition_id"] == "clean"]
        for spec in specs(base):
            metric = group[group["metric"] == spec.name]
            if metric.empty and (model, base, spec.name) in runs.no_score:
                notes.append(
                    f"{base} ({model}): {spec.name} has no score: the task's aggregation of it returns none "
                    "(a metric that writes a submission file, which lmms-eval puts under the run's output path); "
                    "not reported and its aggregation not re-run"
                )
                continue
            if metric.empty:
                notes.append(f"{base} ({model}): results.json has no {spec.name}; the logs predate it or it failed")
                continue
            worst = min if spec.higher_is_better else max
            sign = drop_sign(spec.higher_is_better)
            clean_m = clean[clean["metric"] == spec.name]
            clean_value = clean_m["value"].mean() if len(clean_m) else np.nan
            if clean_m.empty:
                notes.append(f"{base} ({model}): no clean run, so no drops (run {base}__clean)")
            conditions = sorted(set(metric["condition_id"]), key=lambda c: (c != "clean", c))
            for cid in conditions:
                per_variant = metric[metric["condition_id"] == cid].sort_values("variant")
                mean, worst_value = per_variant["value"].mean(), worst(per_variant["value"])
                low = high = np.nan
                path = ""
                if cid != "clean" and len(clean_m):
                    low, high, path, note = _interval(
                        runs,
                        model,
                        clean_m["task"].tolist(),
                        per_variant["task"].tolist(),
                        spec,
                        aggregate_of(base, spec.name),
                        b=b,
                        seed=seed,
                    )
                    notes += [note] if note else []
                rows.append(
                    {
                        "base_task": base,
                        "model": model,
                        "metric": spec.name,
                        "higher_is_better": spec.higher_is_better,
                        "condition_id": cid,
                        "variants": len(per_variant),
                        "value": mean,
                        "worst_variant_value": worst_value,
                        "drop": sign * (clean_value - mean),
                        "drop_ci_low": low,
                        "drop_ci_high": high,
                        "worst_variant_drop": sign * (clean_value - worst_value),
                        "coverage": coverage.get(cid, np.nan),
                        "interval_by": path,
                    }
                )
            unwrapped = runs.unwrapped[
                (runs.unwrapped["model"] == model)
                & (runs.unwrapped["base_task"] == base)
                & (runs.unwrapped["metric"] == spec.name)
            ]
            if len(unwrapped):
                value = float(unwrapped["value"].iloc[-1])
                rows.append(
                    {
                        "base_task": base,
                        "model": model,
                        "metric": spec.name,
                        "higher_is_better": spec.higher_is_better,
                        "condition_id": UNWRAPPED,
                        "variants": 1,
                        "value": value,
                        "worst_variant_value": value,
                        "drop": sign * (clean_value - value),
                        "drop_ci_low": np.nan,
                        "drop_ci_high": np.nan,
                        "worst_variant_drop": sign * (clean_value - value),
                        "coverage": np.nan,
                        "interval_by": "",
                    }
                )
    return pd.DataFrame(rows), notes


def _ordered(rows: pd.DataFrame, info: dict[str, ConditionInfo]) -> pd.DataFrame:
    """Rows per base task, model and metric in catalogue block order (clean, the unwrapped base
    task, singles, joints, controls), then by condition id."""

    def rank(cid: str) -> int:
        if cid == UNWRAPPED:
            return 1
        block = info[cid].block if cid in info else ""
        return 0 if block == "clean" else 2 + (BLOCKS.index(block) if block in BLOCKS else len(BLOCKS))

    order = rows.assign(_rank=rows["condition_id"].map(rank))
    return (
        order.sort_values(["base_task", "model", "metric", "_rank", "condition_id"], kind="stable")
        .drop(columns="_rank")
        .reset_index(drop=True)
    )


def _number(x: float) -> str:
    return "–" if not np.isfinite(x) else f"{x:.2f}"


def _drop(x: float) -> str:
    return "–" if not np.isfinite(x) else (f"↓{x:.2f}" if x > 0 else (f"↑{-x:.2f}" if x < 0 else "±0"))


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": frame["model"],
            "metric": frame["metric"] + np.where(frame["higher_is_better"], " ↑", " ↓"),
            "condition": frame["condition_id"],
            "value": frame["value"].map(_number),
            "worst variant": frame["worst_variant_value"].map(_number),
            "variants": frame["variants"],
            "drop": frame["drop"].map(_drop),
            "95% CI": [
                "–" if not np.isfinite(lo) else f"[{lo:.2f}, {hi:.2f}]"
                for lo, hi in zip(frame["drop_ci_low"], frame["drop_ci_high"])
            ],
            "worst drop": frame["worst_variant_drop"].map(_drop),
            "coverage (%)": frame["coverage"].map(lambda c: "–" if not np.isfinite(c) else f"{100 * c:.1f}"),
        }
    )


def _links(frame: pd.DataFrame, shown: pd.DataFrame) -> TrialLinks:
    """The trials behind each number (the viewer's pages, ``faultline view``): a condition's
    value, worst variant and coverage are its trials over every variant (the worst is chosen among
    them); a drop, its interval and the worst drop are those with clean's. The unwrapped base
    task's row is not computed from wrapped trials: not linked."""
    rows = []
    for base, model, cid in zip(frame["base_task"], frame["model"], frame["condition_id"]):
        if cid == UNWRAPPED:
            rows.append({})
            continue
        cell = trials_in([condition_cell(base, cid)], model)
        drop = trials_in([condition_cell(base, "clean"), condition_cell(base, cid)], model)
        rows.append(
            {
                "value": cell,
                "worst variant": cell,
                "coverage (%)": cell,
                "drop": drop,
                "95% CI": drop,
                "worst drop": drop,
            }
        )
    return trial_links(shown, rows)


def _summary(rows: pd.DataFrame) -> pd.DataFrame:
    """The figures' input (:attr:`Numbers.summary`): value as ``accuracy``, drop as ``delta_base``;
    no interval of the value itself (the paired intervals are of the drops, in the table)."""
    summary = rows[rows["condition_id"] != UNWRAPPED].rename(columns={"value": "accuracy", "drop": "delta_base"})
    return summary.assign(ci_low=np.nan, ci_high=np.nan)


def _numbers(summary: pd.DataFrame) -> Numbers:
    empty = pd.DataFrame()
    return Numbers(summary, empty, empty, empty, empty, empty, empty, empty, empty, [])


def _figures(rows: pd.DataFrame, info: dict[str, ConditionInfo], drawn: bool) -> tuple[list[Figure], dict[str, str]]:
    """The SCEval figures per (base task, metric), rows = models, in the metric's own units."""
    out, skipped = [], {}
    ops = operator_names()
    for (base, metric), group in rows.groupby(["base_task", "metric"], sort=True):
        higher = bool(group["higher_is_better"].iloc[0])
        axis = plots.Axis(
            factor=1.0,
            value=f"{metric} ({'higher' if higher else 'lower'} is better)",
            drop=f"drop from clean ({metric})",
            drop_note=f"{metric}; {'clean − condition' if higher else 'condition − clean'}, positive = a loss",
            curve_title=f"{base}: {metric}, mean over variants",
            intervals=None,  # the table has the drops' paired intervals
            limits=None,
        )
        numbers = _numbers(_summary(group))
        found = plots.figures(numbers, info, ops, axis)
        found["modality_severity_heatmap"] = plots.modality_severity_figure(numbers, info, axis)
        for name, (draw, caption, reason) in found.items():
            stem = f"{base}__{metric}__{name}"
            reason = reason or (None if drawn else "figures turned off (--no-figures)")
            if reason:
                skipped[stem] = reason
            else:
                out.append(Figure(stem, functools.partial(draw, numbers, info), f"{base}, {metric}: {caption}"))
    return out, skipped


def task_metric_section(
    runs: WrappedRuns, *, b: int, seed: int, figures: bool = True, info: dict[str, ConditionInfo] | None = None
) -> Section:
    """The tables (one per base task: ``task_metrics_<base>``), figures and report.json entries
    of the wrapped runs' own metrics (see the module docstring)."""
    info = info or catalogue_info()
    unknown = sorted(set(runs.trials["condition_id"]) - set(info))
    if unknown:
        raise ValueError(f"wrapped runs of conditions not in the installed catalogue: {', '.join(unknown[:5])}")
    rows, notes = metric_rows(runs, b=b, seed=seed)
    if rows.empty:
        return Section(notes=[*runs.notes, *notes, "task metrics: no metric of the base tasks in these runs"])
    rows = _ordered(rows, info)
    tables = [
        Table(
            f"task_metrics_{base}",
            f"{base}: the task's own metrics per condition (mean and worst over variants), drop from clean with "
            f"its 95% paired bootstrap interval, and coverage (share of docs with a reply). {LEGEND}",
            shown,
            group.reset_index(drop=True),
            trial_links=_links(group, shown),
        )
        for base, group in rows.groupby("base_task", sort=True)
        for shown in [_shown(group)]
    ]
    drawn, skipped = _figures(rows, info, figures)
    return Section(
        tables=tables,
        figures=drawn,
        notes=[*runs.notes, *notes, *(f"figure {name} not drawn: {why}" for name, why in skipped.items())],
        numbers={"task_metrics": json_records(rows), "task_metrics_legend": LEGEND, "figures_skipped": skipped},
    )


def wrapped_head(runs: WrappedRuns, run_dirs: Sequence[str | Path], *, b: int, seed: int) -> dict[str, Any]:
    """report.json's first entries for a report of wrapped runs: the settings and the counts."""
    return {
        "settings": {"bootstrap_resamples": b, "seed": seed, "ci_level": 0.95, "runs": [str(r) for r in run_dirs]},
        "counts": {
            "trials": int(len(runs.trials)),
            "models": sorted(map(str, runs.trials["model"].unique())),
            "base_tasks": sorted(map(str, runs.trials["base_task"].unique())),
            "conditions": int(runs.trials["condition_id"].nunique()),
        },
    }
