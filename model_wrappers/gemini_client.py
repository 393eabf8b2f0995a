"""One Gemini client for every caller: the ``sceval_gemini`` model and the C3PO build stages.

:class:`GeminiClient` sends one ``generateContent`` request through google-genai and always
returns a :class:`Reply`, never raises for the API's sake. Retries, backoff, the reply store and
:class:`~faultline_eval.core.request_lifecycle.Usage` are the project's one request lifecycle
(:class:`faultline_eval.core.request_lifecycle.RequestLifecycle`); this module adds only what is
Gemini's: 408/429/5xx and transport timeouts are retryable, a blocked prompt or a safety stop
without text is ``refusal``, no text at all is ``empty``, and token counts come from the
response's ``usage_metadata``.

The API key comes only from the environment (``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``).
"""

from __future__ import annotations

from typing import Any

from faultline_eval.core.request_lifecycle import (
    RETRYABLE_STATUS,
    Answer,
    FatalError,
    Reply,
    RequestLifecycle,
    RetryableError,
)
from faultline_eval.core.settings import GEMINI_API_KEY, GOOGLE_API_KEY
from faultline_eval.model_wrappers.media_encoding import encode_image, encode_wav

REFUSAL_FINISH = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"}
KEY_SETTINGS = (GEMINI_API_KEY, GOOGLE_API_KEY)
#: Gemini reads PNG (not BMP); the unfiltered zlib-1 PNG keeps uploads small at a fraction of Pillow's CPU.
DEFAULT_IMAGE_ENCODING = "png-fast"
IMAGE_ENCODINGS = ("png", "png-fast", "png-stored")


def api_key(who: str) -> str:
    key = next((value for setting in KEY_SETTINGS if (value := setting.raw())), None)
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


def message_parts(messages: list[dict], image_encoding: str = DEFAULT_IMAGE_ENCODING) -> tuple[list, str | None]:
    """lmms-eval chat messages (text, PIL images, ``{"array", "sampling_rate"}`` audio) as one
    google-genai user turn of inline parts, in order, and the system text. Frames are encoded
    losslessly (:mod:`.media_encoding`), the audio as 16-bit WAV."""
    from google.genai import types

    parts, system = [], None
    for message in messages:
        for part in message.get("content", []):
            kind = part.get("type")
            if message.get("role") == "system" and kind == "text":
                system = part["text"]
            elif kind == "image":
                data, mime = encode_image(part["url"], image_encoding)
                parts.append(types.Part.from_bytes(data=data, mime_type=mime))
            elif kind == "audio":
                parts.append(types.Part.from_bytes(data=encode_wav(part["url"]), mime_type="audio/wav"))
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


class GeminiClient(RequestLifecycle):
    def __init__(
        self,
        model_version: str,
        *,
        base_url: str | None = None,
        max_retries: int = 4,
        timeout: float = 120.0,
        initial_backoff: float = 1.0,
        max_backoff: float = 60.0,
        store: Any = None,
        who: str = "gemini",
    ) -> None:
        from google import genai
        from google.genai import types

        super().__init__(max_retries=max_retries, initial_backoff=initial_backoff, max_backoff=max_backoff, store=store)
        self.model_version = str(model_version)
        options = types.HttpOptions(
            base_url=base_url or None,
            timeout=int(float(timeout) * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),
        )  # we retry, and count
        self._client = genai.Client(api_key=api_key(who), http_options=options)
        self._types = types

    def generate(
        self,
        contents: list,
        *,
        system: str | None = None,
        temperature: float = 0.0,
        max_output_tokens: int = 1024,
        json_mode: bool = False,
        response_schema: dict | None = None,
        store_key: str | None = None,
        row_id: str | None = None,
    ) -> Reply:
        """One request, answered from the store when ``store_key`` is there already; the task of
        ``row_id`` (an lmms-eval doc's) is told its latency, retries and failure category."""
        from google.genai import errors

        config = self._types.GenerateContentConfig(
            system_instruction=system,
            temperature=temperature,
            max_output_tokens=max_output_tokens,
            response_mime_type="application/json" if json_mode or response_schema else None,
            response_json_schema=response_schema,
        )

        def attempt() -> Answer:
            try:
                response = self._client.models.generate_content(
                    model=self.model_version, contents=contents, config=config
                )
            except errors.APIError as exc:
                detail = f"HTTP {exc.code}: {str(exc.message or '')[:200]}"
                raise (RetryableError if exc.code in RETRYABLE_STATUS else FatalError)(detail) from exc
            except _transport_errors() as exc:
                raise RetryableError(f"{type(exc).__name__}: {str(exc)[:200]}") from exc
            text, failure, detail = parse_response(response)
            usage = getattr(response, "usage_metadata", None)
            return Answer(
                text,
                failure,
                detail,
                input_tokens=int(getattr(usage, "prompt_token_count", 0) or 0),
                output_tokens=int(getattr(usage, "candidates_token_count", 0) or 0)
                + int(getattr(usage, "thoughts_token_count", 0) or 0),
            )

        return self.send(attempt, store_key, row_id)
