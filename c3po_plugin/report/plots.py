"""PNG figures of the C3PO report: per-template and per-tier accuracy, failure-mode shares.
Matplotlib setup and panel grids come from :mod:`sceval_plugin.report.plots`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from c3po_plugin import metrics
from c3po_plugin.failure_modes import LABELS, MODES
from sceval_plugin.report.plots import grid, pyplot

MODE_COLOURS = {"audio_dominance": "tab:blue", "visual_dominance": "tab:orange", "text_dominance": "tab:green",
                "incomplete_fusion": "tab:red", "other": "tab:grey"}


def _grouped_bars(ax, acc: pd.DataFrame, groups: list[str], models: list[str]) -> None:
    """One cluster of bars per group, one bar per model, with interval error bars."""
    cells = acc.set_index(["model", "group"])
    width = 0.8 / max(1, len(models))
    x = np.arange(len(groups))
    for k, model in enumerate(models):
        rows = [cells.loc[(model, g)] if (model, g) in cells.index else None for g in groups]
        mean = np.array([100 * r["accuracy"] if r is not None else np.nan for r in rows])
        low = np.array([100 * r["ci_low"] if r is not None else np.nan for r in rows])
        high = np.array([100 * r["ci_high"] if r is not None else np.nan for r in rows])
        yerr = np.nan_to_num(np.vstack([mean - low, high - mean]), nan=0.0).clip(min=0)
        ax.bar(x + (k - (len(models) - 1) / 2) * width, np.nan_to_num(mean), width, yerr=yerr, capsize=1.5,
               label=model, error_kw={"linewidth": 0.7})
    ax.set_xticks(x, groups, rotation=60, ha="right", fontsize=7)
    ax.set_ylim(0, 105)
    ax.set_ylabel("accuracy (%)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def _bars_figure(acc: pd.DataFrame, groups: list[str], width: float, height: float, title: str, path: Path) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(width, height))
    _grouped_bars(ax, acc, groups, metrics.models_of(acc))
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def template_accuracy(acc: pd.DataFrame, path: Path) -> Path:
    """Per template (registry order): accuracy of every model with its 95 % interval."""
    t = acc[acc["level"] == "template"]
    groups = sorted(t["group"].unique(), key=metrics.group_rank)
    width = max(6.0, 0.45 * len(groups) * max(1, t["model"].nunique()) ** 0.5)
    return _bars_figure(t, groups, width, 4.2, "Accuracy per template (95% bootstrap intervals)", path)


def tier_accuracy(acc: pd.DataFrame, path: Path) -> Path:
    """Table 3 as bars: each category x tier cell and Overall, one bar per model."""
    t = acc[acc["level"].isin(["cell", "overall"])]
    groups = [c for c in metrics.cell_order() if c in set(t["group"])] + [metrics.OVERALL]
    return _bars_figure(t, groups, max(6.0, 0.9 * len(groups)), 4.0,
                        "Accuracy per category and tier (95% bootstrap intervals)", path)


def failure_modes(modes: pd.DataFrame, path: Path) -> Path:
    """One panel per model: per template, the stacked shares of each failure mode among wrong answers."""
    plt = pyplot()
    models = list(dict.fromkeys(modes["model"]))
    fig, axes = grid(plt, len(models), width=6.0, height=3.6)
    for ax, model in zip(axes, models):
        m = modes[(modes["model"] == model) & (modes["wrong"] > 0)]
        x = np.arange(len(m))
        bottom = np.zeros(len(m))
        for mode in MODES:
            share = 100 * m[f"share_{mode}"].to_numpy(float)
            ax.bar(x, share, 0.75, bottom=bottom, color=MODE_COLOURS[mode], label=LABELS[mode])
            bottom += share
        ax.set_xticks(x, [f"{t} ({n})" for t, n in zip(m["template_id"], m["wrong"])], rotation=60, ha="right",
                      fontsize=7)
        ax.set_ylim(0, 100)
        ax.set_ylabel("share of wrong answers (%)")
        ax.set_title(model, fontsize=9)
    if models and axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=6, loc="lower left")
    fig.suptitle("Failure modes of wrong answers per template (count of wrong answers in brackets)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
