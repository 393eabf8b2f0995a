"""Judge verdicts cached on disk, keyed by everything the judge sees: judge id (backend, model
and verdict-changing settings), prompt version, question, gold answer, normalised prediction, the
sample description (template logic, text evidence), for a judge that sees media the SHA-256 of
each media file and, on the graded scale, the scale and its prompt version. Re-running a task or re-grading a run never asks twice, and two
requests that differ in any of these never share a verdict.

It is the project's reply store (:class:`faultline_eval.core.store.ReplyStore`: append-only JSONL,
checksummed lines, a torn last line cut off before the next append, a file lock per append)
holding verdicts.
Failed verdicts (judge errors) are never stored, so they are retried.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from faultline_eval.core.identity import media_digest
from faultline_eval.core.store import ReplyStore
from faultline_eval.judges.base import MEDIA_KINDS, Judge, JudgeRequest, Verdict
from faultline_eval.judges.judge_prompt import prompt_version
from faultline_eval.judges.matching import normalize


def media_fingerprints(request: JudgeRequest) -> dict[str, str]:
    """``{kind: sha256}`` of the sample's media files (empty when the request carries no item),
    cached as the dataset fingerprints' (:func:`faultline_eval.core.identity.media_digest`)."""
    out = {}
    for kind in MEDIA_KINDS:
        path = request.item.media_path(kind) if request.item is not None else None
        if path:
            out[kind] = media_digest(path)
    return out


def verdict_key(judge: Judge, request: JudgeRequest) -> str:
    """The cache key of one request to ``judge`` (see the module docstring)."""
    media = media_fingerprints(request) if getattr(judge, "sees_media", False) else {}
    parts = [
        judge.judge_id,
        judge.prompt_version,
        request.question,
        request.gold,
        normalize(request.prediction),
        request.context,
        sorted(media.items()),
    ]
    if request.scale != "equivalence":  # graded verdicts never answer an equivalence request (keys of old caches kept)
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
