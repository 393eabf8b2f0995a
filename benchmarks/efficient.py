"""Budgeted evaluation against the full SCEval protocol (issue 39), part 1: a simulation at the paper's scale.

**What is simulated.** 15 models × 273 items (Table 1: 100 Social-IQ, 77 OmniBench, 96 VALOR) × the
clean condition and the 102 cells of the grid (56 single: 14 operators × severities 10/30/50/70; 46
joint: the ``combined_extended`` suite), each cell with its registered number of variants (1 for the
deterministic operators, 3 for the stochastic ones): 70,707 requests per model for the full grid (the
controls and probes of the full protocol come on top and are not simulated). A response is correct
with probability σ((θ_m − b_i − e_{m,c} − s·z_{i,c}) / κ): model ability θ_m, item difficulty b_i,
condition effect e_{m,c}, item × condition interaction z_{i,c}; clean and corrupted trials of an item
share b_i (that is what makes the drops paired). θ_m and e_{m,c} are solved so that the expected
accuracies equal the paper's numbers:

- clean accuracy and the severity-70 accuracy of every single operator for all 15 models: Table 2
  (transcribed below as :data:`TABLE_2`);
- the severity profile 10/30/50 → 70 of each operator: Table 6 (Qwen3.5-Omni-Plus and Gemini 3 Flash,
  ``tests/paper_tables.py``), as the anchors' mean drop at each severity over their mean drop at 70,
  applied to each model's Table-2 drop;
- joint cells: Table 5's 29 cells (the same two models), each model's drop scaled by its mean
  Table-2 drop on the cell's operators over the anchors'; the 17 extended cells that Table 5 does not
  list get the largest of the cell's single drops plus 0.3 × the others (an assumption, not the paper).

Each repetition draws fresh items, interactions and responses; the "full run" is that repetition's
every response, and each method sees a part of the same responses.

**Methods, per model, at the same request budget** (``--budget-share``, default 1/10 of the grid):

- ``sequential`` (faultline_eval.core.sequential): the clean condition on every item first, then
  rounds of ``--round`` units per unresolved cell, units in a seeded order stratified by source,
  category and clean correctness (variant 0 of every item before variant 1); a cell stops when its
  anytime-valid interval (empirical-Bernstein confidence sequence, sampling without replacement) is
  at most ``--precision`` wide each side or its anytime p-value is below alpha / cells (Holm at the end);
- ``random``: k items drawn uniformly, every condition and variant on them (k = budget / requests per
  item), fixed-n normal intervals with the finite-population correction, Holm on z-test p-values;
- ``power``: the fixed n that lmms-eval 0.7.3's ``power`` subcommand sizes (``lmms_eval.api.metrics.
  power_analysis``: paired t-test, effect = ``--precision``·2, std from the clean run, correlation 0.5),
  capped at 273 items; it is run at its own request count, which the output states.

**Figures** (means over repetitions, per method): requests used / the full grid; Kendall τ_b between
the full run's and the estimate's ranking of each model's 102 cells (mean over models); τ_b of the
15 models ranked by panel fault (mean of the four fault-line scores FS_tv/ta/va/tva, Table 20);
coverage of the full-run drops by the reported 95 % intervals; share of the full run's significant
cells (two-sided paired z-test on item means, Holm over each model's 102 cells, alpha 0.05) that the
method finds significant with the same sign; the largest error (pp) over models of the headline
numbers (clean accuracy, the four FS, the panel fault, the mean severity-70 drop per modality).

    python benchmarks/efficient.py                      # 200 repetitions, about a few minutes on 2 cores
    python benchmarks/efficient.py --smoke              # 3 repetitions, seconds
    python benchmarks/efficient.py --json benchmarks/results/efficient.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import paper_tables  # noqa: E402  (tests/paper_tables.py: Tables 5 and 6)

from benchmarks import provenance  # noqa: E402
from faultline_eval.core.sequential import drop_sequence, stratified_order  # noqa: E402
from faultline_eval.core.stats import holm  # noqa: E402
from sceval_plugin.conditions import PANEL, catalogue, joint_id, single_id  # noqa: E402

#: Table 2's operator columns, in its order.
OPERATORS = (
    "typo_ocr",
    "drop_words",
    "word_shuffle",
    "sentence_break",
    "noise",
    "occlusion",
    "low_resolution",
    "motion_blur",
    "defocus_blur",
    "overexposure",
    "brightness",
    "remove",
    "mute",
    "distortion",
)
#: Table 2 (SCEval, severity-70 single-modality matrix): clean accuracy, then the accuracy (%) under
#: each of :data:`OPERATORS` at severity 70, per model.
TABLE_2 = {
    "Gemini 3.1 Pro": (
        84.15,
        79.85,
        72.57,
        75.54,
        80.72,
        73.57,
        82.88,
        85.07,
        82.29,
        83.7,
        85.08,
        84.88,
        78.89,
        80.62,
        86.17,
    ),
    "Gemini 3 Pro": (
        82.4,
        76.72,
        71.3,
        73.16,
        80.27,
        73.0,
        80.09,
        83.8,
        81.41,
        82.89,
        80.49,
        83.88,
        76.36,
        75.82,
        82.51,
    ),
    "Gemini 3 Flash": (
        80.95,
        71.06,
        67.4,
        70.33,
        72.89,
        67.79,
        80.33,
        80.97,
        77.59,
        78.95,
        79.37,
        80.3,
        74.3,
        73.24,
        79.17,
    ),
    "Gemini 3.5 Flash": (
        78.39,
        72.53,
        67.03,
        68.5,
        73.63,
        62.75,
        75.14,
        78.96,
        75.56,
        77.47,
        79.3,
        78.31,
        73.45,
        71.0,
        77.83,
    ),
    "Gemini 2.5 Pro": (
        79.12,
        75.32,
        67.41,
        68.4,
        71.77,
        70.26,
        76.97,
        79.73,
        77.4,
        80.3,
        79.44,
        79.19,
        74.64,
        72.9,
        77.81,
    ),
    "GPT-4o": (83.5, 78.18, 75.01, 76.73, 79.75, 73.93, 81.18, 85.46, 84.39, 84.96, 82.07, 83.27, 77.25, 77.99, 85.34),
    "Gemini 2.5 Flash": (
        75.4,
        67.31,
        62.55,
        65.99,
        69.37,
        63.55,
        73.32,
        73.46,
        74.32,
        73.48,
        74.32,
        72.89,
        65.91,
        65.86,
        72.25,
    ),
    "Qwen3.5-Omni-Plus": (
        73.63,
        69.6,
        64.1,
        65.2,
        69.6,
        70.37,
        70.49,
        71.79,
        71.02,
        71.83,
        71.65,
        73.68,
        70.95,
        69.72,
        75.0,
    ),
    "Qwen3-Omni-30B": (
        71.2,
        63.86,
        61.22,
        58.59,
        64.89,
        61.43,
        66.13,
        70.07,
        67.67,
        67.25,
        67.37,
        67.77,
        65.32,
        61.95,
        70.49,
    ),
    "MiniCPM-o 4.5": (
        74.5,
        69.02,
        63.14,
        61.38,
        67.96,
        65.41,
        71.47,
        73.33,
        73.84,
        74.38,
        74.95,
        74.05,
        65.58,
        69.13,
        74.93,
    ),
    "Qwen2.5-Omni-7B": (
        68.4,
        59.89,
        56.79,
        53.8,
        61.18,
        58.76,
        65.75,
        67.24,
        65.89,
        66.99,
        65.17,
        66.96,
        58.55,
        61.3,
        68.34,
    ),
    "OmniVinci-9B": (
        69.1,
        64.17,
        57.65,
        55.61,
        62.76,
        54.22,
        66.55,
        65.91,
        67.84,
        65.89,
        65.56,
        67.59,
        61.0,
        58.9,
        67.25,
    ),
    "OLA-7B": (66.8, 61.5, 56.18, 55.73, 59.75, 54.58, 63.34, 65.07, 62.65, 65.99, 62.88, 62.79, 57.45, 57.81, 66.29),
    "Qwen2.5-Omni-3B": (
        64.2,
        55.31,
        53.8,
        51.01,
        56.49,
        48.75,
        60.61,
        62.98,
        61.76,
        62.29,
        62.61,
        62.38,
        55.83,
        55.09,
        62.68,
    ),
    "Baichuan-Omni-1.5": (
        65.5,
        56.6,
        54.73,
        54.09,
        56.71,
        49.8,
        59.21,
        63.52,
        61.56,
        65.03,
        64.34,
        61.55,
        54.69,
        55.93,
        63.99,
    ),
}
#: Table 1: items per source.
SOURCES = {"socialiq": 100, "omnibench": 77, "valor": 96}
SEVERITIES = (10, 30, 50, 70)
#: Response-model spreads (logit units): item difficulty, item × condition interaction, trial noise scale.
DIFFICULTY_SD, INTERACTION_SD, NOISE_SCALE = 1.6, 0.6, 0.5
#: Weight of a joint cell's other components beside its largest single drop (extended cells only).
JOINT_REST = 0.3


@dataclass(frozen=True)
class Grid:
    """The simulated protocol: cells, their variants and blocks, and the target accuracies (0-1)."""

    cells: list[str]
    variants: np.ndarray  # (C,)
    block: np.ndarray  # (C,) "single", "tv", "ta", "va", "tva"
    modality: np.ndarray  # (C,) of a single cell: "t", "v", "a" ("" for joint cells)
    severity70: np.ndarray  # (C,) bool: a severity-70 single cell
    panel: np.ndarray  # (C,) bool: one of the 12 panel cells
    clean: np.ndarray  # (M,)
    accuracy: np.ndarray  # (M, C)

    @property
    def full_requests(self) -> int:
        return int(len(ITEM_SOURCES) * (1 + self.variants.sum()))


ITEM_SOURCES = np.repeat(np.arange(len(SOURCES)), list(SOURCES.values()))


def paper_grid() -> Grid:
    """The 102 cells with each model's target accuracy, from Tables 2, 5 and 6 (see the module doc)."""
    registry = catalogue()
    table = np.array(list(TABLE_2.values())) / 100
    clean, single70 = table[:, 0], table[:, 1:]
    drop70 = clean[:, None] - single70  # (M, 14)
    anchors = {
        "qwen": (paper_tables.QWEN_SINGLES, paper_tables.CLEAN["qwen3.5-omni-plus"]),
        "flash": (paper_tables.FLASH_SINGLES, paper_tables.CLEAN["gemini-3-flash"]),
    }
    profile = np.zeros((len(OPERATORS), len(SEVERITIES)))
    for k, op in enumerate(OPERATORS):
        drops = np.array([[clean_a - acc for acc in singles[op]] for singles, clean_a in anchors.values()]).mean(axis=0)
        profile[k] = np.clip(drops / drops[-1], 0, 1.5) if drops[-1] >= 1 else np.array(SEVERITIES) / 70
    cells, variants, block, modality, sev70, acc_cols = [], [], [], [], [], []
    for k, op in enumerate(OPERATORS):
        for j, sev in enumerate(SEVERITIES):
            cid = single_id(op, sev)
            condition = registry.get(cid)
            cells.append(cid)
            variants.append(condition.variants)
            block.append("single")
            modality.append(condition.corruptions[0].modality[0])
            sev70.append(sev == 70)
            acc_cols.append(clean - drop70[:, k] * profile[k, j])
    op_index = {op: k for k, op in enumerate(OPERATORS)}
    anchor_rows = [list(TABLE_2).index("Qwen3.5-Omni-Plus"), list(TABLE_2).index("Gemini 3 Flash")]
    table5 = {
        joint_id(*parts): (paper_tables.CLEAN["gemini-3-flash"] - flash, paper_tables.CLEAN["qwen3.5-omni-plus"] - qwen)
        for parts, flash, qwen in paper_tables.JOINT
    }
    for condition in (registry.get(n) for n in registry.names()):
        if "combined_extended" not in condition.suites:
            continue
        ops = [op_index[c.operator] for c in condition.corruptions]
        if condition.id in table5:
            flash, qwen = table5[condition.id]
            scale = drop70[:, ops].mean(axis=1) / drop70[anchor_rows][:, ops].mean()
            drop = (flash + qwen) / 200 * scale
        else:
            singles = np.stack(
                [
                    drop70[:, op_index[c.operator]] * profile[op_index[c.operator], SEVERITIES.index(c.severity)]
                    for c in condition.corruptions
                ],
                axis=1,
            )
            drop = singles.max(axis=1) + JOINT_REST * (singles.sum(axis=1) - singles.max(axis=1))
        cells.append(condition.id)
        variants.append(condition.variants)
        block.append(condition.block)
        modality.append("")
        sev70.append(False)
        acc_cols.append(clean - drop)
    return Grid(
        cells,
        np.array(variants),
        np.array(block),
        np.array(modality),
        np.array(sev70),
        np.isin(cells, PANEL),
        clean,
        np.stack(acc_cols, axis=1),
    )


