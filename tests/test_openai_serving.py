"""sceval_openai through the real lmms-eval CLI and openai client against a local fake
OpenAI-compatible server; the audio canary; ``sceval smoke`` on a served model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_openai import USAGE, FakeOpenAI
from fixtures import copy_demo

pytestmark = pytest.mark.slow

LMMS_EVAL = str(Path(sys.executable).with_name("lmms-eval"))
SCENARIOS = ["ok", "ok", "429-then-ok", "500", "refusal", "empty", "slow", "slow"]
KEY = "test-key-openai-never-logged"


def chat_requests(server: FakeOpenAI) -> list[dict]:
    return [r for r in server.requests if "texts" in r]


def test_a_served_model_records_failures_and_a_killed_run_resumes_without_resending(tmp_path):
    names = iter(SCENARIOS)

    def tag(row):
        row["question"] = f"[[{next(names)}]] {row['question']}"

    data = copy_demo(tmp_path / "data", len(SCENARIOS), mutate=tag)
    store = tmp_path / "replies.jsonl"
    env = {**os.environ, "SCEVAL_SOURCE": str(data), "OPENAI_API_KEY": KEY, "SCEVAL_CACHE": str(tmp_path / "cache")}
    with FakeOpenAI() as first, FakeOpenAI() as second:
        # Two replicas behind one endpoint list; the first two items (plain ok) feed the canary. One
        # builder and one connection: requests finish in order, so the kill lands on the slow ones.
        args = (
            f"base_url={first.url}|{second.url},max_retries=2,initial_backoff=0.01,max_concurrency=1,"
            f"build_workers=1,canary_items=2,store={store}"
        )
        command = [
            LMMS_EVAL,
            "eval",
            "--model",
            "sceval_openai",
            "--model_args",
            args,
            "--tasks",
            "sceval_clean",
            "--log_samples",
            "--output_path",
            "out/",
        ]
        run = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline and (not store.exists() or len(store.read_text().splitlines()) < 5):
            time.sleep(0.02)
        run.send_signal(signal.SIGKILL)  # while the slow items are in flight
        run.wait()
        stored = [json.loads(line) for line in store.read_text().splitlines()]
        assert len(stored) == 5, "ok, ok, 429-then-ok, refusal, empty are finished; 500 is never stored"
        before = (len(chat_requests(first)), len(chat_requests(second)))
        sent_first = chat_requests(first) + chat_requests(second)
        # Canary first (3 asks per item: as built, silence, swapped), then the run; both replicas used.
        assert chat_requests(first) and chat_requests(second)
        assert sum(r["scenario"] == "ok" for r in sent_first) == 2 * 3 + 2

        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        resent = chat_requests(first)[before[0] :] + chat_requests(second)[before[1] :]
    # The resumed run: the canary's 6 asks, the 500 item (api failures are retried), the two slow ones.
    scenarios = sorted(r["scenario"] for r in resent)
    assert scenarios == sorted(["ok"] * 6 + ["500"] * 3 + ["slow"] * 2), scenarios

    records = {}
    for line in next((tmp_path / "out").rglob("*_samples_sceval_clean.jsonl")).read_text().splitlines():
        sample = json.loads(line)
        records.setdefault(SCENARIOS[sample["doc_id"]], []).append(sample["sceval_record"])
    # Attempts alternate between the replicas, and each throttles its first sight of the 429 item.
    expect = {
        "ok": (None, 0),
        "429-then-ok": (None, 2),
        "500": ("api_failure", 2),
        "refusal": ("refusal", 0),
        "empty": ("empty", 0),
        "slow": (None, 0),
    }
    for scenario, (invalid, retries) in expect.items():
        for r in records[scenario]:
            assert (r["invalid"], r["retries"]) == (invalid, retries), scenario
            assert r["latency_s"] is not None and r["latency_s"] >= 0
            assert (invalid is None) == (r["parsed_answer"] is not None)
    failed = records["500"][0]["failure_detail"]
    assert "HTTP 500" in failed and "after 2 retries" in failed
    restored = [r for rs in records.values() for r in rs if r["failure_detail"] == "restored from the reply store"]
    assert len(restored) == 5
    # The resumed run's request totals beside its results JSON: the usage the server reported on each
    # answered request (canary asks included: they are paid for too), and requests by outcome.
    answered = [r for r in resent if r["scenario"] != "500"]
    info = json.loads(next((tmp_path / "out").rglob("*_run_info.json")).read_text())
    totals = info["requests"]["sceval_openai:fake-omni"]
    assert (totals["input_tokens"], totals["output_tokens"]) == (
        USAGE["prompt_tokens"] * len(answered),
        USAGE["completion_tokens"] * len(answered),
    )
    failed = [r for rs in records.values() for r in rs if r["invalid"] == "api_failure"]
    assert (totals["restored"], totals["failures"], totals["generated"]) == (
        len(restored),
        {"api_failure": len(failed)},
        len(answered),
    )

    body = sent_first[0]["body"]
    assert body["model"] == "fake-omni" and body["temperature"] == 0 and "response_format" not in body
    system, user = body["messages"]
    assert system["role"] == "system" and isinstance(system["content"], str)
    kinds = [p["type"] for p in user["content"]]
    assert kinds[-1] == "text" and kinds[-2] == "input_audio" and set(kinds[:-2]) == {"image_url"}
    assert user["content"][-2]["input_audio"]["format"] == "wav"
    assert all(p["image_url"]["url"].startswith("data:image/bmp;base64,") for p in user["content"][:-2])
    assert sent_first[0]["headers"]["authorization"] == f"Bearer {KEY}"
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="ignore"), f"API key leaked into {path}"


def _model_over(server: FakeOpenAI, docs: list[dict], **args):
    """The real sceval_openai class over ``docs`` of one SCEval task, as lmms-eval sets it up."""
    from lmms_eval.api.instance import Instance

    from faultline_eval.model_wrappers.openai_chat import OpenAIChat
    from faultline_eval.tasks import sceval_task

    model = OpenAIChat(base_url=server.url, store="none", **args)
    model.task_dict = {"t": {"test": docs}}
    requests = [
        Instance(
            request_type="generate_until",
            arguments=("", sceval_task.doc_to_messages, {}, i, "t", "test"),
            idx=0,
            metadata={"task": "t", "doc_id": i, "repeats": 1},
        )
        for i in range(len(docs))
    ]
    return model, requests


def test_the_audio_canary_passes_a_hearing_backend_and_refuses_one_that_drops_audio():
    from faultline_eval.model_wrappers.audio_canary import AudioCanaryError
    from faultline_eval.tasks import sceval_task
    from sceval_plugin.conditions import catalogue

    docs = sceval_task.build_rows(catalogue().get("clean"))[0][:4]
    with FakeOpenAI(mode="hears") as server:
        model, requests = _model_over(server, docs, canary_items=3, max_concurrency=1)  # asks arrive in order
        model._check_audio(requests)
        assert len(chat_requests(server)) == 3 * 3
        canary = [r["uuids"] for r in chat_requests(server)]  # the canary sends the media keys too (issue 41)
        assert all(key and key.startswith("sha256:") for keys in canary for key in keys)
        built, silent, swapped = ([keys[-1] for keys in canary[i::3]] for i in range(3))  # the audio keys
        assert len(set(built)) == 3 and not set(silent) & set(built)
        assert swapped == built[1:] + built[:1], "the next item's clip, byte for byte: its key"
        assert len({json.loads(r)["answer"] for r in model.generate_until(requests)}) >= 1
    with FakeOpenAI(mode="drops_audio") as server:
        model, requests = _model_over(server, docs, canary_items=3, frames_as="video", audio_part="audio_url")
        with pytest.raises(
            AudioCanaryError, match="0/3 replies change with silence, 0/3 with the audio swapped"
        ) as deaf:
            model.generate_until(requests)
        # the causes of a deaf server (vLLM 0.32), and the page that explains them; not a media limit
        message = str(deaf.value)
        assert "chat template has an audio placeholder" in message and "backend passes the audio on" in message
        assert "docs/tutorials/served-model.md" in message and "README" not in message
        assert "limit-mm-per-prompt" not in message
        sent = chat_requests(server)
        assert len(sent) == 3 * 3, "a refused backend gets no request of the run itself"
        kinds = [p["type"] for p in sent[0]["body"]["messages"][1]["content"]]
        assert kinds == ["video_url", "audio_url", "text"]
        frames = sent[0]["body"]["messages"][1]["content"][0]["video_url"]["url"]
        assert frames.startswith("data:video/jpeg;base64,") and frames.count(",") >= 2
    with FakeOpenAI(mode="drops_audio") as server:
        model, requests = _model_over(server, docs, audio_canary="off")
        assert len(model.generate_until(requests)) == len(docs) == len(chat_requests(server))


def test_a_canary_the_server_refused_blames_the_server_not_the_audio():
    """Issue 24: a server that answers HTTP 400 to every request has not shown that it drops the
    audio; the refusal names the server's error, not the chat template."""
    from faultline_eval.model_wrappers.audio_canary import AudioCanaryError
    from faultline_eval.tasks import sceval_task
    from sceval_plugin.conditions import catalogue

    docs = sceval_task.build_rows(catalogue().get("clean"))[0][:2]
    with FakeOpenAI(fail_status=400) as server:
        model, requests = _model_over(server, docs, canary_items=2, max_retries=0)
        with pytest.raises(AudioCanaryError) as refused:
            model.generate_until(requests)
    message = str(refused.value)
    assert "the audio canary could not run" in message and "2 item(s) unanswered: HTTP 400" in message
    assert "fake error 400" in message and "docs/tutorials/served-model.md" in message
    assert "does not hear the audio" not in message and "chat template" not in message


