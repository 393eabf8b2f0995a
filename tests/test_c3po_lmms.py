"""C3PO through the real lmms-eval CLI right after `pip install`: tasks, grading, bad input,
repeated runs, a Gemini judge on a local fake server, and the c3po command line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fake_gemini import FakeGemini
from test_c3po_judges import fake_judge_reply
from test_lmms_cli import BIN, lmms_eval, results

from c3po_plugin.data.sources import DEMO_DIR
from c3po_plugin.templates import registry
from faultline_eval.judges.matching import exact_match

pytestmark = pytest.mark.slow

RECORD_FIELDS = {
    "model",
    "prompt_id",
    "sample_id",
    "template_id",
    "template",
    "category",
    "tier",
    "run",
    "dataset",
    "media",
    "question",
    "gold",
    "raw_response",
    "prediction",
    "invalid",
    "exact_match",
    "decided_by",
    "judge_id",
    "judge_verdict",
    "judge_error",
    "correct",
    "failure_mode",
    "distractors",
    "difficulty",
    "human_answer",
    "human_correct",
    "latency_s",
    "retries",
}


def demo_rows() -> list[dict]:
    return [json.loads(line) for line in (DEMO_DIR / "items.jsonl").read_text().splitlines()]


def copy_demo(folder: Path, rows: list[dict]) -> Path:
    shutil.copytree(DEMO_DIR / "media", folder / "media")
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def c3po(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "c3po"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def test_demo_with_the_reference_model_tiers_runs_and_the_command_line(tmp_path):
    env = {"SCEVAL_CACHE": str(tmp_path / "cache"), "C3PO_RUNS": "2"}
    lmms_eval(
        "--model",
        "sceval_reference",
        "--tasks",
        "c3po_all,c3po_ic_t1",
        "--log_samples",
        "--output_path",
        "out/",
        cwd=tmp_path,
        env=env,
    )
    summary, samples = results(tmp_path / "out")
    rows = demo_rows()
    everything = samples["c3po_all"]
    assert len(everything) == 2 * len(rows)  # two runs of every item
    records = [line["c3po_record"] for line in everything]
    assert RECORD_FIELDS <= set(records[0])
    ic_t1 = {r["template"] for r in (line["c3po_record"] for line in samples["c3po_ic_t1"])}
    assert ic_t1 == {t.name for t in registry() if (t.category, t.tier) == ("ic", 1)} & {r["template"] for r in records}

    # Every grade is explained: exact match, or a judge verdict; wrong answers get a failure mode.
    for r in records:
        assert r["invalid"] is None and r["correct"] in (0, 1)
        if r["exact_match"]:
            assert r["correct"] == 1 and r["decided_by"] == "exact_match"
        else:
            assert r["decided_by"] == "judge" and r["judge_verdict"] in ("YES", "NO")
            assert r["correct"] == (r["judge_verdict"] == "YES")
            assert r["judge_id"].startswith("embedding:")
        assert (r["failure_mode"] is not None) == (r["correct"] == 0)
        assert r["human_correct"] is None or r["human_answer"]
    metrics = summary["results"]["c3po_all"]
    by_sample = {}
    for r in records:
        by_sample.setdefault(r["sample_id"], []).append(r["correct"])
    assert metrics["c3po_accuracy,none"] == pytest.approx(
        sum(sum(v) / len(v) for v in by_sample.values()) / len(by_sample)
    )
    assert metrics["c3po_accuracy_gradable,none"] == metrics["c3po_accuracy,none"]  # nothing ungradable
    exact = sum(r["exact_match"] for r in records) / len(records)
    assert metrics["c3po_exact_match_accuracy,none"] == pytest.approx(exact)
    assert metrics["c3po_judge_decisions,none"] == sum(r["decided_by"] == "judge" for r in records)
    assert metrics["c3po_graded,none"] == len(records) and metrics["c3po_excluded,none"] == 0

    # Every judge verdict (model and human answers) was cached once on disk.
    cache = next((tmp_path / "cache" / "c3po" / "verdicts").glob("embedding*.jsonl"))
    asked = {(r["question"], r["prediction"]) for r in records if not r["exact_match"]}
    asked |= {
        (r["question"], r["human_answer"])
        for r in records
        if r["human_answer"] and not exact_match(r["human_answer"], r["gold"])
    }
    assert cache.read_text().count("\n") == len(asked)

    done = c3po("report", "out/", "-o", "report/", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "repeated trial(s)" in done.stdout  # c3po_ic_t1 repeats trials of c3po_all: counted once
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["counts"]["trials"] == len(everything)
    for name in (
        "tier_table.md",
        "template_table.csv",
        "failure_modes.tex",
        "template_accuracy.png",
        "failure_modes.png",
    ):
        assert (tmp_path / "report" / name).stat().st_size > 0

    exact_file, embed_file = tmp_path / "exact.jsonl", tmp_path / "embed.jsonl"
    assert c3po("judge", "out/", "--judge", "exact", "-o", str(exact_file), cwd=tmp_path, env=env).returncode == 0
    assert c3po("judge", "out/", "--judge", "embedding", "-o", str(embed_file), cwd=tmp_path, env=env).returncode == 0
    done = c3po("judge-agreement", str(exact_file), str(embed_file), "--json", cwd=tmp_path, env=env)
    agreement = json.loads(done.stdout)
    lines = [json.loads(line) for line in exact_file.read_text().splitlines()]
    humans = {r["sample_id"]: r["human_answer"] for r in records if r["human_answer"]}
    assert sorted(ln["sample_id"] for ln in lines if ln["model"] == "Human") == sorted(humans)
    judged = [ln for ln in lines if not ln["exact_match"]]
    assert all(ln["verdict"] == "NO" for ln in judged)  # the exact-only judge
    model_yes = sum(r["judge_verdict"] == "YES" for r in records)  # the run's embedding verdicts, all runs
    assert (
        agreement["compared"]
        == len(judged)
        == sum(not r["exact_match"] for r in records)
        + sum(not exact_match(h, next(r["gold"] for r in records if r["sample_id"] == s)) for s, h in humans.items())
    )
    pooled = agreement["pooled"]
    assert pooled["confusion"]["NO/YES"] >= model_yes
    assert pooled["agreement"] == pytest.approx(pooled["confusion"]["NO/NO"] / len(judged))
    # App. D: agreement and kappa per evaluated model, then mean/min/max across models (Human left out)
    per_model = {r["model"]: r for r in agreement["per_model"]}
    assert set(per_model) == {"sceval_reference", "Human"} and agreement["models"] == 1
    assert per_model["sceval_reference"]["compared"] + per_model["Human"]["compared"] == len(judged)
    assert agreement["kappa"]["min"] == agreement["kappa"]["max"] == per_model["sceval_reference"]["kappa"]
    done = c3po("report", "out/", "--verdicts", str(exact_file), "-o", "report-exact/", cwd=tmp_path, env=env)
    exact_report = json.loads((tmp_path / "report-exact" / "report.json").read_text())
    overall = [
        row for row in exact_report["accuracy"] if row["level"] == "overall" and row["model"] == "sceval_reference"
    ]
    assert overall[0]["accuracy"] == pytest.approx(sum(r["exact_match"] for r in records) / len(records))


def test_bad_input_is_listed_by_sample_before_any_model_call(tmp_path):
    rows = demo_rows()[:6]
    rows[1]["template"] = "NoSuchTemplate"
    rows[2].pop("audio")
    (tmp_path / "data").mkdir()
    data = copy_demo(tmp_path / "data", rows)
    image = next(r for r in rows[3:] if "image" in r)
    (data / image["image"]).write_bytes(b"\x89PNG broken")
    done = subprocess.run(
        [str(BIN / "lmms-eval"), "--model", "sceval_reference", "--tasks", "c3po_all", "--output_path", "failed/"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "C3PO_SOURCE": str(data)},
        timeout=600,
    )
    output = done.stdout + done.stderr  # lmms-eval 0.7.3 logs a task's error and exits 0, writing nothing
    assert not (tmp_path / "failed").exists()
    assert "3 bad record(s), found before any model call" in output
    for row, words in (
        (rows[1], "unknown template 'NoSuchTemplate'"),
        (rows[2], "field 'audio': missing"),
        (image, "field 'image'"),
    ):
        assert f"sample {row['sample_id']!r}" in output and words in output
    assert "sceval_reference:" not in output  # the model's progress bar never started
    check = c3po("check", str(data), cwd=tmp_path)
    assert check.returncode == 1 and "3 problem(s)" in check.stdout and "media_unreadable:" in check.stdout

    env = {"C3PO_SOURCE": str(data), "C3PO_ON_BAD_INPUT": "exclude", "C3PO_JUDGE": "exact"}
    lmms_eval(
        "--model",
        "sceval_reference",
        "--tasks",
        "c3po_all",
        "--log_samples",
        "--output_path",
        "out/",
        cwd=tmp_path,
        env=env,
    )
    summary, samples = results(tmp_path / "out")
    assert summary["results"]["c3po_all"]["c3po_excluded,none"] == 3 and len(samples["c3po_all"]) == 3


def test_gemini_judge_in_a_run_and_its_failures(tmp_path):
    rows = demo_rows()
    rows[0]["question"] = "[[500]] " + rows[0]["question"]  # the judge call for this item fails
    rows[0]["answer"] = "something the reference never says"
    rows[0].pop("human_answer", None)
    data = copy_demo(tmp_path / "data", rows)
    with FakeGemini(reply_text=fake_judge_reply) as server:
        env = {
            "C3PO_SOURCE": str(data),
            "GEMINI_API_KEY": "k-never-logged",
            "SCEVAL_CACHE": str(tmp_path / "cache"),
            "C3PO_JUDGE": f"gemini:gemini-judge,base_url={server.url},max_retries=1,initial_backoff=0.01",
        }
        lmms_eval(
            "--model",
            "sceval_reference",
            "--tasks",
            "c3po_all",
            "--log_samples",
            "--output_path",
            "out/",
            cwd=tmp_path,
            env=env,
        )
        failing = sum(r["scenario"] == "500" for r in server.requests)
        sent = list(server.requests)
    summary, samples = results(tmp_path / "out")
    records = {line["c3po_record"]["sample_id"]: line["c3po_record"] for line in samples["c3po_all"]}
    failed = records[rows[0]["sample_id"]]
    assert failed["correct"] is None and failed["judge_verdict"] is None
    assert failed["judge_error"].startswith("api_failure") and "HTTP 500" in failed["judge_error"]
    judged = [r for r in records.values() if r["decided_by"] == "judge" and r["judge_error"] is None]
    assert judged and all(r["judge_id"] == "lmms:sceval_gemini:gemini-judge" for r in judged)
    assert all(r["correct"] == (r["judge_verdict"] == "YES") for r in judged)
    metrics = summary["results"]["c3po_all"]
    assert metrics["c3po_judge_errors,none"] == 1 and metrics["c3po_coverage,none"] == pytest.approx(1 - 1 / len(rows))
    right = sum(r["correct"] == 1 for r in records.values())
    assert metrics["c3po_accuracy,none"] == pytest.approx(right / len(rows))  # #YES / #Total: the error is not a YES
    assert metrics["c3po_accuracy_gradable,none"] == pytest.approx(right / (len(rows) - 1))
    assert failing == 2  # the failed call was tried twice (one retry), then recorded
    assert "k-never-logged" not in "".join(p.read_text() for p in (tmp_path / "out").rglob("*") if p.is_file())
    # The judge saw each item's media, as the evaluated model did (one inline part per frame/picture/clip).
    assert sent and all(_inline_parts(r) for r in sent), "the judge was sent no media"

    # Re-grading the logs later loads the same items again (fingerprint checked) for the judge's media.
    with FakeGemini(reply_text=fake_judge_reply) as server:
        done = c3po(
            "judge",
            "out/",
            "--judge",
            f"gemini:gemini-judge,base_url={server.url},max_retries=0",
            "-o",
            "regraded.jsonl",
            cwd=tmp_path,
            env=env,
        )
        regraded = list(server.requests)
    assert done.returncode == 0, done.stderr
    assert regraded and all(_inline_parts(r) for r in regraded)
    lines = [json.loads(line) for line in (tmp_path / "regraded.jsonl").read_text().splitlines()]
    assert not any((ln["error"] or "").startswith("media_unavailable") for ln in lines)


def _inline_parts(request: dict) -> list:
    return [p for p in request["body"]["contents"][0]["parts"] if "inlineData" in p or "inline_data" in p]


def test_gemini_as_the_evaluated_model_gets_every_medium_labelled_in_order(tmp_path):
    with FakeGemini(reply_text=lambda texts: "Blue.") as server:
        env = {"GEMINI_API_KEY": "k-never-logged", "SCEVAL_CACHE": str(tmp_path / "cache"), "C3PO_JUDGE": "exact"}
        lmms_eval(
            "--model",
            "sceval_gemini",
            "--model_args",
            f"base_url={server.url},model_version=gemini-test",
            "--tasks",
            "c3po_cc_t3",
            "--log_samples",
            "--output_path",
            "out/",
            cwd=tmp_path,
            env=env,
        )
        sent = list(server.requests)
    _, samples = results(tmp_path / "out")
    records = [line["c3po_record"] for line in samples["c3po_cc_t3"]]
    assert len(sent) == len(records) > 0
    for request in sent:
        body = request["body"]
        assert "responseMimeType" not in body["generationConfig"]  # free-form answers, no JSON mode
        parts = body["contents"][0]["parts"]
        kinds = []
        for p in parts:
            inline = p.get("inlineData") or p.get("inline_data")
            kinds.append((inline.get("mimeType") or inline.get("mime_type")) if inline else "text:" + p["text"][:9])
        n = kinds.count("image/png") - 1  # the video frames, then one picture
        assert n == 5 and kinds[: 1 + n] == ["text:Video (5 "] + ["image/png"] * n  # "Video (5 frames ..."
        assert kinds[1 + n : -1] == ["text:Image:", "image/png", "text:Audio:", "audio/wav"]
        assert kinds[-1] in ("text:Question:", "text:Note: ")
    for r in records:
        assert r["prediction"] == "Blue." and r["correct"] == int(r["gold"].lower() == "blue")
        assert r["latency_s"] is not None and r["invalid"] is None
