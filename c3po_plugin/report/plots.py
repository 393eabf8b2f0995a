"""Figures of the C3PO report, each written as PNG (200 dpi) and PDF: per-template and per-tier
accuracy, failure-mode shares per template, the dominance vs incomplete-fusion split per model,
and the items' difficulty histogram (the paper's Fig. 7). Matplotlib setup, panel grids and
saving come from :mod:`faultline_eval.core.figures`.

What a figure shows is what was measured: a group without data for a model (a template or tier
without human answers) gets no bar, and a note under the figure says so; every bar carries its
sample count; legends sit outside the axes.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from c3po_plugin import metrics
from c3po_plugin.failure_modes import DOMINANCE, LABELS, MODES
from c3po_plugin.report.tables import MODE_HEADINGS, template_label
from c3po_plugin.templates import CATEGORIES
from faultline_eval.core.figures import colour_bar, grid, pyplot, save

#: Beyond this many models (the human reference included), the template figure is a grid, not bars.
MAX_BAR_MODELS = 4
#: The id of the marks that tell a measured 0 % from a missing bar.
ZERO_MARK = "measured-zero"
MODE_COLOURS = {
    "audio_dominance": "tab:blue",
    "visual_dominance": "tab:orange",
    "text_dominance": "tab:green",
    "joint_dominance": "tab:purple",
    "incomplete_fusion": "tab:red",
    "other": "tab:grey",
}


@dataclass(frozen=True)
class TypeSizes:
    """The type sizes (pt) of a bar figure: group names and legend, the numbers beside a bar
    (``counts``: above a vertical bar), "no data", the title and the note under the figure."""

    labels: float = 7.0
    values: float = 5.5
    counts: float = 5.0
    no_data: float = 5.0
    title: float = 9.0
    note: float = 7.0


SMALL_TYPE = TypeSizes()
#: The template figure is read in the report and viewer pages, about 800 px wide: drawn at most
#: :data:`PAGE_WIDTH` wide with no text under 9 pt, its text shows at 9 pt or more there (the
#: figure is made taller, not smaller, for more templates and models).
PAGE_TYPE = TypeSizes(labels=9, values=9, counts=9, no_data=9, title=10, note=9)
#: Inches a figure meant for a page may take (800 px at 96 dpi is 8.3 in).
PAGE_WIDTH = 8.0


def _note(fig, lines: list[str], size: float = 7.0) -> None:
    """Notes under the figure, wrapped to its width (about 120 / ``size`` characters per inch)."""
    if lines:
        width = int(fig.get_figwidth() * 120 / size)
        text = "\n".join(textwrap.fill(line, width, subsequent_indent="  ") for line in lines)
        fig.text(0.01, -0.01, text, ha="left", va="top", fontsize=size)


def _grouped_bars(
    ax,
    acc: pd.DataFrame,
    groups: list[str],
    models: list[str],
    *,
    horizontal: bool = False,
    sizes: TypeSizes = SMALL_TYPE,
) -> list[str]:
    """One cluster of bars per group, one bar per model with its interval and sample count
    (``horizontal``: groups down the side, top to bottom, for long group names). A measured 0 %
    gets a mark at zero so it is not mistaken for a missing bar; a group without data for a model
    gets "no data" where its bar would be. Returns a note per model that has no data in some
    groups (those get no bar). Horizontal bars have their legend above the axes (the width is
    the page's), vertical ones beside them."""
    cells = acc.set_index(["model", "group"])
    width = 0.8 / max(1, len(models))
    x = np.arange(len(groups))
    notes = []
    for k, model in enumerate(models):
        have = [g for g in groups if (model, g) in cells.index and np.isfinite(cells.loc[(model, g), "accuracy"])]
        missing = [g for g in groups if g not in have]
        offset = (k - (len(models) - 1) / 2) * width
        if missing:
            what = "human answers" if model == metrics.HUMAN else "graded answers"
            notes.append(f"{model}: no {what} for {', '.join(missing)} (no bar drawn)")
            _no_data(ax, [x[groups.index(g)] + offset for g in missing], horizontal, sizes)
        if have:
            _model_bars(
                ax,
                cells.loc[[(model, g) for g in have]],
                x[[groups.index(g) for g in have]] + offset,
                width,
                model,
                horizontal,
                sizes,
            )
    _group_axis(ax, groups, horizontal, sizes)
    where = (
        {"loc": "lower left", "bbox_to_anchor": (0.0, 1.0), "ncol": min(3, len(models)), "frameon": False}
        if horizontal
        else {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)}
    )
    ax.legend(fontsize=sizes.labels, title="model", title_fontsize=sizes.labels, **where)
    return notes


