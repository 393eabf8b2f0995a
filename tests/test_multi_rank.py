"""Our models under a real multi-process launch (``torchrun --nproc_per_node 2``) on CPU: the
evaluator's collectives find the model's ``device``, each rank answers its share of the docs,
rank 0 writes what one process writes, and a served model gets every request exactly once.

Slow: about 30 s each on 2 idle cores (a one-process run beside a two-rank launch per test).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, request_digest

from faultline_eval.core.store import read_records

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
TASK = "sceval_single_noise_v70"
#: Odd, so the ranks get 3 and 2 docs and lmms-eval pads rank 1 with a copy of its last request.
LIMIT = "5"
TWO_RANKS = [str(BIN / "torchrun"), "--standalone", "--nproc_per_node", "2"]


def run_together(*commands: list[str], cwd: Path, env: dict) -> list[subprocess.CompletedProcess]:
    """Run ``commands`` at the same time (the one-process run beside the launch: half the wall
    time on 2 cores) and check that each exited 0."""
    started = [
        subprocess.Popen(
            c, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env}
        )
        for c in commands
    ]
    done = []
    for command, process in zip(commands, started, strict=True):
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, f"{command}:\n{stdout[-3000:]}{stderr[-3000:]}"
        done.append(subprocess.CompletedProcess(command, process.returncode, stdout, stderr))
    return done


def outcome(folder: Path, log: subprocess.CompletedProcess) -> tuple[dict, list[dict]]:
    """(the task's metric values, its sample lines sorted by doc_id, latencies removed)."""
    found = list(folder.rglob("*_results.json"))
    assert found, f"no results in {folder} (plain lmms-eval exits 0 on a failed run):\n{log.stderr[-3000:]}"
    metrics = json.loads(found[0].read_text())["results"][TASK]
    lines = [json.loads(line) for line in next(folder.rglob(f"*_samples_{TASK}.jsonl")).read_text().splitlines()]
    for line in lines:
        del line["sceval_record"]["latency_s"]  # wall time: the only field two runs may not share
    return metrics, sorted(lines, key=lambda line: line["doc_id"])


def test_reference_on_two_ranks_writes_what_one_process_writes(tmp_path):
    args = ["--model", "sceval_reference", "--tasks", TASK, "--limit", LIMIT, "--log_samples"]
    env = {"SCEVAL_CACHE": str(tmp_path / "cache")}
    one, two = run_together(
        [str(BIN / "lmms-eval"), *args, "--output_path", "one/"],
        [*TWO_RANKS, "-m", "lmms_eval", *args, "--output_path", "two/"],
        cwd=tmp_path,
        env=env,
    )
    one_metrics, one_lines = outcome(tmp_path / "one", one)
    two_metrics, two_lines = outcome(tmp_path / "two", two)
    assert two_metrics["sceval_valid_trials,none"] == int(LIMIT)
    assert two_metrics == one_metrics
    assert [line["doc_id"] for line in two_lines] == list(range(int(LIMIT)))
    assert two_lines == one_lines


def chat_bodies(server: FakeOpenAI) -> Counter:
    """How often each distinct chat request reached the server."""
    return Counter(request_digest(r["body"]) for r in server.requests if "texts" in r)


def test_served_model_on_two_ranks_gets_each_request_once(tmp_path):
    """Through ``faultline-eval`` (whose exit status says whether the run worked), with the default
    reply store: on two ranks one file that both append to."""

    def command(launcher: list[str], name: str, server: FakeOpenAI) -> list[str]:
        return [
            *launcher,
            str(BIN / "faultline-eval"),
            "--model",
            "sceval_openai",
            # each run's default reply store, in its own cache folder
            f"--model_args=base_url={server.url},audio_canary=off,max_retries=0",
            "--tasks",
            TASK,
            "--limit",
            LIMIT,
            "--log_samples",
            "--output_path",
            f"{name}/out/",
        ]

    with FakeOpenAI() as one_server, FakeOpenAI() as two_server:
        one, two = run_together(
            ["env", f"SCEVAL_CACHE={tmp_path / 'one' / 'cache'}", *command([], "one", one_server)],
            [
                "env",
                f"SCEVAL_CACHE={tmp_path / 'two' / 'cache'}",
                *command([*TWO_RANKS, "--no-python"], "two", two_server),
            ],
            cwd=tmp_path,
            env={"OPENAI_API_KEY": "test-key"},
        )
    one_sent, two_sent = chat_bodies(one_server), chat_bodies(two_server)
    assert len(one_sent) == int(LIMIT) and set(one_sent.values()) == {1}
    assert two_sent == one_sent  # the same requests, each sent once: none twice (padding), none lost
    assert outcome(tmp_path / "two" / "out", two) == outcome(tmp_path / "one" / "out", one)
    # the store both ranks appended to holds each reply once, every line whole
    store = tmp_path / "two" / "cache" / "replies" / "openai-fake-omni.jsonl"
    keys = [record["key"] for record in read_records(store)]
    assert len(keys) == len(set(keys)) == len(store.read_text().splitlines()) == int(LIMIT)
