"""``sceval_openai``: a model served behind OpenAI-compatible chat endpoints (vLLM, vLLM-Omni).

For Qwen2.5-Omni, Qwen3-Omni, MiniCPM-o or any omni model ``vllm serve`` runs: frames, picture
and audio go explicitly as content parts (:mod:`.openai_client`: ``image_url`` / ``video_url``
data URLs of a lossless encoding, the audio as ``input_audio`` WAV), the system prompt as the
system turn, temperature 0 and ``max_tokens`` (a C3PO build stage's or judge's request: its own
temperature and token budget, :func:`.remote_chat.decoding`). Requests are built ahead of the network in a worker pool
(:mod:`.request_pipeline`) and sent with bounded concurrency through the project's one request
lifecycle (:mod:`faultline_eval.core.request_lifecycle`): retries with backoff, the failure categories ``api_failure`` /
``refusal`` / ``empty`` and latency handed to the task per request, and the reply store
(``$SCEVAL_CACHE/replies/openai-<model>.jsonl``; ``store=PATH``, ``store=none``) so a killed
run resumes without sending anything twice. Works for SCEval and C3PO tasks alike.

Each media part carries a ``uuid`` (``media_uuids``, on by default): the digest of the exact
bytes sent and the settings that made them (:func:`.openai_client.media_uuid`), which vLLM keys
its multimodal caches by, so a part sent again (an item's clean audio in every text-only and
vision-only cell, its clean frames in every text-only and audio-only one) is not encoded again,
and a corrupted part never gets a clean one's features. The run's requests are sent grouped by
item (:meth:`OpenAIChat.send_order`: every cell of an item close together, within the
concurrency window), the replies handed back in lmms-eval's order: no result and no reply-store
key depends on the order. At the end of the run the share of media parts that repeated an
earlier one and the server's multimodal cache hits (its ``/metrics``, where it shows them) are
logged and written beside the results (``_run_info.json``, the viewer's run panel).

Before the first request the audio canary (:mod:`.audio_canary`) checks on the run's first
``canary_items`` items with audio that the served model hears it; a backend that fails is
refused with a clear error unless ``audio_canary=off``.

Model arguments: ``base_url`` (one or several endpoints joined by ``|``, data-parallel
replicas; default ``http://127.0.0.1:8000/v1``), ``model`` (default: what the first endpoint
serves), ``max_concurrency`` (requests in flight, over all endpoints), ``max_retries``,
``timeout``, ``initial_backoff``, ``max_backoff``, ``max_tokens``, ``json_mode`` (off by
default: open models answer the prompt's own JSON instruction, as on the HF path),
``image_encoding`` (``bmp``, ``png-stored``, ``png-fast``, ``png``), ``frames_as``
(``images``, or ``video``: a video's frames as one ``video_url`` with their timing, pictures
still as images; :mod:`.openai_client`), ``audio_part`` (``input_audio`` or ``audio_url``), ``modalities``
(e.g. ``text``: asks vLLM-Omni for text output only), ``build_workers``, ``lookahead``,
``store``, ``audio_canary``, ``canary_items``, ``media_uuids`` (``off``: no ``uuid`` on the
media parts, for a server that refuses the field). The key comes only from the environment
(``SCEVAL_OPENAI_API_KEY`` or ``OPENAI_API_KEY``).

    lmms-eval --model sceval_openai \\
        --model_args base_url=http://gpu1:8000/v1|http://gpu2:8000/v1,max_concurrency=64 \\
        --tasks sceval_panel --log_samples --output_path out/qwen-omni/
"""

from __future__ import annotations

from typing import Any

from loguru import logger

