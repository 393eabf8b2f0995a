"""An append-only store of finished model replies, so a killed run resumes without re-sending.

One JSON line per finished request, flushed as soon as it is written: a run killed at any point
keeps every reply it had received. On restart a model wrapper returns stored replies for the
requests it has already answered and sends only the rest. Keys cover the model, the dataset
fingerprint, the row (condition, sample, variant) and the exact prompt, so a changed prompt or
dataset is sent again. API failures are not stored: a resumed run retries them.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any

#: ``store=`` values that turn a model's reply store off.
OFF = ("none", "off", "false", "")
#: The failure detail of a record whose reply came from the store, not from the model.
RESTORED_DETAIL = "restored from the reply store"


def slug(text: Any) -> str:
    """``text`` made safe as a file name (model ids, checkpoint paths, judge ids)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("._") or "model"


def open_store(setting: str | None, default_name: str, who: str, resumed: str) -> "ReplyStore | None":
    """A model's reply store: ``setting`` is the ``store=`` model argument (a file, or one of
    :data:`OFF`); by default ``$SCEVAL_CACHE/replies/<default_name>.jsonl``. Logs how many
    finished replies a resumed run found, and what happens to them (``resumed``)."""
    from loguru import logger

    from sceval_plugin.data.sources import cache_dir

    if setting is not None and str(setting).strip().lower() in OFF:
        return None
    path = setting or cache_dir() / "replies" / f"{default_name}.jsonl"
    opened = ReplyStore(path)
    if len(opened):
        logger.info(f"{who}: {len(opened)} finished replies in {path}; {resumed}")
    return opened


def restored_call(entry: dict):
    """What the task is told about a request answered from the store: the stored latency, retry
    count and failure category, marked :data:`RESTORED_DETAIL`."""
    from sceval_plugin.telemetry import Call

    return Call(latency_s=entry.get("latency_s"), retries=entry.get("retries", 0), failure=entry.get("failure"),
                detail=RESTORED_DETAIL)


def request_key(*parts: Any) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).hexdigest()


class ReplyStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._entries: dict[str, dict] = {}
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                    self._entries[entry["key"]] = entry
                except (json.JSONDecodeError, KeyError, TypeError):  # a line cut short by a kill: sent again
                    continue
        self._file = self.path.open("a", encoding="utf-8")

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> dict | None:
        with self._lock:
            return self._entries.get(key)

    def entries(self) -> list[dict]:
        """Every stored entry, the last one written for each key, in the order keys first appeared."""
        with self._lock:
            return list(self._entries.values())

    def put(self, key: str, **entry: Any) -> None:
        record = {"key": key, **entry}
        with self._lock:
            self._entries[key] = record
            self._file.write(json.dumps(record) + "\n")
            self._file.flush()
