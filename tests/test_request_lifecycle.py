"""The one request lifecycle (faultline_eval.core.request_lifecycle): store lookup, the call
(retried for remote models, batched for local ones), telemetry, store write, failure categories.
The remote and local models' own tests drive it end to end (test_gemini, test_openai_serving,
test_qwen_omni, test_batched_generation); these check its steps directly, with a real ReplyStore."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from faultline_eval.core import telemetry
from faultline_eval.core.request_lifecycle import (
    Answer,
    FatalError,
    PendingRequest,
    RequestLifecycle,
    RetryableError,
    take_run_usage,
)
from faultline_eval.core.store import RESTORED_DETAIL, ReplyStore
from faultline_eval.model_wrappers.reference import ReferenceChat


def test_a_retried_call_is_stored_told_to_its_task_and_restored_on_resume_without_calling_again(tmp_path):
    attempts = []

    def flaky() -> Answer:
        attempts.append(1)
        if len(attempts) < 3:
            raise RetryableError("HTTP 503: busy")
        return Answer("B", input_tokens=7, output_tokens=2)

    first = RequestLifecycle(store=ReplyStore(tmp_path / "replies.jsonl"), max_retries=4, initial_backoff=0)
    reply = first.send(flaky, "key-1", "clean/demo-0/0")
    assert (reply.text, reply.failure, reply.retries, reply.restored) == ("B", None, 2, False)
    call = telemetry.take("clean/demo-0/0")
    assert (call.retries, call.failure) == (2, None) and call.latency_s == reply.latency_s
    assert first.usage.summary()["sent"] == 1 and first.usage.summary()["retries"] == 2

    resumed = RequestLifecycle(store=ReplyStore(tmp_path / "replies.jsonl"), max_retries=4, initial_backoff=0)
    again = resumed.send(flaky, "key-1", "clean/demo-0/0")
    assert len(attempts) == 3  # not sent again
    assert (again.text, again.retries, again.input_tokens, again.restored) == ("B", 2, 7, True)
    call = telemetry.take("clean/demo-0/0")
    assert call.detail == RESTORED_DETAIL and call.retries == 2
    assert resumed.usage.summary()["restored"] == 1 and resumed.usage.summary()["sent"] == 0


def test_an_api_failure_is_told_to_its_task_but_not_stored_so_a_resumed_run_sends_it_again(tmp_path):
    def refused() -> Answer:
        raise FatalError("HTTP 400: bad request")

    lifecycle = RequestLifecycle(store=ReplyStore(tmp_path / "replies.jsonl"), max_retries=4, initial_backoff=0)
    reply = lifecycle.send(refused, "key-1", "clean/demo-1/0")
    assert reply.failure == "api_failure" and reply.detail == "HTTP 400: bad request (after 0 retries)"
    assert telemetry.take("clean/demo-1/0").failure == "api_failure"
    assert lifecycle.restored("key-1") is None and len(ReplyStore(tmp_path / "replies.jsonl")) == 0
    empty = lifecycle.send(lambda: Answer("", "empty", "no candidates"), "key-2", None)  # no row id: no telemetry
    assert empty.failure == "empty" and lifecycle.restored("key-2").failure == "empty"  # the model's answer: stored


def test_a_request_whose_preparation_fails_gets_api_failure_and_the_others_are_answered():
    done = []

    def prepare(request: PendingRequest) -> None:
        if request.payload == "corrupt":
            raise OSError("unreadable media")

    requests = [
        PendingRequest(payload=p, row_id=f"clean/demo-{i}/0", label=f"doc {i}")
        for i, p in enumerate(["a", "corrupt", "b"])
    ]
    RequestLifecycle().answer_in_batches(
        requests,
        prepare=prepare,
        call=lambda batch: [request.payload.upper() for request in batch],
        done=lambda request, reply: done.append(reply),
        batch_size=2,
    )
    assert [reply.text for reply in done] == ["", "A", "B"]  # the failure at once, then the batch of two
    failed = telemetry.take("clean/demo-1/0")
    assert failed.failure == "api_failure" and failed.detail == "generation failed: OSError: unreadable media"
    assert telemetry.take("clean/demo-2/0").failure is None


def test_the_reference_model_answers_through_the_lifecycle_and_one_bad_doc_no_longer_stops_the_run():
    """sceval_reference's requests get their telemetry from the lifecycle; a doc it cannot read
    (an image part holding a number) is recorded as api_failure and the next doc is still answered."""
    question = {"type": "text", "text": "Question: What colour?\nOptions:\nA. red\nB. green"}
    docs = [{"row_id": "clean/demo-2/0", "bad": True}, {"row_id": "clean/demo-3/0", "bad": False}]

    def doc_to_messages(doc):
        audio = {"array": np.zeros(160, np.float32), "sampling_rate": 16000}
        parts = [{"type": "image", "url": 3}] if doc["bad"] else []
        return [{"role": "user", "content": [*parts, {"type": "audio", "url": audio}, question]}]

    model = ReferenceChat()
    model.task_dict = {"t": {"test": docs}}
    requests = [SimpleNamespace(args=("ctx", doc_to_messages, {}, i, "t", "test")) for i in range(2)]
    replies = model.generate_until(requests)
    assert replies[0] == "" and '"answer"' in replies[1]
    failed, answered = telemetry.take("clean/demo-2/0"), telemetry.take("clean/demo-3/0")
    assert failed.failure == "api_failure" and "cannot read a media item of type int" in failed.detail
    assert answered.failure is None and answered.latency_s is not None


def test_a_labelled_lifecycle_counts_into_the_run_totals_with_media_tokens_by_kind(tmp_path):
    """The run totals our lmms-eval plugin writes beside the results JSON: every lifecycle of one
    label (a local model makes one per generate_until call) adds up; a take starts them again."""
    take_run_usage()

    def call(batch: list[PendingRequest]) -> list[str]:
        for n, request in enumerate(batch, 1):  # what a MediaTokenCounter reports for each row
            request.media_tokens = {"image": 100 * n, "audio": n}
        return [str(request.payload) for request in batch]

    store = ReplyStore(tmp_path / "replies.jsonl")
    for _ in range(2):  # the second round is restored from the store: counted, not sent
        RequestLifecycle(store=store, run_label="local").answer_in_batches(
            [PendingRequest(payload=p, store_key=p) for p in ("a", "b", "c")],
            prepare=lambda request: None,
            call=call,
            done=lambda request, reply: None,
            batch_size=2,
        )
    RequestLifecycle(run_label="remote").send(lambda: Answer("", "refusal", "no", input_tokens=9, output_tokens=1))
    totals = take_run_usage()
    local, remote = totals["local"], totals["remote"]
    assert (local["sent"], local["generated"], local["restored"], local["failures"]) == (3, 3, 3, {})
    assert local["media_tokens"] == {"image": 100 + 200 + 100, "audio": 1 + 2 + 1}  # batches of two, then one
    assert (remote["sent"], remote["generated"], remote["failures"]) == (1, 0, {"refusal": 1})
    assert (remote["input_tokens"], remote["output_tokens"]) == (9, 1)
    assert take_run_usage() == {}