def _bisect(target: np.ndarray, mean_accuracy, low: float = -15.0, high: float = 15.0, steps: int = 50) -> np.ndarray:
    """Solve mean_accuracy(x) = target elementwise for x, mean_accuracy decreasing in x."""
    lo, hi = np.full(target.shape, low), np.full(target.shape, high)
    for _ in range(steps):
        mid = (lo + hi) / 2
        too_accurate = mean_accuracy(mid) > target
        lo, hi = np.where(too_accurate, mid, lo), np.where(too_accurate, hi, mid)
    return (lo + hi) / 2


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def calibrate(grid: Grid, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """θ (M,) and e (M, C) whose expected accuracies over the item and interaction distribution
    equal the grid's targets (a reference sample of 2000 items)."""
    rng = np.random.default_rng(seed)
    b = rng.normal(0, DIFFICULTY_SD, 2000)
    z = rng.normal(0, INTERACTION_SD, 2000)
    ability = -_bisect(grid.clean, lambda x: _sigmoid((-x[:, None] - b) / NOISE_SCALE).mean(axis=1))
    effect = _bisect(
        grid.accuracy, lambda e: _sigmoid((ability[:, None, None] - b - e[..., None] - z) / NOISE_SCALE).mean(axis=-1)
    )
    return ability, effect


@dataclass
class Responses:
    """One repetition's full run: clean (M, I) and corrupted (M, C, I, 3) correctness (variant slots
    beyond a cell's variants are unused)."""

    clean: np.ndarray
    corrupted: np.ndarray
    category: np.ndarray  # (I,)


def simulate(grid: Grid, ability: np.ndarray, effect: np.ndarray, rng: np.random.Generator) -> Responses:
    items = len(ITEM_SOURCES)
    b = rng.normal(0, DIFFICULTY_SD, items) + np.array([-0.2, 0.1, 0.1])[ITEM_SOURCES]
    z = rng.normal(0, INTERACTION_SD, (len(grid.cells), items))
    clean = rng.random((len(ability), items)) < _sigmoid((ability[:, None] - b) / NOISE_SCALE)
    logit = (ability[:, None, None] - b - effect[..., None] - z) / NOISE_SCALE
    corrupted = rng.random((*logit.shape, 3)) < _sigmoid(logit)[..., None]
    return Responses(clean, corrupted, rng.integers(0, 4, items))


def unit_values(base: np.ndarray, corrupted: np.ndarray, order: np.ndarray, variants: int) -> np.ndarray:
    """(C', N) unit differences base − corrupted of cells (all with ``variants`` variants) in unit
    order: unit k is item order[k mod I], variant k // I. ``base`` and ``corrupted`` are (C', I, 3)."""
    units = np.arange(len(order) * variants)
    item, variant = order[units % len(order)], units // len(order)
    return base[:, item, variant].astype(float) - corrupted[:, item, variant].astype(float)


def predictions(r: Responses, model: int) -> np.ndarray:
    """(C, I, 3) prediction of ``model``'s corrupted scores from the other models' full runs (the
    user's earlier runs on the same items): their mean score on each unit, shifted by the clean
    accuracy difference, clipped to [0, 1]."""
    others = np.delete(np.arange(len(r.clean)), model)
    shift = r.clean[model].mean() - r.clean[others].mean()
    return np.clip(r.corrupted[others].mean(axis=0) + shift, 0.0, 1.0)


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """τ_b along the last axis (rows compared pairwise), vectorised over leading axes."""
    sx = np.sign(x[..., :, None] - x[..., None, :])
    sy = np.sign(y[..., :, None] - y[..., None, :])
    concordance = (sx * sy).sum(axis=(-1, -2))
    return concordance / np.sqrt((np.abs(sx).sum(axis=(-1, -2))) * (np.abs(sy).sum(axis=(-1, -2))))


def headline(grid: Grid, clean: np.ndarray, drop: np.ndarray) -> np.ndarray:
    """(M, 8) headline numbers: clean accuracy, FS_tv/ta/va/tva (mean drop of the block's panel cells),
    the panel fault (their mean), and the mean severity-70 drop per modality (t, v, a)."""
    fs = [drop[:, grid.panel & (grid.block == b)].mean(axis=1) for b in ("tv", "ta", "va", "tva")]
    modal = [drop[:, grid.severity70 & (grid.modality == m)].mean(axis=1) for m in ("t", "v", "a")]
    return np.stack([clean, *fs, np.mean(fs, axis=0), *modal], axis=1)


@dataclass
class Estimate:
    """One method's numbers for every (model, cell): drop, interval, p-value (before Holm), and the
    clean accuracy and requests per model."""

    drop: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p: np.ndarray
    clean: np.ndarray
    requests: np.ndarray


def _z_p_values(item_drops: np.ndarray, population: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean, 95 % normal interval (finite-population corrected) and two-sided z-test p of (..., n) item drops."""
    from scipy.special import ndtr

    n = item_drops.shape[-1]
    mean = item_drops.mean(axis=-1)
    se = item_drops.std(axis=-1, ddof=1) / np.sqrt(n) * np.sqrt(max(0.0, 1 - n / population))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, mean / se, np.where(mean == 0, 0.0, np.inf))
    return mean, mean - 1.96 * se, mean + 1.96 * se, 2 * ndtr(-np.abs(z))


def item_mean_drops(r: Responses, grid: Grid, items: np.ndarray) -> np.ndarray:
    """(M, C, k) per-item drops (clean minus the mean over the cell's variants) on ``items``."""
    mask = np.arange(3)[None, :] < grid.variants[:, None]  # (C, 3)
    corrupt = (r.corrupted[:, :, items, :] * mask[None, :, None, :]).sum(-1) / grid.variants[None, :, None]
    return r.clean[:, None, items].astype(float) - corrupt


def fixed_items(r: Responses, grid: Grid, k: int, rng: np.random.Generator) -> Estimate:
    """Every condition and variant on k uniformly drawn items (the random and power baselines)."""
    population = len(ITEM_SOURCES)
    items = np.sort(rng.choice(population, size=k, replace=False))
    mean, low, high, p = _z_p_values(item_mean_drops(r, grid, items), population)
    models = len(r.clean)
    return Estimate(mean, low, high, p, r.clean[:, items].mean(axis=1), np.full(models, k * (1 + grid.variants.sum())))


def sequential(
    r: Responses, grid: Grid, budget: int, args: argparse.Namespace, rep: int, *, assisted: bool = False
) -> Estimate:
    """The budgeted driver's schedule (see the module doc) on one repetition's responses; ``assisted``:
    the difference estimator with :func:`predictions` from the other models."""
    models, cells = r.corrupted.shape[:2]
    items = len(ITEM_SOURCES)
    out = Estimate(*(np.zeros((models, cells)) for _ in range(4)), r.clean.mean(axis=1), np.zeros(models))
    ids = [f"item{i:03d}" for i in range(items)]
    for m in range(models):
        strata = list(zip(ITEM_SOURCES.tolist(), r.category.tolist(), r.clean[m].tolist()))
        order = np.array([int(i[4:]) for i in stratified_order(ids, strata, seed=f"{args.seed}|{rep}|{m}")])
        stop = np.zeros(cells, dtype=int)
        sequences = {}
        clean = np.broadcast_to(r.clean[m][None, :, None], r.corrupted.shape[1:])
        base = predictions(r, m) if assisted else clean
        for v in np.unique(grid.variants):
            group = np.flatnonzero(grid.variants == v)
            offset = (clean[group, :, :v].astype(float) - base[group, :, :v]).mean(axis=(1, 2))
            values = unit_values(base[group], r.corrupted[m, group], order, int(v))
            seq = drop_sequence(values, items * int(v), alpha=args.alpha, offset=offset)
            done = (seq.half_width <= args.precision) | (seq.p_value <= args.alpha / cells)
            checkpoints = np.arange(args.round, items * v + 1, args.round)
            hit = done[:, checkpoints - 1]
            stop[group] = np.where(hit.any(axis=1), checkpoints[hit.argmax(axis=1)], items * v)
            sequences[int(v)] = (group, seq)
        spend = budget - items  # the clean run comes first, on every item
        rounds = np.arange(0, int(stop.max() // args.round) + 2)
        used = np.minimum(rounds[:, None] * args.round, stop[None, :]).sum(axis=1)
        affordable = rounds[used <= spend].max()
        n = np.minimum(affordable * args.round, stop)
        for group, seq in sequences.values():
            at = n[group] - 1
            rows = np.arange(len(group))
            out.drop[m, group] = np.where(at >= 0, seq.estimate[rows, np.maximum(at, 0)], np.nan)
            out.low[m, group] = np.where(at >= 0, seq.low[rows, np.maximum(at, 0)], -1.0)
            out.high[m, group] = np.where(at >= 0, seq.high[rows, np.maximum(at, 0)], 1.0)
            out.p[m, group] = np.where(at >= 0, seq.p_value[rows, np.maximum(at, 0)], 1.0)
        out.requests[m] = items + n.sum()
    return out


def power_items(r: Responses | None, precision: float, alpha: float) -> int:
    """Items per cell that lmms-eval 0.7.3's ``power`` sizes for an effect of 2 × precision."""
    from lmms_eval.api.metrics import power_analysis

    std = 0.5 if r is None else float(r.clean.std())
    return int(
        power_analysis(effect_size=2 * precision, std_a=std, std_b=std, alpha=alpha, power=0.8, correlation=0.5)[
            "min_n"
        ]
    )


def scores(est: Estimate, full: Estimate, grid: Grid, full_significant: np.ndarray) -> dict[str, float]:
    covered = (est.low <= full.drop) & (full.drop <= est.high)
    est_sig = np.stack([holm(row) for row in est.p]) <= 0.05
    same_sign = np.sign(est.drop) == np.sign(full.drop)
    found = (est_sig & same_sign & full_significant).sum() / max(1, full_significant.sum())
    drop = np.where(np.isnan(est.drop), 0.0, est.drop)
    head_full, head_est = headline(grid, full.clean, full.drop), headline(grid, est.clean, drop)
    return {
        "requests": float(est.requests.mean() / grid.full_requests),
        "tau_cells": float(np.nanmean(kendall_tau_b(full.drop, drop))),
        "tau_models": float(kendall_tau_b(head_full[:, 5], head_est[:, 5])),
        "coverage": float(covered.mean()),
        "significant_found": float(found),
        "headline_error_pp": float(np.abs(head_est - head_full).max() * 100),
        "unmeasured_cells": float(np.isnan(est.drop).mean()),
    }


#: What each figure of :func:`scores` is.
FIGURES = {
    "requests": "requests used / the full grid's",
    "tau_cells": "Kendall tau_b of each model's 102 cells, estimate vs full run (mean over models)",
    "tau_models": "Kendall tau_b of the 15 models ranked by panel fault, estimate vs full run",
    "coverage": "share of (model, cell) full-run drops inside the reported 95 % interval",
    "significant_found": "share of the full run's Holm-significant cells found significant with the same sign",
    "headline_error_pp": "largest error over models of clean accuracy, FS_tv/ta/va/tva, panel fault, "
    "severity-70 drop per modality",
    "unmeasured_cells": "share of cells with no request",
}


def real_run(args: argparse.Namespace, record: provenance.Record) -> None:
    """Part 2: ``faultline-eval --budget`` with the offline reference model on the demo against the
    README's main job (the same model on every trial of the 12-cell panel and the 56 single cells):
    requests, the largest drop error, τ of the cells and the coverage of the full-run drops."""
    import tempfile

    from faultline_app.budgeted import read_outcomes

    work = Path(tempfile.mkdtemp(prefix="efficient-"))
    faultline_eval = [str(Path(sys.executable).parent / "faultline-eval"), "--model", "sceval_reference"]
    env = None
    if args.smoke:  # 6 demo items, two cells: the whole path in a minute
        from fixtures import copy_demo  # tests/fixtures.py

        env = {**os.environ, "SCEVAL_SOURCE": str(copy_demo(work / "source", 6))}
        full_folder = work / "full"
        tasks = "sceval_clean,sceval_single_noise_v70,sceval_single_drop_words_t70"
        step = [*faultline_eval, "--tasks", tasks, "--log_samples", "--output_path", str(full_folder)]
        if provenance.run_command(step, capture_output=True, text=True, env=env).returncode:
            raise SystemExit(f"{' '.join(step)} failed")
    else:
        full_folder = provenance.demo_main_job(work / "full", False, reports=False)
    full = read_outcomes(full_folder)
    clean = {t.split("/")[1]: o["correct"] for t, o in full.items() if t.startswith("clean/")}
    cells = sorted({t.split("/")[0] for t in full} - {"clean"})
    full_requests = len(full)
    budget = max(len(clean) + 4 * len(cells), int(args.budget_share * full_requests))
    command = [
        *faultline_eval,
        "--tasks",
        ",".join(f"sceval_{c}" for c in cells),
        "--output_path",
        str(work / "budgeted"),
    ]
    command += ["--budget", str(budget), "--round-size", "4", "--alpha", str(args.alpha)]
    started = time.perf_counter()
    done = provenance.run_command(command, capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    seconds = time.perf_counter() - started
    report = json.loads((work / "budgeted" / "budget" / "report.json").read_text(encoding="utf-8"))
    truth, estimate, covered = [], [], []
    for cell in report["cells"]:
        ran = [t for t in full if t.startswith(cell["condition_id"] + "/")]
        value = float(np.mean([clean[t.split("/")[1]] - full[t]["correct"] for t in ran]))
        if cell["drop"] is None:
            continue
        truth.append(value)
        estimate.append(cell["drop"])
        covered.append(cell["ci_low"] - 1e-9 <= value <= cell["ci_high"] + 1e-9)
    truth_a, estimate_a = np.array(truth), np.array(estimate)
    figures = {
        "real/requests": (report["requests"] / full_requests, "", "budgeted requests / the main job's"),
        "real/cells_measured": (len(truth) / len(cells), "", "cells with at least one request"),
        "real/tau_cells": (float(kendall_tau_b(truth_a, estimate_a)), "", "Kendall tau_b of the cells"),
        "real/coverage": (float(np.mean(covered)), "", "full-run drops inside the reported intervals"),
        "real/largest_error_pp": (float(np.abs(truth_a - estimate_a).max() * 100), "pp", "largest drop error"),
        "real/seconds": (round(seconds, 1), "s", "the budgeted run, all rounds"),
    }
    print(f"real run (sceval_reference on the demo, {len(cells)} cells, {full_requests} requests in full):")
    for name, (value, unit, what) in figures.items():
        print(f"  {name}: {value:.3f} {unit}  ({what})")
        record.figure(name, round(value, 4), unit, what)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=200, help="simulated full runs (default 200)")
    parser.add_argument(
        "--budget-share", type=float, default=0.1, help="requests per model / the full grid's (default 0.1)"
    )
    parser.add_argument(
        "--precision",
        type=float,
        default=0.03,
        help="a cell stops at this half-width (drop units; default 0.03 = 3 pp)",
    )
    parser.add_argument(
        "--alpha", type=float, default=0.05, help="significance level and 1 − interval level (default 0.05)"
    )
    parser.add_argument(
        "--round", type=int, default=16, help="units added to each unresolved cell per round (default 16)"
    )
    parser.add_argument("--seed", type=int, default=39, help="seed of the simulation (default 39)")
    parser.add_argument(
        "--real",
        action="store_true",
        help="also part 2: a budgeted run of the reference model on the demo against the README's main job (minutes)",
    )
    parser.add_argument("--smoke", action="store_true", help=provenance.SMOKE_HELP)
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    args = parser.parse_args(argv)
    repetitions = 3 if args.smoke else args.repetitions
    record = provenance.Record(__file__, peer="uniform random items and lmms-eval 0.7.3's power-sized fixed n")
    grid = paper_grid()
    ability, effect = calibrate(grid, args.seed)
    budget = int(args.budget_share * grid.full_requests)
    per_item = 1 + int(grid.variants.sum())
    results: dict[str, list[dict[str, float]]] = {"sequential": [], "assisted": [], "random": [], "power": []}
    power_n = 0
    power_items(None, args.precision, args.alpha)  # lmms-eval's import (10-30 s) before the clock starts
    started = time.perf_counter()
    for rep in range(repetitions):
        digest = hashlib.blake2b(f"efficient|{args.seed}|{rep}".encode(), digest_size=8).digest()
        rng = np.random.default_rng(int.from_bytes(digest, "little"))
        r = simulate(grid, ability, effect, rng)
        everything = np.arange(len(ITEM_SOURCES))
        drop, _, _, p = _z_p_values(item_mean_drops(r, grid, everything), 10**9)  # the full run's own test
        full = Estimate(drop, drop, drop, p, r.clean.mean(axis=1), np.full(len(drop), grid.full_requests))
        significant = np.stack([holm(row) for row in p]) <= args.alpha
        results["sequential"].append(scores(sequential(r, grid, budget, args, rep), full, grid, significant))
        results["assisted"].append(
            scores(sequential(r, grid, budget, args, rep, assisted=True), full, grid, significant)
        )
        results["random"].append(scores(fixed_items(r, grid, budget // per_item, rng), full, grid, significant))
        power_n = min(len(ITEM_SOURCES), power_items(r, args.precision, args.alpha))
        results["power"].append(scores(fixed_items(r, grid, power_n, rng), full, grid, significant))
    seconds = time.perf_counter() - started
    print(
        f"{repetitions} repetitions, 15 models x 273 items x 102 cells ({grid.full_requests} requests per model), "
        f"budget {budget} requests per model ({args.budget_share:.0%}); lmms-eval power sizes n = {power_n} items; {seconds:.0f} s"
    )
    names = list(results["sequential"][0])
    print(f"{'method':<12}" + "".join(f"{n:>20}" for n in names))
    for method, rows in results.items():
        means = {n: float(np.mean([row[n] for row in rows])) for n in names}
        print(f"{method:<12}" + "".join(f"{means[n]:>20.3f}" for n in names))
        for n in names:
            record.figure(
                f"{method}/{n}",
                round(means[n], 4),
                "pp" if n.endswith("_pp") else "",
                f"{FIGURES[n]}; mean over {repetitions} repetitions",
            )
        share_within = float(np.mean([row["headline_error_pp"] <= 1.5 for row in rows]))
        record.figure(
            f"{method}/headline_within_1.5pp",
            round(share_within, 3),
            "",
            "repetitions whose largest headline error is <= 1.5 pp",
        )
        print(f"{'':<12}repetitions with every headline number within 1.5 pp: {share_within:.0%}")
    record.figure("power_items", power_n, "items", "lmms-eval power: items per cell for an effect of 2 x precision")
    record.figure("seconds", round(seconds, 1), "s", "the whole simulation")
    if args.real:
        real_run(args, record)
    record.write(args.json, smoke=args.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
