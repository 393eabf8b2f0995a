"""Report figures of both benchmarks: a :class:`Figure` value (a name and how to draw it),
matplotlib on the Agg backend, panel grids, and the one way a figure is saved (PNG at
:data:`DPI` and PDF, with the same bytes for the same figure).

matplotlib is imported when a figure is drawn, not with this module: it is slow to import and
a report without figures does not need it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure as MplFigure

__all__ = ["DPI", "Figure", "colour_bar", "grid", "label_points", "pyplot", "save"]

DPI = 200  # print quality; more pixels only cost render time in large reports


@dataclass(frozen=True)
class Figure:
    """One figure of a report: ``draw(stem)`` draws it to ``stem``.png and ``stem``.pdf (through
    :func:`save`) and returns the paths; the writer calls it with ``out / name``. ``draw`` must
    pickle (a module-level function or a :func:`functools.partial` of one) so that figures can
    be drawn in other processes. ``caption`` says what the figure shows (the report index and
    the results viewer print it under the figure)."""

    name: str
    draw: Callable[[Path], list[Path]]
    caption: str = ""


def pyplot() -> ModuleType:
    """matplotlib's pyplot on the Agg backend (no display needed); imported late, it is slow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def grid(
    plt: ModuleType, count: int, width: float = 4.2, height: float = 3.2, **shared: Any
) -> tuple[MplFigure, list[Axes]]:
    """A figure of ``count`` panels, at most four a row; unused panels hidden."""
    cols = min(4, count)
    rows = math.ceil(count / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, **shared)
    for ax in axes.flat[count:]:
        ax.axis("off")
    return fig, list(axes.flat)


def colour_bar(fig: MplFigure, image: Any, ax: Axes, label: str, *, fraction: float = 0.04, size: float = 8) -> None:
    """A labelled colour bar for ``image`` beside ``ax``, off the data, its label at ``size`` pt
    (the reports' small type) and its ticks a point smaller."""
    bar = fig.colorbar(image, ax=ax, fraction=fraction, pad=0.03)
    bar.set_label(label, fontsize=size)
    bar.ax.tick_params(labelsize=size - 1)


#: Where :func:`label_points` tries a label, in order: right, left, above, below, then the corners
#: (unit steps; a label's edge or centre is placed at the step times the gap from its point).
_LABEL_PLACES = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1))


def label_points(
    ax: Axes,
    points: Sequence[tuple[float, float]],
    labels: Sequence[str],
    *,
    fontsize: float = 6.5,
    marker_pt: float = 7.0,
) -> None:
    """Name each point beside it without covering another label or point: each label (points
    taken left to right) goes to the first place of :data:`_LABEL_PLACES` that overlaps nothing
    drawn so far and stays inside the axes, trying twice and three times as far (then with a
    leader line) when all are taken; where none is free, the least-covered place. Deterministic
    (no randomness, no iteration to convergence), so a figure keeps its bytes. Call it after
    the figure's layout is final (``tight_layout``): it measures in display units."""
    from matplotlib.transforms import Bbox

    fig = ax.figure
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    pt = fig.dpi / 72  # display units per point
    inside = ax.get_window_extent(renderer)
    centres = [tuple(ax.transData.transform(p)) for p in points]
    half = marker_pt * pt / 2
    taken = [Bbox.from_extents(x - half, y - half, x + half, y + half) for x, y in centres]

    def covered(box: Bbox) -> float:
        """How much of ``box`` lies on what is drawn or outside the axes (display units squared)."""
        area = sum(
            max(0.0, min(box.x1, o.x1) - max(box.x0, o.x0)) * max(0.0, min(box.y1, o.y1) - max(box.y0, o.y0))
            for o in taken
        )
        outside = box.width * box.height - max(0.0, min(box.x1, inside.x1) - max(box.x0, inside.x0)) * max(
            0.0, min(box.y1, inside.y1) - max(box.y0, inside.y0)
        )
        return float(area + outside)

    for k in sorted(range(len(points)), key=lambda i: (centres[i][0], -centres[i][1], labels[i])):
        (x, y), label = centres[k], labels[k]
        probe = ax.text(0, 0, label, fontsize=fontsize)
        extent = probe.get_window_extent(renderer)
        probe.remove()
        width, height = extent.width, extent.height
        choices = []
        for reach in (1, 2, 3):
            gap = half + 1.5 * pt + (reach - 1) * (height + 2 * pt)
            for dx, dy in _LABEL_PLACES:
                x0 = x + (gap if dx > 0 else -gap - width if dx < 0 else -width / 2)
                y0 = y + (gap if dy > 0 else -gap - height if dy < 0 else -height / 2)
                # the leader line leaves the label at its side facing the point
                facing = (0.0 if dx > 0 else 1.0 if dx < 0 else 0.5, 0.0 if dy > 0 else 1.0 if dy < 0 else 0.5)
                choices.append((Bbox.from_bounds(x0, y0, width, height), reach, facing))
        # the first free place, else the least covered
        box, reach, facing = choices[min((covered(choice[0]), n) for n, choice in enumerate(choices))[1]]
        leader = {"arrowstyle": "-", "color": "0.5", "linewidth": 0.5, "shrinkA": 0, "shrinkB": 2, "relpos": facing}
        ax.annotate(
            label,
            points[k],
            xytext=((box.x0 - x) / pt, (box.y0 - y) / pt),
            textcoords="offset points",
            fontsize=fontsize,
            ha="left",
            va="bottom",
            arrowprops=leader if reach > 1 else None,
        )
        taken.append(box)


def save(fig: MplFigure, stem: Path) -> list[Path]:
    """``stem``.png (at :data:`DPI`) and ``stem``.pdf, cropped to what is drawn (legends outside
    the axes included)."""
    plt = pyplot()
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    # One layout pass for both files: "tight" would measure the figure again in each savefig.
    bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(0.1)  # type: ignore[attr-defined]
    for path in paths:
        # no creation date in the PDF: the same figure gives the same bytes (builds are compared by digest)
        fig.savefig(
            path,
            dpi=DPI,
            bbox_inches=bbox,
            **(
                {"pil_kwargs": {"compress_level": 3}} if path.suffix == ".png" else {"metadata": {"CreationDate": None}}
            ),
        )
    plt.close(fig)
    return paths