def _no_data(ax, positions: list[float], horizontal: bool, sizes: TypeSizes) -> None:
    """ "no data" where a model's bar would be."""
    for position in positions:
        ax.text(
            *((1, position) if horizontal else (position, 1)),
            "no data",
            fontsize=sizes.no_data,
            color="0.45",
            style="italic",
            rotation=0 if horizontal else 90,
            ha="left" if horizontal else "center",
            va="center" if horizontal else "bottom",
        )


def _model_bars(
    ax, rows: pd.DataFrame, positions: np.ndarray, width: float, model: str, horizontal: bool, sizes: TypeSizes
) -> None:
    """One model's bars at ``positions`` with their intervals, a mark at zero for a measured 0 %,
    and the sample count (and, ``horizontal``, the accuracy) beside each."""
    mean, low, high = (100 * rows[c].to_numpy(float) for c in ("accuracy", "ci_low", "ci_high"))
    err = np.nan_to_num(np.vstack([mean - low, high - mean]), nan=0.0).clip(min=0)
    errors = {"xerr": err} if horizontal else {"yerr": err}
    bar = ax.barh if horizontal else ax.bar
    container = bar(positions, mean, width, **errors, capsize=1.5, label=model, error_kw={"linewidth": 0.7})
    colour = container.patches[0].get_facecolor()
    zero = positions[mean == 0]
    if len(zero):  # a real 0 %: a mark on the axis in the model's colour
        ax.plot(
            *((np.zeros(len(zero)), zero) if horizontal else (zero, np.zeros(len(zero)))),
            marker="|" if horizontal else "_",
            markersize=9,
            markeredgewidth=2.2,
            linestyle="none",
            color=colour,
            clip_on=False,
            gid=ZERO_MARK,
        )
    for pos, top, value, n in zip(positions, np.nan_to_num(high, nan=0.0), mean, rows["n_samples"]):
        if horizontal:
            ax.text(max(top, 0) + 1.0, pos, f"{value:.0f}% (n={int(n)})", ha="left", va="center", fontsize=sizes.values)
        else:
            ax.text(pos, max(top, 0) + 1.5, f"{int(n)}", ha="center", va="bottom", fontsize=sizes.counts, rotation=90)


def _group_axis(ax, groups: list[str], horizontal: bool, sizes: TypeSizes) -> None:
    """The groups along one axis (top to bottom when ``horizontal``), accuracy 0-100 % along the other."""
    x = np.arange(len(groups))
    if horizontal:
        ax.set_yticks(x, groups, fontsize=sizes.labels)
        ax.set_ylim(len(groups) - 0.5, -0.5)  # the first group on top
        ax.set_xlim(0, 125)
        ax.set_xticks(range(0, 101, 20))
        ax.tick_params(axis="x", labelsize=sizes.labels)
        ax.set_xlabel("accuracy (%)", fontsize=sizes.labels)
        ax.grid(axis="x", alpha=0.3)
    else:
        ax.set_xticks(x, groups, rotation=60, ha="right", fontsize=sizes.labels)
        ax.set_ylim(0, 118)
        ax.set_yticks(range(0, 101, 20))
        ax.set_ylabel("accuracy (%)")
        ax.grid(axis="y", alpha=0.3)


def _bars_figure(
    acc: pd.DataFrame,
    groups: list[str],
    labels: list[str],
    width: float,
    height: float,
    title: str,
    path: Path,
    *,
    horizontal: bool = False,
    sizes: TypeSizes = SMALL_TYPE,
) -> list[Path]:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(width, height))
    notes = _grouped_bars(
        ax,
        acc.assign(group=acc["group"].map(dict(zip(groups, labels)))),
        labels,
        metrics.models_of(acc),
        horizontal=horizontal,
        sizes=sizes,
    )
    if horizontal:  # the legend is above the axes: the title above it
        fig.suptitle(title, fontsize=sizes.title)
    else:
        ax.set_title(title, fontsize=sizes.title)
    counts = "Beside the bars: accuracy and samples." if horizontal else "Numbers above the bars: samples."
    _note(
        fig,
        [
            f"{counts} Accuracy = #YES / #Total (ungradable trials count as not correct). "
            'A mark on the axis: a measured 0%; "no data": nothing to measure.'
        ]
        + notes,
        sizes.note,
    )
    fig.tight_layout()
    return save(fig, path)


