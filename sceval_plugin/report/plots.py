"""Figures for a paper (PNG at 200 dpi and PDF): severity curves, the joint-corruption scatter
(the paper's Figure 5) and the model x operator heatmap of severity-70 drops.

:func:`figures` says which figures the numbers can fill, and how: one without data is not
drawn (the reason goes into the report's notes), a scatter needs at least
:data:`MIN_SCATTER_POINTS` points, and the drops are drawn as bars when the run has one model
or one operator (a heatmap of one row or column shows nothing a bar would not, worse). Every
figure has a caption saying what it shows. Units and signs: accuracy in %, drops in pp with
positive = worse (eq. 5), as every table of the report (``conventions`` in report.json); an
:class:`Axis` draws another value (a wrapped task's own metric) in its own units, captions too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from faultline_eval.core.figures import colour_bar, grid, label_points, pyplot, save
from sceval_plugin.metrics.protocol import JOINT_BLOCKS, ConditionInfo, Numbers

MODALITY_ORDER = ("text", "vision", "audio")
SEVERITIES = (0, 10, 30, 50, 70)
#: The paper's Figure 5 markers: ● T+V, ■ T+A, ▲ V+A, ◆ T+V+A.
MARKERS = {"tv": "o", "ta": "s", "va": "^", "tva": "D"}
COLOURS = {"tv": "tab:red", "ta": "tab:blue", "va": "tab:green", "tva": "tab:purple"}
BLOCK_LABELS = {"tv": "T+V", "ta": "T+A", "va": "V+A", "tva": "T+V+A"}
#: One colour per modality, where a figure colours by modality (the drop bars).
MODALITY_COLOURS = {"text": "tab:blue", "vision": "tab:orange", "audio": "tab:green"}
#: Fewer points than this make no scatter: the joint table says it better.
MIN_SCATTER_POINTS = 3
#: Markers and line styles of the operators of one panel: lines that coincide (every operator at
#: 100 %) stay distinguishable.
CURVE_MARKERS = "osD^vP*X"
CURVE_STYLES = ("-", "--", "-.", ":")
#: How far apart (in severity units) the operators of one panel are drawn, so that equal values
#: do not hide each other; the points keep their severity on the axis ticks. At
#: :data:`CURVE_PANEL_WIDTH` the seven vision operators' markers sit side by side without touching,
#: and the clusters at severity 0 and 10 stay apart.
CURVE_OFFSET = 1.6
#: Width of one severity-curve panel (inches).
CURVE_PANEL_WIDTH = 4.6

Draw = Callable[[Numbers, dict, Path], list]
#: Per model, modality and operator: severity -> (accuracy, interval low, interval high).
Curves = dict[str, dict[str, dict[str, dict[int, tuple[float, float, float]]]]]


ACCURACY_FACTOR = 100.0  # fractions as percentages


@dataclass(frozen=True)
class Axis:
    """How the figures show a value: ``factor`` × it (its intervals too), under these labels,
    within ``limits``; the captions name the same units. SCEval's is accuracy as a percentage
    (:data:`ACCURACY`); a wrapped task's own metric (WER, MME's score) is drawn in its own units
    (``sceval_plugin.report.task_metric_section``)."""

    factor: float = ACCURACY_FACTOR
    value: str = "accuracy (%)"
    drop: str = "drop from clean (pp)"
    #: The drop's unit and sign, as the captions state them.
    drop_note: str = "pp, positive = worse, eq. 5"
    curve_title: str = "mean-variant accuracy"
    #: What the curves' error bars are, or None where the values come without intervals.
    intervals: str | None = "95% bootstrap intervals"
    limits: tuple[float, float] | None = (-1.0, 103.0)  # room for markers at 100 %

    @property
    def least_drop(self) -> float:
        """The drop scales (colours, bars) span at least ±this: 1 pp, or 1 % of another unit, so
        that noise-sized drops look noise-sized."""
        return self.factor / 100

    def number(self, value: float) -> str:
        """A value as the figures annotate it: pp to one decimal, other units to 3 significant digits."""
        return f"{value:.1f}" if self.factor == ACCURACY_FACTOR else f"{value:.3g}"


ACCURACY = Axis()


def _single_curves(numbers: Numbers, info: dict[str, ConditionInfo]) -> Curves:
    """model -> modality -> operator -> severity -> (accuracy, ci low, ci high), severity 0 = clean when run."""
    s = numbers.summary.dropna(subset=["accuracy"])
    clean = s[s["condition_id"] == "clean"].set_index("model")[["accuracy", "ci_low", "ci_high"]]
    curves: Curves = {}
    for model, cid, value, low, high in zip(s["model"], s["condition_id"], s["accuracy"], s["ci_low"], s["ci_high"]):
        c = info.get(cid)
        if c is None or c.block != "single":
            continue
        modality, op, severity = c.corruptions[0]
        curve = curves.setdefault(model, {}).setdefault(modality, {}).setdefault(op, {})
        curve[severity] = (value, low, high)
        if model in clean.index:
            curve[0] = tuple(clean.loc[model])
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


def _modality_of(info: dict[str, ConditionInfo]) -> dict[str, str]:
    return {c.corruptions[0][1]: c.corruptions[0][0] for c in info.values() if c.block == "single"}


def severity_caption(axis: Axis = ACCURACY) -> str:
    return (
        f"One panel per model and modality: {axis.value} against severity (0 = clean) for every single-modality "
        "operator that was run; each operator has its own marker and is drawn a little to the side of the "
        "others, so lines that coincide stay visible; "
        + (f"bars: {axis.intervals}." if axis.intervals else "no interval bars.")
    )


def scatter_caption(axis: Axis = ACCURACY) -> str:
    return (
        f"Per model, every joint cell's total severity s_t + s_v + s_a against its drop from clean ({axis.drop_note}), "
        "one marker per combination (the paper's Figure 5); points below 0 are apparent gains."
    )


def drop_caption(models: list[str], ops: list[str], axis: Axis = ACCURACY) -> str:
    """What :func:`drop_heatmap` draws for these models and operators: bars or a heatmap."""
    if len(models) == 1 or len(ops) == 1:
        return (
            f"Drop from clean at severity 70 ({axis.drop_note}) of every operator that was run, "
            + ("one bar per operator, coloured by modality" if len(models) == 1 else "one bar per model")
            + (f" ({models[0]})" if len(models) == 1 else f" ({ops[0]})")
            + "; a heatmap needs at least two models and two operators"
        )
    return (
        f"Drop from clean at severity 70 ({axis.drop_note}), models x operators, operators grouped under "
        "text / vision / audio; red: worse than clean, blue: better, grey: not run"
    )


def figures(
    numbers: Numbers, info: dict[str, ConditionInfo], operators: list[str], axis: Axis = ACCURACY
) -> dict[str, tuple[Draw, str, str | None]]:
    """Figure name -> (drawing function ``draw(numbers, info, stem)``, caption, why it is not drawn
    or None); every figure and caption in ``axis``' units."""
    has_curves = bool(_single_curves(numbers, info))
    points = len(_joint_points(numbers, info))
    models, ops, _ = _heatmap_grid(numbers, info, operators, axis.factor)
    if not points:
        no_scatter = "no joint cell with a drop from clean (needs the clean condition and at least one joint cell)"
    elif points < MIN_SCATTER_POINTS:
        no_scatter = f"only {points} joint cell(s) with a drop from clean, too few for a scatter: see joint.md"
    else:
        no_scatter = None
    return {
        "severity_curves": (
            functools.partial(severity_curves, axis=axis),
            severity_caption(axis),
            None if has_curves else "no single-modality cell with a valid output",
        ),
        "drop_heatmap": (
            functools.partial(drop_heatmap, operators=operators, axis=axis),
            drop_caption(models, ops, axis),
            None
            if ops
            else "no severity-70 single cell with a drop from clean (needs clean and single cells at severity 70)",
        ),
        "joint_scatter": (functools.partial(joint_scatter, axis=axis), scatter_caption(axis), no_scatter),
    }


