"""A threaded HTTP server on 127.0.0.1 (a free port) as a context manager: the base of the fake APIs."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer


class LocalServer:
    def _listen(self, handler: type, path: str = "") -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def send_json(handler, status: int, payload) -> None:
    """Answer ``handler``'s request with ``payload`` (a JSON-able object or encoded bytes); a client
    that already hung up (a timeout test) is not an error of the server's."""
    import json

    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
