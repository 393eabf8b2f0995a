"""The one crash-safe store of the project: append-only JSONL journals, and atomic whole-file writes.

Everything that must survive a crash goes through this module: model reply stores (a killed run
resumes without re-sending), C3PO build stage ledgers and build reply stores, the judge verdict
cache, the probe records of ``faultline probe``, the media token log; and every whole-file output
(parquet, JSON, cards, reports) through :func:`replacing` / :func:`write_atomic`.

**Journal format.** One JSON object per line, ASCII, ending in ``\\n``, and closed by a checksum
field: ``{"key": "a", "v": 1, "_crc32": "17e2ee0e"}``, where the CRC-32 is over the line's bytes
without the field (``{"key": "a", "v": 1}``). Lines stay plain JSON for any other reader (the
field is one more column). On read a line whose checksum does not match or that does not parse is
reported (file, line number, byte offset) and skipped, never trusted. Files written before the
checksum (today's older stores) stay readable: a line without ``_crc32`` is accepted as long as
no checksummed line came before it in the file (old lines come first; a checksum-less line after
a checksummed one is damage, reported and skipped).

**Torn tail.** A process killed in the middle of an append leaves a last line without its
newline. That record was never acknowledged (:meth:`Journal.append` had not returned). It is
detected when the journal is opened, and before every append, under the file lock, and cut off
(``ftruncate`` to the end of the last whole line) with a warning naming the file, the byte offset
and the bytes removed, so the next record starts on a line of its own.

**Concurrent writers.** Each append takes an exclusive ``fcntl.flock`` on the file, checks the
tail, writes the whole line with one ``write(2)`` (``O_APPEND``) and releases the lock: two
processes (data-parallel ranks, two runs on one output folder) never interleave partial lines.
Records another process appended are read in when this one looks up a key it does not hold
(:meth:`ReplyStore.get`), before it lists entries or counts them, and before each of its own
appends. ``flock`` is advisory and local: it does not coordinate writers on different NFS clients;
and it belongs to the open file, so a process that forks after opening a journal shares the lock
with its child (open journals after forking). :func:`read_records` reads without repairing.

**Durability** (``fsync=`` argument, else ``$FAULTLINE_STORE_FSYNC``, default ``batch``):

- A process kill (``kill -9``, OOM, a crash) loses nothing acknowledged under any policy: each
  record is in the kernel (one ``write``) before ``append``/``put`` returns; at most the record
  being written is lost, as a torn tail that the next open cuts off.
- A power cut or kernel crash loses what was not yet on the disk:
  ``record`` ``fdatasync`` after every record: nothing acknowledged (the slowest);
  ``batch`` (default) ``fdatasync`` when a second has passed since the last one, and at close and
  interpreter exit: the records of about the last second of appends, and a final burst followed
  by a pause until the next append, the exit, or the kernel's own write-back (Linux: ~30 s);
  ``never``: what the kernel had not written back (~30 s).
  A new journal's folder entry is synced too (except ``never``), so the file itself survives.
  ``benchmarks/faults.py`` measures what each policy costs.

**Whole files.** :func:`replacing` hands out a temporary path next to the target; on success the
file is synced, renamed over the target (``os.replace``, atomic on POSIX) and the folder synced: a
kill or power cut leaves the old file or the new one, never a torn one. Temporary files of writers
that were killed are removed by the next write of the same target.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import re
import threading
import time
import weakref
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from faultline_eval.core.paths import cache_dir
from faultline_eval.core.settings import FAULTLINE_STORE_FSYNC
from faultline_eval.core.telemetry import Call

__all__ = [
    "RESTORED_DETAIL",
    "StoreError",
    "slug",
    "open_store",
    "restored_call",
    "request_key",
    "encode_record",
    "Journal",
    "read_records",
    "ReplyStore",
    "replacing",
    "write_atomic",
]

#: ``store=`` values that turn a model's reply store off.
OFF = ("none", "off", "false", "")
#: The failure detail of a record whose reply came from the store, not from the model.
RESTORED_DETAIL = "restored from the reply store"
#: The setting of the default fsync policy, and the policies.
FSYNC_POLICIES = FAULTLINE_STORE_FSYNC.choices
#: ``batch``: the longest a record waits for an ``fdatasync`` while appends keep coming.
BATCH_SECONDS = 1.0
CHECKSUM_FIELD = "_crc32"
_CHECKSUMMED = re.compile(rb'(?:, |\{)"_crc32": "([0-9a-f]{8})"\}$')


class StoreError(OSError):
    """An append that could not be written whole (full disk, file size limit, I/O error); the
    journal is left as it was before the append."""


def slug(text: Any) -> str:
    """``text`` made safe as a file name (model ids, checkpoint paths, judge ids)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("._") or "model"


