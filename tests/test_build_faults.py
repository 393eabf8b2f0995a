"""Fault injection (issue 24, c): ``sceval build annotate import`` and ``sceval build publish``
killed with SIGKILL at 20 seeded random points each, then run to the end: nothing lost or
duplicated, every output byte-identical to an uninterrupted run, and
no kill leaves a half-written output behind (benchmarks/faults.py, CI-sized).
Each takes ~40 s on a loaded 2-core machine (20 restarts of the CLI)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import faults

pytestmark = pytest.mark.slow
KILL_POINTS = 20


@pytest.mark.parametrize("pipeline", ["sceval_annotate", "sceval_publish"])
def test_a_killed_build_stage_reruns_to_the_same_bytes(pipeline, tmp_path):
    result = faults.PIPELINES[pipeline](KILL_POINTS, 0, tmp_path)
    assert result["killed"] >= KILL_POINTS // 2, result  # most kills land while the command runs
    assert (result["lost"], result["duplicated"], result["differing_files"]) == (0, 0, []), result
    assert result["half_written"] == 0, result  # after every kill: the finished output or none
