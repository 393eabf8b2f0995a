"""PNG figures: severity curves, the joint-corruption scatter, the model x operator heatmap."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from sceval_plugin.metrics.protocol import JOINT_BLOCKS, ConditionInfo, Numbers

STYLE = {"text": "-", "vision": "--", "audio": ":"}
MARKERS = {"tv": "o", "ta": "s", "va": "^", "tva": "D"}


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display needed); imported late, it is slow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def grid(plt, count: int, width: float = 4.2, height: float = 3.2):
    """A figure of ``count`` panels, at most four a row; unused panels hidden."""
    cols = min(4, count)
    rows = math.ceil(count / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[count:]:
        ax.axis("off")
    return fig, list(axes.flat)


def severity_curves(numbers: Numbers, info: dict[str, ConditionInfo], path: Path) -> Path:
    """Per model: accuracy against severity (0 = clean) for every operator; line style = modality."""
    plt = pyplot()
    s = numbers.summary
    models = sorted(s["model"].unique())
    fig, axes = grid(plt, len(models))
    cmap = plt.get_cmap("tab20")
    for ax, model in zip(axes, models):
        acc = s[s["model"] == model].set_index("condition_id")["accuracy"]
        curves: dict[tuple[str, str], dict[int, float]] = {}
        for cid, value in acc.items():
            c = info.get(cid)
            if c and c.block == "single":
                modality, op, sev = c.corruptions[0]
                curves.setdefault((modality, op), {})[sev] = value
        for k, ((modality, op), curve) in enumerate(sorted(curves.items())):
            xs = [0] + sorted(curve)
            ys = [acc.get("clean", np.nan)] + [curve[x] for x in sorted(curve)]
            ax.plot(xs, [100 * y for y in ys], STYLE[modality], marker=".", color=cmap(k % 20), label=op, linewidth=1.3)
        ax.set_title(model, fontsize=9)
        ax.set_xticks([0, 10, 30, 50, 70])
        ax.set_xlabel("severity")
        ax.set_ylabel("accuracy (%)")
        ax.grid(alpha=0.3)
    if models and axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=6, ncol=2, loc="lower left")
    fig.suptitle("Severity curves\n(solid: text, dashed: vision, dotted: audio)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def joint_scatter(numbers: Numbers, info: dict[str, ConditionInfo], path: Path) -> Path:
    """Per model: total severity s_t+s_v+s_a against the drop from clean, one marker per combination."""
    plt = pyplot()
    s = numbers.summary
    block = s["condition_id"].map(lambda c: info[c].block if c in info else "")
    joint = s.assign(block=block, budget=s["condition_id"].map(
        lambda c: sum(x[2] for x in info[c].corruptions) if c in info else 0))[block.isin(JOINT_BLOCKS)]
    models = sorted(joint["model"].unique()) or ["(no joint cells)"]
    fig, axes = grid(plt, len(models))
    colours = {"tv": "tab:red", "ta": "tab:blue", "va": "tab:green", "tva": "tab:purple"}
    groups = dict(tuple(joint.groupby(["model", "block"])))
    for ax, model in zip(axes, models):
        for b in JOINT_BLOCKS:
            g = groups.get((model, b))
            if g is not None:
                ax.scatter(g["budget"], 100 * g["delta_base"], marker=MARKERS[b], color=colours[b], label=b.upper(), s=28)
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_title(model, fontsize=9)
        ax.set_xlabel("total severity  s_t + s_v + s_a")
        ax.set_ylabel("drop from clean (pp)")
        ax.grid(alpha=0.3)
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=7)
    fig.suptitle("Joint corruption:\nseverity budget against accuracy drop", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def drop_heatmap(numbers: Numbers, info: dict[str, ConditionInfo], operators: list[str], path: Path) -> Path:
    """Models x operators: drop from clean at severity 70, in points."""
    plt = pyplot()
    s = numbers.summary
    models = sorted(s["model"].unique())
    cell = {c: i.corruptions[0][1] for c, i in info.items() if i.block == "single" and i.corruptions[0][2] == 70}
    grid = np.full((len(models), len(operators)), np.nan)
    for (model, cid), value in s.set_index(["model", "condition_id"])["delta_base"].items():
        if cid in cell and cell[cid] in operators:
            grid[models.index(model), operators.index(cell[cid])] = 100 * value
    fig, ax = plt.subplots(figsize=(1.0 + 0.6 * len(operators), 1.2 + 0.4 * len(models)))
    limit = np.nanmax(np.abs(grid)) if np.isfinite(grid).any() else 1.0
    image = ax.imshow(grid, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
    ax.set_xticks(range(len(operators)), operators, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(models)), models, fontsize=8)
    for i in range(len(models)):
        for j in range(len(operators)):
            if np.isfinite(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.0f}", ha="center", va="center", fontsize=6)
    fig.colorbar(image, ax=ax, label="drop from clean at severity 70 (pp)")
    ax.set_title("Where models break: severity-70 drops")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
