"""sceval_gemini through the real lmms-eval CLI and google-genai client, against a local fake server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_gemini import FakeGemini
from fixtures import copy_demo

pytestmark = pytest.mark.slow

SCENARIOS = ["ok", "429-then-ok", "500", "timeout", "blocked", "safety-stop", "malformed", "empty"]
KEY = "test-key-3f9a-never-logged"


def test_gemini_records_every_failure_with_its_category(tmp_path):
    names = iter(SCENARIOS)

    def tag(row):
        row["question"] = f"[[{next(names)}]] {row['question']}"
        row["gold_key"] = "A"

    data = copy_demo(tmp_path / "data", len(SCENARIOS), mutate=tag)
    with FakeGemini(timeout_sleep=3.0) as server:
        args = (
            f"base_url={server.url},model_version=gemini-test,max_retries=2,timeout=1,initial_backoff=0.01,"
            "max_concurrency=3"
        )
        env = {**os.environ, "SCEVAL_SOURCE": str(data), "GEMINI_API_KEY": KEY, "SCEVAL_CACHE": str(tmp_path / "cache")}
        env.pop("GOOGLE_API_KEY", None)
        done = subprocess.run(
            [
                str(Path(sys.executable).with_name("lmms-eval")),
                "eval",
                "--model",
                "sceval_gemini",
                "--model_args",
                args,
                "--tasks",
                "sceval_clean",
                "--log_samples",
                "--output_path",
                "out/",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        requests = list(server.requests)
    samples = next((tmp_path / "out").rglob("*_samples_sceval_clean.jsonl"))
    records = {}
    for line in samples.read_text().splitlines():
        r = json.loads(line)["sceval_record"]
        question = json.loads(Path(data / "items.jsonl").read_text().splitlines()[json.loads(line)["doc_id"]])[
            "question"
        ]
        records[question.split("]]")[0][2:]] = r
    expect = {
        "ok": (None, 0, 1),
        "429-then-ok": (None, 1, 1),
        "500": ("api_failure", 2, None),
        "timeout": ("api_failure", 2, None),
        "blocked": ("refusal", 0, None),
        "safety-stop": ("refusal", 0, None),
        "malformed": ("parse_failure", 0, None),
        "empty": ("empty", 0, None),
    }
    for scenario, (invalid, retries, correct) in expect.items():
        r = records[scenario]
        assert (r["invalid"], r["retries"], r["correct"]) == (invalid, retries, correct), scenario
        assert r["latency_s"] is not None and r["latency_s"] >= 0
    assert "HTTP 500" in records["500"]["failure_detail"] and "after 2 retries" in records["500"]["failure_detail"]
    assert records["timeout"]["latency_s"] >= 2.0  # three attempts of about one second
    # The run's totals beside its results JSON: requests by the lifecycle's category (a malformed
    # reply is the task's parse failure, a generated request here), and the usageMetadata of each
    # reply that carried one (answered within the timeout: not blocked, safety-stopped or timed out).
    info = json.loads(next((tmp_path / "out").rglob("*_run_info.json")).read_text())
    totals = info["requests"]["sceval_gemini:gemini-test"]
    lifecycle = [r["invalid"] for r in records.values() if r["invalid"] in ("api_failure", "refusal", "empty")]
    assert totals["failures"] == {c: lifecycle.count(c) for c in set(lifecycle)}
    assert (totals["sent"], totals["restored"], totals["generated"]) == (8, 0, 3)
    with_usage = [s for s, r in records.items() if r["invalid"] in (None, "parse_failure", "empty")]
    assert (totals["input_tokens"], totals["output_tokens"]) == (10 * len(with_usage), 5 * len(with_usage))

    first = requests[0]
    assert first["model"] == "gemini-test" and first["headers"].get("x-goog-api-key") == KEY
    config = first["body"]["generationConfig"]
    assert config["temperature"] == 0 and config["responseMimeType"] == "application/json"
    assert "systemInstruction" in first["body"]
    parts = first["body"]["contents"][0]["parts"]
    inline = [p.get("inlineData") or p.get("inline_data") for p in parts]
    kinds = [(i.get("mimeType") or i.get("mime_type")) if i else "text" for i in inline]
    assert kinds[-1] == "text" and kinds[-2] == "audio/wav" and set(kinds[:-2]) == {"image/png"}
    assert 1 <= kinds.count("image/png") <= 8
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="ignore"), f"API key leaked into {path}"
    assert KEY not in done.stdout + done.stderr


def test_the_key_must_come_from_the_environment(tmp_path):
    from faultline_eval.model_wrappers.gemini import GeminiChat

    env = {k: os.environ.pop(k) for k in ("GEMINI_API_KEY", "GOOGLE_API_KEY") if k in os.environ}
    try:
        with pytest.raises(ValueError, match="set GEMINI_API_KEY"):
            GeminiChat()
        os.environ["GEMINI_API_KEY"] = KEY
        with pytest.raises(ValueError, match="not in --model_args"):
            GeminiChat(api_key="x")
    finally:
        os.environ.pop("GEMINI_API_KEY", None)
        os.environ.update(env)


def test_a_killed_run_resumes_without_resending_finished_requests(tmp_path):
    import signal
    import time

    def tag(row):
        row["question"] = f"[[slow]] {row['question']}"

    data = copy_demo(tmp_path / "data", 8, mutate=tag)
    store = tmp_path / "replies.jsonl"
    with FakeGemini() as server:
        command = [
            str(Path(sys.executable).with_name("lmms-eval")),
            "eval",
            "--model",
            "sceval_gemini",
            "--model_args",
            f"base_url={server.url},model_version=gemini-test,max_concurrency=1,store={store}",
            "--tasks",
            "sceval_clean",
            "--log_samples",
            "--output_path",
            "out/",
        ]
        env = {**os.environ, "SCEVAL_SOURCE": str(data), "GEMINI_API_KEY": KEY}
        first = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline and (not store.exists() or len(store.read_text().splitlines()) < 3):
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait()
        finished = len(store.read_text().splitlines())
        assert 3 <= finished < 8, "the run must be killed part-way"
        sent_before = len(server.requests)
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        sent_after = len(server.requests) - sent_before
    assert sent_after <= 8 - finished, "finished requests must not be sent again"
    lines = next((tmp_path / "out").rglob("*_samples_sceval_clean.jsonl")).read_text().splitlines()
    records = [json.loads(line)["sceval_record"] for line in lines]
    assert len(records) == 8 and all(r["correct"] == (1 if r["gold_key"] == "A" else 0) for r in records)
    restored = [r for r in records if r["failure_detail"] == "restored from the reply store"]
    assert len(restored) == finished
    assert len(store.read_text().splitlines()) == 8
