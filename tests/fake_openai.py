"""A local HTTP server speaking OpenAI's chat-completions REST shape, as vLLM serves it.

``mode="hears"``: every "ok" reply is a JSON answer that depends on the whole request, the audio
included (its option letter and its ``heard`` digest come from a hash of the text, image and
audio parts). ``mode="drops_audio"``: the server ignores the audio, as a backend with no audio
path does: the reply depends on the text and images only.

The scenario of a request is named in its text as ``[[scenario]]``: ok, 429-then-ok, 500,
refusal, empty, slow. ``latency`` seconds are slept before every reply. ``/v1/models`` lists
``served``; any other GET is 404, as vLLM answers. ``on_request()``, if given, is called as each
chat request arrives (a test changes the world mid-run). ``parse=False`` (benchmarks) skips decoding the body and answers every request
with the same reply. ``fail_status`` (e.g. 400, as vLLM answers a request it cannot take)
answers every chat request with that HTTP error. ``tag_replies`` adds the request's digest
(``request_digest``: sha256 of its JSON body) to each "ok" reply's reasoning, so a stored reply
names the request it answers; ``answered`` counts the "ok" replies per request digest.

As vLLM does, the server answers HTTP 400 to a request with more media items of a modality than
``limits`` allows (``--limit-mm-per-prompt``; a modality it does not name allows 999,
``vllm/config/multimodal.py``), and to a ``data:video/jpeg`` video whose timing in
``media_io_kwargs.video`` does not fit its frames (``frames_indices`` a list of integers, one per
frame, ``total_num_frames`` no fewer than the frames, as ``VideoMediaIO.load_base64`` checks);
per-request ``media_io_kwargs`` / ``mm_processor_kwargs`` only with ``trust_mm_kwargs`` (vLLM's
``--trust-request-mm-kwargs``, off by default).
Each request records its ``counts`` per modality, its videos' frame counts and its media
parts' ``uuids`` (None for a part without one). ``rejects_uuids``: HTTP 400 to a request whose
media parts carry a ``uuid``, as a server whose schema has no such field answers. ``metrics``:
``GET /metrics`` shows vLLM's multimodal cache counters (``vllm:mm_cache_queries_total`` /
``vllm:mm_cache_hits_total``), counting a part with a ``uuid`` seen before as a hit.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler

from local_server import LocalServer, send_json

#: The token usage the fake reports on every answered request.
USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _completion(text: str = "", finish: str = "stop", refusal: str | None = None) -> dict:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "finish_reason": finish,
                "message": {"role": "assistant", "content": text or None, "refusal": refusal},
            }
        ],
        "usage": dict(USAGE),
    }


def _modality(kind: str) -> str | None:
    return {"image_url": "image", "video_url": "video", "input_audio": "audio", "audio_url": "audio"}.get(kind)


def _parts(body: dict) -> list[dict]:
    return [p for m in body.get("messages", []) if isinstance(m.get("content"), list) for p in m["content"]]


def _counts(parts: list[dict]) -> Counter:
    return Counter(_modality(p.get("type")) for p in parts if _modality(p.get("type")))


def _frames(video_part: dict) -> int:
    return len(video_part["video_url"]["url"].split(",", 1)[1].split(","))


def _rejection(body: dict, limits: dict, trust_mm_kwargs: bool) -> str | None:
    """Why vLLM would refuse this request (None: it would not)."""
    for field in ("mm_processor_kwargs", "media_io_kwargs"):
        if body.get(field) and not trust_mm_kwargs:
            return (
                f"Per-request {field} are disabled by default because they can change multimodal "
                "preprocessing resource usage. Start the server with --trust-request-mm-kwargs only when "
                "clients are trusted."
            )
    parts = _parts(body)
    for modality, count in _counts(parts).items():
        if count > limits.get(modality, 999):
            return f"At most {limits.get(modality, 999)} {modality}(s) may be provided in one prompt."
    timing = (body.get("media_io_kwargs") or {}).get("video") or {}
    for part in parts:
        if part.get("type") == "video_url" and part["video_url"]["url"].startswith("data:video/jpeg;base64,"):
            frames = _frames(part)
            indices = timing.get("frames_indices")
            if indices is not None and not (isinstance(indices, list) and all(isinstance(i, int) for i in indices)):
                return "frames_indices must be a list of integers"
            if indices is not None and len(indices) != frames:
                return f"frames_indices length ({len(indices)}) must match number of frames sent ({frames})"
            total = timing.get("total_num_frames", frames)
            if not isinstance(total, int) or total < frames:
                return f"total_num_frames ({total}) must be >= number of frames sent ({frames})"
    return None


def _media(content) -> tuple[list[str], list[str], list[str]]:
    """(texts, images/videos, audio) payloads of one message's content."""
    if isinstance(content, str):
        return [content], [], []
    texts, images, audio = [], [], []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            texts.append(part["text"])
        elif kind in ("image_url", "video_url"):
            images.append(part[kind]["url"])
        elif kind == "input_audio":
            audio.append(part["input_audio"]["data"])
        elif kind == "audio_url":
            audio.append(part["audio_url"]["url"].split(",", 1)[1])
    return texts, images, audio


