"""A client for OpenAI-compatible chat-completions endpoints (vLLM, vLLM-Omni), on the shared lifecycle.

Transport: the ``openai`` Python client (lmms-eval depends on it, so it is always installed),
with its own retries off (``max_retries=0``): retries, backoff, the reply store, telemetry and
usage are the project's one request lifecycle
(:class:`faultline_eval.core.request_lifecycle.RequestLifecycle`). 408/429/5xx, timeouts and
dropped connections are retryable; other HTTP errors are not. A reply with ``refusal`` set or a
``content_filter`` stop and no text is ``refusal``; no text at all is ``empty``.

Several endpoints (data-parallel replicas, ``base_url=http://a:8000/v1|http://b:8000/v1``)
share the load: every attempt goes to the endpoint with the fewest requests in flight, ties
broken round-robin, so a retry may land on another replica.

What is sent (:func:`chat_request`), in the task's order, as vLLM's chat parser reads it
(``vllm/renderers/chat_utils.py`` in vLLM 0.32, since split into the package
``vllm/renderers/chat_utils/``; ``vllm/entrypoints/chat_utils.py`` before):

- the system turn as a plain string;
- each frame, and a C3PO picture, as an ``image_url`` part holding a data URL of a lossless
  encoding (:mod:`.media_encoding`; ``bmp`` by default, which vLLM decodes with Pillow); with
  ``frames_as=video`` each run of consecutive video frames is instead one ``video_url`` part,
  the ``data:video/jpeg;base64,<frame>,<frame>,...`` form vLLM's video loader splits into
  frames (it opens each with Pillow, so the frames stay lossless whatever the MIME type says),
  with the frames' timing in the request's ``media_io_kwargs`` and ``mm_processor_kwargs``
  (:func:`video_timing`; the server needs ``--trust-request-mm-kwargs``); a picture stays an
  ``image_url`` (it is an image, and a second video would break
  ``--limit-mm-per-prompt '{"video": 1, ...}'``);
- the audio as an ``input_audio`` part (``{"data": <base64 WAV>, "format": "wav"}``, OpenAI's
  own part type, which vLLM turns into the same audio input as an ``audio_url`` data URL); with
  ``audio_part=audio_url`` as an ``audio_url`` data URL instead;
- the question text as a ``text`` part;
- with ``media_uuids`` on (the default), each media part carries a ``uuid``
  (:func:`media_uuid`), which vLLM (checked on 0.32) takes as the key of its multimodal
  processor and encoder caches in place of hashing the item itself: a digest of the exact
  bytes sent (after corruption and encoding) and of the settings that made them, so parts of
  equal bytes share a key and a corrupted part never gets a clean one's features. A server
  that refuses the field stops the run with :class:`UuidsRefused`, naming ``media_uuids=off``.

The key comes only from the environment (``SCEVAL_OPENAI_API_KEY``, else ``OPENAI_API_KEY``);
without one the client sends ``EMPTY``, which a ``vllm serve`` started without ``--api-key``
accepts.
"""

from __future__ import annotations

import base64
import collections
import hashlib
import itertools
import json
import re
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from faultline_eval.core.preflight import PreflightError, probe_endpoint
from faultline_eval.core.request_lifecycle import (
    RETRYABLE_STATUS,
    Answer,
    FatalError,
    Reply,
    RequestLifecycle,
    RetryableError,
)
from faultline_eval.core.settings import OPENAI_API_KEY, SCEVAL_OPENAI_API_KEY
from faultline_eval.model_wrappers.media_encoding import encode_image, encode_wav
from faultline_eval.tasks import FRAME_TIME_KEY

KEY_SETTINGS = (SCEVAL_OPENAI_API_KEY, OPENAI_API_KEY)
#: How a local OpenAI-compatible server is started (named when nothing answers at a base_url).
START_HINT = "Start it with `vllm serve <checkpoint> --port <port>` (docs/tutorials/served-model.md)."
FRAMES_AS = ("images", "video")
AUDIO_PARTS = ("input_audio", "audio_url")
DEFAULT_IMAGE_ENCODING = "bmp"
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
#: vLLM (0.32) refuses per-request ``media_io_kwargs`` / ``mm_processor_kwargs`` without it
#: (``validate_request_mm_kwargs``, ``vllm/entrypoints/generate/base/protocol.py``)
TRUST_FLAG = "--trust-request-mm-kwargs"