def open_store(setting: str | None, default_name: str, who: str, resumed: str) -> ReplyStore | None:
    """A model's reply store: ``setting`` is the ``store=`` model argument (a file, or one of
    :data:`OFF`); by default ``$SCEVAL_CACHE/replies/<default_name>.jsonl``. Logs how many
    finished replies a resumed run found, and what happens to them (``resumed``)."""
    from loguru import logger

    if setting is not None and str(setting).strip().lower() in OFF:
        return None
    path = setting or cache_dir() / "replies" / f"{default_name}.jsonl"
    opened = ReplyStore(path)
    if len(opened):
        logger.info(f"{who}: {len(opened)} finished replies in {path}; {resumed}")
    return opened


def restored_call(entry: dict[str, Any]) -> Call:
    """What the task is told about a request answered from the store: the stored latency, retry
    count and failure category, marked :data:`RESTORED_DETAIL`."""
    return Call(
        latency_s=entry.get("latency_s"),
        retries=entry.get("retries", 0),
        failure=entry.get("failure"),
        detail=RESTORED_DETAIL,
    )


def request_key(*parts: Any) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).hexdigest()


# --- the line format -----------------------------------------------------------------------------


def encode_record(record: dict[str, Any]) -> bytes:
    """One journal line: ``record`` as ASCII JSON closed by its checksum field, and a newline."""
    if not isinstance(record, dict):
        raise TypeError(f"a journal record is a dict, not {type(record).__name__}")
    body = json.dumps(record).encode("ascii")
    crc = f'"{CHECKSUM_FIELD}": "{zlib.crc32(body):08x}"}}'.encode("ascii")
    return (body[:-1] + (b", " if len(body) > 2 else b"") + crc) + b"\n"


def _decode_line(line: bytes, checksummed_before: bool) -> tuple[dict[str, Any] | None, bool, str | None]:
    """(record, whether the line carried a checksum, why it was refused) of one line without its newline."""
    found = _CHECKSUMMED.search(line)
    if found is not None:
        body = line[: found.start()] + (b"}" if found.group(0).startswith(b",") else b"{}")
        if f"{zlib.crc32(body):08x}".encode() != found.group(1):
            return None, True, "checksum mismatch"
    elif checksummed_before:
        return None, False, "no checksum after checksummed records"
    else:
        body = line  # a line written before records carried a checksum
    try:
        record = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return None, found is not None, f"not JSON ({exc})"
    if not isinstance(record, dict):
        return None, found is not None, "not a JSON object"
    return record, found is not None, None


def _fsync_policy(fsync: str | None) -> str:
    policy = (fsync or FAULTLINE_STORE_FSYNC.get()).lower()
    if policy not in FSYNC_POLICIES:
        raise ValueError(f"{FAULTLINE_STORE_FSYNC.name}/fsync={policy!r}: expected one of {FSYNC_POLICIES}")
    return policy


def _sync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _finish(descriptor: int, pending: list[bool]) -> None:
    """Close a journal's file, syncing what the policy left pending (also run at interpreter exit)."""
    try:
        if pending[0]:
            os.fdatasync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


# --- the journal ---------------------------------------------------------------------------------

_JournalT = TypeVar("_JournalT", bound="Journal")


