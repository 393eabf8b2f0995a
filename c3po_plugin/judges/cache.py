"""Judge verdicts cached on disk, keyed by (judge id, prompt version, question, gold answer,
normalised prediction), so re-running a task or re-grading a run never asks twice.

The file is append-only JSONL, flushed per verdict; a line cut short by a killed process is
skipped on load. Failed verdicts (judge errors) are never stored, so they are retried.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

from c3po_plugin.grading import normalize
from c3po_plugin.judges.base import JudgeRequest, Verdict


def verdict_key(judge_id: str, prompt_version: str, request: JudgeRequest) -> str:
    payload = json.dumps([judge_id, prompt_version, request.question, request.gold, normalize(request.prediction)])
    return hashlib.sha256(payload.encode()).hexdigest()


class VerdictCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._verdicts: dict[str, dict] = {}
        if self.path.is_file():
            for line in self.path.read_text().splitlines():
                try:
                    row = json.loads(line)
                    self._verdicts[row["key"]] = row
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue

    def __len__(self) -> int:
        return len(self._verdicts)

    def get(self, key: str) -> Verdict | None:
        row = self._verdicts.get(key)
        if row is None:
            return None
        return Verdict(row["value"], row["judge_id"], raw=row.get("raw", ""), cached=True)

    def put(self, key: str, verdict: Verdict) -> None:
        if verdict.value is None:
            return
        row = {"key": key, "value": verdict.value, "judge_id": verdict.judge_id, "raw": verdict.raw}
        with self._lock:
            self._verdicts[key] = row
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as f:
                f.write(json.dumps(row) + "\n")
                f.flush()
