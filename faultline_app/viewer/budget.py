"""Which trials the viewer shows with their media: the size budget.

Every trial is listed in the sample tables; only the trials the budget picks get a detail
section and media. The pick is deterministic and the same across models and cells: samples
are ranked by a keyed hash of their id (never Python's ``hash()``), and each (model, cell)
takes its first ``per_cell`` trials in the order (variant, rank): variant 0 of as many samples
as fit, then further variants. The chosen samples so line up across conditions and models and
can be compared side by side.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The verdict every sample table and budget uses for a correct trial.
CORRECT = "correct"


@dataclass(frozen=True)
class Budget:
    """``per_cell`` trials shown per (model, cell); ``wrong_only`` shows only trials not correct;
    ``max_mb`` caps the media written (trials past it are listed without media; a content already
    written costs nothing more, so trials sent it are shown past the cap too)."""

    per_cell: int = 4
    wrong_only: bool = False
    max_mb: float = 100.0

    @classmethod
    def parse(cls, text: str | None) -> Budget:
        """``per_cell=8,wrong_only,max_mb=100`` (any subset, in any order; ``per_cell=all``: no
        per-cell cap); ``all``: every trial with its media, uncapped unless ``max_mb`` is given too."""
        values: dict = {}
        every = False
        for part in filter(None, (p.strip() for p in (text or "").split(","))):
            key, _, value = part.partition("=")
            key = key.strip().replace("-", "_")
            try:
                if key == "all" and not value:
                    every = True
                elif key == "wrong_only":
                    values[key] = value.strip().lower() not in ("0", "false", "no")
                elif key == "per_cell":
                    values[key] = 10**9 if value.strip() == "all" else int(value)
                elif key == "max_mb":
                    values[key] = float(value)
                else:
                    raise ValueError(f"unknown setting {key!r}")
            except ValueError as exc:
                raise ValueError(
                    f"--html-budget {text!r}: {exc}; expected all, or per_cell=N, wrong_only, max_mb=M"
                ) from None
        if every:
            values = {"max_mb": math.inf, **values, "per_cell": 10**9}
        budget = cls(**values)
        if budget.per_cell < 0 or budget.max_mb < 0:
            raise ValueError(f"--html-budget {text!r}: per_cell and max_mb are not negative")
        return budget

    def describe(self) -> str:
        per_cell = "every trial" if self.per_cell >= 10**9 else f"at most {self.per_cell} trial(s)"
        wrong = " that are not correct (wrong, invalid or unscored)" if self.wrong_only else ""
        cap = (
            "media are not capped"
            if math.isinf(self.max_mb)
            else f"media are capped at {self.max_mb:g} MB, trials past the cap are listed without media"
        )
        return (
            f"{per_cell}{wrong} per model and cell are shown with their media, the same samples in every cell "
            f"where possible (samples ranked by a keyed hash of their id); {cap}. Every trial is in the tables."
        )


def media_counts(summary: dict) -> str:
    """A section's trials by their media (the summary of
    :meth:`~faultline_app.viewer.site.SiteWriter.write_section`), each trial counted once: shown
    with media + without (budget) + not regenerated = all its trials."""
    not_picked = summary["without_media"] - summary["past_max_mb"]
    failed = f", {summary['media_failed']} whose media could not be regenerated" if summary["media_failed"] else ""
    return (
        f"{summary['trials']} trial(s) of {len(summary['models'])} model(s): {summary['shown']} shown with media on "
        f"{summary['samples']} sample page(s), {summary['without_media']} without media (budget: {not_picked} not "
        f"picked per cell, {summary['past_max_mb']} past max_mb){failed}"
    )


def sample_rank(sample_ids) -> np.ndarray:
    """A stable pseudo-random rank per sample id (blake2b of the id; each distinct id hashed once)."""
    ids = [str(s) for s in sample_ids]
    rank = {
        s: int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8, person=b"fl-view").digest(), "big")
        for s in dict.fromkeys(ids)
    }
    return np.array([rank[s] for s in ids], dtype=np.uint64)


def select(rows: pd.DataFrame, budget: Budget) -> pd.Series:
    """A boolean mask over ``rows`` (columns model, cell, sample_id, variant, verdict): the trials
    shown in detail, ``budget.per_cell`` per (model, cell), variant 0 of the first-ranked samples first."""
    import pandas as pd  # heavy: the CLIs parse --html-budget (Budget) at start-up, before any table exists

    eligible = rows["verdict"] != CORRECT if budget.wrong_only else pd.Series(True, index=rows.index)
    ranked = rows.assign(_rank=sample_rank(rows["sample_id"].astype(str)))[eligible]
    ranked = ranked.sort_values(["variant", "_rank", "sample_id"], kind="stable")
    order = ranked.groupby(["model", "cell"], sort=False, observed=True).cumcount()
    mask = pd.Series(False, index=rows.index)
    mask[order.index[order.to_numpy() < budget.per_cell]] = True
    return mask
