"""One Gemini request loop for every caller: the ``sceval_gemini`` model and the C3PO build stages.

:class:`GeminiClient` sends one ``generateContent`` request through google-genai and always
returns a :class:`Reply`, never raises for the API's sake:

- 408, 429, 5xx and transport timeouts are retried with exponential backoff (``initial_backoff``
  doubling, capped at ``max_backoff``) up to ``max_retries``; after the last one the reply's
  ``failure`` is ``api_failure``.
- a blocked prompt or a safety stop without text is ``refusal``; no text at all is ``empty``.
- token counts come from the response's ``usage_metadata``; latency covers every attempt.
- with a reply store (:class:`sceval_plugin.store.ReplyStore`) and a ``store_key``, a finished
  reply (anything but ``api_failure``) is written as soon as it arrives, and the same key is
  answered from the store afterwards, so a run killed with ``kill -9`` resumes without paying
  twice. :class:`Usage` adds up calls, restored replies, retries, latency and tokens.

The API key comes only from the environment (``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``).
"""

from __future__ import annotations

import io
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}
REFUSAL_FINISH = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"}
KEY_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


def api_key(who: str) -> str:
    key = next((os.environ[k] for k in KEY_ENV if os.environ.get(k)), None)
    if not key:
        raise ValueError(f"{who}: set GEMINI_API_KEY (or GOOGLE_API_KEY) in the environment")
    return key


def _transport_errors() -> tuple[type, ...]:
    """Timeouts and connection errors of whichever httpx the installed google-genai uses."""
    import importlib

    found: list[type] = []
    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        found += [module.TimeoutException, module.TransportError]
    return tuple(found)


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


def message_parts(messages: list[dict]) -> tuple[list, str | None]:
    """lmms-eval chat messages (text, PIL images, ``{"array", "sampling_rate"}`` audio) as one
    google-genai user turn of inline parts, in order, and the system text."""
    import numpy as np
    import soundfile
    from google.genai import types

    parts, system = [], None
    for message in messages:
        for part in message.get("content", []):
            kind = part.get("type")
            if message.get("role") == "system" and kind == "text":
                system = part["text"]
            elif kind == "image":
                buffer = io.BytesIO()
                part["url"].save(buffer, format="PNG")
                parts.append(types.Part.from_bytes(data=buffer.getvalue(), mime_type="image/png"))
            elif kind == "audio":
                buffer = io.BytesIO()
                audio = part["url"]
                soundfile.write(buffer, np.asarray(audio["array"], dtype=np.float32), int(audio["sampling_rate"]),
                                format="WAV", subtype="PCM_16")
                parts.append(types.Part.from_bytes(data=buffer.getvalue(), mime_type="audio/wav"))
            elif kind == "text":
                parts.append(types.Part.from_text(text=part["text"]))
    return [types.Content(role="user", parts=parts)], system


def parse_response(response: Any) -> tuple[str, str | None, str]:
    """(text, failure category, detail) of a generateContent response."""
    feedback = getattr(response, "prompt_feedback", None)
    if feedback is not None and getattr(feedback, "block_reason", None):
        return "", "refusal", f"prompt blocked: {feedback.block_reason}"
    candidates = getattr(response, "candidates", None) or []
    if not candidates:
        return "", "empty", "no candidates"
    finish = str(getattr(candidates[0], "finish_reason", "") or "").split(".")[-1]
    content = getattr(candidates[0], "content", None)
    text = "".join(getattr(p, "text", "") or "" for p in (getattr(content, "parts", None) or []))
    if finish in REFUSAL_FINISH and not text.strip():
        return "", "refusal", f"finish_reason {finish}"
    if not text.strip():
        return "", "empty", f"finish_reason {finish or 'unknown'}"
    return text, None, ""


class GeminiClient:
    def __init__(self, model_version: str, *, base_url: str | None = None, max_retries: int = 4,
                 timeout: float = 120.0, initial_backoff: float = 1.0, max_backoff: float = 60.0,
                 store: Any = None, who: str = "gemini") -> None:
        from google import genai
        from google.genai import types

        self.model_version = str(model_version)
        self.max_retries = max(0, int(max_retries))
        self.initial_backoff, self.max_backoff = float(initial_backoff), float(max_backoff)
        self.store = store
        self.usage = Usage()
        options = types.HttpOptions(base_url=base_url or None, timeout=int(float(timeout) * 1000),
                                    retry_options=types.HttpRetryOptions(attempts=1))  # we retry, and count
        self._client = genai.Client(api_key=api_key(who), http_options=options)
        self._types = types

    def generate(self, contents: list, *, system: str | None = None, temperature: float = 0.0,
                 max_output_tokens: int = 1024, json_mode: bool = False, response_schema: dict | None = None,
                 store_key: str | None = None) -> Reply:
        """One request, answered from the store when ``store_key`` is there already."""
        from google.genai import errors

        if store_key is not None and self.store is not None:
            done = self.store.get(store_key)
            if done is not None:
                reply = Reply.from_store(done)
                self.usage.add(reply)
                return reply
        config = self._types.GenerateContentConfig(
            system_instruction=system, temperature=temperature, max_output_tokens=max_output_tokens,
            response_mime_type="application/json" if json_mode or response_schema else None,
            response_json_schema=response_schema)
        start, retries, usage = time.perf_counter(), 0, None
        while True:
            try:
                response = self._client.models.generate_content(model=self.model_version, contents=contents,
                                                                config=config)
                text, failure, detail = parse_response(response)
                usage = getattr(response, "usage_metadata", None)
                break
            except errors.APIError as exc:
                retryable, detail = exc.code in RETRYABLE_STATUS, f"HTTP {exc.code}: {str(exc.message or '')[:200]}"
            except _transport_errors() as exc:
                retryable, detail = True, f"{type(exc).__name__}: {str(exc)[:200]}"
            if not retryable or retries >= self.max_retries:
                text, failure = "", "api_failure"
                detail = f"{detail} (after {retries} retries)"
                break
            time.sleep(min(self.max_backoff, self.initial_backoff * 2**retries))
            retries += 1
        reply = Reply(text=text, failure=failure, detail=detail, retries=retries,
                      latency_s=time.perf_counter() - start,
                      input_tokens=int(getattr(usage, "prompt_token_count", 0) or 0),
                      output_tokens=int(getattr(usage, "candidates_token_count", 0) or 0)
                      + int(getattr(usage, "thoughts_token_count", 0) or 0))
        self.usage.add(reply)
        if store_key is not None and self.store is not None and failure != "api_failure":  # retried on resume
            self.store.put(store_key, **reply.stored())
        return reply
