"""lmms-eval's model base class, for the classes of ours that derive from it; what our models
need under a multi-process launch (:class:`HostSideModel`, :func:`without_padding`); and the
opening of our local-model adapters.

lmms-eval is imported on first use, not when this package is: its import takes seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faultline_eval.core.settings import LOCAL_RANK, RANK, WORLD_SIZE
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


def launcher_rank() -> tuple[int, int]:
    """(rank, world size) the launcher gave this process: ``torchrun`` and ``accelerate launch``
    both set ``RANK`` and ``WORLD_SIZE``; a plain process is rank 0 of 1."""
    return int(RANK.get()), int(WORLD_SIZE.get())


class HostSideModel:
    """Mixin (before the lmms base) for our lmms-eval models that run no tensors on a device:
    the remote-API clients and the offline reference and oracle models.

    Under a multi-process launch lmms-eval's evaluator hands each rank its slice of the docs
    (``Task.build_all_requests(rank=..., world_size=...)``: every ``world_size``-th doc from
    ``rank``), counts the ranks' requests with a collective on ``lm.device`` and gathers the
    results on rank 0. So such a model needs ``rank``/``world_size`` from the launcher (set here at
    construction, so a client can use them before the evaluator does) and a ``device`` the
    collectives can run on: the accelerator's device when the evaluator gave the model one (its
    ``accelerate`` path), the rank's GPU when the process group is NCCL's, the CPU otherwise
    (gloo: ``torchrun`` or ``accelerate launch --cpu``). lmms-eval's own API models get theirs
    from an ``Accelerator()`` of their own (``models/simple/openai.py``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._rank, self._world_size = launcher_rank()

    @property
    def device(self) -> Any:  # a torch.device
        accelerator = getattr(self, "accelerator", None)
        if accelerator is not None:
            return accelerator.device
        import torch  # heavy: only a multi-process evaluator asks

        distributed = torch.distributed
        if distributed.is_available() and distributed.is_initialized() and distributed.get_backend() == "nccl":
            return torch.device("cuda", int(LOCAL_RANK.get()))
        return torch.device("cpu")


def without_padding(requests: list, answer: Callable[[list], list[str]]) -> list[str]:
    """``answer(requests)`` for the real requests only; an empty reply for lmms-eval's padding.

    Under a multi-process launch the evaluator evens out the ranks' request counts by appending
    copies of a rank's last request, marked ``metadata["__padding_only__"]``, and throws their
    replies away. Answering them costs a generation, and for a remote model it sends that request
    a second time."""
    real = [i for i, r in enumerate(requests) if not (getattr(r, "metadata", None) or {}).get("__padding_only__")]
    if len(real) == len(requests):
        return answer(requests)
    replies = [""] * len(requests)
    for index, reply in zip(real, answer([requests[i] for i in real]), strict=True):
        replies[index] = reply
    return replies
