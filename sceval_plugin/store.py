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
import threading
from pathlib import Path
from typing import Any


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
                except json.JSONDecodeError:  # a line cut short by a kill: that request is sent again
                    continue
                self._entries[entry["key"]] = entry
        self._file = self.path.open("a", encoding="utf-8")

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> dict | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: str, **entry: Any) -> None:
        record = {"key": key, **entry}
        with self._lock:
            self._entries[key] = record
            self._file.write(json.dumps(record) + "\n")
            self._file.flush()
