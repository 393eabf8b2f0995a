"""The 0.1 probe plugin, through the API."""

from dataclasses import replace
from typing import Any

import numpy as np

from sceval_plugin.api import (
    ConditionRegistry,
    Evidence,
    NotApplicable,
    OmniItem,
    ProbeRegistry,
    hookimpl,
    probe,
    probe_condition,
)

POSITIONS = ("start", "end")


def position_of(value: Any) -> str:
    if value not in POSITIONS:
        raise ValueError(f"position must be 'start' or 'end', got {value!r}")
    return str(value)


@probe(
    "black_frame",
    family="distractor",
    parameters=POSITIONS,
    check=position_of,
    describe=lambda position: f"a black frame added at the {position} of the frames",
)
def black_frame(evidence: Evidence, position: str, rng: np.random.Generator, donor: OmniItem | None) -> Evidence:
    """Add one all-black frame: does an empty frame distract the model?"""
    if evidence.frames is None:
        raise NotApplicable("no_frames")
    black = np.zeros_like(evidence.frames[:1])
    parts = (black, evidence.frames) if position == "start" else (evidence.frames, black)
    return replace(evidence, frames=np.concatenate(parts), frame_times=None)


@hookimpl
def sceval_register_probes(registry: ProbeRegistry) -> None:
    registry.add(black_frame)


@hookimpl
def sceval_register_conditions(registry: ConditionRegistry) -> None:
    registry.add(probe_condition("desync", 0.25))
    for position in POSITIONS:
        registry.add(probe_condition("black_frame", position))