def template_accuracy(acc: pd.DataFrame, path: Path) -> list[Path]:
    """Per template (registry order, top to bottom, labelled id + name): every model's accuracy
    with its 95 % interval, as horizontal bars so the names stay readable at any template count;
    with more than :data:`MAX_BAR_MODELS` models, a templates x models grid instead
    (:func:`_template_grid`): that many bars per template would not fit on a page."""
    t = acc[acc["level"] == "template"]
    groups = sorted(t["group"].unique(), key=metrics.group_rank)
    models = metrics.models_of(t)
    if len(models) > MAX_BAR_MODELS:
        return _template_grid(t, groups, models, path)
    return _bars_figure(
        t,
        groups,
        [template_label(g) for g in groups],
        PAGE_WIDTH,
        2.2 + len(groups) * (0.14 + 0.19 * max(1, len(models))),
        "Accuracy per template (95% bootstrap intervals)",
        path,
        horizontal=True,
        sizes=PAGE_TYPE,
    )


#: Models per panel of the template grid: at :data:`PAGE_TYPE` sizes this many columns fit
#: :data:`PAGE_WIDTH`; more models get more panels, one under the other.
GRID_COLUMNS = 6


def _template_grid(t: pd.DataFrame, groups: list[str], models: list[str], path: Path) -> list[Path]:
    """Templates (rows) x models (columns): accuracy in % and n in each cell on a white-to-blue
    scale; a cell without answers is grey and says "no data" (a measured 0 % is a white cell
    reading "0"). At most :data:`GRID_COLUMNS` models a panel, panels one under the other, so the
    figure keeps the page's width and its type (:data:`PAGE_TYPE`)."""
    plt = pyplot()
    cells = t.set_index(["group", "model"])
    per_panel = math.ceil(len(models) / math.ceil(len(models) / GRID_COLUMNS))  # panels of equal width
    chunks = [models[k : k + per_panel] for k in range(0, len(models), per_panel)]
    panel_height = 1.6 + 0.42 * len(groups)
    fig, axes = plt.subplots(len(chunks), 1, figsize=(PAGE_WIDTH, panel_height * len(chunks)), squeeze=False)
    for ax, chunk in zip(axes[:, 0], chunks):
        image = _grid_panel(ax, cells, groups, chunk)
        colour_bar(fig, image, ax, "accuracy (%)", fraction=0.03, size=PAGE_TYPE.labels + 1)
    axes[0, 0].set_title("Accuracy per template (%, n = samples)", fontsize=PAGE_TYPE.title, pad=8)
    fig.tight_layout()
    return save(fig, path)


def _grid_panel(ax, cells: pd.DataFrame, groups: list[str], models: list[str]):
    """One panel of the template grid: these models' columns; returns the image (for its colour bar)."""
    values = np.full((len(groups), len(models)), np.nan)
    for i, g in enumerate(groups):
        for j, m in enumerate(models):
            if (g, m) in cells.index:
                values[i, j] = 100 * float(cells.loc[(g, m), "accuracy"])
    image = ax.imshow(np.ma.masked_invalid(values), cmap="Blues", vmin=0, vmax=100, aspect="auto")
    ax.set_facecolor("#d9d9d9")  # no data
    for (i, g), (j, m) in itertools.product(enumerate(groups), enumerate(models)):
        value = values[i, j]
        n = int(cells.loc[(g, m), "n_samples"]) if np.isfinite(value) else 0
        ax.text(
            j,
            i,
            f"{value:.0f} (n={n})" if np.isfinite(value) else "no data",
            ha="center",
            va="center",
            fontsize=PAGE_TYPE.values,
            color="white" if np.isfinite(value) and value > 60 else ("black" if np.isfinite(value) else "0.35"),
        )
    ax.set_yticks(range(len(groups)), [template_label(g) for g in groups], fontsize=PAGE_TYPE.labels)
    ax.set_xticks(range(len(models)), models, rotation=45, ha="left", fontsize=PAGE_TYPE.labels)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    return image


def tier_accuracy(acc: pd.DataFrame, path: Path) -> list[Path]:
    """Table 3 as bars: each category x tier cell and Overall, one bar per model."""
    t = acc[acc["level"].isin(["cell", "overall"])]
    groups = [c for c in metrics.cell_order() if c in set(t["group"])] + [metrics.OVERALL]
    return _bars_figure(
        t,
        groups,
        groups,
        max(6.0, 0.9 * len(groups)),
        4.0,
        "Accuracy per category and tier (95% bootstrap intervals)",
        path,
    )


