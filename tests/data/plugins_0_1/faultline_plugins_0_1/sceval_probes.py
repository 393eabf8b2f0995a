"""A probe as 0.1's ``sceval_register_probes`` docstring described it (``sceval_plugin.probes.probe``,
``Evidence``, ``NotApplicable``), and the README's "a plugin adds e.g. a 0.25 s desync with
``registry.add(probe_condition("desync", 0.25))``"."""

from dataclasses import replace

import numpy as np

from sceval_plugin import hookimpl
from sceval_plugin.probes import NotApplicable, probe, probe_condition


def position_of(value):
    if value not in ("start", "end"):
        raise ValueError(f"position must be 'start' or 'end', got {value!r}")
    return value


@probe(
    "black_frame",
    family="distractor",
    parameters=("start", "end"),
    check=position_of,
    describe=lambda position: f"a black frame added at the {position} of the frames",
)
def black_frame(evidence, position, rng, donor):
    """Add one all-black frame: does an empty frame distract the model?"""
    if evidence.frames is None:
        raise NotApplicable("no_frames")
    black = np.zeros_like(evidence.frames[:1])
    parts = (black, evidence.frames) if position == "start" else (evidence.frames, black)
    return replace(evidence, frames=np.concatenate(parts), frame_times=None)


@hookimpl
def sceval_register_probes(registry):
    registry.add(black_frame)


@hookimpl
def sceval_register_conditions(registry):
    registry.add(probe_condition("desync", 0.25))
    for position in black_frame.sceval_probe.parameters:
        registry.add(probe_condition("black_frame", position))
