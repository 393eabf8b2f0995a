"""Budgeted SCEval evaluation on the real CLI (faultline_app/budgeted.py, issue 39)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import copy_demo

from faultline_app import budgeted
from faultline_eval.core.run_logs import ReportError, find_sample_files


def faultline_eval(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "faultline_app.eval_cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=600,
    )


def test_budgeted_run_refuses_what_it_cannot_estimate():
    with pytest.raises(budgeted.BudgetError, match="c3po_all: a budgeted run covers SCEval corruption cells"):
        budgeted.cell_tasks(["--tasks", "sceval_single_noise_v70,c3po_all", "--output_path", "out"])
    with pytest.raises(budgeted.BudgetError, match="--output_path"):
        budgeted.cell_tasks(["--tasks", "sceval_single_noise_v70"])
    with pytest.raises(budgeted.BudgetError, match="no SCEval corruption cell"):
        budgeted.cell_tasks(["--tasks", "sceval_clean", "--output_path", "out"])


def test_schedule_takes_each_open_cell_in_order_and_never_a_trial_twice():
    cells = [
        budgeted.Cell("a", 1, [f"a/i{k}/0" for k in range(5)]),
        budgeted.Cell("b", 1, [f"b/i{k}/0" for k in range(5)]),
    ]
    done = {"a/i0/0": {}, "a/i1/0": {}}
    assert budgeted.schedule(cells, done, set(), 2, 10) == ["a/i2/0", "a/i3/0", "b/i0/0", "b/i1/0"]
    assert budgeted.schedule(cells, done, {"a"}, 2, 10) == ["b/i0/0", "b/i1/0"]
    assert budgeted.schedule(cells, done, set(), 2, 3) == ["a/i2/0", "a/i3/0", "b/i0/0"]


@pytest.mark.slow  # two faultline-eval processes of the offline reference model on 6 demo items
def test_budgeted_run_then_completed_to_the_full_protocol(tmp_path):
    source = copy_demo(tmp_path / "src", 6)
    env = {"SCEVAL_SOURCE": str(source), "SCEVAL_CACHE": str(tmp_path / "cache")}
    command = ["--model", "sceval_reference", "--tasks", "sceval_single_noise_v70,sceval_single_mute_a70"]
    command += ["--output_path", "out"]
    done = faultline_eval(*command, "--budget", "14", "--round-size", "4", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    folder = tmp_path / "out" / "budget"
    report = json.loads((folder / "report.json").read_text())
    assert report["mode"] == "budgeted" and report["requests"] == 14 == 6 + 4 + 4
    assert report["full_protocol_requests"] == 6 + 2 * 18
    outcomes = budgeted.read_outcomes(folder)  # raises if a trial ran twice
    assert len(outcomes) == 14
    for cell in report["cells"]:  # each number with the requests it rests on, recomputed from the logs
        ran = [t for t in outcomes if t.startswith(cell["condition_id"] + "/")]
        assert cell["requests"] == len(ran) == 4
        clean = {t.split("/")[1]: o["correct"] for t, o in outcomes.items() if t.startswith("clean/")}
        drop = sum(clean[t.split("/")[1]] - outcomes[t]["correct"] for t in ran) / len(ran)
        assert cell["drop"] == pytest.approx(drop)
        assert cell["ci_low"] <= cell["drop"] <= cell["ci_high"]
        assert cell["status"] in ("open", "significant", "resolved")
    # the partial rounds are not a full run: a report over them is refused, naming the way out
    with pytest.raises(ReportError, match="--complete"):
        find_sample_files([tmp_path / "out"], pattern="*_samples_sceval_*.jsonl")
    # completed later: only the missing trials run, every earlier one is kept
    done = faultline_eval(*command, "--complete", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    after = budgeted.read_outcomes(folder)
    assert len(after) == 6 + 2 * 18 and all(after[t] == o for t, o in outcomes.items())
    report = json.loads((folder / "report.json").read_text())
    assert report["mode"].startswith("full protocol") and {c["status"] for c in report["cells"]} == {"complete"}
    assert len(find_sample_files([tmp_path / "out"], pattern="*_samples_sceval_*.jsonl")) >= 3