def test_sceval_smoke_on_a_served_model_catches_dropped_audio(capsys, monkeypatch, tmp_path):
    # (a hearing model's IFACE OK, swapped-audio check included, is tests/test_smoke.py's reference run)
    from faultline_app.sceval_cli import main

    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    with FakeOpenAI(mode="drops_audio") as server:
        status = main(
            [
                "smoke",
                "--model",
                "sceval_openai",
                "--limit",
                "3",
                "--model_args",
                f"base_url={server.url},store=none,audio_canary=off",
            ]
        )
        sent = chat_requests(server)
    out = capsys.readouterr().out
    assert status == 1 and out.splitlines()[-1] == "IFACE FAILED: audio actually consumed", out
    assert "3/3 clean requests answered" in out and "3/3 replies parsed" in out
    assert "0/3 replies change when the audio is silence" in out
    assert "0/3 replies change with another item's audio" in out
    assert all(r["audio"] for r in sent), "the audio was sent; the server dropped it"


def test_every_wire_encoding_is_lossless():
    import io

    import numpy as np
    from PIL import Image

    from faultline_eval.model_wrappers.media_encoding import IMAGE_ENCODINGS, encode_image

    pixels = np.random.default_rng(1).integers(0, 256, (37, 53, 3), dtype=np.uint8)  # odd sizes: row padding
    for name in IMAGE_ENCODINGS:
        data, mime = encode_image(Image.fromarray(pixels), name)
        decoded = Image.open(io.BytesIO(data))
        assert decoded.format.lower() == mime.split("/")[1] and np.array_equal(np.asarray(decoded), pixels), name


