"""The JSONL ledger each build stage appends to, and the status machine every stage follows.

A ledger is the project's reply store (:class:`faultline_eval.core.store.ReplyStore`) under
``<build dir>/ledger/<stage>.jsonl``; an entry is ``{"key", "status", "reason", "data"}`` (and
``"origin"`` on a carried rejection). The status of a key at a stage is one of:

- ``ok``: the stage produced ``data`` for this key; later stages read it.
- ``rejected``: final — the content failed a rule, the fit threshold or the audit; ``reason`` says
  which. A resumed run does not try it again. A later stage that meets a rejected key records it
  ``rejected`` too (:meth:`Ledger.carry`), with ``origin`` the stage that decided and the reason
  ``"<what> rejected at <stage>: <reason>"`` (:func:`carried_reason`): never a failure, never
  retried, never "run stage X" advice for something stage X cannot change.
- ``failed``: something outside the content went wrong (API failure, missing file, synthesis
  error); ``reason`` says what. A resumed run tries it again. A later stage does not record a key
  whose upstream entry is failed or missing is *waiting* (:class:`Upstream`), counted as such
  and done by the run after the upstream stage has settled it.

The last entry written for a key wins, so a retried ``failed`` key that succeeds becomes ``ok``.
The file is a log (a kill, a retry or concurrency change its lines); what a ledger *holds* is
:meth:`Ledger.snapshot`, the last entry of every key in key order, which is a pure function of
the build's inputs. Stages walk keys in sorted order (:meth:`Ledger.ok` is sorted by key), so no
output depends on the order replies arrived in.

:func:`stage_report` / :func:`format_reports` turn ledgers into the end-of-run summary (items in,
ok, rejected by reason, failed by category with the first error text, waiting), and
:func:`failing_stages` decides the exit status of ``c3po build`` (``--max-failure-rate``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faultline_eval.core.run_status import DEFAULT_MAX_FAILURE_RATE, TaskOutcome
from faultline_eval.core.store import ReplyStore

STATUSES = ("ok", "rejected", "failed")
#: What each stage decides about, for carried rejection reasons ("audio typing rejected at classify: ...").
DECIDES = {
    "select": "selection",
    "generate": "generation",
    "classify": "audio typing",
    "synthesize": "synthesis",
    "audit": "audit",
    "sample": "sampling",
    "export": "export",
}


class Ledger:
    def __init__(self, build_dir: str | Path, stage: str) -> None:
        self.stage = stage
        self.path = Path(build_dir) / "ledger" / f"{stage}.jsonl"
        self._store = ReplyStore(self.path)

    def record(
        self, key: str, status: str, data: Any = None, reason: str | None = None, origin: str | None = None
    ) -> None:
        if status not in STATUSES:
            raise ValueError(f"ledger {self.stage}: status {status!r} is not one of {STATUSES}")
        if status != "ok" and not reason:
            raise ValueError(f"ledger {self.stage}: a {status} entry for {key!r} needs a reason")
        extra = {"origin": origin} if origin else {}
        self._store.put(key, status=status, reason=reason, data=data, **extra)

    def carry(self, key: str, upstream: Verdict) -> None:
        """Record ``key`` rejected here because an earlier stage rejected it (final, not retried)."""
        self.record(key, "rejected", reason=upstream.reason, origin=upstream.origin)

    def get(self, key: str) -> dict | None:
        return self._store.get(key)

    def settled(self, key: str) -> bool:
        """True when a resumed run should skip ``key``: it is ``ok`` or ``rejected``."""
        entry = self._store.get(key)
        return entry is not None and entry["status"] in ("ok", "rejected")

    def entries(self, status: str | None = None) -> Iterator[dict]:
        """The last entry of each key, in the order keys were first written (``select`` numbers
        its candidates by it); filter by ``status``."""
        for entry in self._store.entries():
            if status is None or entry["status"] == status:
                yield entry

    def ok(self) -> dict[str, Any]:
        """``{key: data}`` of every ``ok`` entry, sorted by key (the order every stage walks)."""
        return {e["key"]: e["data"] for e in sorted(self.entries("ok"), key=lambda e: e["key"])}

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for entry in self.entries():
            counts[entry["status"]] += 1
        return counts

    def snapshot(self) -> str:
        """What the ledger holds, independent of how it was written: the last entry of each key
        (key, status, reason, origin, data), one JSON line each, sorted by key."""
        lines = [
            json.dumps({k: e.get(k) for k in ("key", "status", "reason", "origin", "data")}, sort_keys=True)
            for e in sorted(self.entries(), key=lambda e: e["key"])
        ]
        return "".join(line + "\n" for line in lines)


# --- the status machine across stages ------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """Where a key stands before a stage runs on it: ``ok`` (go ahead), ``rejected`` (carry the
    rejection: ``origin`` decided, ``reason`` says why), or ``failed`` / ``missing`` at ``stage``
    (an entry to retry, or none yet): :attr:`waiting`, nothing to record yet."""

    status: str
    stage: str | None = None
    reason: str | None = None
    origin: str | None = None

    @property
    def waiting(self) -> bool:
        return self.status in ("failed", "missing")


def carried_reason(stage: str, entry: dict) -> tuple[str, str]:
    """(origin, reason) of a rejection read from ``stage``'s entry: a carried one keeps its
    origin and text; one decided at ``stage`` becomes ``"<what> rejected at <stage>: <reason>"``."""
    if entry.get("origin"):
        return entry["origin"], entry["reason"]
    return stage, f"{DECIDES.get(stage, stage)} rejected at {stage}: {entry.get('reason')}"


class Upstream:
    """The entries of the stages a stage needs, read once; :meth:`verdict` says what a key may do."""

    def __init__(self, build_dir: str | Path, stages: Iterable[str]) -> None:
        self.ledgers = [Ledger(build_dir, stage) for stage in stages]

    def verdict(self, key: str) -> Verdict:
        """The first upstream stage whose entry for ``key`` is not ``ok`` decides: rejected ->
        ``rejected`` with its origin; failed -> ``failed``; none -> ``missing``."""
        for ledger in self.ledgers:
            entry = ledger.get(key)
            if entry is None:
                return Verdict("missing", ledger.stage, f"no {ledger.stage} entry yet")
            if entry["status"] == "failed":
                return Verdict("failed", ledger.stage, f"{ledger.stage} failed: {entry['reason']}")
            if entry["status"] == "rejected":
                origin, reason = carried_reason(ledger.stage, entry)
                return Verdict("rejected", ledger.stage, reason, origin)
        return Verdict("ok")


# --- what a run did, and its exit status -----------------------------------------------------------


#: A token naming a file or folder: it holds a slash, or ends in a suffix such as ``.mp4`` (a number
#: such as ``2.5`` is not one). Such a token is the particulars of one reason, never its category.
_PATH = r"[^\s:'\"]*[/\\][^\s:'\"]*|[\w.-]+\.[A-Za-z][A-Za-z0-9]{1,4}"


def reason_category(reason: str | None) -> str:
    """A reason without its particulars, to count reasons by kind. The category is the first
    ``": "``-separated part that does not name a file (``p/img2.png: cannot decode image: ...`` ->
    ``cannot decode image``; ``api_failure``, ``RuntimeError``), or a carried rejection's
    ``<what> rejected at <stage>``; in it a quoted text becomes ``'…'``, a file or folder
    ``<path>`` and a number standing alone ``N`` (``fit score N below threshold N``), while a
    digit inside a word is kept (``Qwen2``; a file name was ``broken.mpN`` once)."""
    text = str(reason or "no reason given")
    carried = re.match(r"^(.+? rejected at \w+): ", text)
    parts = [carried.group(1)] if carried else text.split(": ")
    names_a_file = re.compile(rf"(?:^|\s)(?:{_PATH})(?=\s|$)")
    head = next((part for part in parts if not names_a_file.search(part)), parts[-1])
    head = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", head)
    head = re.sub(rf"(?<!\S)(?:{_PATH})(?!\S)", "<path>", head)
    return re.sub(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", "N", head).strip() or "no reason given"


@dataclass
class StageReport:
    """One stage's standing over the keys in scope: counts, rejections by reason, failures by
    category with the first error text of each, and keys waiting on an upstream stage."""

    stage: str
    ok: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    first_error: dict[str, str] = field(default_factory=dict)
    waiting: dict[str, int] = field(default_factory=dict)

    @property
    def n_rejected(self) -> int:
        return sum(self.rejected.values())

    @property
    def n_failed(self) -> int:
        return sum(self.failed.values())

    @property
    def items_in(self) -> int:
        return self.ok + self.n_rejected + self.n_failed

    @property
    def failure_rate(self) -> float:
        return self.n_failed / self.items_in if self.items_in else 0.0

    def failing(self, max_failure_rate: float) -> str | None:
        """Why this stage makes the run exit 1, or None, by the rule of every command
        (:mod:`faultline_eval.core.run_status`): coverage 0 (every item failed; a rejection is settled,
        not a failure), or a failure rate ``failed / items in`` above ``max_failure_rate``. A stage
        with no items yet is waiting, not failing."""
        outcome = TaskOutcome(self.stage, self.items_in, self.ok + self.n_rejected, failed=self.n_failed)
        if not self.items_in or outcome.problem(max_failure_rate) is None:
            return None
        if outcome.coverage == 0:
            return f"{self.stage}: all {self.items_in} items failed"
        return (
            f"{self.stage}: {self.n_failed} of {self.items_in} items failed ({self.failure_rate:.0%} > "
            f"--max-failure-rate {max_failure_rate:g})"
        )


def stage_report(
    build_dir: str | Path,
    stage: str,
    in_scope: Callable[[dict], bool] = lambda entry: True,
    waiting: dict[str, int] | None = None,
) -> StageReport:
    """The :class:`StageReport` of ``stage``'s ledger over the entries ``in_scope`` accepts."""
    report = StageReport(stage, waiting=dict(waiting or {}))
    for entry in sorted(Ledger(build_dir, stage).entries(), key=lambda e: e["key"]):
        if not in_scope(entry):
            continue
        if entry["status"] == "ok":
            report.ok += 1
            continue
        category = reason_category(entry["reason"])
        bucket = report.rejected if entry["status"] == "rejected" else report.failed
        bucket[category] = bucket.get(category, 0) + 1
        if entry["status"] == "failed":
            report.first_error.setdefault(category, f"{entry['key']}: {entry['reason']}")
    return report


