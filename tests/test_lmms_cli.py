"""SCEval through the real lmms-eval CLI, right after `pip install`: no --include_path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import copy_demo, release_fixture

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
RECORD_FIELDS = {
    "model",
    "prompt_id",
    "sample_id",
    "source",
    "condition_id",
    "operators",
    "variant",
    "media",
    "raw_response",
    "parsed_answer",
    "gold_key",
    "correct",
    "latency_s",
    "retries",
    "invalid",
}


def lmms_eval(*args: str, cwd: Path, env: dict | None = None, launcher: list[str] | None = None):
    command = (launcher or [str(BIN / "lmms-eval")]) + list(args)
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def results(folder: Path) -> tuple[dict, dict[str, list[dict]]]:
    result_file = next(folder.rglob("*_results.json"))
    samples = {}
    for path in folder.rglob("*_samples_*.jsonl"):
        task = path.stem.split("_samples_", 1)[1]
        samples[task] = [json.loads(line) for line in path.read_text().splitlines()]
    return json.loads(result_file.read_text()), samples


def test_short_alias_with_limit(tmp_path):
    done = lmms_eval("--model", "sceval_reference", "--tasks", "sceval_t30_v70", "--limit", "5", cwd=tmp_path)
    table = [line for line in done.stdout.splitlines() if line.startswith("|sceval_t30_v70")]
    assert any("sceval_accuracy" in line for line in table)
    assert any("sceval_valid_trials" in line and "5.0000" in line for line in table)


def test_panel_writes_results_and_complete_records(tmp_path):
    lmms_eval(
        "eval",
        "--model",
        "sceval_reference",
        "--tasks",
        "sceval_panel",
        "--log_samples",
        "--output_path",
        "out/",
        cwd=tmp_path,
        env={"FAULTLINE_MEDIA_TOKEN_LOG": str(tmp_path / "media_tokens.jsonl")},
    )
    summary, samples = results(tmp_path / "out")
    assert len(summary["results"]) == 13 and len(samples) == 13
    # Plain lmms-eval: our plugin writes the run's request totals beside the results JSON, and they
    # are the sums of the per-request telemetry (the media token log: one line per generated request;
    # the records: each request's failure category).
    info = json.loads(next((tmp_path / "out").rglob("*_run_info.json")).read_text())
    assert info["versions"]["lmms-eval"] and info["versions"]["faultline-eval"]
    logged = [json.loads(line) for line in (tmp_path / "media_tokens.jsonl").read_text().splitlines()]
    categories = [line["sceval_record"]["invalid"] for lines in samples.values() for line in lines]
    assert len(logged) == len(categories)  # every request was generated (none restored)
    failed = {c: categories.count(c) for c in ("api_failure", "refusal", "empty") if c in categories}
    media = {}
    for line in logged:
        for key, n in line.items():
            if key.endswith("_tokens"):
                media[key[2:-7]] = media.get(key[2:-7], 0) + n
    assert info["requests"] == {
        "sceval_reference": {
            "sent": len(categories),
            "restored": 0,
            "retries": 0,
            "generated": sum(line["failure"] is None for line in logged),
            "failures": failed,
            "input_tokens": 0,
            "output_tokens": 0,
            "media_tokens": media,  # the reference counts no tokens
            "latency_s": info["requests"]["sceval_reference"]["latency_s"],
            "mean_latency_s": info["requests"]["sceval_reference"]["mean_latency_s"],
        }
    }
    acc = {task: r["sceval_accuracy,none"] for task, r in summary["results"].items()}
    assert acc["sceval_clean"] >= 0.95
    others = [v for k, v in acc.items() if k != "sceval_clean"]
    assert sum(others) / len(others) < acc["sceval_clean"] - 0.2
    for task, lines in samples.items():
        expected = 30 if task == "sceval_clean" else 90
        assert len(lines) == expected
        for line in lines:
            record = line["sceval_record"]
            assert RECORD_FIELDS <= set(record)
            assert record["model"] == "sceval_reference" and record["latency_s"] is not None
            assert task == f"sceval_{record['condition_id']}"
    tri = samples["sceval_tri_drop_words_noise_mute_t30_v70_a30"][0]["sceval_record"]
    assert tri["operators"] == {
        "text": {"operator": "drop_words", "severity": 30},
        "vision": {"operator": "noise", "severity": 70},
        "audio": {"operator": "mute", "severity": 30},
    }


def test_any_model_runs_the_tasks(tmp_path):
    done = lmms_eval(
        "--model",
        "dummy",
        "--tasks",
        "sceval_shortcut_options_only,sceval_single_mute_a50",
        "--limit",
        "4",
        cwd=tmp_path,
    )
    assert "sceval_single_mute_a50" in done.stdout and "sceval_shortcut_options_only" in done.stdout


def test_the_reference_never_sees_the_gold_key(tmp_path):
    def rotate(row):
        row["gold_key"] = "BCDA"["ABCD".index(row["gold_key"])]
        row["hidden"] = {"note": "gold rotated"}

    honest = copy_demo(tmp_path / "honest", 12)
    rotated = copy_demo(tmp_path / "rotated", 12, mutate=rotate)
    replies = {}
    for name, folder in (("honest", honest), ("rotated", rotated)):
        lmms_eval(
            "eval",
            "--model",
            "sceval_reference",
            "--tasks",
            "sceval_clean,sceval_single_noise_v50",
            "--log_samples",
            "--output_path",
            f"out_{name}/",
            cwd=tmp_path,
            env={"SCEVAL_SOURCE": str(folder)},
        )
        summary, samples = results(tmp_path / f"out_{name}")
        replies[name] = {(t, l["doc_id"]): l["sceval_record"]["raw_response"] for t, ls in samples.items() for l in ls}
        replies[name + "_acc"] = summary["results"]["sceval_clean"]["sceval_accuracy,none"]
    assert replies["honest"] == replies["rotated"], "answers must not depend on the gold key"
    assert replies["honest_acc"] >= 0.9 and replies["rotated_acc"] <= 0.1


def test_data_parallel_matches_one_process(tmp_path):
    task = "sceval_single_noise_v70"
    lmms_eval(
        "eval", "--model", "sceval_reference", "--tasks", task, "--log_samples", "--output_path", "one/", cwd=tmp_path
    )
    lmms_eval(
        "--model",
        "sceval_reference",
        "--tasks",
        task,
        "--log_samples",
        "--output_path",
        "two/",
        cwd=tmp_path,
        launcher=[str(BIN / "accelerate"), "launch", "--num_processes", "2", "--cpu", "-m", "lmms_eval"],
    )
    one, one_samples = results(tmp_path / "one")
    two, two_samples = results(tmp_path / "two")
    for metric in ("sceval_accuracy,none", "sceval_worst_variant_accuracy,none", "sceval_valid_trials,none"):
        assert one["results"][task][metric] == two["results"][task][metric]
    assert two["results"][task]["sceval_valid_trials,none"] == 90
    assert sorted(
        (l["sceval_record"]["sample_id"], l["sceval_record"]["variant"]) for l in two_samples[task]
    ) == sorted((l["sceval_record"]["sample_id"], l["sceval_record"]["variant"]) for l in one_samples[task])


def test_released_variants_of_the_authors_release(tmp_path):
    folder = release_fixture(tmp_path / "release", n=3)
    env = {"SCEVAL_SOURCE": f"hf:{folder}", "SCEVAL_HF_MODE": "released"}
    lmms_eval(
        "eval",
        "--model",
        "sceval_reference",
        "--tasks",
        "sceval_single_noise_v70,sceval_t70_a50,sceval_clean",
        "--log_samples",
        "--output_path",
        "out/",
        cwd=tmp_path,
        env=env,
    )
    summary, samples = results(tmp_path / "out")
    assert len(samples["sceval_single_noise_v70"]) == 9 and len(samples["sceval_clean"]) == 3
    records = [l["sceval_record"] for l in samples["sceval_t70_a50"]]
    assert all(r["released_variant"] for r in records) and {r["variant"] for r in records} == {0, 1, 2}
    assert all(r["media"]["audio"].startswith("demo/") and "/audio/mute/50/" in r["media"]["audio"] for r in records)


def test_task_configs_parsed_with_libyaml_equal_pyyamls_own():
    """Our entry point makes lmms-eval parse task YAMLs with libyaml (a few seconds less at every
    start); every built-in config must come out exactly as PyYAML's pure-Python parser gives it."""
    import lmms_eval.utils
    import yaml

    from faultline_eval.model_wrappers import lmms_plugin
    from sceval_plugin.base_task import lmms_eval_tasks_dir

    lmms_plugin.parse_task_configs_with_libyaml()
    assert isinstance(lmms_eval.utils.yaml, lmms_plugin._LibyamlForTaskConfigs)
    files = sorted(Path(lmms_eval_tasks_dir()).rglob("*.yaml"))
    assert len(files) > 1000
    for path in files:
        fast = lmms_eval.utils.load_yaml_config(str(path), mode="simple")
        lmms_eval.utils.yaml = yaml  # PyYAML itself, pure-Python parser
        try:
            slow = lmms_eval.utils.load_yaml_config(str(path), mode="simple")
        finally:
            lmms_plugin.parse_task_configs_with_libyaml()
        assert plain(fast) == plain(slow), path
    # full mode imports each ``!function`` from the utils beside the YAML (found by the loader's name)
    full = lmms_eval.utils.load_yaml_config(str(Path(lmms_eval_tasks_dir()) / "mme" / "mme.yaml"), mode="full")
    assert full["process_results"].__name__ == "mme_process_results"


def plain(config):
    """A config with the ``!function`` nodes of simple mode as (tag, value): nodes have no equality."""
    import yaml

    if isinstance(config, dict):
        return {k: plain(v) for k, v in config.items()}
    if isinstance(config, list):
        return [plain(v) for v in config]
    if isinstance(config, yaml.Node):
        return (type(config).__name__, config.tag, plain(config.value))
    return config