def severity_curves(
    numbers: Numbers, info: dict[str, ConditionInfo], stem: Path, *, axis: Axis = ACCURACY
) -> list[Path]:
    """One panel per model x modality: accuracy (%; or ``axis``' value) against severity, clean
    drawn at 0, one line per operator with its 95 % intervals (where the values have them); each
    modality's legend below its column, outside the data. Every panel has the same y-axis, so
    models compare at a glance."""
    plt = pyplot()
    curves = _single_curves(numbers, info)
    models = sorted(curves)
    modalities = [m for m in MODALITY_ORDER if any(m in curves[model] for model in models)]
    operators = {m: sorted({op for model in models for op in curves[model].get(m, {})}) for m in modalities}
    fig, axes = plt.subplots(
        len(models),
        len(modalities),
        figsize=(CURVE_PANEL_WIDTH * len(modalities), 1.0 + 2.8 * len(models)),
        squeeze=False,
        sharex=True,
        sharey=True,
    )
    limits = _curve_limits([c for model in models for c in curves[model].values()], axis)
    for i, model in enumerate(models):
        for j, modality in enumerate(modalities):
            ax = axes[i][j]
            _curve_panel(plt, ax, curves[model].get(modality, {}), operators[modality], axis.factor)
            ax.set_ylim(*limits)
            _label_panel(ax, modality if i == 0 else None, f"{model}\n{axis.value}" if j == 0 else None)
            if i == len(models) - 1:
                ax.set_xlabel("severity (0 = clean)")
    for j, modality in enumerate(modalities):
        _legend_below_column(fig, axes[:, j], f"{modality} operator")
    intervals = ", 95% intervals" if axis.intervals else ""
    fig.suptitle(f"Single-modality severity curves ({axis.curve_title}{intervals})", fontsize=11)
    fig.tight_layout()
    return save(fig, stem)


