"""How many image/audio/video tokens reached a local model, per request (optional).

With ``FAULTLINE_MEDIA_TOKEN_LOG=<file.jsonl>`` every request a local model generates for gets
one line: model, task, doc and row id, the media items it was sent and the placeholder tokens
the model received (counted by :class:`MediaTokenCounter` in the ``input_ids`` of the model's
first forward call), and its failure category. Lines are appended through the project's journal
(:class:`faultline_eval.core.store.Journal`). Requests answered from the reply store are not in it.
"""

from __future__ import annotations

import threading
from typing import Any

from faultline_eval.core.settings import FAULTLINE_MEDIA_TOKEN_LOG
from faultline_eval.core.store import Journal

MEDIA_TOKEN_LOG_ENV = FAULTLINE_MEDIA_TOKEN_LOG.name
_log_lock = threading.Lock()
_token_logs: dict[str, Journal] = {}


def token_log(path: str) -> Journal:
    """The media token log at ``path``: one journal per process, so threads and data-parallel
    ranks appending to one file never interleave partial lines."""
    with _log_lock:
        if path not in _token_logs:
            _token_logs[path] = Journal(path)
        return _token_logs[path]


def log_media_tokens(line: dict) -> None:
    """Append ``line`` to the media token log, when ``$FAULTLINE_MEDIA_TOKEN_LOG`` names one."""
    path = FAULTLINE_MEDIA_TOKEN_LOG.raw()
    if path:
        token_log(path).append(line)


class MediaTokenCounter:
    """Counts, per request, the image/audio/video placeholder ids in the ``input_ids`` of the
    model's first forward call (the prefill), i.e. what the model itself received; one count per
    row of a batch (padding holds no placeholders)."""

    def __init__(self, module: Any, token_ids: dict[str, int]) -> None:
        self.token_ids = {name: int(i) for name, i in token_ids.items() if i is not None}
        self.rows: list[dict[str, int]] | None = None
        module.register_forward_pre_hook(self._hook, with_kwargs=True)

    def reset(self) -> None:
        self.rows = None

    def _hook(self, module: Any, args: tuple, kwargs: dict) -> None:
        if self.rows is not None:
            return
        input_ids = kwargs.get("input_ids", args[0] if args else None)
        if input_ids is None:
            return
        ids = input_ids.reshape(-1, input_ids.shape[-1])
        self.rows = [{name: int((row == i).sum()) for name, i in self.token_ids.items()} for row in ids]
