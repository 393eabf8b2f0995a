"""The second half of test_fault_lmms_run.py's kill points (seed 1), in a file of its own so that
``pytest -n --dist loadfile`` runs the two halves on different workers."""

from __future__ import annotations

import pytest
from test_fault_lmms_run import check_killed_run


@pytest.mark.slow
def test_a_killed_lmms_eval_run_resumes_at_other_kill_points_with_nothing_lost(tmp_path):
    check_killed_run(1, tmp_path)
