"""A local HTTP server speaking OpenAI's chat-completions REST shape, as vLLM serves it.

``mode="hears"``: every "ok" reply is a JSON answer that depends on the whole request, the audio
included (its option letter and its ``heard`` digest come from a hash of the text, image and
audio parts). ``mode="drops_audio"``: the server ignores the audio, as a backend with no audio
path does: the reply depends on the text and images only.

The scenario of a request is named in its text as ``[[scenario]]``: ok, 429-then-ok, 500,
refusal, empty, slow. ``latency`` seconds are slept before every reply. ``/v1/models`` lists
``served``. ``parse=False`` (benchmarks) skips decoding the body and answers every request
with the same reply. ``fail_status`` (e.g. 400, as vLLM answers a request it cannot take)
answers every chat request with that HTTP error. ``tag_replies`` adds the request's digest
(``request_digest``: sha256 of its JSON body) to each "ok" reply's reasoning, so a stored reply
names the request it answers; ``answered`` counts the "ok" replies per request digest.
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


def _completion(text: str = "", finish: str = "stop", refusal: str | None = None) -> dict:
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": text or None, "refusal": refusal}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


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
    def __init__(self, mode: str = "hears", latency: float = 0.0, served: str = "fake-omni",
                 parse: bool = True, fail_status: int | None = None, tag_replies: bool = False) -> None:
        assert mode in ("hears", "drops_audio")
        self.requests: list[dict] = []
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

            def do_GET(self):  # noqa: N802
                self._reply(200, {"object": "list", "data": [{"id": served, "object": "model"}]})

            def do_POST(self):  # noqa: N802
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                if latency:
                    time.sleep(latency)
                if not parse:
                    with lock:
                        server.requests.append({"bytes": len(raw)})
                    return self._reply(200, fixed)
                if fail_status is not None:
                    with lock:
                        server.requests.append({"bytes": len(raw), "status": fail_status})
                    return self._reply(fail_status, {"error": {"message": f"fake error {fail_status}: this server "
                                                               "takes no request", "type": "BadRequestError",
                                                               "code": fail_status}})
                body = json.loads(raw)
                texts, images, audio = [], [], []
                for message in body.get("messages", []):
                    t, i, a = _media(message.get("content", ""))
                    texts += t
                    images += i
                    audio += a
                scenario = next((m.group(1) for t in texts for m in [re.search(r"\[\[([a-z0-9-]+)\]\]", t)] if m), "ok")
                with lock:
                    server.requests.append({"body": body, "texts": texts, "images": images, "audio": audio,
                                            "scenario": scenario, "bytes": len(raw),
                                            "headers": {k.lower(): v for k, v in self.headers.items()}})
                    seen = scenario + "|" + texts[-1][:200]
                    server.attempts[seen] += 1
                    attempt = server.attempts[seen]
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
                return self._reply(200, _completion(json.dumps(
                    {"answer": letter, "confidence": "high", "reasoning": reasoning})))

        self._listen(Handler, "/v1")
