"""A local HTTP server speaking the Gemini ``generateContent`` REST shape, with scripted failures.

The scenario of a request is named in its question text as ``[[scenario]]``:
ok, 429-then-ok, 500, timeout, blocked, safety-stop, malformed, empty, slow.

Or every request is scripted: ``script(request)`` gets ``{"texts", "body", "model", "attempt"}``
(``attempt``: how often this exact text was sent, from 1) and returns the reply text (a str), or
``{"status": 500}`` for an HTTP error, or ``{"payload": {...}}`` for a raw response body.
``latency`` seconds are slept before every reply (the benchmark's server).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler

from local_server import LocalServer, send_json

PATH = re.compile(r"/models/(?P<model>[^:/]+):generateContent$")


def _answer(text: str, finish: str = "STOP") -> dict:
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish, "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5},
    }


class FakeGemini(LocalServer):
    def __init__(self, timeout_sleep: float = 3.0, reply_text=None, script=None, latency: float = 0.0) -> None:
        """``reply_text(texts) -> str``, if given, writes the text of every "ok" answer."""
        self.requests: list[dict] = []
        self.attempts: Counter = Counter()
        self.timeout_sleep = timeout_sleep
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                match = PATH.search(self.path.split("?")[0])
                texts = [p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", [])]
                scenario = next((m.group(1) for t in texts for m in [re.search(r"\[\[([a-z0-9-]+)\]\]", t)] if m), "ok")
                with lock:
                    server.requests.append(
                        {
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body,
                            "scenario": scenario,
                            "model": match and match.group("model"),
                            "texts": texts,
                        }
                    )
                    seen = scenario + "|" + (texts[-1] if script is not None else texts[-1][:200])
                    server.attempts[seen] += 1
                    attempt = server.attempts[seen]
                status, payload = 200, None
                if latency:
                    time.sleep(latency)
                if script is not None:
                    scripted = script(
                        {"texts": texts, "body": body, "model": match and match.group("model"), "attempt": attempt}
                    )
                    if isinstance(scripted, str):
                        payload = _answer(scripted)
                    elif "status" in scripted:
                        status = scripted["status"]
                        payload = {"error": {"code": status, "message": "scripted failure", "status": "INTERNAL"}}
                    else:
                        payload = scripted["payload"]
                elif scenario == "429-then-ok" and attempt == 1:
                    status, payload = (
                        429,
                        {"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}},
                    )
                elif scenario == "500":
                    status, payload = 500, {"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}}
                elif scenario == "timeout":
                    time.sleep(server.timeout_sleep)
                    payload = _answer('{"answer": "A"}')
                elif scenario == "blocked":
                    payload = {"promptFeedback": {"blockReason": "SAFETY"}}
                elif scenario == "safety-stop":
                    payload = {"candidates": [{"finishReason": "SAFETY", "index": 0}]}
                elif scenario == "malformed":
                    payload = _answer("{answer: 'B'")
                elif scenario == "empty":
                    payload = _answer("")
                elif scenario == "slow":
                    time.sleep(0.4)
                    payload = _answer('{"answer": "A", "confidence": "high", "reasoning": "slow"}')
                elif reply_text is not None:
                    payload = _answer(reply_text(texts))
                else:
                    payload = _answer('{"answer": "A", "confidence": "high", "reasoning": "scripted"}')
                send_json(self, status, payload)

        lock = threading.Lock()
        self._listen(Handler)
