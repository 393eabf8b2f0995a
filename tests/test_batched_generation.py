"""Batched HF generation in the Qwen-Omni adapters: greedy replies equal to one request at a time,
on the tiny real checkpoints, through lmms-eval's evaluator and a real SCEval task."""

from __future__ import annotations

import pytest

from faultline_eval.model_wrappers import tiny_checkpoints


@pytest.fixture(scope="module")
def task_manager():
    """Our tasks only: indexing all of lmms-eval's for each run would cost seconds."""
    import lmms_eval.models  # noqa: F401  (our entry point adds the SCEval task folder)
    from lmms_eval.tasks import TaskManager

    return TaskManager("ERROR", include_defaults=False)


def evaluate(model, task_manager, limit: int) -> dict[str, str]:
    """``sceval_clean`` on ``limit`` items with lmms-eval's evaluator: row id -> reply."""
    from lmms_eval.evaluator import simple_evaluate

    out = simple_evaluate(
        model=model,
        tasks=["sceval_clean"],
        limit=limit,
        gen_kwargs="max_new_tokens=4",
        log_samples=True,
        verbosity="ERROR",
        task_manager=task_manager,
    )
    return {s["doc"]["row_id"]: s["resps"][0][0] for s in out["samples"]["sceval_clean"]}


def generate_spy(model, monkeypatch) -> list:
    """Records the attention mask of every ``generate`` call the thinker gets (it still generates)."""
    calls, generate = [], model._model.thinker.generate

    def spy(*args, **kwargs):
        calls.append(kwargs["attention_mask"].sum(dim=1).tolist())  # prompt length of each row
        return generate(*args, **kwargs)

    monkeypatch.setattr(model._model.thinker, "generate", spy)
    return calls


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["qwen2_5_omni", "qwen3_omni"])
def test_batch_3_gives_the_greedy_replies_of_batch_1(variant, task_manager, tmp_path, monkeypatch):
    import importlib

    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    checkpoint = tiny_checkpoints.BUILDERS[variant](tmp_path / "tiny")
    adapters = importlib.import_module(f"faultline_eval.model_wrappers.{variant}")
    chat = adapters.Qwen2_5OmniChat if variant == "qwen2_5_omni" else adapters.Qwen3OmniChat
    replies, calls = {}, {}
    for batch_size in (1, 3):  # the evaluator frees the model after a run: one load per run
        model = chat(pretrained=str(checkpoint), device="cpu", store="none", batch_size=batch_size)
        calls[batch_size] = generate_spy(model, monkeypatch)
        replies[batch_size] = evaluate(model, task_manager, limit=3)
    assert [len(rows) for rows in calls[1]] == [1, 1, 1]
    assert [len(rows) for rows in calls[3]] == [3]  # one generate call for the three requests
    assert len(set(calls[3][0])) > 1, "the batch must mix prompt lengths (left padding exercised)"
    assert replies[3] == replies[1] and len(replies[1]) == 3
    assert any(replies[1].values())  # the random model does say something


def test_batches_never_mix_gen_kwargs_and_a_failed_batch_is_retried_one_request_at_a_time():
    from types import SimpleNamespace

    from faultline_eval.core import telemetry
    from faultline_eval.model_wrappers.local_requests import answer_requests

    docs = [{"row_id": f"clean/demo-{i}/0"} for i in range(6)]
    settings = [{"max_new_tokens": n} for n in (4, 8, 4, 4, 8, 4)]
    batches = []

    def doc_to_messages(doc):
        return [{"role": "user", "content": [{"type": "text", "text": doc["row_id"]}]}]

    def text(messages):
        return messages[0]["content"][0]["text"]

    def answer(messages, gen_kwargs):
        if text(messages) == "clean/demo-3/0":
            raise RuntimeError("corrupt media")
        return f"{text(messages)}@{gen_kwargs['max_new_tokens']}"

    def answer_batch(conversations, gen_kwargs):
        batches.append([text(m) for m in conversations])
        return [answer(m, gen_kwargs) for m in conversations]  # any bad doc fails the whole batch

    wrapper = SimpleNamespace(
        is_simple=False,
        rank=0,
        task_dict={"t": {"test": docs}},
        batch_size_per_gpu=2,
        cache_hook=SimpleNamespace(add_partial=lambda *a: None),
    )
    requests = [SimpleNamespace(args=("ctx", doc_to_messages, settings[i], i, "t", "test")) for i in range(6)]
    replies = answer_requests(wrapper, requests, answer, "faultline_test", answer_batch)
    # in request order; the failed batch (3, 5) was answered again one by one: only 3 failed
    assert replies == [
        "clean/demo-0/0@4",
        "clean/demo-1/0@8",
        "clean/demo-2/0@4",
        "",
        "clean/demo-4/0@8",
        "clean/demo-5/0@4",
    ]
    assert batches == [[f"clean/demo-{i}/0" for i in pair] for pair in ((0, 2), (1, 4), (3, 5))]
    calls = {doc["row_id"]: telemetry.take(doc["row_id"]) for doc in docs}
    assert calls["clean/demo-3/0"].failure == "api_failure" and "corrupt media" in calls["clean/demo-3/0"].detail
    assert all(call.failure is None for row, call in calls.items() if row != "clean/demo-3/0")