# --- frames_as=video under vLLM's own limits (the fake answers 400 where vLLM does) --------------

VLLM_LIMITS = {"video": 1, "audio": 1}  # the README's frames_as=video server, images left at vLLM's default


def test_a_c3po_picture_goes_as_an_image_beside_one_timed_video(tmp_path):
    # ~40 s on 2 shared cores: lmms-eval on c3po_cc_t3 (frames, a picture, audio) through a server allowing one video
    from test_lmms_cli import lmms_eval, results

    env = {"SCEVAL_CACHE": str(tmp_path / "cache"), "C3PO_JUDGE": "exact"}
    with FakeOpenAI(limits=VLLM_LIMITS, trust_mm_kwargs=True) as server:
        lmms_eval(
            "--model",
            "sceval_openai",
            "--model_args",
            f"base_url={server.url},frames_as=video,store=none,audio_canary=off,max_retries=0",
            "--tasks",
            "c3po_cc_t3",
            "--log_samples",
            "--output_path",
            "out/",
            cwd=tmp_path,
            env=env,
        )
        sent = chat_requests(server)
    records = [s["c3po_record"] for s in results(tmp_path / "out")[1]["c3po_cc_t3"]]
    assert len(sent) == len(records) > 0
    assert not [r["failure_detail"] for r in records if r["invalid"] == "api_failure"]
    for request, record in zip(sent, records):
        assert request["counts"] == {"video": 1, "image": 1, "audio": 1}
        kinds = [p["type"] for p in request["body"]["messages"][1]["content"]]
        assert kinds[:5] == ["text", "video_url", "text", "image_url", "text"]  # Video: ..., Image:, Audio:
        times = record["frame_times_s"]
        step = times[1] - times[0]
        assert request["video_frames"] == [len(times)]
        assert request["body"]["media_io_kwargs"] == {
            "video": {
                "fps": pytest.approx(1 / step),
                "frames_indices": list(range(len(times))),
                "total_num_frames": len(times),
                "duration": pytest.approx(len(times) * step),
            }
        }
        assert request["body"]["mm_processor_kwargs"] == {"fps": pytest.approx(1 / step)}