def failure_modes(modes: pd.DataFrame, path: Path) -> list[Path]:
    """One panel per model: per template, the stacked shares of each failure mode among wrong answers."""
    plt = pyplot()
    models = list(dict.fromkeys(modes["model"]))
    fig, axes = grid(plt, len(models), width=6.5, height=4.0)
    for ax, model in zip(axes, models):
        m = modes[(modes["model"] == model) & (modes["wrong"] > 0)]
        x = np.arange(len(m))
        bottom = np.zeros(len(m))
        for mode in MODES:
            share = 100 * m[f"share_{mode}"].to_numpy(float)
            ax.bar(x, share, 0.75, bottom=bottom, color=MODE_COLOURS[mode], label=LABELS[mode])
            bottom += share
        names = [t if t == "all" else template_label(t) for t in m["template_id"]]
        ax.set_xticks(x, [f"{t} (n={n})" for t, n in zip(names, m["wrong"])], rotation=60, ha="right", fontsize=6)
        ax.set_ylim(0, 100)
        ax.set_ylabel("share of wrong answers (%)")
        ax.set_title(model, fontsize=9)
        if not len(m):
            ax.text(0.5, 0.5, "no wrong answers", ha="center", va="center", transform=ax.transAxes)
    handles = [pyplot().Rectangle((0, 0), 1, 1, color=MODE_COLOURS[m]) for m in MODES]
    fig.legend(handles, [LABELS[m] for m in MODES], fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 0.95))
    fig.suptitle("Failure modes of wrong answers per template (n = wrong answers)", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def dominance_split(modes: pd.DataFrame, path: Path) -> list[Path]:
    """§4.3's split per model, over all its wrong answers: dominance (by mode) vs incomplete
    fusion vs other, as one horizontal stacked bar per model, labelled with its number of wrong
    answers and its dominance share."""
    plt = pyplot()
    rows = modes[(modes["template_id"] == "all") & (modes["wrong"] > 0)].iloc[::-1]
    fig, ax = plt.subplots(figsize=(7.5, 1.6 + 0.4 * max(1, len(rows))))
    y = np.arange(len(rows))
    left = np.zeros(len(rows))
    for mode in MODES:
        share = 100 * rows[f"share_{mode}"].to_numpy(float)
        ax.barh(y, share, 0.7, left=left, color=MODE_COLOURS[mode], label=f"{LABELS[mode]} ({MODE_HEADINGS[mode]})")
        left += share
    labels = [
        f"{m}\n(n={int(n)}, dominance {100 * d:.0f}%)"
        for m, n, d in zip(rows["model"], rows["wrong"], rows["share_dominance"])
    ]
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of wrong answers (%)")
    ax.set_title(
        f"Dominance ({', '.join(MODE_HEADINGS[m] for m in DOMINANCE)}) vs incomplete fusion, per model", fontsize=9
    )
    if not len(rows):
        ax.text(0.5, 0.5, "no wrong answers", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    handles, names = ax.get_legend_handles_labels()
    fig.legend(handles, names, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3)  # below the axes
    return save(fig, path)


def difficulty_histogram(trials: pd.DataFrame, path: Path) -> list[Path]:
    """The items' difficulty scores (1-10) by category, one count per item (the paper's Fig. 7)."""
    plt = pyplot()
    items = trials.drop_duplicates("sample_id").dropna(subset=["difficulty"])
    scores = np.arange(1, 11)
    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    bottom = np.zeros(len(scores))
    for category, colour in zip(CATEGORIES, ("tab:blue", "tab:orange")):
        counts = items[items["category"] == category]["difficulty"].astype(int).value_counts()
        heights = counts.reindex(scores, fill_value=0).to_numpy()
        ax.bar(scores, heights, 0.8, bottom=bottom, color=colour, label=category.upper())
        bottom += heights
    for s, total in zip(scores, bottom):
        if total:
            ax.text(s, total, f"{int(total)}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(scores)
    ax.set_xlabel("difficulty score")
    ax.set_ylabel("items")
    ax.set_ylim(0, max(1, bottom.max()) * 1.15)
    ax.set_title(f"Difficulty of the {len(items)} items with a score", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="category", title_fontsize=7)
    fig.tight_layout()
    return save(fig, path)
