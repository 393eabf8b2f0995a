"""Judge verdicts cached on disk, keyed by (judge id, prompt version, question, gold answer,
normalised prediction), so re-running a task or re-grading a run never asks twice.

It is SCEval's reply store (:class:`sceval_plugin.store.ReplyStore`: append-only JSONL,
flushed per entry, a line cut short by a killed process skipped on load) holding verdicts.
Failed verdicts (judge errors) are never stored, so they are retried.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from c3po_plugin.grading import normalize
from c3po_plugin.judges.base import JudgeRequest, Verdict
from sceval_plugin.store import ReplyStore


def verdict_key(judge_id: str, prompt_version: str, request: JudgeRequest) -> str:
    payload = json.dumps([judge_id, prompt_version, request.question, request.gold, normalize(request.prediction)])
    return hashlib.sha256(payload.encode()).hexdigest()


class VerdictCache:
    def __init__(self, path: str | Path) -> None:
        self._store = ReplyStore(path)
        self.path = self._store.path

    def __len__(self) -> int:
        return len(self._store)

    def get(self, key: str) -> Verdict | None:
        row = self._store.get(key)
        if row is None:
            return None
        return Verdict(row["value"], row["judge_id"], raw=row.get("raw", ""), cached=True)

    def put(self, key: str, verdict: Verdict) -> None:
        if verdict.value is not None:
            self._store.put(key, value=verdict.value, judge_id=verdict.judge_id, raw=verdict.raw)