def _stated_times(request: dict) -> list[float]:
    import re

    said = re.search(r"taken at ([0-9., ]+) s into the clip", " ".join(request["texts"]))
    return [float(t) for t in said.group(1).split(", ")]


def _video_source(data: Path) -> Path:
    """Two demo items whose visual evidence is a 12 s clip of 24 frames at 2 fps (F.2 takes 8
    frames 1.5 s apart; a 16-frame budget gets 16 of its decoded frames)."""
    from c3po_fixtures import write_mp4

    def as_video(row):
        write_mp4(data / "media" / row["sample_id"] / "clip.mp4", frames=24, fps=2)
        row["visual"] = f"media/{row['sample_id']}/clip.mp4"

    return copy_demo(data, 2, mutate=as_video)


def test_a_long_clip_tells_vllm_when_its_frames_were_taken(tmp_path):
    # ~40 s on 2 shared cores: a 12 s clip (8 frames 1.5 s apart; vLLM's JPEG-sequence default would say 1 s),
    # its 16-frame budget and its middle frames dropped (a gap on the same grid)
    from test_lmms_cli import lmms_eval

    data = _video_source(tmp_path / "data")
    env = {"SCEVAL_SOURCE": str(data), "SCEVAL_CACHE": str(tmp_path / "cache")}
    tasks = ["sceval_clean", "sceval_probe_frame_budget_16", "sceval_probe_temporal_middle_drop"]
    with FakeOpenAI(limits=VLLM_LIMITS, trust_mm_kwargs=True) as server:
        lmms_eval(
            "--model",
            "sceval_openai",
            "--model_args",
            f"base_url={server.url},frames_as=video,store=none,audio_canary=off,max_retries=0",
            "--tasks",
            ",".join(tasks),
            "--log_samples",
            "--output_path",
            "out/",
            cwd=tmp_path,
            env=env,
        )
        sent = chat_requests(server)
    seen = {}
    for request in sent:
        times = _stated_times(request)
        timing = request["body"]["media_io_kwargs"]["video"]
        assert request["video_frames"] == [len(times)] and request["counts"] == {"video": 1, "audio": 1}
        assert [i / timing["fps"] for i in timing["frames_indices"]] == pytest.approx(times, abs=0.006)
        mean_rate = (len(times) - 1) / (times[-1] - times[0])  # what Qwen's evenly spaced positions take
        assert request["body"]["mm_processor_kwargs"]["fps"] == pytest.approx(mean_rate, rel=0.01)
        seen[len(times)] = (timing["fps"], timing["frames_indices"])
    assert seen[8] == (pytest.approx(1 / 1.5), list(range(8)))
    assert seen[5] == (pytest.approx(1 / 1.5), [0, 1, 5, 6, 7])  # the middle third (indices 2-4) dropped
    assert seen[16][0] == 2 and len(seen[16][1]) == 16  # decoded frames of the 2 fps clip, by their index


