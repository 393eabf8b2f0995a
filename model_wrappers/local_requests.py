"""lmms-eval ``generate_until`` requests for local models, through the one request lifecycle.

What is lmms-eval's lives here: unpacking a request (chat path: ``doc_to_messages``; simple
path: every ``doc_to_visual`` item plus the context), its reply-store key
(:mod:`.local_reply_store`), lmms-eval's cache hook, the progress bar, the media token log
(:mod:`.media_token_log`). Store lookup, batching, failure categories, telemetry and the store
write are :class:`faultline_eval.core.request_lifecycle.RequestLifecycle`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from loguru import logger
from tqdm import tqdm

from faultline_eval.core.identity import doc_identity
from faultline_eval.core.request_lifecycle import PendingRequest, Reply, RequestLifecycle
from faultline_eval.model_wrappers.chat_messages import media_counts, messages_from_visuals
from faultline_eval.model_wrappers.lmms_base import without_padding
from faultline_eval.model_wrappers.local_reply_store import store_key
from faultline_eval.model_wrappers.media_token_log import MediaTokenCounter, log_media_tokens

#: ``answer(messages, gen_kwargs)``: one conversation's reply.
AnswerOne = Callable[[list[dict], dict], str]
#: ``answer_batch(conversations, gen_kwargs)``: one reply per conversation, from one model call.
AnswerBatch = Callable[[list[list[dict]], dict], list[str]]


@dataclass
class LmmsRequest(PendingRequest):
    """One lmms-eval request on its way through the lifecycle."""

    index: int = 0  # its place among the replies
    args: tuple = ()  # lmms-eval's Instance.args
    doc: Any = None
    doc_id: Any = None
    task: str = ""
    media: dict[str, int] = field(default_factory=dict)  # media items sent, by kind


class LocalRequests:
    """One ``generate_until`` call of a local model (see :func:`answer_requests`)."""

    def __init__(self, wrapper: Any, name: str, answer: AnswerOne, answer_batch: AnswerBatch | None = None) -> None:
        self.wrapper, self.name, self.answer, self.answer_batch = wrapper, name, answer, answer_batch
        self.counter: MediaTokenCounter | None = getattr(wrapper, "media_token_counter", None)
        self.lifecycle = RequestLifecycle(store=getattr(wrapper, "reply_store", None), run_label=name)
        self.batch_size = max(1, int(getattr(wrapper, "batch_size_per_gpu", 1) or 1)) if answer_batch else 1
        self.replies: list[str] = []
        self.warned_unkeyed = False

    def run(self, requests: list) -> list[str]:
        self.replies = [""] * len(requests)
        self.lifecycle.answer_in_batches(
            self.pending(requests),
            prepare=self.prepare,
            call=self.call,
            done=self.done,
            batch_size=self.batch_size,
            name=self.name,
        )
        return self.replies

    def pending(self, requests: list) -> Iterator[LmmsRequest]:
        for index, request in enumerate(tqdm(requests, disable=self.wrapper.rank != 0, desc=self.name)):
            doc_id, task, split = request.args[3:6]  # the same place in chat and simple requests
            doc = self.wrapper.task_dict[task][split][doc_id]
            row_id = doc_identity(doc)[1]
            yield LmmsRequest(
                row_id=row_id,
                label=f"{self.name}: {task} doc {doc_id}" + (f" ({row_id})" if row_id is not None else ""),
                index=index,
                args=request.args,
                doc=doc,
                doc_id=doc_id,
                task=task,
                stored_with={"row_id": row_id, "task": task},
            )

    def prepare(self, request: LmmsRequest) -> None:
        """The request's messages, settings and store key (raises: the request's failure)."""
        if self.wrapper.is_simple:
            context, request.settings, doc_to_visual = request.args[:3]
            request.payload = messages_from_visuals(context, list(doc_to_visual(request.doc) or []))
        else:
            _, doc_to_messages, request.settings = request.args[:3]
            request.payload = doc_to_messages(request.doc)
        request.media = media_counts(request.payload)
        if self.lifecycle.store is None:
            return
        request.store_key = store_key(
            self.wrapper, self.name, request.doc, request.payload, dict(request.settings or {})
        )
        if request.store_key is None and not self.warned_unkeyed and self.wrapper.rank == 0:
            self.warned_unkeyed = True
            logger.info(
                f"{self.name}: {request.task} requests sample or carry no row id; their replies are neither "
                "restored from nor written to the reply store"
            )

    def call(self, batch: list[LmmsRequest]) -> list[str]:
        """One model call for ``batch`` (requests of equal settings); counts the media tokens."""
        gen_kwargs = dict(batch[0].settings or {})
        if self.counter is not None:
            self.counter.reset()
        if len(batch) == 1:
            texts = [self.answer(batch[0].payload, gen_kwargs)]
        else:
            texts = self.answer_batch([request.payload for request in batch], gen_kwargs)
        rows = (self.counter.rows if self.counter is not None else None) or []
        for position, request in enumerate(batch):
            request.media_tokens = rows[position] if position < len(rows) else {}
        return texts

    def done(self, request: LmmsRequest, reply: Reply) -> None:
        if reply.restored:
            logger.debug(f"{self.name}: {request.task} doc {request.doc_id}: restored from the reply store")
        else:
            logger.debug(
                f"{self.name}: {request.task} doc {request.doc_id}: media items {request.media}, "
                f"tokens {request.media_tokens}"
            )
            log_media_tokens(
                {
                    "model": self.name,
                    "task": request.task,
                    "doc_id": request.doc_id,
                    "row_id": request.row_id,
                    **{f"n_{k}s": v for k, v in request.media.items()},
                    **{f"n_{kind}_tokens": n for kind, n in request.media_tokens.items()},
                    "failure": reply.failure,
                }
            )
        context, gen_kwargs = request.args[0], request.args[1 if self.wrapper.is_simple else 2]
        self.wrapper.cache_hook.add_partial("generate_until", (context, gen_kwargs), reply.text)
        self.replies[request.index] = reply.text


def answer_requests(
    wrapper: Any, requests: list, answer: AnswerOne, name: str, answer_batch: AnswerBatch | None = None
) -> list[str]:
    """Answer lmms-eval ``generate_until`` requests, one doc at a time or, with ``answer_batch``
    and ``wrapper.batch_size_per_gpu`` > 1, several per model call.

    ``answer(messages, gen_kwargs)`` gets lmms-eval chat messages (``doc_to_messages`` on the
    chat path; every ``doc_to_visual`` item plus the context on the simple path). A failure is
    logged with its doc and recorded as ``api_failure`` for that trial; the run goes on.

    Batching: requests wait in one queue per distinct ``gen_kwargs`` (requests with different
    settings are never mixed) until ``batch_size`` of them are ready; the queues left at the end
    go as smaller batches. Replies come back in request order. If a batched call raises, its
    requests are answered again one at a time, so only the bad doc gets ``api_failure``. A batched
    request's latency is its own preparation time plus the wall time of its batch's call.

    With a reply store (``wrapper.reply_store``) each finished greedy reply is appended to it as
    soon as its call returns, and a request already in it is answered from it without reaching the
    model (telemetry: the stored latency, detail ``restored from the reply store``; no line in the
    media token log). Failed requests are not stored, so a resumed run tries them again.
    lmms-eval's padding of a rank's requests is not answered (:func:`.lmms_base.without_padding`).
    """
    return without_padding(requests, LocalRequests(wrapper, name, answer, answer_batch).run)
