"""What the model layer knows about each request, handed to the task's ``process_results``.

lmms-eval passes only the reply text from a model to a task. Models of ours (and adapters over
lmms-eval's) call :func:`record` with the row id of the doc they answered; the task then puts
latency, retry count and a failure category (``api_failure``, ``refusal``, ``empty``) into the
per-sample record. Thread-safe: lmms-eval runs ``process_results`` in a thread pool.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["Call", "record", "take", "RUN_CONTEXT"]

_lock = threading.Lock()
_calls: dict[str, Call] = {}


@dataclass(frozen=True)
class Call:
    latency_s: float | None = None
    retries: int = 0
    failure: str | None = None  # a category from sceval_plugin.parsing.INVALID_CATEGORIES
    detail: str = ""


def record(row_id: str, call: Call) -> None:
    with _lock:
        _calls[row_id] = call


def take(row_id: str) -> Call | None:
    with _lock:
        return _calls.pop(row_id, None)


#: Filled when lmms-eval builds its TaskManager (see faultline_eval.model_wrappers.lmms_plugin).
RUN_CONTEXT: dict[str, str | None] = {"model": None}