def test_a_server_that_refuses_request_timing_stops_the_run_with_the_fix(monkeypatch, tmp_path):
    # vLLM 0.32 refuses per-request mm kwargs unless started with --trust-request-mm-kwargs: every
    # video request would fail alike, so the run stops at the first with what to do, not N api_failures
    from faultline_eval.model_wrappers.openai_client import TimingRefused
    from faultline_eval.tasks import sceval_task
    from sceval_plugin.conditions import catalogue

    monkeypatch.setenv("SCEVAL_SOURCE", str(_video_source(tmp_path / "data")))
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    docs = sceval_task.build_rows(catalogue().get("clean"))[0]
    with FakeOpenAI(limits=VLLM_LIMITS) as server:
        model, requests = _model_over(
            server, docs, frames_as="video", audio_canary="off", max_concurrency=1, build_workers=1
        )
        with pytest.raises(
            TimingRefused, match="Start vLLM with --trust-request-mm-kwargs, or run with frames_as=images"
        ):
            model.generate_until(requests)
        assert len(chat_requests(server)) == 1


def test_video_timing_refuses_frames_off_one_grid():
    from faultline_eval.model_wrappers.openai_client import video_timing

    assert video_timing([None, None]) == {}  # a frame list: times unknown, the server's default applies
    with pytest.raises(ValueError, match="not on one grid"):
        video_timing([0.0, 1.0, 2.5])
    with pytest.raises(ValueError, match="not increasing"):
        video_timing([0.0, 2.0, 1.0])