class Journal:
    """An append-only file of checksummed JSON records, safe against kills and concurrent writers
    (see the module docstring). :meth:`records` lists every valid record in file order."""

    def __init__(self, path: str | Path, *, fsync: str | None = None, read_only: bool = False) -> None:
        self.path = Path(path)
        self.fsync = _fsync_policy(fsync)
        self.read_only = read_only
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        created = not self.path.exists()
        self._descriptor = os.open(self.path, os.O_RDONLY if read_only else os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        self._pending = [False]  # written since the last fdatasync (a list: shared with the finalizer)
        self._finalizer = weakref.finalize(self, _finish, self._descriptor, self._pending)
        self._last_sync = time.monotonic()
        self._lock = threading.RLock()
        self._offset = 0  # the bytes read so far: always the end of a whole line
        self._line_number = 0
        self._checksummed = False
        self._records: list[dict[str, Any]] = []
        if created and self.fsync != "never" and not read_only:
            _sync_folder(self.path.parent)
        if read_only:  # no repair: a last line without its newline is left alone (and not a record)
            self._read_new(locked=False)
        else:
            with self._lock, self._file_lock():
                self._read_new(locked=True)

    # reading

    def _read_new(self, locked: bool) -> None:
        """Read the records appended since the last read (by this or another process). Holding the
        file lock, a last line without its newline is a torn tail and is cut off; without it, it
        may be another process's append in progress and is left for a later read."""
        from loguru import logger

        size = os.fstat(self._descriptor).st_size
        if size < self._offset:
            logger.warning(f"{self.path}: shrank from {self._offset} to {size} bytes under this process; read again")
            self._offset = self._line_number = 0
            self._checksummed = False
            self._forget()
        if size == self._offset:
            return
        chunk = os.pread(self._descriptor, size - self._offset, self._offset)
        whole = chunk.rfind(b"\n") + 1
        if locked and whole < len(chunk):
            torn = chunk[whole:]
            os.ftruncate(self._descriptor, self._offset + whole)
            logger.warning(
                f"{self.path}: torn last record at byte offset {self._offset + whole} ({len(torn)} bytes, "
                f"{torn[:60]!r}{'...' if len(torn) > 60 else ''}) cut off: a process was killed while "
                f"appending it (it was never acknowledged)"
            )
        start = self._offset
        for line in chunk[:whole].split(b"\n")[:-1]:
            self._line_number += 1
            record, checksummed, problem = _decode_line(line, self._checksummed)
            self._checksummed |= checksummed
            if problem is None:
                assert record is not None  # _decode_line gives a record exactly when it gives no problem
                problem = self._absorb(record)
            if problem is not None:
                logger.warning(
                    f"{self.path}: line {self._line_number} (byte offset {start}) skipped: {problem}; "
                    f"{line[:60]!r}{'...' if len(line) > 60 else ''}"
                )
            start += len(line) + 1
        self._offset += whole

    def _absorb(self, record: dict[str, Any]) -> str | None:
        """Take in one valid record; returns why it is refused, or None."""
        self._records.append(record)
        return None

    def _forget(self) -> None:
        self._records.clear()

    def refresh(self) -> None:
        """Read in what other processes appended since the last read."""
        with self._lock:
            self._read_new(locked=False)

    def records(self) -> list[dict[str, Any]]:
        """Every valid record, in file order, including other processes' appends so far."""
        with self._lock:
            self._read_new(locked=False)
            return list(self._records)

    # writing

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        fcntl.flock(self._descriptor, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._descriptor, fcntl.LOCK_UN)

    def append(self, record: dict[str, Any]) -> None:
        """Append ``record``; on return it survives a kill of this process (and, per the fsync
        policy, a power cut). A write that fails (full disk, size limit) raises
        :class:`StoreError` and leaves the journal as it was."""
        if self.read_only:
            raise StoreError(f"{self.path}: opened read-only; cannot append")
        line = encode_record(record)
        with self._lock, self._file_lock():
            self._read_new(locked=True)  # other processes' records first, and no torn tail to write onto
            try:
                written = os.write(self._descriptor, line)
                if written != len(line):
                    raise OSError(f"short write: {written} of {len(line)} bytes (disk full or file size limit?)")
            except OSError as exc:
                os.ftruncate(self._descriptor, self._offset)
                raise StoreError(
                    f"{self.path}: could not append a record of {len(line)} bytes at byte offset "
                    f"{self._offset}: {exc}; the store is unchanged"
                ) from exc
            self._pending[0] = self.fsync != "never"
            now = time.monotonic()
            if self.fsync == "record" or (self.fsync == "batch" and now - self._last_sync >= BATCH_SECONDS):
                os.fdatasync(self._descriptor)
                self._pending[0], self._last_sync = False, now
            self._line_number += 1
            self._checksummed = True
            self._offset += len(line)
            self._absorb(record)

    def sync(self) -> None:
        """``fdatasync`` now, whatever the policy."""
        with self._lock:
            os.fdatasync(self._descriptor)
            self._pending[0], self._last_sync = False, time.monotonic()

    def close(self) -> None:
        """Sync what the policy left pending and close the file (also done at interpreter exit)."""
        with self._lock:
            if self.fsync == "never":
                self._pending[0] = False
            self._finalizer()

    def __enter__(self: _JournalT) -> _JournalT:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every valid record of the journal at ``path``, read-only: damaged lines reported and
    skipped, a torn last line left for the next append to cut off; a missing file has none."""
    path = Path(path)
    if not path.exists():
        return []
    with Journal(path, fsync="never", read_only=True) as journal:
        return journal.records()


class ReplyStore(Journal):
    """A journal of ``{"key": ..., **entry}`` records read as a map: the last entry written for a
    key wins. Used for model replies, build ledgers and replies, and judge verdicts."""

    def __init__(self, path: str | Path, *, fsync: str | None = None) -> None:
        self._entries: dict[str, dict[str, Any]] = {}
        super().__init__(path, fsync=fsync)

    def _absorb(self, record: dict[str, Any]) -> str | None:
        if not isinstance(record.get("key"), str):
            return "no string 'key'"
        self._entries[record["key"]] = record
        return None

    def _forget(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            self._read_new(locked=False)
            return len(self._entries)

    def get(self, key: str) -> dict[str, Any] | None:
        """The last entry of ``key``; on a miss, other processes' new appends are read first."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self._read_new(locked=False)
                found = self._entries.get(key)
            return found

    def entries(self) -> list[dict[str, Any]]:
        """Every stored entry, the last one written for each key, in the order keys first appeared."""
        with self._lock:
            self._read_new(locked=False)
            return list(self._entries.values())

    def records(self) -> list[dict[str, Any]]:
        return self.entries()

    def put(self, key: str, **entry: Any) -> None:
        self.append({"key": key, **entry})


# --- whole files ---------------------------------------------------------------------------------


def _temporary_prefix(path: Path) -> str:
    return f".{path.name}.{slug(os.uname().nodename)}."


def _remove_stale_temporaries(path: Path) -> None:
    """Delete this host's temporary files of ``path`` whose writer process is gone (killed)."""
    prefix = _temporary_prefix(path)
    for stale in path.parent.glob(f"{glob.escape(prefix)}*.tmp"):
        try:
            os.kill(int(stale.name[len(prefix) :].split(".")[0]), 0)
        except ProcessLookupError:
            stale.unlink(missing_ok=True)
        except (ValueError, PermissionError):
            pass


@contextlib.contextmanager
def replacing(path: str | Path, *, fsync: bool = True) -> Iterator[Path]:
    """A temporary path next to ``path`` to write its new content to; when the block ends without
    an exception the temporary file replaces ``path`` atomically (synced first, and its folder
    after, unless ``fsync=False``: a cache that validates its entries needs no sync). On an
    exception the temporary file is removed and ``path`` is left as it was::

        with replacing(out / "items.parquet") as temporary:
            dataset.to_parquet(str(temporary))
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(path)
    temporary = path.with_name(f"{_temporary_prefix(path)}{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        yield temporary
        if fsync:
            descriptor = os.open(temporary, os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    if fsync:
        _sync_folder(path.parent)


def write_atomic(path: str | Path, data: str | bytes, *, fsync: bool = True) -> Path:
    """Write ``data`` (text is UTF-8) to ``path`` through :func:`replacing`: a kill leaves the old
    file or the new one. Returns ``path``."""
    with replacing(path, fsync=fsync) as temporary:
        temporary.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)
