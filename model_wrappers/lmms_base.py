"""lmms-eval's model base class, for the classes of ours that derive from it, and the opening
of our local-model adapters.

lmms-eval is imported on first use, not when this package is: its import takes seconds.
"""

from __future__ import annotations

from typing import Any

from faultline_eval.model_wrappers.device_placement import Placement, apply_placement, placement
from faultline_eval.model_wrappers.model_args import check_model_args


def lmms_base() -> type:
    """lmms-eval's ``lmms`` class (the base of every lmms-eval model)."""
    from lmms_eval.api.model import lmms

    return lmms


def init_local_model(wrapper: Any, device: str | None, device_map: str | None, kwargs: dict[str, Any]) -> Placement:
    """The opening every local adapter (Qwen-Omni, MiniCPM-o) shares, in place of lmms-eval's own
    ``__init__`` (which hard-codes the hub processor id, CUDA placement and an assert on extra
    arguments): run the lmms base initialiser only, refuse unknown model args ``kwargs`` with an
    error naming the close match, and place the wrapper (:func:`.device_placement.placement`).
    Returns the placement, for the adapter to load its weights there."""
    lmms_base().__init__(wrapper)
    check_model_args(wrapper.model_id, type(wrapper), kwargs)
    where = placement(device, device_map)
    apply_placement(wrapper, where)
    return where
