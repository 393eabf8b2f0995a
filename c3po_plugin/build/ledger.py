"""The JSONL ledger each build stage appends to: one entry per (stage, key), resumable after a kill.

A ledger is the project's reply store (:class:`sceval_plugin.store.ReplyStore`) under
``<build dir>/ledger/<stage>.jsonl``; an entry is ``{"key", "status", "reason", "data"}``:

- ``ok``: the stage produced ``data`` for this key; later stages read it.
- ``rejected``: final — the content failed a rule, the fit threshold or the audit; ``reason`` says
  which. A resumed run does not try it again.
- ``failed``: something outside the content went wrong (API failure, missing file, synthesis
  error); ``reason`` says what. A resumed run tries it again.

The last entry written for a key wins, so a retried ``failed`` key that succeeds becomes ``ok``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from sceval_plugin.store import ReplyStore

STATUSES = ("ok", "rejected", "failed")


class Ledger:
    def __init__(self, build_dir: str | Path, stage: str) -> None:
        self.stage = stage
        self.path = Path(build_dir) / "ledger" / f"{stage}.jsonl"
        self._store = ReplyStore(self.path)

    def record(self, key: str, status: str, data: Any = None, reason: str | None = None) -> None:
        if status not in STATUSES:
            raise ValueError(f"ledger {self.stage}: status {status!r} is not one of {STATUSES}")
        if status != "ok" and not reason:
            raise ValueError(f"ledger {self.stage}: a {status} entry for {key!r} needs a reason")
        self._store.put(key, status=status, reason=reason, data=data)

    def get(self, key: str) -> dict | None:
        return self._store.get(key)

    def settled(self, key: str) -> bool:
        """True when a resumed run should skip ``key``: it is ``ok`` or ``rejected``."""
        entry = self._store.get(key)
        return entry is not None and entry["status"] in ("ok", "rejected")

    def entries(self, status: str | None = None) -> Iterator[dict]:
        for entry in self._store.entries():
            if status is None or entry["status"] == status:
                yield entry

    def ok(self) -> dict[str, Any]:
        """``{key: data}`` of every ``ok`` entry, in ledger order."""
        return {e["key"]: e["data"] for e in self.entries("ok")}

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for entry in self.entries():
            counts[entry["status"]] += 1
        return counts
