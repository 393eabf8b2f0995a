"""``sceval_gemini``: Gemini through the google-genai client, with every failure recorded.

Frames go inline as lossless PNG images in order (``image_encoding``: ``png-fast`` by default;
``png``, ``png-stored``), the audio inline as WAV, the question as text; JSON response mode
when the task's prompt asks for JSON; temperature 0 and ``max_output_tokens`` (a C3PO build
stage's or judge's request: its own temperature and token budget, :func:`.remote_chat.decoding`).
Requests are built ahead of the network in a worker pool (:mod:`.request_pipeline`;
``build_workers``, ``lookahead``) and sent with bounded concurrency through the project's one
request lifecycle (:mod:`faultline_eval.core.request_lifecycle`): 429, 5xx and timeouts are
retried with exponential backoff up to ``max_retries``. Each request hands the task its latency,
retry count and failure category (``api_failure`` after the last retry,
``refusal`` for a blocked prompt or a safety stop, ``empty``), so nothing is dropped or counted
as a wrong answer.

The API key comes only from the environment (``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``), never
from ``--model_args`` (lmms-eval writes those into its results), and is never logged.

    lmms-eval --model sceval_gemini --model_args model_version=gemini-2.5-flash,max_concurrency=8 \\
        --tasks sceval_panel --log_samples --output_path out/
"""

from __future__ import annotations

from typing import Any

from faultline_eval.core.identity import doc_identity, fingerprint_of
from faultline_eval.core.store import open_store, request_key
from faultline_eval.model_wrappers.gemini_client import (
    DEFAULT_IMAGE_ENCODING,
    IMAGE_ENCODINGS,
    GeminiClient,
    message_parts,
)
from faultline_eval.model_wrappers.media_encoding import check_image_encoding
from faultline_eval.model_wrappers.model_args import check_model_args, flag
from faultline_eval.model_wrappers.remote_chat import RemoteChat, decoding, expects_json


class GeminiChat(RemoteChat):
    name = "sceval_gemini"

    def __init__(
        self,
        model_version: str = "gemini-2.5-flash",
        base_url: str | None = None,
        max_concurrency: int = 4,
        max_retries: int = 4,
        timeout: float = 120.0,
        initial_backoff: float = 1.0,
        max_backoff: float = 60.0,
        max_output_tokens: int = 1024,
        json_mode: Any = True,
        store: str | None = None,
        image_encoding: str = DEFAULT_IMAGE_ENCODING,
        build_workers: int | None = None,
        lookahead: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if "api_key" in kwargs:
            raise ValueError(
                "sceval_gemini: pass the API key in the environment (GEMINI_API_KEY), not in "
                "--model_args, which lmms-eval writes into its results"
            )
        check_model_args(self.name, type(self), kwargs)
        self.model_version = str(model_version)
        self.set_pipeline(max_concurrency, build_workers, lookahead)
        self.max_output_tokens = int(max_output_tokens)
        self.json_mode = flag(json_mode, "json_mode")
        self.image_encoding = check_image_encoding(image_encoding, "sceval_gemini", IMAGE_ENCODINGS)
        # Finished replies persist (default $SCEVAL_CACHE/replies/gemini-<model>.jsonl; store=none: off).
        self._client = GeminiClient(
            self.model_version,
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
            initial_backoff=initial_backoff,
            max_backoff=max_backoff,
            who="sceval_gemini",
        )
        self._client.run_label = f"{self.name}:{self.model_version}"  # its totals go beside the results JSON
        self._client.store = open_store(
            store, f"gemini-{self.model_version}", "sceval_gemini", "those requests are not sent again"
        )

    def _build(self, request: Any) -> dict:
        doc = self.doc(request)
        dataset, row_id = doc_identity(doc)
        contents, system = message_parts(request.args[1](doc), self.image_encoding)
        wants_json = self.json_mode and expects_json(doc)
        temperature, budget, keyed = decoding(request, doc, self.max_output_tokens)
        key = None
        if self._client.store is not None:
            text = "\n".join(p.text or "" for p in contents[0].parts if getattr(p, "text", None))
            key = request_key(self.model_version, fingerprint_of(dataset), row_id, system, text, wants_json, *keyed)
        return {
            "row_id": row_id,
            "contents": contents,
            "system": system,
            "json": wants_json,
            "key": key,
            "temperature": temperature,
            "max_tokens": budget,
        }

    def _send(self, built: dict) -> str:
        reply = self._client.generate(
            built["contents"],
            system=built["system"],
            temperature=built["temperature"],
            max_output_tokens=built["max_tokens"],
            json_mode=built["json"],
            store_key=built["key"],
            row_id=built["row_id"],
        )
        return reply.text
