"""Figures for a paper (PNG at 200 dpi and PDF): severity curves, the joint-corruption scatter
(the paper's Figure 5) and the model x operator heatmap of severity-70 drops.

:func:`figures` says which figures the numbers can fill; one without data is not drawn, and
the reason goes into the report's notes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from faultline_eval.core.figures import grid, pyplot, save
from sceval_plugin.metrics.protocol import JOINT_BLOCKS, ConditionInfo, Numbers

MODALITY_ORDER = ("text", "vision", "audio")
SEVERITIES = (0, 10, 30, 50, 70)
#: The paper's Figure 5 markers: ● T+V, ■ T+A, ▲ V+A, ◆ T+V+A.
MARKERS = {"tv": "o", "ta": "s", "va": "^", "tva": "D"}
COLOURS = {"tv": "tab:red", "ta": "tab:blue", "va": "tab:green", "tva": "tab:purple"}
BLOCK_LABELS = {"tv": "T+V", "ta": "T+A", "va": "V+A", "tva": "T+V+A"}

Draw = Callable[[Numbers, dict, Path], list]


@dataclass(frozen=True)
class Axis:
    """How the figures show a value: ``factor`` × it, under these labels, within ``limits``.
    SCEval's is accuracy as a percentage (:data:`ACCURACY`); a wrapped task's own metric (WER,
    MME's score) is drawn in its own units (``sceval_plugin.report.task_metric_section``)."""

    factor: float = 100.0
    value: str = "accuracy (%)"
    drop: str = "drop from clean (pp)"
    curve_title: str = "mean-variant accuracy"
    limits: tuple[float, float] | None = (0.0, 102.0)  # room for lines at 100 %


ACCURACY = Axis()


def _single_curves(
    numbers: Numbers, info: dict[str, ConditionInfo]
) -> dict[str, dict[str, dict[str, dict[int, float]]]]:
    """model -> modality -> operator -> severity -> accuracy (severity 0 = clean, when run)."""
    s = numbers.summary.dropna(subset=["accuracy"])
    clean = s[s["condition_id"] == "clean"].set_index("model")["accuracy"]
    curves: dict = {}
    for model, cid, value in zip(s["model"], s["condition_id"], s["accuracy"]):
        c = info.get(cid)
        if c is None or c.block != "single":
            continue
        modality, op, severity = c.corruptions[0]
        curve = curves.setdefault(model, {}).setdefault(modality, {}).setdefault(op, {})
        curve[severity] = value
        if model in clean.index:
            curve[0] = clean[model]
    return curves


def _joint_points(numbers: Numbers, info: dict[str, ConditionInfo]):
    s = numbers.summary
    joint = s[s["condition_id"].map(lambda c: c in info and info[c].block in JOINT_BLOCKS).astype(bool)]
    joint = joint.dropna(subset=["delta_base"])
    return joint.assign(
        block=joint["condition_id"].map(lambda c: info[c].block),
        budget=joint["condition_id"].map(lambda c: sum(x[2] for x in info[c].corruptions)),
    )


def _heatmap_grid(numbers: Numbers, info: dict[str, ConditionInfo], operators: list[str], factor: float = 100.0):
    """(models, operators with data, grid of severity-70 drops ×``factor``; NaN where not run)."""
    s = numbers.summary.dropna(subset=["delta_base"])
    cell = {c: i.corruptions[0][1] for c, i in info.items() if i.block == "single" and i.corruptions[0][2] == 70}
    s = s[s["condition_id"].isin(list(cell))]
    models = sorted(s["model"].unique())
    drops = np.full((len(models), len(operators)), np.nan)
    for model, cid, value in zip(s["model"], s["condition_id"], s["delta_base"]):
        if cell[cid] in operators:
            drops[models.index(model), operators.index(cell[cid])] = factor * value
    keep = [j for j in range(len(operators)) if np.isfinite(drops[:, j]).any()]
    return models, [operators[j] for j in keep], drops[:, keep]


def figures(
    numbers: Numbers, info: dict[str, ConditionInfo], operators: list[str], axis: Axis = ACCURACY
) -> dict[str, tuple[Draw, str | None]]:
    """Figure name -> (drawing function ``draw(numbers, info, stem)``, why it is not drawn or None)."""
    has_curves = bool(_single_curves(numbers, info))
    has_joint = not _joint_points(numbers, info).empty
    has_heatmap = bool(_heatmap_grid(numbers, info, operators)[1])
    return {
        "severity_curves": (
            functools.partial(severity_curves, axis=axis),
            None if has_curves else "no single-modality cell with a valid output",
        ),
        "joint_scatter": (
            functools.partial(joint_scatter, axis=axis),
            None
            if has_joint
            else "no joint cell with a drop from clean (needs the clean condition and at least one joint cell)",
        ),
        "drop_heatmap": (
            functools.partial(drop_heatmap, operators=operators, axis=axis),
            None
            if has_heatmap
            else "no severity-70 single cell with a drop from clean (needs clean and single cells at severity 70)",
        ),
    }


def severity_curves(
    numbers: Numbers, info: dict[str, ConditionInfo], stem: Path, *, axis: Axis = ACCURACY
) -> list[Path]:
    """One panel per model x modality: accuracy (%; or ``axis``' value) against severity, clean
    drawn at 0, one line per operator; each modality's legend below its column, outside the data."""
    plt = pyplot()
    curves = _single_curves(numbers, info)
    models = sorted(curves)
    modalities = [m for m in MODALITY_ORDER if any(m in curves[model] for model in models)]
    operators = {m: sorted({op for model in models for op in curves[model].get(m, {})}) for m in modalities}
    fig, axes = plt.subplots(
        len(models),
        len(modalities),
        figsize=(3.8 * len(modalities), 1.0 + 2.8 * len(models)),
        squeeze=False,
        sharex=True,
        sharey="row",
    )
    for i, model in enumerate(models):
        values = [v for m in curves[model].values() for curve in m.values() for v in curve.values()]
        low, high = axis.factor * min(values), axis.factor * max(values)
        pad = max(2.0 if axis.limits else 0.0, 0.08 * (high - low)) or 0.05 * max(1.0, abs(high))
        floor, ceiling = axis.limits or (-np.inf, np.inf)
        for j, modality in enumerate(modalities):
            ax = axes[i][j]
            _curve_panel(plt, ax, curves[model].get(modality, {}), operators[modality], axis.factor)
            ax.set_ylim(max(floor, low - pad), min(ceiling, high + pad))
            if i == 0:
                ax.set_title(modality, fontsize=10)
            if j == 0:
                ax.set_ylabel(f"{model}\n{axis.value}", fontsize=8)
            if i == len(models) - 1:
                ax.set_xlabel("severity (0 = clean)")
    for j, modality in enumerate(modalities):
        _legend_below_column(fig, axes[:, j], f"{modality} operator")
    fig.suptitle(f"Single-modality severity curves ({axis.curve_title})", fontsize=11)
    fig.tight_layout()
    return save(fig, stem)


def _curve_panel(plt, ax, curves: dict[str, dict[int, float]], operators: list[str], factor: float = 100.0) -> None:
    """One line per operator (``factor`` × the value against severity), in operator order."""
    cmap = plt.get_cmap("tab10")
    markers = "osD^vP*X"  # lines that coincide stay distinguishable by their markers
    for k, op in enumerate(operators):
        curve = curves.get(op)
        if not curve:
            continue
        xs = sorted(curve)
        ax.plot(
            xs,
            [factor * curve[x] for x in xs],
            marker=markers[k % len(markers)],
            markersize=4,
            markerfacecolor="none",
            linewidth=1.3,
            color=cmap(k % 10),
            label=op,
        )
    ax.set_xticks(SEVERITIES)
    ax.grid(alpha=0.3)


def _legend_below_column(fig, column, title: str) -> None:
    """The union of a column's legend entries (over its panels, in order) below its last panel."""
    from matplotlib.transforms import offset_copy

    handles, labels = [], []
    for ax in column:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h), labels.append(label)
    bottom = column[-1]
    below_label = offset_copy(bottom.transAxes, fig, y=-0.6, units="inches")  # clear of the axis label
    bottom.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        bbox_transform=below_label,
        ncol=2,
        fontsize=7,
        frameon=False,
        title=title,
        title_fontsize=7,
    )