def test_serve_limits_counts_what_each_task_sends(capsys, monkeypatch, tmp_path):
    # ~20-45 s on 2 shared cores: the README's old sizing ("image": 8) is too small for a 16-frame budget and for a C3PO
    # item's frames plus its picture; with frames_as=video a video is one item, a picture an image
    from faultline_app.sceval_cli import main

    monkeypatch.setenv("SCEVAL_SOURCE", str(_video_source(tmp_path / "data")))
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("C3PO_JUDGE", "exact")
    tasks = "sceval_clean,sceval_probe_frame_budget_16,sceval_probe_distractor_appended_frame,c3po_cc_t3"
    assert main(["serve-limits", "--tasks", tasks]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert dict(line.split(None, 1) for line in lines[:-1]) == {
        "sceval_clean": "image 8  video 0  audio 1",
        "sceval_probe_frame_budget_16": "image 16  video 0  audio 1",
        "sceval_probe_distractor_appended_frame": "image 9  video 0  audio 1",
        "c3po_cc_t3": "image 6  video 0  audio 1",
    }  # the demo's 5 frames and its picture
    assert lines[-1] == """--limit-mm-per-prompt '{"image": 16, "video": 0, "audio": 1}'"""
    assert main(["serve-limits", "--tasks", tasks, "--model_args", "base_url=http://x:8000/v1,frames_as=video"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == """--limit-mm-per-prompt '{"image": 1, "video": 1, "audio": 1}'"""
    found = dict(line.split(None, 1) for line in lines[:-1])
    assert found["sceval_clean"] == found["sceval_probe_frame_budget_16"] == "image 0  video 1  audio 1"
    assert found["c3po_cc_t3"] == "image 1  video 1  audio 1"


# --- multimodal cache keys (issue 41) --------------------------------------------------------------


def _panel_docs(conditions: tuple[str, ...], items: int = 2) -> list[dict]:
    """The docs of ``conditions`` for the first ``items`` demo items, one condition after another
    (as lmms-eval hands over one task's requests after another's)."""
    from faultline_eval.tasks import sceval_task
    from sceval_plugin.conditions import catalogue

    docs = []
    for condition in conditions:
        rows = sceval_task.build_rows(catalogue().get(condition))[0]
        keep = list(dict.fromkeys(r["sample_id"] for r in rows))[:items]
        docs += [r for r in rows if r["sample_id"] in keep]
    return docs


def _media_parts(body: dict) -> list[dict]:
    return [p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"] if p["type"] != "text"]


def test_media_parts_are_keyed_by_their_bytes_sent_by_item_and_counted():
    # clean; text corrupted (3 variants: frames and audio as clean); audio corrupted (frames as clean)
    docs = _panel_docs(("clean", "single_drop_words_t30", "single_distortion_a50"))
    with FakeOpenAI(metrics=True) as server:
        model, requests = _model_over(server, docs, audio_canary="off", max_concurrency=1, build_workers=1)
        built = [model._build(r) for r in requests]
        replies = model.generate_until(requests)
        sent = chat_requests(server)
        usage = model._client.usage.summary()
        served_hits = server.cache["hits"]
        off, _ = _model_over(server, docs, audio_canary="off", media_uuids="off", max_concurrency=1, build_workers=1)
        off.send_order = lambda reqs: list(range(len(reqs)))  # lmms-eval's order, for comparison
        replies_off = off.generate_until(requests)
        sent_off = chat_requests(server)[len(sent) :]

    keys: dict[tuple, list[str]] = {}
    for doc, request in zip(docs, built):
        parts = _media_parts({"messages": request["messages"]})
        assert [p["uuid"] for p in parts] == request["part_keys"] and all(
            k.startswith("sha256:") and len(k) == 71 for k in request["part_keys"]
        )
        assert [p["type"] for p in parts][-1] == "input_audio"
        keys[(doc["sample_id"], doc["condition_id"], doc["variant"])] = request["part_keys"]
    for sample in {d["sample_id"] for d in docs}:
        clean = keys[(sample, "clean", 0)]
        for variant in range(3):  # equal bytes, equal keys: the text cell's frames and audio are the clean ones
            assert keys[(sample, "single_drop_words_t30", variant)] == clean
        distorted = keys[(sample, "single_distortion_a50", 0)]
        assert distorted[:-1] == clean[:-1], "the audio cell's frames are the clean frames"
        assert distorted[-1] != clean[-1], "a corrupted clip never shares the clean clip's key"
    a, b = sorted({d["sample_id"] for d in docs})
    assert not set(keys[(a, "clean", 0)]) & set(keys[(b, "clean", 0)]), "two items share no part"

    # sent grouped by item (all cells of one item, then the next), and keyed as built
    item_of = {tuple(k): s for (s, _, _), k in keys.items()}
    sent_items = [item_of[tuple(r["uuids"])] for r in sent]
    assert sent_items == sorted(sent_items, key=sent_items.index) and len(set(sent_items)) == 2
    # the same replies whatever the order and with the keys off; no uuid sent when off
    assert replies == replies_off and len(replies) == len(docs)
    assert all(u is None for r in sent_off for u in r["uuids"])
    assert [item_of.get(tuple(r["uuids"])) for r in sent_off] == [None] * len(docs)

    # counted: parts sent, those repeating an earlier part, and the server's cache hits over the run
    parts = sum(len(k) for k in keys.values())
    distinct = len({p for k in keys.values() for p in k})
    assert (usage["media_parts"], usage["repeated_media_parts"]) == (parts, parts - distinct)
    assert usage["server_mm_cache"] == {"queries": parts, "hits": served_hits} and served_hits == parts - distinct
    from faultline_eval.core.request_lifecycle import media_reuse_text

    assert media_reuse_text(usage).startswith(f"{parts} media parts sent, {parts - distinct} (")
    assert f"server multimodal cache: {served_hits} hits of {parts} queries" in media_reuse_text(usage)
    from faultline_app.viewer.site import run_panel  # the viewer's run panel shows the same line

    [(_, line)] = run_panel({"requests": {"sceval_openai:fake-omni": usage}})["cost_lines"]
    assert line.endswith("; " + media_reuse_text(usage))


def test_a_server_that_refuses_uuids_stops_the_run_naming_media_uuids_off():
    from faultline_eval.model_wrappers.openai_client import UuidsRefused

    docs = _panel_docs(("clean",), items=3)
    with FakeOpenAI(rejects_uuids=True) as server:
        model, requests = _model_over(server, docs, audio_canary="off", max_concurrency=1, build_workers=1)
        with pytest.raises(UuidsRefused, match=r"refuses the media parts' 'uuid' field .*Run with media_uuids=off"):
            model.generate_until(requests)
        assert len(server.requests) == 1, "one refusal stops the run: no retries, no other request"
        model, requests = _model_over(server, docs, audio_canary="off", media_uuids="off")
        assert len(model.generate_until(requests)) == len(docs) == len(chat_requests(server))