class TimingRefused(RuntimeError):
    """The server does not take the video timing of ``frames_as=video``: every video request
    would fail the same way, so the run stops (not one ``api_failure`` per request)."""


class UuidsRefused(RuntimeError):
    """The server does not take the media parts' ``uuid`` field: every request would fail the
    same way, so the run stops with the model argument that turns them off."""


#: The wire field of a media part's cache key (vLLM: the ``uuid`` of each ``image_url``,
#: ``video_url``, ``input_audio`` and ``audio_url`` content part, ``vllm/entrypoints/chat_utils.py``).
UUID_FIELD = "uuid"


def media_uuid(kind: str, settings: str, *chunks: bytes) -> str:
    """The cache key of one media part: sha256 over its kind, the settings that made its bytes
    (encoding, video timing) and the bytes themselves, each length-prefixed so no two different
    parts can run together into one input. Equal bytes under equal settings share the key."""
    digest = hashlib.sha256()
    for chunk in (kind.encode(), settings.encode(), *chunks):
        digest.update(len(chunk).to_bytes(8, "big"))
        digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


@dataclass
class WireRequest:
    """What :func:`chat_request` makes of one request: the chat messages, the extra body fields
    and the cache key of each media part in order (also when ``media_uuids`` is off: they
    measure how many parts repeat)."""

    messages: list[dict]
    body: dict
    part_keys: list[str] = field(default_factory=list)


def api_key() -> str:
    return next((value for setting in KEY_SETTINGS if (value := setting.raw())), OPENAI_API_KEY.default_text)