def joint_scatter(numbers: Numbers, info: dict[str, ConditionInfo], stem: Path, *, axis: Axis = ACCURACY) -> list[Path]:
    """As the paper's Figure 5: per model, the total corruption budget s_t + s_v + s_a against the
    drop from clean (pp), one marker per combination type; points below 0 are apparent gains."""
    plt = pyplot()
    joint = _joint_points(numbers, info)
    models = sorted(joint["model"].unique())
    fig, axes = grid(plt, len(models), 3.8, 3.2, sharey=True)
    budgets = sorted(joint["budget"].unique())
    for k, (ax, model) in enumerate(zip(axes, models)):
        g = joint[joint["model"] == model]
        for block in JOINT_BLOCKS:
            b = g[g["block"] == block]
            if len(b):
                ax.scatter(
                    b["budget"],
                    axis.factor * b["delta_base"],
                    marker=MARKERS[block],
                    color=COLOURS[block],
                    s=30,
                    label=BLOCK_LABELS[block],
                    edgecolor="black",
                    linewidth=0.4,
                    zorder=3,
                )
        ax.axhline(0, color="grey", linewidth=0.8, zorder=1)
        ax.set_title(model, fontsize=9)
        ax.set_xlabel("total severity  $s_t + s_v + s_a$")
        ax.set_xlim(min(budgets) - 10, max(budgets) + 10)
        ax.grid(alpha=0.3)
        if k % 4 == 0:
            ax.set_ylabel(axis.drop)
    handles, labels = [], []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h), labels.append(label)
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False, title="combination")
    fig.suptitle("Joint corruption: severity budget against drop from clean", fontsize=11)
    fig.tight_layout()
    return save(fig, stem)


