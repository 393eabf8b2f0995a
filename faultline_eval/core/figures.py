"""Report figures of both benchmarks: a :class:`Figure` value (a name and how to draw it),
matplotlib on the Agg backend, panel grids, and the one way a figure is saved (PNG at
:data:`DPI` and PDF, with the same bytes for the same figure).

matplotlib is imported when a figure is drawn, not with this module: it is slow to import and
a report without figures does not need it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure as MplFigure

__all__ = ["DPI", "Figure", "colour_bar", "grid", "pyplot", "save"]

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


def colour_bar(fig: MplFigure, image: Any, ax: Axes, label: str, *, fraction: float = 0.04) -> None:
    """A labelled colour bar for ``image`` beside ``ax``, off the data, in the reports' small type."""
    bar = fig.colorbar(image, ax=ax, fraction=fraction, pad=0.03)
    bar.set_label(label, fontsize=8)
    bar.ax.tick_params(labelsize=7)


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
