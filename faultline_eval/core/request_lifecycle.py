"""One request lifecycle for every model the project runs, local or remote.

Every request a model of ours answers goes through the same five steps, in this module:

1. **store lookup** (:meth:`RequestLifecycle.restored`): a request whose reply-store key is in
   the store (:class:`faultline_eval.core.store.ReplyStore`) is answered from it without reaching the
   model, so a run killed with ``kill -9`` resumes without paying twice;
2. **the call**, which is the one step that differs by kind of model:
   - local models (weights in this process) answer *batches*
     (:meth:`RequestLifecycle.answer_in_batches`): requests wait in one queue per distinct
     generation setting until ``batch_size`` are ready; if a batched call raises, its requests are
     answered again one at a time so only the bad one fails; an exception is the failure
     ``api_failure`` with detail ``generation failed: <type>: <message>``, and the run goes on;
   - remote models (an HTTP endpoint) make one *call* with retries
     (:meth:`RequestLifecycle.send`): an attempt raises :class:`RetryableError` (408, 429, 5xx,
     timeouts, dropped connections) or :class:`FatalError` (any other HTTP error); retryable ones
     are tried again with exponential backoff (``initial_backoff`` doubling, capped at
     ``max_backoff``) up to ``max_retries``, after which the failure is ``api_failure`` with
     detail ``<last error> (after N retries)``; an answered attempt may itself be a ``refusal`` or
     ``empty`` (:class:`Answer`);
3. **telemetry** (:meth:`RequestLifecycle.settle`): the task of a request with a row id is
   told its latency, retries and failure category (:mod:`faultline_eval.core.telemetry`); a restored
   reply is reported as stored, with detail ``restored from the reply store``;
4. **store write**: a finished reply (anything but ``api_failure``, which a resumed run tries
   again) is appended to the store as soon as it arrives, so a kill loses at most the call in
   flight;
5. **usage** (:class:`Usage`): calls, restored replies, retries, failures, latency and tokens
   (text in and out where the model reports them, media tokens by kind where a local model counts
   them); a served model also counts the media parts it sent, those that repeated an earlier
   part byte for byte, and the server's multimodal cache queries and hits where it shows them
   (:func:`media_reuse_text` says it in one line). A lifecycle with a ``run_label`` also counts into the process's run totals
   (:func:`take_run_usage`), which the lmms-eval plugin writes beside each results JSON
   (``<timestamp>_run_info.json``), so the run's cost is on disk, not only in memory.

A reply is always a :class:`Reply`; the lifecycle never raises for the model's sake. What is
lmms-eval's (unpacking requests, its cache hook, progress bars) lives in the harness adapters:
:mod:`faultline_eval.model_wrappers.local_requests` (local models) and
:mod:`faultline_eval.model_wrappers.remote_chat` (remote ones).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from loguru import logger

from faultline_eval.core import telemetry
from faultline_eval.core.store import restored_call

#: HTTP statuses worth another attempt.
__all__ = [
    "API_FAILURE",
    "RETRYABLE_STATUS",
    "Answer",
    "FatalError",
    "PendingRequest",
    "Reply",
    "RequestLifecycle",
    "RetryableError",
    "Store",
    "Usage",
    "generation_failure",
    "media_reuse_text",
    "run_usage",
    "take_run_usage",
]

RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}
#: The failure category of a request the model never answered (not stored: a resumed run retries it).
API_FAILURE = "api_failure"


class RetryableError(Exception):
    """An attempt that failed for a reason that may pass (its message is the failure detail)."""


class FatalError(Exception):
    """An attempt that failed for a reason another attempt would not change."""


class Store(Protocol):
    """What the lifecycle needs of a reply store (:class:`faultline_eval.core.store.ReplyStore`)."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, **entry: Any) -> None: ...