def drop_heatmap(
    numbers: Numbers, info: dict[str, ConditionInfo], stem: Path, *, operators: list[str], axis: Axis = ACCURACY
) -> list[Path]:
    """Models x operators: the drop from clean at severity 70 (pp), annotated, on colours that
    diverge around zero (red: worse than clean, blue: better); operators grouped by modality."""
    plt = pyplot()
    models, ops, drops = _heatmap_grid(numbers, info, operators, axis.factor)
    modality_of = {c.corruptions[0][1]: c.corruptions[0][0] for c in info.values() if c.block == "single"}
    limit = max(1.0, float(np.nanmax(np.abs(drops))))
    fig, ax = plt.subplots(figsize=(2.2 + 0.62 * len(ops), 2.4 + 0.42 * len(models)))
    image = _drop_cells(ax, drops, models, ops, limit)
    for j in range(1, len(ops)):  # rules between modalities
        if modality_of.get(ops[j]) != modality_of.get(ops[j - 1]):
            ax.axvline(j - 0.5, color="black", linewidth=1.2)
    _drop_colour_bar(fig, image, ax, axis)
    ax.set_title("Where models break: severity-70 drops", fontsize=10)
    fig.tight_layout()
    return save(fig, stem)


def _drop_cells(ax, drops: np.ndarray, rows: list[str], columns: list[str], limit: float, rotation: int = 45):
    """``drops`` (rows x columns) as annotated cells on colours diverging around zero within
    ±``limit`` (grey: not run); returns the image for a colour bar."""
    from matplotlib.colors import TwoSlopeNorm

    image = ax.imshow(np.ma.masked_invalid(drops), cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -limit, limit), aspect="auto")
    ax.set_facecolor("#dddddd")  # cells not run
    ax.set_xticks(range(len(columns)), columns, rotation=rotation, ha="right" if rotation else "center", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    for i in range(len(rows)):
        for j in range(len(columns)):
            value = drops[i, j]
            ax.text(
                j,
                i,
                "–" if not np.isfinite(value) else f"{value:.1f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if np.isfinite(value) and abs(value) > 0.6 * limit else "black",
            )
    return image


def _drop_colour_bar(fig, image, ax, axis: Axis) -> None:
    bar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
    bar.set_label(f"{axis.drop}\nred: worse, blue: better", fontsize=8)
    bar.ax.tick_params(labelsize=7)


def modality_severity_grid(numbers: Numbers, info: dict[str, ConditionInfo], factor: float):
    """model -> (modalities with data, severities, grid of the mean single-cell drop over the
    modality's operators at each severity ×``factor``; NaN where none was run)."""
    s = numbers.summary.dropna(subset=["delta_base"])
    out = {}
    for model, group in s.groupby("model", sort=True):
        cells: dict[tuple[str, int], list[float]] = {}
        for cid, value in zip(group["condition_id"], group["delta_base"]):
            c = info.get(cid)
            if c is not None and c.block == "single":
                modality, _, severity = c.corruptions[0]
                cells.setdefault((modality, severity), []).append(factor * value)
        modalities = [m for m in MODALITY_ORDER if any(m == k[0] for k in cells)]
        if modalities:
            severities = [x for x in SEVERITIES if x]
            grid_ = np.array([[np.mean(cells.get((m, x), [np.nan])) for x in severities] for m in modalities])
            out[str(model)] = (modalities, severities, grid_)
    return out


def modality_severity_heatmap(
    numbers: Numbers, info: dict[str, ConditionInfo], stem: Path, *, axis: Axis = ACCURACY
) -> list[Path]:
    """One panel per model: modality x severity, the mean drop from clean over the modality's
    single-operator cells at that severity, annotated, on one diverging colour scale."""
    plt = pyplot()
    grids = modality_severity_grid(numbers, info, axis.factor)
    limit = max(1.0, max(float(np.nanmax(np.abs(g))) for _, _, g in grids.values()))
    fig, axes = grid(plt, len(grids), 3.4, 0.9 + 0.55 * max(len(m) for m, _, _ in grids.values()))
    for ax, (model, (modalities, severities, drops)) in zip(axes, grids.items()):
        image = _drop_cells(ax, drops, modalities, [str(x) for x in severities], limit, rotation=0)
        ax.set_title(model, fontsize=9)
        ax.set_xlabel("severity", fontsize=8)
    _drop_colour_bar(fig, image, axes[: len(grids)], axis)
    fig.suptitle("Mean drop from clean by modality and severity (single-modality cells)", fontsize=10, y=1.06)
    return save(fig, stem)
