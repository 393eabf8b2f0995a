"""``sceval_gemini``: Gemini through the google-genai client, with every failure recorded.

Frames go inline as PNG images in order, the audio inline as WAV, the question as text; JSON
response mode when the task's prompt asks for JSON; temperature 0. Requests run with bounded
concurrency; 429, 5xx and timeouts are retried with exponential backoff up to ``max_retries``.
Each request hands the task its latency, retry count and failure category (``api_failure``
after the last retry, ``refusal`` for a blocked prompt or a safety stop, ``empty``), so nothing
is dropped or counted as a wrong answer.

The API key comes only from the environment (``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``), never
from ``--model_args`` (lmms-eval writes those into its results), and is never logged.

    lmms-eval --model sceval_gemini --model_args model_version=gemini-2.5-flash,max_concurrency=8 \\
        --tasks sceval_panel --log_samples --output_path out/
"""

from __future__ import annotations

import io
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from faultline_eval.model_wrappers.reference import _lmms_base

RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}
REFUSAL_FINISH = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"}
KEY_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


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


def _bool(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


class GeminiChat(_lmms_base()):  # type: ignore[misc]
    is_simple = False

    def __init__(self, model_version: str = "gemini-2.5-flash", base_url: str | None = None,
                 max_concurrency: int = 4, max_retries: int = 4, timeout: float = 120.0,
                 initial_backoff: float = 1.0, max_backoff: float = 60.0, max_output_tokens: int = 1024,
                 json_mode: Any = True, store: str | None = None, **kwargs: Any) -> None:
        super().__init__()
        from google import genai
        from google.genai import types

        if "api_key" in kwargs:
            raise ValueError("sceval_gemini: pass the API key in the environment (GEMINI_API_KEY), not in "
                             "--model_args, which lmms-eval writes into its results")
        key = next((os.environ[k] for k in KEY_ENV if os.environ.get(k)), None)
        if not key:
            raise ValueError("sceval_gemini: set GEMINI_API_KEY (or GOOGLE_API_KEY) in the environment")
        self.model_version = str(model_version)
        self.max_concurrency = max(1, int(max_concurrency))
        self.max_retries = max(0, int(max_retries))
        self.initial_backoff, self.max_backoff = float(initial_backoff), float(max_backoff)
        self.max_output_tokens = int(max_output_tokens)
        self.json_mode = _bool(json_mode)
        options = types.HttpOptions(base_url=base_url or None, timeout=int(float(timeout) * 1000),
                                    retry_options=types.HttpRetryOptions(attempts=1))  # we retry, and count
        self._client = genai.Client(api_key=key, http_options=options)
        self._types = types
        from sceval_plugin.store import open_store

        # Finished replies persist (default $SCEVAL_CACHE/replies/gemini-<model>.jsonl; store=none: off).
        self._store = open_store(store, f"gemini-{self.model_version}", "sceval_gemini",
                                 "those requests are not sent again")

    def loglikelihood(self, requests):
        raise NotImplementedError("sceval_gemini only generates")

    def generate_until_multi_round(self, requests):
        raise NotImplementedError("sceval_gemini answers in one round")

    # --- one request ---------------------------------------------------------------------------

    def _contents(self, messages: list[dict]) -> tuple[list, str | None]:
        import numpy as np
        import soundfile

        types = self._types
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

    @staticmethod
    def _reply(response: Any) -> tuple[str, str | None, str]:
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

    def _ask(self, request: Any) -> str:
        from google.genai import errors

        from sceval_plugin import telemetry
        from sceval_plugin.conditions import catalogue
        from sceval_plugin.prompts import prompt_template

        ctx, doc_to_messages, gen_kwargs, doc_id, task, split = request.args
        doc = self.task_dict[task][split][doc_id]
        contents, system = self._contents(doc_to_messages(doc))
        # SCEval's prompt says whether it wants JSON; other docs (C3PO items, judge requests) may say so themselves.
        expects_json = (prompt_template(catalogue().get(doc["condition_id"]).prompt).expects_json
                        if "condition_id" in doc else bool(doc.get("expects_json", False)))
        wants_json = self.json_mode and expects_json
        key = None
        if self._store is not None:
            from sceval_plugin.store import request_key, restored_call

            text = "\n".join(p.text or "" for p in contents[0].parts if getattr(p, "text", None))
            key = request_key(self.model_version, doc["dataset"], doc["row_id"], system, text, wants_json)
            done = self._store.get(key)
            if done is not None:
                telemetry.record(doc["row_id"], restored_call(done))
                return done["reply"]
        config = self._types.GenerateContentConfig(
            system_instruction=system, temperature=0.0, max_output_tokens=self.max_output_tokens,
            response_mime_type="application/json" if wants_json else None)
        start, retries = time.perf_counter(), 0
        while True:
            try:
                response = self._client.models.generate_content(model=self.model_version, contents=contents, config=config)
                text, failure, detail = self._reply(response)
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
        latency = time.perf_counter() - start
        telemetry.record(doc["row_id"], telemetry.Call(latency_s=latency, retries=retries, failure=failure, detail=detail))
        if key is not None and failure != "api_failure":  # failed calls are retried by a resumed run
            self._store.put(key, reply=text, failure=failure, retries=retries, latency_s=latency)
        return text

    def generate_until(self, requests):
        from tqdm import tqdm

        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            return list(tqdm(pool.map(self._ask, requests), total=len(requests), disable=self.rank != 0,
                             desc="sceval_gemini"))
