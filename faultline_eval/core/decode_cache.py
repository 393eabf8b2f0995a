"""One cache of decoded media for every task of a run and across runs (SCEval and C3PO items).

A panel run asks for the same item's frames and audio in every one of its tasks (~146
conditions); decoding a 640x360 clip costs ~24 ms, so without a cache that outlives one task
the harness, not the model, bounds throughput. :func:`load` returns a decoded medium from

1. memory: a least-recently-used map bounded in bytes (``SCEVAL_DECODE_CACHE_MEMORY_MB``,
   default 1024; 0 turns the layer off), shared by all tasks and threads of the process;
2. disk: one file per medium under ``$SCEVAL_CACHE/decoded/`` (raw array bytes after a JSON
   header, read memory-mapped), shared by every process, rank and later run;
3. a fresh decode, written to both layers.

**Key.** What the decoded array depends on, and nothing else: the medium kind, the decode
parameters (frame budget ``exactly``, sample rate, every :class:`media.MediaLimits` field:
frame side, megapixels, clip/audio length, frame sampling), a format version, and each file's
resolved path, **size and modification time** (nanoseconds). A file rewritten in place gets a
new mtime, hence a new key: the stale entry is never read again (and is evicted in time). We
chose size+mtime over a content hash because hashing a clip costs a good part of decoding it;
a tool that rewrites a file keeping both size and mtime defeats it (``sceval cache clear``).
The key does not include the dataset fingerprint (:attr:`sceval_plugin.data.sources.Source.fingerprint`): that changes
with questions and options, which do not change pixels, while two datasets that share a media
file share its decode. The sample id is not in the key either; errors still name it, because
the callers wrap them.

**Concurrency and damage.** An entry is written through :func:`faultline_eval.core.store.replacing`
(a temporary file in the same folder renamed into place, atomic on POSIX), so a reader sees a
whole file or none; several data-parallel ranks writing the same entry at once each rename a
complete copy. Its header carries a CRC-32 of the header fields and the array bytes, checked when
a process first reads the entry from disk (the memory layer serves it afterwards; the check costs
about a millisecond per megabyte). An entry that does not check out (a bit flip, a file cut short
by a full disk or a power cut — entries are not fsynced, the checksum stands in for it — a foreign
file) is never served: a warning names the file and why, the medium is decoded again and the
entry rewritten. Within a process, threads asking for the same medium wait for one decode.
Format 2 added the checksum; format 1 entries are no longer looked up (other keys) and age out.

**Failures** are never cached: a broken file raises on every request, with the caller's error
naming the sample and file, exactly as a fresh decode would.

**Size.** ``SCEVAL_DECODE_CACHE_GB`` (default 20; 0 turns the disk layer off) bounds the disk
layer; when a process's writes take it over the limit, the least recently written entries are
deleted down to 90 % of it. ``sceval cache clear`` empties it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from faultline_eval.core import media
from faultline_eval.core.paths import cache_dir
from faultline_eval.core.settings import SCEVAL_DECODE_CACHE_GB, SCEVAL_DECODE_CACHE_MEMORY_MB, Setting
from faultline_eval.core.store import replacing

__all__ = [
    "DISK_ENV",
    "BoundedFolder",
    "Decoded",
    "Stats",
    "stats",
    "folder",
    "setting",
    "load",
    "clear_memory",
    "disk_usage",
    "clear",
]

FORMAT_VERSION = 2
DISK_ENV = SCEVAL_DECODE_CACHE_GB.name
_MAGIC = b"SCEVDEC2"
_ALIGN = 64


@dataclass(frozen=True)
class Decoded:
    """A decoded medium: a read-only array, per-frame times in seconds (video; else empty) and
    the notes on conversions made while decoding."""

    array: np.ndarray
    times: tuple[float, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass
class Stats:
    """What this process's lookups cost: ``decodes`` is the number of fresh decodes."""

    memory_hits: int = 0
    disk_hits: int = 0
    decodes: int = 0


stats = Stats()
_memory: OrderedDict[str, Decoded] = OrderedDict()
_memory_bytes = 0
_lock = threading.Lock()
_in_flight: dict[str, threading.Lock] = {}


def folder() -> Path:
    return cache_dir() / "decoded"


def setting(size: Setting) -> float:
    """The value of a size setting (its default when unset), checked: a number >= 0."""
    raw = size.get()
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{size.name}={raw!r}: expected a number >= 0 ({size.doc})") from None
    if value < 0:
        raise ValueError(f"{size.name}={raw!r}: expected a number >= 0")
    return value


