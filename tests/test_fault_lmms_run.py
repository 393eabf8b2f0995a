"""kill -9 during an lmms-eval run, resume, nothing lost (issue 24, fault injection (a)).

The test runs ``benchmarks/faults.py``'s ``lmms_run`` pipeline at CI size: ``faultline-eval``
(lmms-eval, ``--log_samples``) with ``sceval_openai`` against the local fake OpenAI server, 24
requests, killed at 10 seeded points among its requests (each delay counted from the run's first
answered request), resumed from the reply store each time, then run to the end; the benchmark
runs 50 kill points on a larger task. Each lmms-eval start costs seconds (imports, task index):
the 20 kill points of the suite are two runs of 10 under two seeds, this file's (seed 0) and
test_fault_lmms_run_seed1.py's, so that ``pytest -n --dist loadfile`` runs them side by side
(12 starts each, where one file of 20 kill points was the suite's last to finish).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "faults.py"
KILL_POINTS = 10


def load_faults():
    spec = importlib.util.spec_from_file_location("faults_benchmark", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_killed_run(seed: int, workdir: Path) -> None:
    """``lmms_run`` at :data:`KILL_POINTS` kill points drawn from ``seed``: resumed with nothing
    lost, duplicated, different or sent again."""
    row = load_faults().PIPELINES["lmms_run"](KILL_POINTS, seed, workdir, tasks="sceval_clean", limit=24, latency_s=0.2)
    assert row["returncode"] == 0, row["final_output"]
    assert row["killed"] >= KILL_POINTS * 3 // 4  # the kills land in the work, not after it
    assert (row["lost"], row["duplicated"], row["differing_files"]) == (0, 0, [])
    assert row["resent_after_stored"] == 0 and row["unanswered"] == 0 and row["requests"] == 24
    assert "sceval_clean: 24 requests, 24 answered (100%); no failures -> ok" in row["final_output"]


@pytest.mark.slow
def test_a_killed_lmms_eval_run_resumes_with_nothing_lost_duplicated_or_sent_again(tmp_path):
    check_killed_run(0, tmp_path)