from faultline_eval.core.identity import doc_identity, fingerprint_of
from faultline_eval.core.request_lifecycle import media_reuse_text
from faultline_eval.core.store import open_store, request_key, slug
from faultline_eval.model_wrappers.audio_canary import AudioCanaryError, audio_clip, run_canary
from faultline_eval.model_wrappers.chat_messages import role_texts
from faultline_eval.model_wrappers.media_encoding import check_image_encoding
from faultline_eval.model_wrappers.model_args import check_model_args, flag
from faultline_eval.model_wrappers.openai_client import (
    AUDIO_PARTS,
    DEFAULT_BASE_URL,
    DEFAULT_IMAGE_ENCODING,
    FRAMES_AS,
    OpenAIChatClient,
    WireRequest,
    chat_request,
)
from faultline_eval.model_wrappers.remote_chat import RemoteChat, decoding, expects_json

VIDEO_WIRE = 2  # what frames_as=video sends (in the reply-store key): 2 = timing sent, picture as an image


def _choice(value: Any, allowed: tuple[str, ...], name: str) -> str:
    value = str(value).strip().lower()
    if value not in allowed:
        raise ValueError(f"sceval_openai: {name}={value!r} is not one of {', '.join(allowed)}")
    return value


class OpenAIChat(RemoteChat):
    name = "sceval_openai"

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        model: str | None = None,
        max_concurrency: int = 16,
        max_retries: int = 4,
        timeout: float = 300.0,
        initial_backoff: float = 1.0,
        max_backoff: float = 60.0,
        max_tokens: int = 1024,
        json_mode: Any = False,
        image_encoding: str = DEFAULT_IMAGE_ENCODING,
        frames_as: str = "images",
        audio_part: str = "input_audio",
        modalities: str | None = None,
        build_workers: int | None = None,
        lookahead: int | None = None,
        store: str | None = None,
        audio_canary: Any = True,
        canary_items: int = 4,
        media_uuids: Any = True,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if "api_key" in kwargs:
            raise ValueError(
                "sceval_openai: pass the API key in the environment (SCEVAL_OPENAI_API_KEY or "
                "OPENAI_API_KEY), not in --model_args, which lmms-eval writes into its results"
            )
        check_model_args(self.name, type(self), kwargs)
        self.set_pipeline(max_concurrency, build_workers, lookahead)
        self.max_tokens = int(max_tokens)
        self.json_mode = flag(json_mode, "json_mode")
        self.image_encoding = check_image_encoding(image_encoding, "sceval_openai")
        self.frames_as = _choice(frames_as, FRAMES_AS, "frames_as")
        self.audio_part = _choice(audio_part, AUDIO_PARTS, "audio_part")
        self.extra = {"modalities": [m for m in str(modalities).split("|") if m]} if modalities else {}
        self.audio_canary = flag(audio_canary, "audio_canary")
        self.canary_items = max(2, int(canary_items))
        self.media_uuids = flag(media_uuids, "media_uuids")
        # Under a multi-process launch each rank is a client of its own share of the requests
        # (HostSideModel) and starts its round-robin on another endpoint.
        urls = [u.strip() for u in str(base_url).split("|") if u.strip()]
        self._client = OpenAIChatClient(
            urls,
            model,
            max_retries=max_retries,
            timeout=timeout,
            initial_backoff=initial_backoff,
            max_backoff=max_backoff,
            first_endpoint=self._rank,
        )
        self.model_name = self._client.model
        self._client.run_label = f"{self.name}:{self.model_name}"  # its totals go beside the results JSON
        self._client.store = open_store(
            store, f"openai-{slug(self.model_name)}", "sceval_openai", "those requests are not sent again"
        )
        self._canary_done = not self.audio_canary

    # --- one request: built in the pool, then sent ----------------------------------------------

    def _wire(self, messages: list[dict]) -> WireRequest:
        return chat_request(
            messages,
            image_encoding=self.image_encoding,
            frames_as=self.frames_as,
            audio_part=self.audio_part,
            uuids=self.media_uuids,
        )

    def _build(self, request: Any) -> dict:
        doc = self.doc(request)
        dataset, row_id = doc_identity(doc)
        messages = request.args[1](doc)
        wants_json = self.json_mode and expects_json(doc)
        temperature, budget, keyed = decoding(request, doc, self.max_tokens)
        key = None
        if self._client.store is not None:
            text = role_texts(messages)
            # video requests carry their frame timing and the picture as an image since wire 2
            wire = (self.frames_as, VIDEO_WIRE) if self.frames_as == "video" else self.frames_as
            key = request_key(
                "openai",
                self.model_name,
                fingerprint_of(dataset),
                row_id,
                text,
                wants_json,
                self.max_tokens,
                wire,
                self.extra,
                *keyed,
            )
        try:
            wire = self._wire(messages)
        except ValueError as exc:
            raise ValueError(f"sceval_openai: {row_id}: {exc}") from exc
        return {
            "row_id": row_id,
            "messages": wire.messages,
            "body": wire.body,
            "part_keys": wire.part_keys,
            "json": wants_json,
            "key": key,
            "temperature": temperature,
            "max_tokens": budget,
        }

    def _send(self, built: dict) -> str:
        reply = self._client.chat(
            built["messages"],
            temperature=built["temperature"],
            max_tokens=built["max_tokens"],
            json_mode=built["json"],
            extra=self.extra,
            body=built["body"],
            store_key=built["key"],
            row_id=built["row_id"],
            part_keys=built["part_keys"],
        )
        return reply.text

    # --- the audio canary ----------------------------------------------------------------------

    def _check_audio(self, requests: list) -> None:
        """Run the canary on the first ``canary_items`` requests with a real audio clip; refuse
        the backend when it fails. A run with no audio at all has nothing to check."""
        self._canary_done = True
        chosen = []
        for request in requests:
            messages = request.args[1](self.doc(request))
            if audio_clip(messages) is not None:
                chosen.append(messages)
                if len(chosen) == self.canary_items:
                    break
        if len(chosen) < 2:
            logger.info("sceval_openai: the run has fewer than two items with audio; audio canary skipped")
            return

        def ask(messages: list[dict]):
            wire = self._wire(messages)
            return self._client.chat(wire.messages, max_tokens=self.max_tokens, extra=self.extra, body=wire.body)

        result = run_canary(chosen, ask, concurrency=self.max_concurrency)
        if not result.answered:  # the server refused the requests: nothing is known about the audio
            raise AudioCanaryError(
                f"sceval_openai: the audio canary could not run on {self._client.base_urls} ({self.model_name}): "
                f"{result.detail}. Nothing of the run was sent; fix what the error names (see "
                "docs/tutorials/served-model.md), or pass audio_canary=off to run anyway."
            )
        if not result.passed:
            raise AudioCanaryError(
                f"sceval_openai: the audio canary failed on {self._client.base_urls} ({self.model_name}): "
                f"{result.summary()}. The served model does not hear the audio, so every answer would be a "
                "text-and-vision answer. Check that the server's chat template has an audio placeholder and that "
                "its backend passes the audio on (see docs/tutorials/served-model.md), or pass audio_canary=off to run anyway."
            )
        logger.info(f"sceval_openai: audio canary passed: {result.summary()}")

    # --- the order of sending, and what the server's cache made of it ---------------------------

    def send_order(self, requests: list) -> list[int]:
        """The requests' indices grouped by item (its dataset and sample id), items in order of
        first appearance: lmms-eval hands over all cells of one task after another, so an item's
        parts that repeat across cells would otherwise be sent a whole task apart."""
        first_seen: dict[tuple, int] = {}
        items = []
        for request in requests:
            doc = self.doc(request)
            item = (doc.get("dataset"), str(doc["sample_id"] if "sample_id" in doc else doc_identity(doc)[1]))
            items.append(first_seen.setdefault(item, len(first_seen)))
        return sorted(range(len(requests)), key=items.__getitem__)  # stable: cells keep their order

    def generate_until(self, requests):
        if not self._canary_done:
            self._check_audio(requests)
        before = self._client.mm_cache_counters()
        replies = super().generate_until(requests)
        after = self._client.mm_cache_counters() if before is not None else None
        if before is not None and after is not None:
            self._client.count_server_mm_cache({name: after[name] - before[name] for name in after})
        reuse = media_reuse_text(self._client.usage.summary())
        if reuse:
            logger.info(f"sceval_openai: {reuse}")
        return replies