def key_of(kind: str, paths: Sequence[str], **params: object) -> str | None:
    """The cache key of one medium, or None when a file cannot be stat'ed (the decode then
    raises its own error naming it)."""
    try:
        files = [(str(p), st.st_size, st.st_mtime_ns) for p in paths for st in [os.stat(p)]]
    except (OSError, TypeError, ValueError):
        return None
    identity = (FORMAT_VERSION, kind, sorted(params.items()), astuple(media.limits()), files)
    return hashlib.blake2b(repr(identity).encode(), digest_size=16).hexdigest()


def load(kind: str, paths: Sequence[str], decode: Callable[[], Decoded], **params: object) -> Decoded:
    """The decoded medium ``kind`` of ``paths`` under ``params``, from memory, disk or ``decode()``.

    ``decode`` must be a pure function of the files and ``params``; whatever it raises propagates
    unchanged and nothing is stored.
    """
    key = key_of(kind, paths, **params)
    if key is None:
        return _fresh(decode)
    found = _from_memory(key)
    if found is not None:
        return found
    with _lock:
        gate = _in_flight.setdefault(key, threading.Lock())
    with gate:  # a second thread asking for the same medium waits for the first's decode
        found = _from_memory(key)
        if found is None:
            found = _read(key)
            if found is not None:
                stats.disk_hits += 1
            else:
                found = _fresh(decode)
                _write(key, found)
            _remember(key, found)
    with _lock:
        _in_flight.pop(key, None)
    return found


def _fresh(decode: Callable[[], Decoded]) -> Decoded:
    decoded = decode()
    decoded.array.setflags(write=False)
    stats.decodes += 1
    return decoded


# --- memory --------------------------------------------------------------------------------------


def _from_memory(key: str) -> Decoded | None:
    with _lock:
        found = _memory.get(key)
        if found is not None:
            _memory.move_to_end(key)
            stats.memory_hits += 1
        return found


def _remember(key: str, decoded: Decoded) -> None:
    global _memory_bytes
    budget = setting(SCEVAL_DECODE_CACHE_MEMORY_MB) * 2**20
    size = decoded.array.nbytes
    with _lock:
        if size > budget or key in _memory:
            return
        _memory[key] = decoded
        _memory_bytes += size
        while _memory_bytes > budget:
            _, dropped = _memory.popitem(last=False)
            _memory_bytes -= dropped.array.nbytes


def clear_memory() -> None:
    """Forget the in-process layer (the disk layer stays); the counters restart."""
    global _memory_bytes
    with _lock:
        _memory.clear()
        _memory_bytes = 0
        stats.memory_hits = stats.disk_hits = stats.decodes = 0


# --- disk ----------------------------------------------------------------------------------------


def _path(key: str) -> Path:
    return _disk.path(key)


def _data_offset(header_size: int) -> int:
    """Where the array bytes start: after magic, header length and header, aligned for mapping."""
    return -(-(len(_MAGIC) + 8 + header_size) // _ALIGN) * _ALIGN


def _checksum(fields: dict[str, Any], data: bytes | memoryview) -> int:
    return zlib.crc32(data, zlib.crc32(json.dumps(fields, sort_keys=True).encode()))


def _read(key: str) -> Decoded | None:
    """The entry, memory-mapped, or None when absent, disabled or damaged (with a warning)."""
    if setting(SCEVAL_DECODE_CACHE_GB) == 0:
        return None
    path = _path(key)
    try:
        with open(path, "rb") as handle:
            if handle.read(len(_MAGIC)) != _MAGIC:
                _damaged(path, "not a decode-cache entry of this format")
                return None
            header_size = int.from_bytes(handle.read(8), "little")
            header = json.loads(handle.read(header_size))
        checksum = header.pop("crc32")
        dtype, shape, offset = np.dtype(header["dtype"]), tuple(header["shape"]), _data_offset(header_size)
        size, expected = path.stat().st_size, offset + dtype.itemsize * int(np.prod(shape))
        if size != expected:
            _damaged(path, f"{size} bytes where the header announces {expected} (cut short)")
            return None
        array = np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape).view(np.ndarray)
        if _checksum(header, array.data.cast("B") if array.size else b"") != checksum:
            _damaged(path, "checksum mismatch")
            return None
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _damaged(path, f"unreadable header ({type(exc).__name__}: {exc})")
        return None
    return Decoded(array, tuple(header["times"]), tuple(header["notes"]))


def _damaged(path: Path, why: str) -> None:
    from loguru import logger

    logger.warning(f"decode cache: {path}: {why}; not used, decoded again and rewritten")