def served_models(base_url: str, argument: str = "base_url") -> list[str]:
    """The models an OpenAI-compatible ``base_url`` serves (``GET <base_url>/models``), asked
    with a short timeout: what ``faultline-eval`` checks before anything runs and what
    :class:`OpenAIChatClient` asks when it starts. A server that does not answer, or answers
    something else than a model list, is a :class:`PreflightError` naming ``argument`` (how the
    user gave the URL) with the hint that fits what failed."""
    url = base_url.rstrip("/") + "/models"
    named = f"{argument}={base_url}"
    reply = probe_endpoint(url, named, headers={"Authorization": f"Bearer {api_key()}"}, start_hint=START_HINT)
    if reply.status == 404:
        hint = (
            ""
            if base_url.rstrip("/").endswith("/v1")
            else f"; an OpenAI-compatible base_url ends in /v1: {base_url.rstrip('/')}/v1?"
        )
        raise PreflightError(f"{named}: GET {url} is not found (HTTP 404){hint}")
    if reply.status in (401, 403):
        raise PreflightError(
            f"{named}: the server refuses the API key (HTTP {reply.status}); set {SCEVAL_OPENAI_API_KEY.name} "
            f"(or {OPENAI_API_KEY.name}) to the key it was started with"
        )
    if reply.status != 200:
        text = reply.body[:200].decode("utf-8", "replace")
        raise PreflightError(f"{named}: GET {url} answers HTTP {reply.status}: {text}")
    try:
        served = [str(entry["id"]) for entry in json.loads(reply.body)["data"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise PreflightError(
            f"{named}: GET {url} answers, but not with an OpenAI model list; is it the port of the "
            "OpenAI-compatible server (vllm serve)?"
        ) from exc
    if not served:
        raise PreflightError(f"{named}: the server serves no model")
    return served


def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def wire_items(parts: list[dict], frames_as: str = "images") -> list[tuple[str, Any]]:
    """The parts of one turn as the items they go out as, in order: ``("text" | "image" |
    "audio", part)``, and with ``frames_as=video`` ``("video", [frame parts])`` for each run of
    consecutive video frames (parts with :data:`~faultline_eval.tasks.FRAME_TIME_KEY`). A
    picture (a C3PO item's image, a single image) is an image under either setting."""
    items: list[tuple[str, Any]] = []
    for part in parts:
        kind = part.get("type")
        if kind not in ("text", "image", "audio"):
            raise ValueError(f"unsupported message part type {kind!r}")
        if kind == "image" and frames_as == "video" and FRAME_TIME_KEY in part:
            if items and items[-1][0] == "video":
                items[-1][1].append(part)
            else:
                items.append(("video", [part]))
            continue
        items.append((kind, part))
    return items


def mm_counts(messages: list[dict], frames_as: str = "images") -> collections.Counter:
    """How many ``image`` / ``video`` / ``audio`` items a request of ``messages`` sends: what
    vLLM's ``--limit-mm-per-prompt`` must allow (``sceval serve-limits``)."""
    return collections.Counter(
        kind
        for message in messages
        if message.get("role", "user") != "system"
        for kind, _ in wire_items(message.get("content", []), frames_as)
        if kind != "text"
    )


def video_timing(times: list[float | None]) -> dict:
    """The request fields that tell vLLM when a JPEG-sequence video's frames were taken.

    vLLM's loader of the ``data:video/jpeg;base64,<frame>,...`` form (``VideoMediaIO.load_base64``
    in ``vllm/multimodal/media/video.py``) knows nothing of the clip: it reads the video's ``fps``,
    ``frames_indices``, ``total_num_frames`` and ``duration`` from its media-IO kwargs (the
    server's ``--media-io-kwargs`` merged with the request's ``media_io_kwargs``), defaulting to
    1 fps; models whose processor reads that metadata place the frames by it. Our frames lie on
    a grid (``i / fps``, or ``i * duration / 8`` on longer clips; a probe may drop some), so the
    grid step is the smallest gap and each frame's index its time over the step (a frame-budget
    probe's frames are decoded frames: the step is then the clip's own frame interval).

    Qwen2.5-Omni's processor ignores that metadata: it spaces a video's temporal patches by the
    ``fps`` of its own kwargs (``processing_qwen2_5_omni.py``, default 2 fps, i.e. frames 0.5 s
    apart), which the request sets through ``mm_processor_kwargs.fps``: the frames' mean rate
    (frames less one over their span; its positions are evenly spaced, so the span is right and
    the gap of dropped frames is spread). Measured on vLLM 0.32 with a tiny random Qwen2.5-Omni on
    CPU: ``mm_processor_kwargs.fps`` changes the reply's log-probabilities, ``media_io_kwargs``
    alone does not, and sending neither equals ``fps=2``.

    Frames of unknown times (an item given as a frame list) send nothing: the server's defaults
    apply. One video per request (vLLM's kwargs are per modality). vLLM 0.32 takes per-request
    ``media_io_kwargs`` / ``mm_processor_kwargs`` only from a server started with
    ``--trust-request-mm-kwargs`` and refuses them otherwise (HTTP 400: :class:`TimingRefused`
    stops the run)."""
    if not times or any(t is None for t in times):
        return {}
    gaps = [b - a for a, b in zip(times, times[1:])]
    if any(gap <= 0 for gap in gaps):
        raise ValueError(f"video frame times {list(times)} s are not increasing")
    step = min(gaps) if gaps else 1.0
    positions = [t / step for t in times] if gaps else [0.0]
    if any(abs(p - round(p)) > 1e-3 for p in positions):
        raise ValueError(
            f"video frame times {list(times)} s are not on one grid, which vLLM's frames_indices "
            "need; send them with frames_as=images"
        )
    indices = [int(round(p)) for p in positions]
    mean_rate = (len(times) - 1) / (times[-1] - times[0]) if gaps else 1.0 / step
    return {
        "media_io_kwargs": {
            "video": {
                "fps": 1.0 / step,
                "frames_indices": indices,
                "total_num_frames": indices[-1] + 1,
                "duration": (indices[-1] + 1) * step,
            }
        },
        "mm_processor_kwargs": {"fps": mean_rate},
    }


def chat_request(
    messages: list[dict],
    *,
    image_encoding: str = DEFAULT_IMAGE_ENCODING,
    frames_as: str = "images",
    audio_part: str = "input_audio",
    uuids: bool = False,
) -> WireRequest:
    """lmms-eval chat messages (text, PIL images, ``{"array", "sampling_rate"}`` audio) as
    chat-completions messages with the part types described in the module doc, the extra body
    fields of the request (:func:`video_timing` of its video; ``{}`` without one) and the media
    parts' keys (:func:`media_uuid`), sent as each part's ``uuid`` when ``uuids`` is on."""
    out, timings, keys = [], [], []

    def keyed(part: dict, key: str) -> dict:
        keys.append(key)
        return {**part, UUID_FIELD: key} if uuids else part

    for message in messages:
        role, parts = message.get("role", "user"), message.get("content", [])
        if role == "system":
            out.append({"role": "system", "content": "\n".join(p["text"] for p in parts if p.get("type") == "text")})
            continue
        content: list[dict] = []
        for kind, item in wire_items(parts, frames_as):
            if kind == "video":
                encoded = [encode_image(p["url"], image_encoding)[0] for p in item]
                frames = ",".join(base64.b64encode(data).decode("ascii") for data in encoded)
                timing = video_timing([p[FRAME_TIME_KEY] for p in item])
                timings.append(timing)
                part = {"type": "video_url", "video_url": {"url": "data:video/jpeg;base64," + frames}}
                # the timing is part of the key: it changes what the processor makes of the frames
                settings = f"{image_encoding};{json.dumps(timing, sort_keys=True)}"
                content.append(keyed(part, media_uuid("video", settings, *encoded)))
            elif kind == "image":
                data, mime = encode_image(item["url"], image_encoding)
                part = {"type": "image_url", "image_url": {"url": _data_url(mime, data)}}
                content.append(keyed(part, media_uuid("image", f"{image_encoding};{mime}", data)))
            elif kind == "audio":
                wav = encode_wav(item["url"])
                part = (
                    {
                        "type": "input_audio",
                        "input_audio": {"data": base64.b64encode(wav).decode("ascii"), "format": "wav"},
                    }
                    if audio_part == "input_audio"
                    else {"type": "audio_url", "audio_url": {"url": _data_url("audio/wav", wav)}}
                )
                content.append(keyed(part, media_uuid("audio", "wav;pcm16", wav)))
            else:
                content.append({"type": "text", "text": item["text"]})
        out.append({"role": role, "content": content})
    if len(timings) > 1:
        raise ValueError(f"{len(timings)} videos in one request: vLLM takes one timing per request")
    return WireRequest(out, timings[0] if timings else {}, keys)


#: vLLM's multimodal cache counters on its ``/metrics`` page (``vllm/v1/metrics/loggers.py``;
#: Prometheus adds ``_total`` to a counter's name): items looked up, items found.
MM_CACHE_METRICS = {"queries": "vllm:mm_cache_queries_total", "hits": "vllm:mm_cache_hits_total"}
_METRIC_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+([0-9.eE+-]+)")


def mm_cache_counters(base_url: str, timeout: float = 5.0) -> dict[str, float] | None:
    """The multimodal cache counters (:data:`MM_CACHE_METRICS`) a server's ``/metrics`` shows
    now, summed over its label sets (engines); None where the page or the counters are not
    there (not vLLM, an older vLLM, metrics off): then the run says nothing of the server's cache."""
    root = re.sub(r"/v1/?$", "", base_url.rstrip("/"))
    request = urllib.request.Request(root + "/metrics", headers={"Authorization": f"Bearer {api_key()}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            text = reply.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError):
        return None
    found: dict[str, float] = {}
    names = {metric: name for name, metric in MM_CACHE_METRICS.items()}
    for line in text.splitlines():
        match = _METRIC_LINE.match(line)
        if match and match.group(1) in names:
            name = names[match.group(1)]
            found[name] = found.get(name, 0.0) + float(match.group(2))
    return found if set(found) == set(MM_CACHE_METRICS) else None


def _carries_uuids(messages: list[dict]) -> bool:
    return any(UUID_FIELD in part for m in messages if isinstance(m.get("content"), list) for part in m["content"])


def parse_completion(completion: Any) -> Answer:
    """The :class:`Answer` of a chat completion: its text, or ``refusal`` / ``empty``."""
    usage = getattr(completion, "usage", None)
    tokens = {
        "input_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
        "output_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
    }
    choices = getattr(completion, "choices", None) or []
    if not choices:
        return Answer("", "empty", "no choices", **tokens)
    message, finish = choices[0].message, str(choices[0].finish_reason or "")
    text = message.content or ""
    if not text.strip() and (getattr(message, "refusal", None) or finish == "content_filter"):
        return Answer("", "refusal", f"refusal: {(message.refusal or finish)[:200]}", **tokens)
    if not text.strip():
        return Answer("", "empty", f"finish_reason {finish or 'unknown'}", **tokens)
    return Answer(text, **tokens)


class OpenAIChatClient(RequestLifecycle):
    """One model behind one or more OpenAI-compatible endpoints (``base_urls``)."""

    def __init__(
        self,
        base_urls: list[str],
        model: str | None = None,
        *,
        max_retries: int = 4,
        timeout: float = 300.0,
        initial_backoff: float = 1.0,
        max_backoff: float = 60.0,
        store: Any = None,
        first_endpoint: int = 0,
    ) -> None:
        import openai

        super().__init__(max_retries=max_retries, initial_backoff=initial_backoff, max_backoff=max_backoff, store=store)
        if not base_urls:
            raise ValueError("sceval_openai: base_url names no endpoint")
        self.base_urls = list(base_urls)
        self._clients = [
            openai.OpenAI(base_url=url, api_key=api_key(), timeout=float(timeout), max_retries=0)
            for url in self.base_urls
        ]
        self._in_flight = [0] * len(self._clients)
        self._turn = itertools.count(first_endpoint)  # data-parallel ranks start on different replicas
        self._lock = threading.Lock()
        self._sent_parts: set[str] = set()  # the media part keys this client has sent
        # every endpoint answers before anything is built or sent; the first one's model by default
        served = [served_models(url, "sceval_openai base_url") for url in self.base_urls]
        self.model = model or served[0][0]  # vLLM serves one model per process

    def _pick(self) -> int:
        with self._lock:
            turn = next(self._turn)
            n = len(self._clients)
            index = min(range(n), key=lambda i: (self._in_flight[i], (i - turn) % n))
            self._in_flight[index] += 1
            return index

    def note_sent_parts(self, part_keys: list[str]) -> None:
        """Count a request's media parts as sent, and those whose key an earlier request of
        this client sent (what a server's multimodal cache can answer without encoding)."""
        with self._lock:
            repeated = sum(key in self._sent_parts for key in part_keys)
            self._sent_parts.update(part_keys)
        self.count_media_parts(len(part_keys), repeated)

    def mm_cache_counters(self) -> dict[str, float] | None:
        """The multimodal cache counters of all endpoints together (:func:`mm_cache_counters`);
        None unless every endpoint shows them."""
        each = [mm_cache_counters(url) for url in self.base_urls]
        if any(counters is None for counters in each):
            return None
        return {name: sum(c[name] for c in each if c) for name in MM_CACHE_METRICS}

    def chat(
        self,
        messages: list[dict],
        *,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        json_mode: bool = False,
        extra: dict | None = None,
        body: dict | None = None,
        store_key: str | None = None,
        row_id: str | None = None,
        part_keys: list[str] | None = None,
    ) -> Reply:
        """One chat completion of already-encoded ``messages`` and the extra body fields the
        ``openai`` client has no parameter for (both from :func:`chat_request`); the task of
        ``row_id`` (an lmms-eval doc's) is told its latency, retries and failure category.
        ``part_keys`` (the request's media part keys) are counted when it is first sent (not
        when the reply store answers it)."""
        import openai

        options: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens, **(extra or {})}
        if body:
            options["extra_body"] = body
        if json_mode:
            options["response_format"] = {"type": "json_object"}

        uuids = _carries_uuids(messages)
        first = True

        def attempt() -> Answer:
            nonlocal first
            if first and part_keys is not None:  # counted once, however many attempts it takes
                self.note_sent_parts(part_keys)
            first = False
            index = self._pick()
            try:
                completion = self._clients[index].chat.completions.create(
                    model=self.model, messages=messages, **options
                )
            except openai.APIStatusError as exc:
                if exc.status_code == 400 and TRUST_FLAG in str(exc.message or ""):
                    raise TimingRefused(
                        f"sceval_openai: {self.base_urls[index]} refuses the per-request video timing that "
                        f"frames_as=video sends ({str(exc.message)[:400]}). Start vLLM with {TRUST_FLAG}, or run "
                        "with frames_as=images (each frame an image, its time stated in the prompt)"
                    ) from exc
                if exc.status_code in (400, 422) and uuids and UUID_FIELD in str(exc.message or "").lower():
                    raise UuidsRefused(
                        f"sceval_openai: {self.base_urls[index]} refuses the media parts' {UUID_FIELD!r} field "
                        f"(the multimodal cache keys; {str(exc.message)[:300]}). Run with media_uuids=off, "
                        "or serve the model with a vLLM that takes it (0.32 does; docs/tutorials/served-model.md)"
                    ) from exc
                detail = f"HTTP {exc.status_code} from {self.base_urls[index]}: {str(exc.message or '')[:200]}"
                raise (RetryableError if exc.status_code in RETRYABLE_STATUS else FatalError)(detail) from exc
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                raise RetryableError(f"{type(exc).__name__} from {self.base_urls[index]}: {str(exc)[:200]}") from exc
            finally:
                with self._lock:
                    self._in_flight[index] -= 1
            return parse_completion(completion)

        return self.send(attempt, store_key, row_id)