def request_digest(body: dict) -> str:
    """A request's identity: sha256 (16 hex digits) of its JSON body, keys sorted."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


class FakeOpenAI(LocalServer):
    def __init__(
        self,
        mode: str = "hears",
        latency: float = 0.0,
        served: str = "fake-omni",
        parse: bool = True,
        fail_status: int | None = None,
        tag_replies: bool = False,
        limits: dict | None = None,
        trust_mm_kwargs: bool = False,
        on_request=None,
        rejects_uuids: bool = False,
        metrics: bool = False,
    ) -> None:
        assert mode in ("hears", "drops_audio")
        self.requests: list[dict] = []
        self.cache = Counter()  # queries, hits: what /metrics shows
        cached: set[str] = set()
        self.attempts: Counter = Counter()
        self.answered: Counter = Counter()
        server = self
        lock = threading.Lock()
        fixed = json.dumps(_completion('{"answer": "A", "confidence": "high", "reasoning": "fixed"}')).encode()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as vLLM's server

            def log_message(self, *args):  # quiet
                pass

            def _reply(self, status: int, payload: dict | bytes) -> None:
                send_json(self, status, payload)

            def do_GET(self):
                if metrics and self.path.rstrip("/") == "/metrics":
                    text = "".join(
                        f'# TYPE vllm:mm_cache_{name}_total counter\nvllm:mm_cache_{name}_total{{engine="0"}} '
                        f"{float(server.cache[name])}\n"
                        for name in ("queries", "hits")
                    ).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(text)))
                    self.end_headers()
                    self.wfile.write(text)
                    return
                if self.path.split("?")[0].rstrip("/") != "/v1/models":
                    return self._reply(404, {"detail": "Not Found"})
                self._reply(200, {"object": "list", "data": [{"id": served, "object": "model"}]})

            def do_POST(self):
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                if on_request is not None:
                    on_request()
                if latency:
                    time.sleep(latency)
                if not parse:
                    with lock:
                        server.requests.append({"bytes": len(raw)})
                    return self._reply(200, fixed)
                if fail_status is not None:
                    with lock:
                        server.requests.append({"bytes": len(raw), "status": fail_status})
                    return self._reply(
                        fail_status,
                        {
                            "error": {
                                "message": f"fake error {fail_status}: this server takes no request",
                                "type": "BadRequestError",
                                "code": fail_status,
                            }
                        },
                    )
                body = json.loads(raw)
                texts, images, audio = [], [], []
                for message in body.get("messages", []):
                    t, i, a = _media(message.get("content", ""))
                    texts += t
                    images += i
                    audio += a
                scenario = next((m.group(1) for t in texts for m in [re.search(r"\[\[([a-z0-9-]+)\]\]", t)] if m), "ok")
                parts = _parts(body)
                counts = _counts(parts)
                video_frames = [_frames(p) for p in parts if p.get("type") == "video_url"]
                uuids = [p.get("uuid") for p in parts if _modality(p.get("type"))]
                if rejects_uuids and any(uuids):
                    with lock:
                        server.requests.append({"bytes": len(raw), "status": 400})
                    return self._reply(
                        400,
                        {
                            "error": {
                                "message": "Invalid 'messages[1].content[0]': additional properties are not "
                                "allowed ('uuid' was unexpected)",
                                "type": "invalid_request_error",
                                "code": 400,
                            }
                        },
                    )
                with lock:
                    server.requests.append(
                        {
                            "body": body,
                            "texts": texts,
                            "images": images,
                            "audio": audio,
                            "scenario": scenario,
                            "bytes": len(raw),
                            "counts": dict(counts),
                            "video_frames": video_frames,
                            "uuids": uuids,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                        }
                    )
                    for key in uuids:
                        server.cache["queries"] += 1
                        if key:
                            server.cache["hits"] += key in cached
                            cached.add(key)
                    seen = scenario + "|" + texts[-1][:200]
                    server.attempts[seen] += 1
                    attempt = server.attempts[seen]
                refused = _rejection(body, limits or {}, trust_mm_kwargs)
                if refused:
                    return self._reply(
                        400, {"object": "error", "message": refused, "type": "BadRequestError", "code": 400}
                    )
                if scenario == "429-then-ok" and attempt == 1:
                    return self._reply(429, {"error": {"message": "rate limited", "type": "rate_limit", "code": 429}})
                if scenario == "500":
                    return self._reply(500, {"error": {"message": "internal error", "type": "server", "code": 500}})
                if scenario == "refusal":
                    return self._reply(200, _completion(refusal="I can't help with that."))
                if scenario == "empty":
                    return self._reply(200, _completion(""))
                if scenario == "slow":
                    time.sleep(0.4)
                heard = audio if mode == "hears" else []
                seen_digest = hashlib.sha256("\x1f".join(texts + images).encode()).hexdigest()
                audio_digest = hashlib.sha256("\x1f".join(heard).encode()).hexdigest()[:12] if heard else "nothing"
                letter = "ABCD"[int(hashlib.sha256((seen_digest + audio_digest).encode()).hexdigest(), 16) % 4]
                reasoning = f"heard {audio_digest}"
                if tag_replies:
                    digest = request_digest(body)
                    reasoning += f"; request {digest}"
                    with lock:
                        server.answered[digest] += 1
                return self._reply(
                    200, _completion(json.dumps({"answer": letter, "confidence": "high", "reasoning": reasoning}))
                )

        self._listen(Handler, "/v1")
