"""lmms-eval's model base class, for the classes of ours that derive from it.

lmms-eval is imported on first use, not when this package is: its import takes seconds.
"""

from __future__ import annotations

from typing import Any


def lmms_base() -> type:
    """lmms-eval's ``lmms`` class (the base of every lmms-eval model)."""
    from lmms_eval.api.model import lmms

    return lmms


def init_lmms_base(wrapper: Any) -> None:
    """Run the lmms base initialiser only: lmms-eval's Qwen/MiniCPM ``__init__`` hard-code the hub
    processor id, CUDA placement and an assert on extra arguments."""
    lmms_base().__init__(wrapper)
