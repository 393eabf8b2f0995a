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
