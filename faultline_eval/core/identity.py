"""A dataset's identity is its content, never where it lies (SCEval and C3PO sources).

Every logged record names its data as ``spec#fingerprint``; the fingerprint is part of every
reply-store key, of the reports' "one dataset per run" checks and of the viewer's and the
judge's reloading of media. It is computed from what a model is given: ids, questions, options,
gold, the media paths *relative to the dataset root* and each media file's content hash. A run
made in one place therefore resumes, reports, re-grades and is viewed in another (another
checkout, a moved folder, a colleague's machine, a data-parallel node with another mount point);
the spec (where the data was) is only a hint for finding it again.

**Media hashes.** Hashing a clip costs a good part of decoding it, so a file's sha256 is
computed once and kept by ``(resolved path, size, mtime)`` in memory and under
``$SCEVAL_CACHE/digests/`` (one small file per medium, written atomically: a kill never leaves
half an entry; an unreadable entry is recomputed). A copy of a dataset hashes its files
once at the new place. A tool that rewrites a file keeping its size and mtime defeats the cache
(delete ``$SCEVAL_CACHE/digests/`` then).

**Legacy logs.** Logs written before this scheme carry a 16-hex-digit fingerprint over absolute
media paths (:data:`SCHEME` prefixes the new ones). They stay readable where they were made: the
viewer and the judge accept a source whose legacy fingerprint equals the logged one, with a note;
the reports compare fingerprints only among logs of one scheme (a mix is refused, naming the
logs to rerun). A resumed run after upgrading re-sends its requests once (the reply-store keys
change with the fingerprint).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from faultline_eval.core.paths import cache_dir
from faultline_eval.core.store import write_atomic

__all__ = [
    "SCHEME",
    "media_digest",
    "relative_media",
    "content_fingerprint",
    "fingerprint_of",
    "WRAPPED_FIELD_PREFIX",
    "WRAPPED_DATASET_FIELD",
    "WRAPPED_ROW_ID_FIELD",
    "doc_identity",
    "is_legacy",
    "matching_source",
]

#: Prefix of content fingerprints; a logged fingerprint without it is a legacy (path) one.
SCHEME = "c1"
_CHUNK = 1 << 20
_digests: dict[tuple[str, int, int], str] = {}  # (resolved path, size, mtime_ns) -> sha256
_lock = threading.Lock()


def media_digest(path: str | Path) -> str:
    """sha256 (hex) of the file's bytes, cached by (resolved path, size, mtime). The one content
    hash of media files: dataset fingerprints and the C3PO verdict cache's keys use it."""
    resolved = os.path.realpath(path)
    st = os.stat(resolved)
    key = (resolved, st.st_size, st.st_mtime_ns)
    with _lock:
        if key in _digests:
            return _digests[key]
    entry = cache_dir() / "digests" / hashlib.blake2b(repr(key).encode(), digest_size=16).hexdigest()
    try:
        digest = entry.read_text(encoding="ascii").strip()
        valid = len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)
    except (OSError, UnicodeDecodeError):
        valid = False
    if not valid:
        h = hashlib.sha256()
        with open(resolved, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                h.update(chunk)
        digest = h.hexdigest()
        try:
            write_atomic(entry, digest, fsync=False)  # a cache whose entries are validated on read
        except OSError:
            pass  # a read-only cache costs a re-hash next time, nothing else
    with _lock:
        _digests[key] = digest
    return digest


def relative_media(root: str, paths: Iterable[str]) -> list[tuple[str, str]]:
    """(path relative to ``root`` in POSIX form, content digest) of each media file."""
    return [(Path(os.path.relpath(p, root)).as_posix(), media_digest(p)) for p in paths if p]


def content_fingerprint(records: Iterable[Sequence[Any]]) -> str:
    """``SCHEME-<hex>`` over ``records`` (one tuple per item: its fields and its media as
    :func:`relative_media` gives them), in order."""
    h = hashlib.blake2b(digest_size=8)
    for record in records:
        h.update(repr(tuple(record)).encode())
    return f"{SCHEME}-{h.hexdigest()}"


#: The namespace of the doc columns a wrapped lmms-eval task (issue 27) adds: no benchmark's own
#: columns are there (a base dataset with one is refused), so a base's ``row_id`` or ``dataset``
#: column is the benchmark's, never ours.
WRAPPED_FIELD_PREFIX = "_faultline_"
#: Where a wrapped task keeps its docs' identity, a ``spec#fingerprint`` like SCEval's ``dataset``.
WRAPPED_DATASET_FIELD = f"{WRAPPED_FIELD_PREFIX}dataset"
#: Where a wrapped task keeps each doc's row id (``<wrapped task>/<row>``), as SCEval's ``row_id``.
WRAPPED_ROW_ID_FIELD = f"{WRAPPED_FIELD_PREFIX}row_id"


def doc_identity(doc: Any) -> tuple[str | None, str | None]:
    """``(dataset, row id)`` of an lmms-eval doc, what the models key their reply stores and
    telemetry by: a wrapped task's (:data:`WRAPPED_DATASET_FIELD`, :data:`WRAPPED_ROW_ID_FIELD`),
    else SCEval's and C3PO's own ``dataset`` and ``row_id`` (None where the doc has none)."""
    if not isinstance(doc, Mapping):
        return None, None
    if WRAPPED_DATASET_FIELD in doc:
        return doc[WRAPPED_DATASET_FIELD], doc.get(WRAPPED_ROW_ID_FIELD)
    return doc.get("dataset"), doc.get("row_id")


def fingerprint_of(dataset: Any) -> str:
    """The fingerprint of a logged ``spec#fingerprint`` (the whole value when it has no ``#``)."""
    return str(dataset).rpartition("#")[2]


def is_legacy(fingerprint: str) -> bool:
    return not str(fingerprint).startswith(f"{SCHEME}-")


def matching_source(dataset: str, load: Callable[[str], Any], specs: Sequence[str]) -> tuple[Any, str | None]:
    """The first of ``specs`` (tried in order; the logged spec is usually among them) whose items
    are the logged dataset's, and a note when it matched through the legacy fingerprint. Raises
    :class:`LookupError` naming what was tried when none matches."""
    logged = fingerprint_of(dataset)
    tried = []
    for spec in dict.fromkeys(s for s in specs if s):
        try:
            source = load(spec)
            fingerprint = source.fingerprint  # hashes the media: a folder deleted since it was loaded fails here
        except Exception as exc:
            tried.append(f"{spec}: {type(exc).__name__}: {exc}")
            continue
        if not logged or fingerprint == logged:
            return source, None
        if is_legacy(logged) and source.legacy_fingerprint == logged:
            return source, (
                f"{spec}: the logs name it by its legacy fingerprint {logged} (absolute paths, before "
                f"content fingerprints); matched, it is {fingerprint} now"
            )
        tried.append(f"{spec}: holds other items than the run's (fingerprint {fingerprint}, logged {logged})")
    raise LookupError(
        "no data source holds the run's items: " + "; ".join(tried) + " (give the run's items, moved "
        "or copied anywhere: the fingerprint is their content)"
    )