def _curve_limits(panels: list[dict[str, dict[int, tuple[float, float, float]]]], axis: Axis) -> tuple[float, float]:
    """The y-range that holds every value and interval of the ``panels`` (each operator ->
    severity -> values) with a margin, within ``axis.limits``."""
    values = [x for panel in panels for curve in panel.values() for v in curve.values() for x in v]
    values = [v for v in values if np.isfinite(v)]
    low, high = axis.factor * min(values), axis.factor * max(values)
    pad = max(2.0 if axis.limits else 0.0, 0.08 * (high - low)) or 0.05 * max(1.0, abs(high))
    floor, ceiling = axis.limits or (-np.inf, np.inf)
    return max(floor, low - pad), min(ceiling, high + pad)


def _label_panel(ax, title: str | None, ylabel: str | None) -> None:
    """A column's title on its top panel and a row's label on its first panel."""
    if title is not None:
        ax.set_title(title, fontsize=10)
    if ylabel is not None:
        ax.set_ylabel(ylabel, fontsize=8)


def _curve_panel(
    plt, ax, curves: dict[str, dict[int, tuple[float, float, float]]], operators: list[str], factor: float = 100.0
) -> None:
    """One line per operator (``factor`` × the value against severity, with its intervals where
    finite), in operator order; operator k is drawn ``CURVE_OFFSET`` units beside operator k-1
    (centred on the true severity) with its own marker, so that equal curves lie side by side
    instead of on top of each other."""
    cmap = plt.get_cmap("tab10")
    for k, op in enumerate(operators):
        curve = curves.get(op)
        if not curve:
            continue
        xs = sorted(curve)
        shift = (k - (len(operators) - 1) / 2) * CURVE_OFFSET
        y = np.array([factor * curve[x][0] for x in xs])
        low = np.array([factor * curve[x][1] for x in xs])
        high = np.array([factor * curve[x][2] for x in xs])
        ax.errorbar(
            [x + shift for x in xs],
            y,
            yerr=np.nan_to_num(np.vstack([y - low, high - y]), nan=0.0).clip(min=0) if np.isfinite(low).any() else None,
            marker=CURVE_MARKERS[k % len(CURVE_MARKERS)],
            linestyle=CURVE_STYLES[k % len(CURVE_STYLES)],
            markersize=4,
            markerfacecolor="none",
            linewidth=1.2,
            elinewidth=0.6,
            capsize=1.5,
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


def cell_names(info: dict[str, ConditionInfo]) -> dict[str, str]:
    """A short name for each joint cell, as the scatter labels its points: its severities
    (``t30/v70``; the marker says the combination), and the operators that are not their
    modality's usual one in the joint cells (``t70/v30 occlusion``)."""
    joint = [c for c in info.values() if c.block in JOINT_BLOCKS]
    seen: dict[str, dict[str, int]] = {}
    for c in joint:
        for modality, op, _ in c.corruptions:
            seen.setdefault(modality, {})[op] = seen.setdefault(modality, {}).get(op, 0) + 1
    usual = {m: min(ops, key=lambda op: (-ops[op], op)) for m, ops in seen.items()}
    names = {}
    for c in joint:
        severities = "/".join(f"{m[0]}{sev}" for m, _, sev in c.corruptions)
        unusual = [op for m, op, _ in c.corruptions if op != usual[m]]
        names[c.id] = " ".join([severities, *unusual])
    return names


def joint_scatter(numbers: Numbers, info: dict[str, ConditionInfo], stem: Path, *, axis: Axis = ACCURACY) -> list[Path]:
    """As the paper's Figure 5: per model, the total corruption budget s_t + s_v + s_a against the
    drop from clean (pp), one marker per combination type, each point named by its cell
    (:func:`cell_names`, placed clear of the others); points below 0 are apparent gains."""
    plt = pyplot()
    joint = _joint_points(numbers, info)
    models = sorted(joint["model"].unique())
    most = int(joint["model"].value_counts().max())
    fig, axes = grid(plt, len(models), 4.8, max(4.0, 1.6 + 0.1 * most), sharey=True)  # room for every name
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
    names = cell_names(info)
    for ax, model in zip(axes, models):  # after the layout: labels are placed in display units
        g = joint[joint["model"] == model]
        label_points(ax, list(zip(g["budget"], axis.factor * g["delta_base"])), [names[c] for c in g["condition_id"]])
    return save(fig, stem)


def drop_heatmap(
    numbers: Numbers, info: dict[str, ConditionInfo], stem: Path, *, operators: list[str], axis: Axis = ACCURACY
) -> list[Path]:
    """Models x operators: the drop from clean at severity 70 (pp, or ``axis``' units; positive =
    worse), annotated, on colours that diverge around zero (red: worse than clean, blue: better);
    operators grouped under their modality. With one model or one operator, bars instead
    (:func:`_drop_bars`)."""
    plt = pyplot()
    models, ops, drops = _heatmap_grid(numbers, info, operators, axis.factor)
    modality_of = _modality_of(info)
    if len(models) == 1 or len(ops) == 1:
        return _drop_bars(plt, models, ops, drops, modality_of, stem, axis)
    limit = max(axis.least_drop, float(np.nanmax(np.abs(drops))))
    fig, ax = plt.subplots(figsize=(2.2 + 0.62 * len(ops), 2.6 + 0.42 * len(models)))
    image = _drop_cells(ax, drops, models, ops, limit, axis)
    for start, end, modality in _modality_spans(ops, modality_of):
        if start:
            ax.axvline(start - 0.5, color="black", linewidth=1.2)
        ax.text(
            (start + end) / 2, 1.01, modality, transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=9
        )
    colour_bar(fig, image, ax, f"{axis.drop}\nred: worse, blue: better")
    ax.set_title("Where models break: severity-70 drops", fontsize=10, pad=16)
    fig.tight_layout()
    return save(fig, stem)


def _drop_cells(
    ax, drops: np.ndarray, rows: list[str], columns: list[str], limit: float, axis: Axis, rotation: int = 45
):
    """``drops`` (rows x columns) as cells annotated in ``axis``' numbers, on colours diverging
    around zero within ±``limit`` (grey: not run); returns the image for a colour bar."""
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
                "–" if not np.isfinite(value) else axis.number(value),
                ha="center",
                va="center",
                fontsize=7,
                color="white" if np.isfinite(value) and abs(value) > 0.6 * limit else "black",
            )
    return image