@dataclass(frozen=True)
class Answer:
    """What one successful attempt brought back: the text, or a refusal / empty category."""

    text: str
    failure: str | None = None  # refusal | empty
    detail: str = ""
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Reply:
    """The end of one request's lifecycle: its text, failure category and cost."""

    text: str
    failure: str | None = None  # api_failure | refusal | empty | (a caller's own category)
    detail: str = ""
    retries: int = 0
    latency_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    media_tokens: dict[str, int] = field(default_factory=dict)  # placeholder tokens the model received, by kind
    restored: bool = False  # answered from the reply store, not sent

    def stored(self) -> dict[str, Any]:
        return {
            "reply": self.text,
            "failure": self.failure,
            "detail": self.detail,
            "retries": self.retries,
            "latency_s": self.latency_s,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }

    @classmethod
    def from_store(cls, entry: dict[str, Any]) -> Reply:
        return cls(
            text=entry.get("reply", ""),
            failure=entry.get("failure"),
            detail=entry.get("detail", ""),
            retries=entry.get("retries", 0),
            latency_s=entry.get("latency_s") or 0.0,
            input_tokens=entry.get("input_tokens", 0),
            output_tokens=entry.get("output_tokens", 0),
            restored=True,
        )


@dataclass
class Usage:
    """What a run of requests cost: sent calls, restored replies, retries, failures, tokens, latency."""

    sent: int = 0
    restored: int = 0
    retries: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    media_tokens: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    media_parts: int = 0  # media parts sent (a served model's)
    repeated_media_parts: int = 0  # of which an earlier request sent the same bytes
    server_mm_cache: dict[str, float] = field(default_factory=dict)  # the server's cache queries / hits
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add_media_parts(self, parts: int, repeated: int) -> None:
        with self._lock:
            self.media_parts += parts
            self.repeated_media_parts += repeated

    def add_server_mm_cache(self, counters: dict[str, float]) -> None:
        with self._lock:
            for name, n in counters.items():
                self.server_mm_cache[name] = self.server_mm_cache.get(name, 0) + n

    def add(self, reply: Reply) -> None:
        with self._lock:
            if reply.restored:
                self.restored += 1
                return
            self.sent += 1
            self.retries += reply.retries
            self.input_tokens += reply.input_tokens
            self.output_tokens += reply.output_tokens
            for kind, n in reply.media_tokens.items():
                self.media_tokens[kind] = self.media_tokens.get(kind, 0) + n
            self.latency_s += reply.latency_s
            if reply.failure:
                self.failures[reply.failure] = self.failures.get(reply.failure, 0) + 1

    def summary(self) -> dict[str, Any]:
        with self._lock:
            return {
                "sent": self.sent,
                "restored": self.restored,
                "generated": self.sent - sum(self.failures.values()),  # sent and answered without a failure
                "retries": self.retries,
                "failures": dict(self.failures),
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "media_tokens": dict(self.media_tokens),
                "latency_s": round(self.latency_s, 3),
                "mean_latency_s": round(self.latency_s / self.sent, 3) if self.sent else None,
                **(
                    {"media_parts": self.media_parts, "repeated_media_parts": self.repeated_media_parts}
                    if self.media_parts
                    else {}
                ),
                **({"server_mm_cache": dict(self.server_mm_cache)} if self.server_mm_cache else {}),
            }


def media_reuse_text(usage: dict[str, Any]) -> str:
    """One line on a served model's media reuse from a :meth:`Usage.summary`: the share of parts
    sent that repeated an earlier one, and the server's multimodal cache hits where known; ``""``
    for a model that sent no media part."""
    parts = usage.get("media_parts") or 0
    if not parts:
        return ""
    repeated = usage.get("repeated_media_parts") or 0
    text = f"{parts:,} media parts sent, {repeated:,} ({repeated / parts:.0%}) repeating an earlier part"
    cache = usage.get("server_mm_cache") or {}
    if cache.get("queries"):
        hits, queries = cache.get("hits", 0), cache["queries"]
        text += f"; server multimodal cache: {hits:,.0f} hits of {queries:,.0f} queries ({hits / queries:.0%})"
    return text


@dataclass
class PendingRequest:
    """One local request between its store lookup and its reply (the caller subclasses it to
    carry what it needs when the reply comes: lmms-eval's doc id, task, cache-hook arguments)."""

    payload: Any = None  # what the model's call gets (e.g. chat messages)
    settings: Any = None  # its generation settings: only requests with equal settings share a batch
    store_key: str | None = None  # None: neither restored from nor written to the store
    row_id: str | None = None  # None: no telemetry (the task has no row id to look it up by)
    label: str = "request"  # how log lines name it
    prepared_s: float = 0.0  # time spent preparing it, counted in its latency
    media_tokens: dict[str, int] = field(default_factory=dict)  # what the call counted the model received
    stored_with: dict[str, Any] = field(default_factory=dict)  # extra fields written beside its reply