def _write(key: str, decoded: Decoded) -> None:
    """Write the entry atomically, not synced (see the module docstring); a failure to write only costs the cache."""
    if _disk.limit_bytes() == 0:
        return

    array = np.ascontiguousarray(decoded.array)
    fields = {
        "dtype": array.dtype.str,
        "shape": list(array.shape),
        "times": list(decoded.times),
        "notes": list(decoded.notes),
    }
    data = array.data.cast("B") if array.size else b""  # array.data: the memoryview of the array
    header = json.dumps({**fields, "crc32": _checksum(fields, data)}).encode()
    prefix = _MAGIC + len(header).to_bytes(8, "little") + header
    try:
        with replacing(_path(key), fsync=False) as temporary, open(temporary, "wb") as handle:
            handle.write(prefix.ljust(_data_offset(len(header)), b" "))
            handle.write(data)
    except OSError:
        return
    _disk.added(_data_offset(len(header)) + array.nbytes)


class BoundedFolder:
    """Files ``<root>/<2 hex digits>/<key><suffix>`` (``suffix`` one of ``suffixes``) held under a
    byte bound: the setting ``bound`` (GB; what 0 means is the caller's: the decode cache then
    stores nothing, wrapped tasks' media are kept without a bound). When writes take the folder
    over the bound, the least recently written files (by modification time; a user that touches
    a file on reuse makes it least recently *used*) are deleted down to 90 % of it. The decode
    cache's disk layer is one; wrapped tasks' media files are another. Safe for several threads
    and processes: a file another process deleted is skipped, and a reader that opened a file
    before it was deleted keeps its data (POSIX)."""

    def __init__(self, root: Callable[[], Path], suffixes: tuple[str, ...], bound: Setting) -> None:
        self.root, self.suffixes, self.bound = root, suffixes, bound
        self._lock = threading.Lock()
        self._bytes: int | None = None  # this process's estimate of the folder's size ...
        self._counted: Path | None = None  # ... when the root was this folder (the setting may change)

    def limit_bytes(self) -> float:
        return setting(self.bound) * 1e9

    def path(self, key: str, suffix: str | None = None) -> Path:
        """Where the file of ``key`` lives (``suffix`` defaults to the first of ``suffixes``)."""
        return self.root() / key[:2] / f"{key}{suffix or self.suffixes[0]}"

    def _entries(self) -> list[os.DirEntry[str]]:
        root = self.root()
        if not root.is_dir():
            return []
        return [
            entry
            for sub in os.scandir(root)
            if sub.is_dir()
            for entry in os.scandir(sub.path)
            if entry.name.endswith(self.suffixes)
        ]

    def usage(self) -> int:
        """Bytes held now."""
        total = 0
        for entry in self._entries():
            try:
                total += entry.stat().st_size
            except FileNotFoundError:  # another process evicted it
                pass
        return total

    def added(self, size: int) -> None:
        """Count a file of ``size`` bytes just written; evict if the folder is now over its bound."""
        limit, root = self.limit_bytes(), self.root()
        with self._lock:
            if self._bytes is None or self._counted != root:
                self._bytes, self._counted = self.usage(), root
            else:
                self._bytes += size
            over = self._bytes > limit
        if over:
            self.evict(int(limit * 0.9))

    def evict(self, target_bytes: int) -> int:
        """Delete the least recently written files until the folder holds at most
        ``target_bytes``; returns the bytes freed."""
        aged = []
        for entry in self._entries():
            try:
                status = entry.stat()
            except FileNotFoundError:
                continue
            aged.append((status.st_mtime_ns, status.st_size, entry.path))
        total, freed = sum(size for _, size, _ in aged), 0
        for _, size, path in sorted(aged):
            if total - freed <= target_bytes:
                break
            try:
                os.unlink(path)
                freed += size
            except FileNotFoundError:
                pass
        with self._lock:
            self._bytes, self._counted = total - freed, self.root()
        return freed


_disk = BoundedFolder(folder, (".bin",), SCEVAL_DECODE_CACHE_GB)


def disk_usage() -> int:
    """Bytes held by the disk layer now."""
    return _disk.usage()


def evict(target_bytes: int) -> int:
    """Delete the least recently written entries until the disk layer holds at most
    ``target_bytes``; returns the bytes freed. Readers holding a mapped entry keep their data."""
    return _disk.evict(target_bytes)


def clear() -> int:
    """Empty both layers (``sceval cache clear``); returns the bytes freed on disk."""
    clear_memory()
    return evict(0)
