"""The adapters over lmms-eval's omni wrappers: media conversion, failure recording, and a real
(tiny, random) Qwen2.5-Omni checkpoint through the lmms-eval CLI on CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from faultline_eval.core import telemetry
from faultline_eval.core.store import RESTORED_DETAIL
from faultline_eval.model_wrappers import tiny_checkpoints
from faultline_eval.model_wrappers.chat_messages import messages_from_visuals, with_system_turn
from faultline_eval.model_wrappers.local_reply_store import open_reply_store
from faultline_eval.model_wrappers.local_requests import answer_requests
from faultline_eval.model_wrappers.media_conversion import audio_array
from faultline_eval.model_wrappers.media_token_log import MEDIA_TOKEN_LOG_ENV
from sceval_plugin.parsing import INVALID_CATEGORIES

BIN = Path(sys.executable).parent
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "WANDB_MODE": "disabled",
}


def frames(n: int) -> list:
    return [Image.new("RGB", (32, 24), (40 * i, 0, 0)) for i in range(n)]


def test_audio_dicts_become_16khz_mono_float32_arrays():
    stereo_8k = np.stack([np.linspace(-1, 1, 8000), np.zeros(8000)], axis=1)  # 1 s, samples x channels
    samples = audio_array({"array": stereo_8k, "sampling_rate": 8000})
    assert samples.dtype == np.float32 and samples.ndim == 1
    assert abs(samples.size - 16000) <= 1
    same = audio_array({"array": np.ones(320, dtype=np.float64), "sampling_rate": 16000})
    assert same.dtype == np.float32 and same.size == 320


def test_simple_path_messages_keep_every_frame_in_order_then_audio_then_text():
    images, audio = frames(4), {"array": np.zeros(160, np.float32), "sampling_rate": 16000}
    [message] = messages_from_visuals("the question", images + [audio])
    kinds = [part["type"] for part in message["content"]]
    assert kinds == ["image"] * 4 + ["audio", "text"]
    assert [part["url"] for part in message["content"][:4]] == images
    assert message["content"][-1]["text"] == "the question"


def test_a_system_turn_is_added_only_when_the_task_sent_none():
    ours = [
        {"role": "system", "content": [{"type": "text", "text": "task rules"}]},
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
    ]
    assert with_system_turn(ours, "You are Qwen") == ours
    added = with_system_turn(ours[1:], "You are Qwen")
    assert [m["role"] for m in added] == ["system", "user"]
    assert with_system_turn(ours[1:], None) == ours[1:]


def test_a_failing_request_is_recorded_and_the_run_goes_on():
    docs = [{"row_id": "clean/demo-0/0"}, {"row_id": "clean/demo-1/0"}]

    def doc_to_messages(doc):
        return [{"role": "user", "content": [{"type": "text", "text": doc["row_id"]}]}]

    def answer(messages, gen_kwargs):
        if messages[0]["content"][0]["text"].endswith("0/0"):
            raise RuntimeError("CUDA out of memory")
        return '{"answer": "A"}'

    wrapper = SimpleNamespace(
        is_simple=False,
        rank=0,
        task_dict={"t": {"test": docs}},
        cache_hook=SimpleNamespace(add_partial=lambda *a: None),
    )
    requests = [SimpleNamespace(args=("ctx", doc_to_messages, {}, i, "t", "test")) for i in range(2)]
    replies = answer_requests(wrapper, requests, answer, "faultline_test")
    assert replies == ["", '{"answer": "A"}']
    failed, answered = telemetry.take("clean/demo-0/0"), telemetry.take("clean/demo-1/0")
    assert failed.failure == "api_failure" and "CUDA out of memory" in failed.detail
    assert failed.failure in INVALID_CATEGORIES
    assert answered.failure is None and answered.latency_s is not None


def test_greedy_replies_are_stored_and_restored_but_sampled_and_failed_ones_are_not(tmp_path):
    from faultline_eval.core.store import ReplyStore

    docs = [{"row_id": f"clean/demo-{i}/0", "dataset": "demo@1"} for i in range(3)]
    sent = []

    def doc_to_messages(doc):
        return [{"role": "user", "content": [{"type": "text", "text": doc["row_id"]}]}]

    def answer(messages, gen_kwargs):
        sent.append(messages[0]["content"][0]["text"])
        if messages[0]["content"][0]["text"].endswith("2/0"):
            raise RuntimeError("CUDA out of memory")
        return f"reply {len(sent)}"

    def run(gen_kwargs):
        wrapper = SimpleNamespace(
            is_simple=False,
            rank=0,
            task_dict={"t": {"test": docs}},
            pretrained="tiny",
            default_max_new_tokens=16,
            system_prompt=None,
            reply_store=ReplyStore(tmp_path / "replies.jsonl"),
            cache_hook=SimpleNamespace(add_partial=lambda *a: None),
        )
        requests = [SimpleNamespace(args=("ctx", doc_to_messages, dict(gen_kwargs), i, "t", "test")) for i in range(3)]
        sent.clear()
        replies = answer_requests(wrapper, requests, answer, "faultline_test")
        return replies, [telemetry.take(doc["row_id"]) for doc in docs]

    first, _ = run({"temperature": 0})
    assert first == ["reply 1", "reply 2", ""] and len(sent) == 3
    assert len((tmp_path / "replies.jsonl").read_text().splitlines()) == 2  # the failure is not stored
    again, calls = run({"temperature": 0})
    assert again == ["reply 1", "reply 2", ""] and sent == ["clean/demo-2/0"]  # only the failed one is retried
    assert [c.detail for c in calls[:2]] == [RESTORED_DETAIL] * 2 and calls[2].failure == "api_failure"
    assert all(c.latency_s is not None for c in calls[:2])
    run({"temperature": 0, "max_new_tokens": 8})  # other generation settings: generated again
    assert len(sent) == 3
    for sampling in ({"temperature": 0.7}, {"temperature": 0, "do_sample": True}):
        run(sampling)  # every sampled run is a fresh draw: nothing restored, nothing stored
        assert len(sent) == 3
    assert len((tmp_path / "replies.jsonl").read_text().splitlines()) == 4


def test_the_default_reply_store_is_per_adapter_and_checkpoint_and_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path))
    store = open_reply_store("faultline_qwen2_5_omni", "/ckpt/Qwen2.5-Omni-7B", None)
    assert store.path == tmp_path / "replies" / "faultline_qwen2_5_omni-ckpt_Qwen2.5-Omni-7B.jsonl"
    assert open_reply_store("faultline_qwen2_5_omni", "x", "none") is None
    assert open_reply_store("x", "y", str(tmp_path / "mine.jsonl")).path == tmp_path / "mine.jsonl"


def test_minicpm_o_gets_every_frame_and_the_audio_array_in_order():
    from faultline_eval.model_wrappers.minicpm_o import MiniCPMOChat

    sent = {}

    class FakeMiniCPM:  # stands in for the remote-code model's chat()
        def chat(self, **kwargs):
            sent.update(kwargs)
            return "B"

    wrapper = object.__new__(MiniCPMOChat)  # no checkpoint: only the content building is tested
    wrapper._model, wrapper._tokenizer, wrapper.init_audio = FakeMiniCPM(), None, True
    wrapper.max_num_frames, wrapper.default_max_new_tokens = 8, 32
    images = frames(3)
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "rules"}]},
        {
            "role": "user",
            "content": [{"type": "image", "url": im} for im in images]
            + [
                {"type": "audio", "url": {"array": np.zeros(800, np.float32), "sampling_rate": 8000}},
                {"type": "text", "text": "question"},
            ],
        },
    ]
    assert wrapper._answer(messages, {"max_new_tokens": 5, "temperature": 0}) == "B"
    [turn] = sent["msgs"]
    content = turn["content"]
    assert content[0] == "rules" and content[-1] == "question"
    assert [np.asarray(c).tolist() for c in content[1:4]] == [np.asarray(im).tolist() for im in images]
    assert isinstance(content[4], np.ndarray) and content[4].dtype == np.float32 and content[4].size == 1600
    assert sent["omni_input"] is True and sent["max_new_tokens"] == 5 and sent["sampling"] is False


def test_the_adapters_are_registered_with_lmms_eval():
    from lmms_eval.models import get_model

    for model_id, module in (
        ("faultline_qwen2_5_omni", "qwen2_5_omni"),
        ("faultline_qwen3_omni", "qwen3_omni"),
        ("faultline_minicpm_o", "minicpm_o"),
    ):
        chat, simple = get_model(model_id), get_model(model_id, force_simple=True)
        assert chat.__module__ == simple.__module__ == f"faultline_eval.model_wrappers.{module}"
        assert chat.is_simple is False and simple.is_simple is True


# --- a real checkpoint through the real CLI --------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_qwen_omni(tmp_path_factory) -> Path:
    return tiny_checkpoints.build_qwen2_5_omni(tmp_path_factory.mktemp("tiny-qwen2.5-omni"))


def run_sceval_clean(model: str, checkpoint: Path, tmp_path: Path, *, simple: bool = False) -> dict:
    """``lmms-eval --tasks sceval_clean --limit 2`` with a tiny checkpoint; checks that every frame
    and the audio reached the model and that each record is complete. Returns the token log."""
    token_log = tmp_path / "media_tokens.jsonl"
    command = [
        str(BIN / "lmms-eval"),
        "eval",
        "--model",
        model,
        "--model_args",
        f"pretrained={checkpoint},device=cpu",
        "--tasks",
        "sceval_clean",
        "--limit",
        "2",
        "--gen_kwargs",
        "max_new_tokens=16",
        "--log_samples",
        "--output_path",
        "out/",
    ]
    if simple:
        command.append("--force_simple")
    done = subprocess.run(
        command,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **OFFLINE, MEDIA_TOKEN_LOG_ENV: str(token_log), "SCEVAL_CACHE": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    [samples_file] = (tmp_path / "out").rglob("*_samples_sceval_clean.jsonl")
    records = [json.loads(line)["sceval_record"] for line in samples_file.read_text().splitlines()]
    received = {line["row_id"]: line for line in map(json.loads, token_log.read_text().splitlines())}
    assert len(records) == 2 and len(received) == 2
    for record in records:
        seen = received[f"clean/{record['sample_id']}/{record['variant']}"]
        # every frame and the audio clip reached the model as placeholder tokens
        assert seen["n_images"] == len(record["media"]["visual"]) and seen["n_audios"] == 1
        assert seen["n_image_tokens"] > 0 and seen["n_audio_tokens"] > 0
        assert seen["failure"] is None and record["latency_s"] is not None and record["invalid"] != "api_failure"
        # noise from a random model: either a valid key or an invalid output with its category
        assert (record["parsed_answer"] is not None) != (record["invalid"] in INVALID_CATEGORIES)
    # the run's totals beside its results JSON are the sums of the media token log
    [totals] = json.loads(next((tmp_path / "out").rglob("*_run_info.json")).read_text())["requests"].values()
    kinds = {key[2 : -len("_tokens")] for line in received.values() for key in line if key.endswith("_tokens")}
    assert totals["media_tokens"] == {
        kind: sum(line.get(f"n_{kind}_tokens", 0) for line in received.values()) for kind in kinds
    }
    assert (totals["sent"], totals["generated"], totals["failures"]) == (2, 2, {})
    return received


@pytest.mark.slow
@pytest.mark.parametrize("path", ["chat", "simple"])
def test_tiny_qwen2_5_omni_runs_sceval_through_the_cli(tiny_qwen_omni, tmp_path, path):
    received = run_sceval_clean("faultline_qwen2_5_omni", tiny_qwen_omni, tmp_path, simple=path == "simple")
    print(
        f"{path}: media tokens per request: {[(v['n_image_tokens'], v['n_audio_tokens']) for v in received.values()]}"
    )


@pytest.mark.slow
def test_tiny_qwen2_5_omni_runs_c3po_through_the_cli(tiny_qwen_omni, tmp_path):
    """Tier-3 C3PO items: video frames, the picture and the audio all reach the model, and its
    free-form noise is graded (exact match, then the exact-only judge) or recorded as invalid."""
    from c3po_plugin.data.sources import load_source

    token_log = tmp_path / "media_tokens.jsonl"
    command = [
        str(BIN / "lmms-eval"),
        "eval",
        "--model",
        "faultline_qwen2_5_omni",
        "--model_args",
        f"pretrained={tiny_qwen_omni},device=cpu",
        "--tasks",
        "c3po_cc_t3",
        "--limit",
        "2",
        "--gen_kwargs",
        "max_new_tokens=8",
        "--log_samples",
        "--output_path",
        "out/",
    ]
    done = subprocess.run(
        command,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={
            **os.environ,
            **OFFLINE,
            MEDIA_TOKEN_LOG_ENV: str(token_log),
            "C3PO_JUDGE": "exact",
            "SCEVAL_CACHE": str(tmp_path / "cache"),
        },
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [samples_file] = (tmp_path / "out").rglob("*_samples_c3po_cc_t3.jsonl")
    records = [json.loads(line)["c3po_record"] for line in samples_file.read_text().splitlines()]
    received = {line["row_id"]: line for line in map(json.loads, token_log.read_text().splitlines())}
    items = {item.sample_id: item for item in load_source("demo").items}
    assert len(records) == 2 and len(received) == 2
    for record in records:
        seen = received[f"cc_t3/{record['sample_id']}/0"]
        assert seen["n_images"] == len(items[record["sample_id"]].frames()) + 1 and seen["n_audios"] == 1
        assert seen["n_image_tokens"] > 0 and seen["n_audio_tokens"] > 0
        assert (record["invalid"] is None and record["correct"] in (0, 1)) or record["invalid"] == "empty"


def _jsonl(path: Path) -> list[dict]:
    """The complete lines of a JSONL file (a line cut short by a kill is skipped)."""
    rows = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


@pytest.mark.slow
def test_a_killed_tiny_qwen2_5_omni_run_resumes_without_generating_finished_requests(tiny_qwen_omni, tmp_path):
    import signal
    import time

    replies = tmp_path / "cache" / "replies"
    # The random model never emits its end token, so 2000 new tokens take about a second per request
    # on CPU: the first run is still generating when it is killed after two stored replies.
    command = [
        str(BIN / "lmms-eval"),
        "eval",
        "--model",
        "faultline_qwen2_5_omni",
        "--model_args",
        f"pretrained={tiny_qwen_omni},device=cpu",
        "--tasks",
        "sceval_clean",
        "--limit",
        "4",
        "--gen_kwargs",
        "max_new_tokens=2000",
        "--log_samples",
        "--output_path",
        "out/",
    ]
    env = {**os.environ, **OFFLINE, "SCEVAL_CACHE": str(tmp_path / "cache")}

    def stored() -> list[dict]:
        return [row for path in replies.glob("faultline_qwen2_5_omni-*.jsonl") for row in _jsonl(path)]

    first = subprocess.Popen(
        command,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**env, MEDIA_TOKEN_LOG_ENV: str(tmp_path / "first_tokens.jsonl")},
        start_new_session=True,
    )
    deadline = time.time() + 900  # the loop ends at the second stored reply; the bound is for a hung run only
    while time.time() < deadline and len(stored()) < 2 and first.poll() is None:
        time.sleep(0.02)
    os.killpg(first.pid, signal.SIGKILL)  # the run and anything it started
    first.wait()
    finished = {row["row_id"] for row in stored()}
    assert 2 <= len(finished) < 4, f"the run must be killed part-way ({len(finished)} replies stored)"

    token_log = tmp_path / "rerun_tokens.jsonl"
    done = subprocess.run(
        command,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**env, MEDIA_TOKEN_LOG_ENV: str(token_log)},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    generated = {row["row_id"] for row in _jsonl(token_log)}  # what reached the model in the rerun
    assert not generated & finished, "a request finished before the kill was generated again"
    [samples_file] = (tmp_path / "out").rglob("*_samples_sceval_clean.jsonl")
    records = [json.loads(line)["sceval_record"] for line in samples_file.read_text().splitlines()]
    row_ids = {f"clean/{r['sample_id']}/{r['variant']}" for r in records}
    assert len(records) == 4 and len(row_ids) == 4 and generated == row_ids - finished
    restored = {f"clean/{r['sample_id']}/{r['variant']}" for r in records if r["failure_detail"] == RESTORED_DETAIL}
    assert restored == finished
    assert all(r["latency_s"] is not None and r["invalid"] != "api_failure" for r in records)
    assert {row["row_id"] for row in stored()} == row_ids  # no finished record lost


# --- Qwen3-Omni (MoE thinker) ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_qwen3_omni(tmp_path_factory) -> Path:
    return tiny_checkpoints.build_qwen3_omni(tmp_path_factory.mktemp("tiny-qwen3-omni"))


@pytest.mark.slow
def test_tiny_qwen3_omni_runs_sceval_through_the_cli(tiny_qwen3_omni, tmp_path):
    run_sceval_clean("faultline_qwen3_omni", tiny_qwen3_omni, tmp_path)