Pending = TypeVar("Pending", bound=PendingRequest)

_run_lock = threading.Lock()
_run_usage: dict[str, Usage] = {}
_taken_usage: list[dict[str, dict[str, Any]]] = []  # every take of this process, for the end-of-run summary


def run_usage(label: str) -> Usage:
    """The process's running totals of every lifecycle labelled ``label`` (a model's name)."""
    with _run_lock:
        return _run_usage.setdefault(label, Usage())


def take_run_usage() -> dict[str, dict[str, Any]]:
    """Each label's :meth:`Usage.summary` since the last take, and start again (one lmms-eval
    process may evaluate several models in turn; each results JSON gets its own)."""
    with _run_lock:
        taken = {label: usage.summary() for label, usage in sorted(_run_usage.items())}
        _run_usage.clear()
        _taken_usage.append(taken)
    return taken


def taken_run_usage() -> list[dict[str, dict[str, Any]]]:
    """What every :func:`take_run_usage` of this process took, in order (one per results JSON):
    the command's end-of-run summary reads it after lmms-eval has written its files."""
    with _run_lock:
        return list(_taken_usage)


def generation_failure(exc: BaseException, latency_s: float) -> Reply:
    """The reply of a local request whose preparation or generation raised."""
    return Reply("", API_FAILURE, f"generation failed: {type(exc).__name__}: {str(exc)[:300]}", latency_s=latency_s)