def _modality_spans(ops: list[str], modality_of: dict[str, str]) -> list[tuple[int, int, str]]:
    """(first, last index, modality) of each run of operators of one modality, in order."""
    spans: list[tuple[int, int, str]] = []
    for j, op in enumerate(ops):
        modality = modality_of.get(op, "?")
        if spans and spans[-1][2] == modality:
            spans[-1] = (spans[-1][0], j, modality)
        else:
            spans.append((j, j, modality))
    return spans


def _drop_bars(
    plt, models: list[str], ops: list[str], drops: np.ndarray, modality_of: dict[str, str], stem: Path, axis: Axis
):
    """The severity-70 drops of one model (a bar per operator, coloured and grouped by modality) or
    of one operator (a bar per model), each bar labelled with its value (in ``axis``' units); no
    bar where not run."""
    one_model = len(models) == 1
    labels, values = (ops, drops[0]) if one_model else (models, drops[:, 0])
    colours = [MODALITY_COLOURS.get(modality_of.get(op, ""), "tab:grey") for op in ops] if one_model else "tab:red"
    fig, ax = plt.subplots(figsize=(max(3.6, 1.6 + 0.5 * len(labels)), 3.4))
    x = np.arange(len(labels))
    ax.bar(x, np.nan_to_num(values), 0.7, color=colours)
    for pos, value in zip(x, values):
        text = "not run" if not np.isfinite(value) else axis.number(value)
        ax.annotate(
            text,
            (pos, 0 if not np.isfinite(value) else value),
            xytext=(0, 2 if not np.isfinite(value) or value >= 0 else -2),
            textcoords="offset points",
            ha="center",
            va="bottom" if not np.isfinite(value) or value >= 0 else "top",
            fontsize=7,
        )
    ax.axhline(0, color="black", linewidth=0.8)
    margin = 0.5 + max(0.0, (3 - len(labels)) / 2)  # a lone bar stays bar-wide, not figure-wide
    ax.set_xlim(-margin, len(labels) - 1 + margin)
    ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=8)
    finite = values[np.isfinite(values)]
    top, bottom = max(axis.least_drop, float(finite.max(initial=0))), min(0.0, float(finite.min(initial=0)))
    ax.set_ylim(bottom - 0.12 * (top - bottom), top + 0.15 * (top - bottom))
    ax.set_ylabel(f"{axis.drop}\n(positive = worse)", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    if one_model:
        for start, end, modality in _modality_spans(ops, modality_of):
            if start:
                ax.axvline(start - 0.5, color="black", linewidth=0.8, linestyle=":")
            ax.text(
                (start + end) / 2,
                1.01,
                modality,
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="bottom",
                fontsize=9,
            )
        ax.set_title(f"Where {models[0]} breaks: severity-70 drops", fontsize=10, pad=16)
    else:
        ax.set_title(f"Severity-70 drop of {ops[0]} ({modality_of.get(ops[0], '?')}) per model", fontsize=10)
    fig.tight_layout()
    return save(fig, stem)


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


def modality_severity_figure(
    numbers: Numbers, info: dict[str, ConditionInfo], axis: Axis = ACCURACY
) -> tuple[Draw, str, str | None]:
    """(draw, caption, why not drawn or None) of :func:`modality_severity_heatmap`, as :func:`figures`."""
    return (
        functools.partial(modality_severity_heatmap, axis=axis),
        f"Per model, the mean drop from clean ({axis.drop_note}) over each modality's single-operator cells at "
        "each severity, modalities x severities on one colour scale; red: worse than clean, blue: better, "
        "grey: not run",
        None if modality_severity_grid(numbers, info, axis.factor) else "no single-modality cell with a drop",
    )


def modality_severity_heatmap(
    numbers: Numbers, info: dict[str, ConditionInfo], stem: Path, *, axis: Axis = ACCURACY
) -> list[Path]:
    """One panel per model: modality x severity, the mean drop from clean over the modality's
    single-operator cells at that severity, annotated, on one diverging colour scale."""
    plt = pyplot()
    grids = modality_severity_grid(numbers, info, axis.factor)
    limit = max(axis.least_drop, max(float(np.nanmax(np.abs(g))) for _, _, g in grids.values()))
    fig, axes = grid(plt, len(grids), 3.4, 0.9 + 0.55 * max(len(m) for m, _, _ in grids.values()))
    for ax, (model, (modalities, severities, drops)) in zip(axes, grids.items()):
        image = _drop_cells(ax, drops, modalities, [str(x) for x in severities], limit, axis, rotation=0)
        ax.set_title(model, fontsize=9)
        ax.set_xlabel("severity", fontsize=8)
    colour_bar(fig, image, axes[: len(grids)], f"{axis.drop}\nred: worse, blue: better", fraction=0.05)
    fig.suptitle("Mean drop from clean by modality and severity (single-modality cells)", fontsize=10, y=1.06)
    return save(fig, stem)
