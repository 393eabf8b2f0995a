"""Judge verdicts cached on disk, keyed by everything the judge sees: judge id (backend, model
and verdict-changing settings), prompt version, question, gold answer, normalised prediction, the
sample description (template logic, text evidence), for a judge that sees media the SHA-256 of
each media file and, on the graded scale, the scale and its prompt version. Re-running a task or re-grading a run never asks twice, and two
requests that differ in any of these never share a verdict.

It is the project's reply store (:class:`sceval_plugin.store.ReplyStore`: append-only JSONL,
checksummed lines, a torn last line cut off before the next append, a file lock per append)
holding verdicts.
Failed verdicts (judge errors) are never stored, so they are retried.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

from c3po_plugin.grading import normalize
from c3po_plugin.judges.base import Judge, JudgeRequest, Verdict
from sceval_plugin.store import ReplyStore


@functools.lru_cache(maxsize=4096)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:  # size and mtime: a changed file is hashed again
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def media_fingerprints(request: JudgeRequest) -> dict[str, str]:
    """``{kind: sha256}`` of the sample's media files (empty when the request carries no item)."""
    from c3po_plugin.data.records import MEDIA_FIELDS

    out = {}
    for kind in MEDIA_FIELDS:
        path = request.item.media_path(kind) if request.item is not None else None
        if path:
            stat = os.stat(path)
            out[kind] = _file_digest(path, stat.st_size, stat.st_mtime_ns)
    return out


def verdict_key(judge: Judge, request: JudgeRequest) -> str:
    """The cache key of one request to ``judge`` (see the module docstring)."""
    media = media_fingerprints(request) if getattr(judge, "sees_media", False) else {}
    parts = [judge.judge_id, judge.prompt_version, request.question, request.gold,
             normalize(request.prediction), request.context, sorted(media.items())]
    if request.scale != "equivalence":  # graded verdicts never answer an equivalence request (keys of old caches kept)
        from c3po_plugin.judges.prompt import prompt_version

        parts.append(f"{request.scale}:{prompt_version(request.scale)}")
    payload = json.dumps(parts)
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