def format_reports(reports: list[StageReport], width: int = 100) -> str:
    """A one-screen summary: a line per stage, then its rejections by reason and its failures by
    category (lines cut to ``width``), each category followed by its first error whole on one
    line: it names the key and the file, which a cut would lose."""
    lines = ["stage        in      ok  rejected  failed  waiting"]
    for r in reports:
        lines.append(
            f"{r.stage:<10} {r.items_in:>4} {r.ok:>7} {r.n_rejected:>9} {r.n_failed:>7} {sum(r.waiting.values()):>8}"
        )
        for category, n in sorted(r.rejected.items(), key=lambda kv: (-kv[1], kv[0]))[:6]:
            lines.append(f"    rejected {n:>4}  {category}"[:width])
        for category, n in sorted(r.failed.items(), key=lambda kv: (-kv[1], kv[0]))[:6]:
            lines.append(f"    FAILED   {n:>4}  {category}"[:width])
            lines.append("             first: " + " ".join(r.first_error[category].split()))
        for stage, n in sorted(r.waiting.items()):
            what = "not reached yet" if stage == r.stage else f"on {stage} (no entry or failed there)"
            lines.append(f"    waiting  {n:>4}  {what}"[:width])
    return "\n".join(lines)


def failing_stages(reports: list[StageReport], max_failure_rate: float = DEFAULT_MAX_FAILURE_RATE) -> list[str]:
    """The reasons the run must exit 1 (empty: exit 0)."""
    return [why for why in (r.failing(max_failure_rate) for r in reports) if why]
