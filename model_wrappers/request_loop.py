"""The one request loop every remote model shares, whatever its transport.

A transport (google-genai for Gemini, the ``openai`` client for OpenAI-compatible servers such
as vLLM) supplies one *attempt*: send the request once and return an :class:`Answer`, or raise
:class:`RetryableError` (408, 429, 5xx, timeouts, dropped connections) or :class:`FatalError`
(any other HTTP error). :meth:`RequestLoop.send` does the rest, the same for all of them:

- retries with exponential backoff (``initial_backoff`` doubling, capped at ``max_backoff``) up
  to ``max_retries``; after the last one the reply's ``failure`` is ``api_failure``;
- latency covering every attempt, and the retry count, in the :class:`Reply`;
- with a reply store (:class:`faultline_eval.core.store.ReplyStore`) and a ``store_key``, a finished
  reply (anything but ``api_failure``) is written as soon as it arrives, and the same key is
  answered from the store afterwards, so a run killed with ``kill -9`` resumes without paying
  twice;
- :class:`Usage` adds up calls, restored replies, retries, failures, latency and tokens.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

#: HTTP statuses worth another attempt.
RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}


class RetryableError(Exception):
    """An attempt that failed for a reason that may pass (its message is the failure detail)."""


class FatalError(Exception):
    """An attempt that failed for a reason another attempt would not change."""


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
    text: str
    failure: str | None = None  # api_failure | refusal | empty | (a caller's own category)
    detail: str = ""
    retries: int = 0
    latency_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    restored: bool = False  # answered from the reply store, not sent

    def stored(self) -> dict:
        return {"reply": self.text, "failure": self.failure, "detail": self.detail, "retries": self.retries,
                "latency_s": self.latency_s, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens}

    @classmethod
    def from_store(cls, entry: dict) -> "Reply":
        return cls(text=entry.get("reply", ""), failure=entry.get("failure"), detail=entry.get("detail", ""),
                   retries=entry.get("retries", 0), latency_s=entry.get("latency_s") or 0.0,
                   input_tokens=entry.get("input_tokens", 0), output_tokens=entry.get("output_tokens", 0),
                   restored=True)


@dataclass
class Usage:
    """What a run of requests cost: sent calls, restored replies, retries, failures, tokens, latency."""

    sent: int = 0
    restored: int = 0
    retries: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, reply: Reply) -> None:
        with self._lock:
            if reply.restored:
                self.restored += 1
                return
            self.sent += 1
            self.retries += reply.retries
            self.input_tokens += reply.input_tokens
            self.output_tokens += reply.output_tokens
            self.latency_s += reply.latency_s
            if reply.failure:
                self.failures[reply.failure] = self.failures.get(reply.failure, 0) + 1

    def summary(self) -> dict:
        with self._lock:
            return {"sent": self.sent, "restored": self.restored, "retries": self.retries,
                    "failures": dict(self.failures), "input_tokens": self.input_tokens,
                    "output_tokens": self.output_tokens, "latency_s": round(self.latency_s, 3),
                    "mean_latency_s": round(self.latency_s / self.sent, 3) if self.sent else None}


class RequestLoop:
    """Retries, backoff, the reply store and usage for one remote model (see the module doc).

    ``store`` and ``usage`` are plain attributes: a caller may swap in its own (the C3PO build
    stages share one ``Usage`` between clients)."""

    def __init__(self, *, max_retries: int = 4, initial_backoff: float = 1.0, max_backoff: float = 60.0,
                 store: Any = None) -> None:
        self.max_retries = max(0, int(max_retries))
        self.initial_backoff, self.max_backoff = float(initial_backoff), float(max_backoff)
        self.store = store
        self.usage = Usage()

    def restored(self, store_key: str | None) -> Reply | None:
        """The stored reply of ``store_key``, if the store has one."""
        if store_key is None or self.store is None:
            return None
        done = self.store.get(store_key)
        if done is None:
            return None
        reply = Reply.from_store(done)
        self.usage.add(reply)
        return reply

    def send(self, attempt: Callable[[], Answer], store_key: str | None = None) -> Reply:
        """``attempt`` until it answers or the retries run out; answered from the store when
        ``store_key`` is there already. Never raises for the endpoint's sake."""
        done = self.restored(store_key)
        if done is not None:
            return done
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
                answer = Answer("", "api_failure", f"{detail} (after {retries} retries)")
                break
            time.sleep(min(self.max_backoff, self.initial_backoff * 2**retries))
            retries += 1
        reply = Reply(text=answer.text, failure=answer.failure, detail=answer.detail, retries=retries,
                      latency_s=time.perf_counter() - start, input_tokens=answer.input_tokens,
                      output_tokens=answer.output_tokens)
        self.usage.add(reply)
        if store_key is not None and self.store is not None and reply.failure != "api_failure":  # retried on resume
            self.store.put(store_key, **reply.stored())
        return reply
