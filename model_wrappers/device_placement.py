"""Where a local model's weights go: ``device=cpu`` honoured, data-parallel ranks on their own GPU.

lmms-eval's Qwen/MiniCPM ``__init__`` hard-code CUDA placement; our adapters place the model here
instead and hand the evaluator what it reads (``device``, ``rank``, ``world_size``, the accelerator).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Placement:
    device: Any  # a torch.device
    device_map: str
    accelerator: Any = None  # set under a multi-process launch: lmms-eval's evaluator gathers through it
    rank: int = 0
    world_size: int = 1


def placement(device: str | None, device_map: str | None) -> Placement:
    """Where the model goes: ``device`` (default cuda when there is one, else cpu), or the
    local rank's GPU under a multi-process launch. ``device_map=auto`` shards one process's
    model over all its GPUs."""
    import torch
    from accelerate import Accelerator

    accelerator = Accelerator()
    wanted = str(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if accelerator.num_processes > 1:
        target = (
            torch.device(f"cuda:{accelerator.local_process_index}")
            if wanted.startswith("cuda")
            else torch.device(wanted)
        )
        return Placement(target, str(target), accelerator, accelerator.process_index, accelerator.num_processes)
    target = torch.device(wanted)
    return Placement(target, device_map if device_map == "auto" else str(target))


def apply_placement(model_wrapper: Any, where: Placement) -> None:
    """Tell the lmms-eval wrapper where its model is."""
    model_wrapper._device = where.device
    model_wrapper.device_map = where.device_map
    model_wrapper._rank, model_wrapper._world_size = where.rank, where.world_size
    if where.accelerator is not None:
        model_wrapper.accelerator = where.accelerator


def torch_dtype(dtype: str) -> Any:
    """``auto`` or the torch dtype named ``dtype`` (``bfloat16``, ``float32``, ...)."""
    import torch

    if dtype == "auto":
        return "auto"
    return getattr(torch, str(dtype))