class RequestLifecycle:
    """Store lookup, the call (batched or retried), telemetry, store write and usage for one model
    (see the module doc). ``store`` and ``usage`` are plain attributes: a caller may swap in its
    own (the C3PO build stages share one :class:`Usage` between clients). ``run_label`` (a
    model's name) also counts every reply into :func:`run_usage` of that label."""

    run_label: str | None = None

    def __init__(
        self,
        *,
        store: Store | None = None,
        max_retries: int = 0,
        initial_backoff: float = 1.0,
        max_backoff: float = 60.0,
        run_label: str | None = None,
    ) -> None:
        self.run_label = run_label
        self.max_retries = max(0, int(max_retries))
        self.initial_backoff, self.max_backoff = float(initial_backoff), float(max_backoff)
        self.store = store
        self.usage = Usage()

    # --- the steps every request goes through --------------------------------------------------

    def restored(self, store_key: str | None, row_id: str | None = None) -> Reply | None:
        """The stored reply of ``store_key``, if the store has one (its task is told, as stored)."""
        if store_key is None or self.store is None:
            return None
        done = self.store.get(store_key)
        if done is None:
            return None
        reply = Reply.from_store(done)
        self._count(reply)
        if row_id is not None:
            telemetry.record(row_id, restored_call(done))
        return reply

    def settle(
        self,
        reply: Reply,
        store_key: str | None = None,
        row_id: str | None = None,
        stored_with: dict[str, Any] | None = None,
    ) -> Reply:
        """Count ``reply``, tell its task, and store it unless it is an ``api_failure``."""
        self._count(reply)
        if row_id is not None:
            telemetry.record(
                row_id,
                telemetry.Call(
                    latency_s=reply.latency_s, retries=reply.retries, failure=reply.failure, detail=reply.detail
                ),
            )
        if store_key is not None and self.store is not None and reply.failure != API_FAILURE:
            self.store.put(store_key, **reply.stored(), **(stored_with or {}))
        return reply

    def _count(self, reply: Reply) -> None:
        for usage in self._usages():
            usage.add(reply)

    def _usages(self) -> list[Usage]:
        return [self.usage] + ([run_usage(self.run_label)] if self.run_label is not None else [])

    def count_media_parts(self, parts: int, repeated: int) -> None:
        """Count media parts sent (``repeated``: those an earlier request sent byte for byte)."""
        for usage in self._usages():
            usage.add_media_parts(parts, repeated)

    def count_server_mm_cache(self, counters: dict[str, float]) -> None:
        """Count the server's multimodal cache ``queries`` and ``hits`` over a run of requests."""
        for usage in self._usages():
            usage.add_server_mm_cache(counters)

    # --- remote: one call, with retries ----------------------------------------------------------

    def send(self, attempt: Callable[[], Answer], store_key: str | None = None, row_id: str | None = None) -> Reply:
        """``attempt`` until it answers or the retries run out; answered from the store when
        ``store_key`` is there already. Never raises for the endpoint's sake."""
        done = self.restored(store_key, row_id)
        if done is not None:
            return done
        return self.settle(self.with_retries(attempt), store_key, row_id)

    def with_retries(self, attempt: Callable[[], Answer]) -> Reply:
        """The reply of ``attempt``, retried with exponential backoff; latency covers every attempt."""
        start, retries = time.perf_counter(), 0
        while True:
            try:
                answer = attempt()
                break
            except RetryableError as exc:
                retryable, detail = True, str(exc)
            except FatalError as exc:
                retryable, detail = False, str(exc)
            if not retryable or retries >= self.max_retries:
                answer = Answer("", API_FAILURE, f"{detail} (after {retries} retries)")
                break
            time.sleep(min(self.max_backoff, self.initial_backoff * 2**retries))
            retries += 1
        return Reply(
            text=answer.text,
            failure=answer.failure,
            detail=answer.detail,
            retries=retries,
            latency_s=time.perf_counter() - start,
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
        )

    # --- local: batches ----------------------------------------------------------------------------

    def answer_in_batches(
        self,
        requests: Iterable[Pending],
        *,
        prepare: Callable[[Pending], None],
        call: Callable[[list[Pending]], Sequence[str]],
        done: Callable[[Pending, Reply], None],
        batch_size: int = 1,
        name: str = "model",
    ) -> None:
        """Answer local ``requests`` in order of arrival, ``batch_size`` per ``call`` at most.

        ``prepare(request)`` fills in its payload, settings and store key (an exception there is
        the request's ``api_failure``); ``call(batch)`` returns one reply text per request of a
        batch of equal settings; ``done(request, reply)`` gets every request's :class:`Reply`, once,
        after its telemetry and store write. A batched request's latency is its own preparation
        time plus the wall time of its batch's call."""
        queues: dict[str, list[Pending]] = {}
        for request in requests:
            start = time.perf_counter()
            try:
                prepare(request)
                restored = self.restored(request.store_key, request.row_id)
            except Exception as exc:
                self._fail(request, exc, time.perf_counter() - start, done)
                continue
            if restored is not None:  # finished in an earlier run: the model is not asked again
                done(request, restored)
                continue
            request.prepared_s = time.perf_counter() - start
            queue = queues.setdefault(json.dumps(request.settings, sort_keys=True, default=repr), [])
            queue.append(request)
            if len(queue) >= max(1, batch_size):
                self._call_batch(list(queue), call, done, name)
                queue.clear()
        for queue in queues.values():
            if queue:
                self._call_batch(queue, call, done, name)

    def _call_batch(
        self,
        batch: list[Pending],
        call: Callable[[list[Pending]], Sequence[str]],
        done: Callable[[Pending, Reply], None],
        name: str,
    ) -> None:
        start = time.perf_counter()
        try:
            texts = call(batch)
        except Exception as exc:  # one bad request (OOM, corrupt media) must not end a long run
            if len(batch) == 1:
                self._fail(batch[0], exc, batch[0].prepared_s + time.perf_counter() - start, done)
                return
            logger.warning(
                f"{name}: a batch of {len(batch)} failed ({type(exc).__name__}: {str(exc)[:200]}); "
                "answering its requests one at a time"
            )
            for request in batch:
                self._call_batch([request], call, done, name)
            return
        elapsed = time.perf_counter() - start
        for request, text in zip(batch, texts):
            reply = Reply(text, latency_s=request.prepared_s + elapsed, media_tokens=dict(request.media_tokens))
            done(request, self.settle(reply, request.store_key, request.row_id, request.stored_with))

    def _fail(self, request: Pending, exc: Exception, latency_s: float, done: Callable[[Pending, Reply], None]) -> None:
        reply = generation_failure(exc, latency_s)
        logger.opt(exception=exc).error(f"{request.label}: {reply.detail}")
        done(request, self.settle(reply, None, request.row_id))
