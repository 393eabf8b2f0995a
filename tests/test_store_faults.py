"""Crash faults of the one store (:mod:`faultline_eval.core.store`): torn tails in every store kind, bit
flips, a full disk, concurrent writers, kill -9 at seeded points, half-written whole files and
decode-cache entries. The fast tests take ~4 s; the two kill tests (slow) ~22 s and ~12 s on a
loaded 2-core machine."""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import faultkit
import numpy as np
import pytest

from faultline_eval.core.store import (
    Journal,
    ReplyStore,
    StoreError,
    encode_record,
    open_store,
    read_records,
    replacing,
)

ROOT = Path(__file__).resolve().parents[1]


def _load_faults_benchmark():
    spec = importlib.util.spec_from_file_location("faults_benchmark", ROOT / "benchmarks" / "faults.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def warnings():
    """The messages loguru logs at WARNING and above while the test runs."""
    from loguru import logger

    seen: list[str] = []
    sink = logger.add(lambda message: seen.append(message.record["message"]), level="WARNING")
    yield seen
    logger.remove(sink)


def _tear(path: Path, record: dict) -> int:
    """Append the first half of ``record``'s line, as a process killed mid-write leaves it;
    returns the byte offset where the torn line starts."""
    offset = path.stat().st_size
    line = encode_record(record)
    with open(path, "ab") as handle:
        handle.write(line[: len(line) // 2])
    return offset


def test_the_issue_reproduction_keeps_the_record_appended_after_a_torn_line(tmp_path, warnings):
    path = tmp_path / "t.jsonl"
    path.write_text('{"key": "a", "v": 1}\n{"key": "b", "v"')
    ReplyStore(path).put("c", v=3)
    assert [e["key"] for e in ReplyStore(path).entries()] == ["a", "c"]
    assert ReplyStore(path).get("c")["v"] == 3
    [warning] = warnings  # once, when the torn line was cut off; the reopened files are clean
    assert str(path) in warning and "byte offset 21" in warning and "torn" in warning


# --- a torn last line in every store kind, then a resume ------------------------------------------


def _reply_store(folder: Path):
    store = open_store(None, "model-x", "test", "resumed")
    return store.path, lambda i: store.put(f"k{i}", reply=f"r{i}"), lambda: {e["key"] for e in store.entries()}


def _ledger(folder: Path):
    from c3po_plugin.construction.ledger import Ledger

    ledger = Ledger(folder, "generate")
    return ledger.path, lambda i: ledger.record(f"k{i}", "ok", {"i": i}), lambda: set(ledger.ok())


def _build_replies(folder: Path):
    from c3po_plugin.construction.client import BuildClient

    store = BuildClient(folder, "classify", temperature=0, max_output_tokens=8, concurrency=1).store
    return store.path, lambda i: store.put(f"k{i}", text=f"t{i}"), lambda: {e["key"] for e in store.entries()}


def _verdicts(folder: Path):
    from faultline_eval.judges.base import Verdict
    from faultline_eval.judges.cache import VerdictCache

    cache = VerdictCache(folder / "verdicts.jsonl")
    return (
        cache.path,
        lambda i: cache.put(f"k{i}", Verdict("yes", "judge", raw=f"r{i}")),
        lambda: {k for k in (f"k{i}" for i in range(10)) if cache.get(k) is not None},
    )


def _probe_records(folder: Path):
    journal = Journal(folder / "e3.jsonl")
    return (
        journal.path,
        lambda i: journal.append({"task": "t", "doc_id": i}),
        lambda: {f"k{r['doc_id']}" for r in journal.records()},
    )


def _media_token_log(folder: Path):
    from faultline_eval.model_wrappers.media_token_log import token_log

    path = str(folder / "media_tokens.jsonl")
    return (
        Path(path),
        lambda i: token_log(path).append({"doc_id": i}),
        lambda: {f"k{r['doc_id']}" for r in read_records(path)},
    )


STORE_KINDS = {
    "reply store": _reply_store,
    "build ledger": _ledger,
    "build replies": _build_replies,
    "verdict cache": _verdicts,
    "probe records": _probe_records,
    "media token log": _media_token_log,
}


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_torn_last_line_in_every_store_kind_loses_nothing_on_resume(kind, tmp_path, warnings, monkeypatch):
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    path, put, _ = STORE_KINDS[kind](tmp_path / "first")
    for i in range(3):
        put(i)
    offset = _tear(path, {"key": "k3", "half": "written"})
    if kind == "media token log":  # one journal per file and process: the resumed run is a new process
        from faultline_eval.model_wrappers import media_token_log

        media_token_log._token_logs.clear()
    path_again, put, keys = STORE_KINDS[kind](tmp_path / "first")  # the resumed run
    assert path_again == path
    put(3)
    put(4)
    assert keys() == {f"k{i}" for i in range(5)}  # 0 lost, including the record after the torn line
    assert any(str(path) in w and f"byte offset {offset}" in w for w in warnings), warnings
    assert path.read_bytes().endswith(b"\n") and len(path.read_bytes().splitlines()) == 5


def test_a_bit_flipped_record_is_reported_and_skipped_not_trusted(tmp_path, warnings):
    path = tmp_path / "replies.jsonl"
    store = ReplyStore(path)
    for i in range(5):
        store.put(f"k{i}", score=1000 + i)
    data = bytearray(path.read_bytes())
    third = data.index(b'"score": 1002')
    data[third + len('"score": ')] ^= 0x01  # '1' -> '0': still valid JSON, a wrong value
    path.write_bytes(bytes(data))
    reread = ReplyStore(path)
    assert reread.get("k2") is None and [reread.get(f"k{i}")["score"] for i in (0, 1, 3, 4)] == [1000, 1001, 1003, 1004]
    [warning] = warnings
    assert str(path) in warning and "line 3" in warning and "checksum mismatch" in warning
    reread.put("k2", score=1002)  # resumed: asked again, and stored after the damaged line
    assert ReplyStore(path).get("k2")["score"] == 1002


def test_files_written_before_checksums_stay_readable(tmp_path, warnings):
    path = tmp_path / "old.jsonl"
    path.write_text('{"key": "a", "v": 1}\n{"key": "b", "v": 2}\n')
    store = ReplyStore(path)
    store.put("c", v=3)
    assert [e["v"] for e in ReplyStore(path).entries()] == [1, 2, 3] and not warnings
    with open(path, "a") as handle:  # a line without checksum after checksummed ones is damage
        handle.write('{"key": "d", "v": 4}\n')
    assert ReplyStore(path).get("d") is None and "line 4" in warnings[0]


# --- full disk ------------------------------------------------------------------------------------

FULL_DISK_WRITER = """
import sys
from faultline_eval.core.store import ReplyStore, StoreError
store = ReplyStore(sys.argv[1])
acknowledged = 0
try:
    for i in range(10_000):
        store.put(f"k{i}", payload="x" * 100)
        acknowledged += 1
except StoreError as exc:
    print(acknowledged, exc, sep="\\n")
"""


def test_a_full_disk_raises_a_clear_error_and_leaves_no_partial_record(tmp_path, warnings):
    path, limit = tmp_path / "replies.jsonl", 20_000
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK_WRITER, str(path)],
        capture_output=True,
        text=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),
        check=True,
    )
    acknowledged, message = done.stdout.splitlines()[:2]
    assert str(path) in message and "could not append" in message and "unchanged" in message
    assert path.stat().st_size <= limit and path.read_bytes().endswith(b"\n")
    assert len(ReplyStore(path)) == int(acknowledged) > 100 and not warnings  # every acknowledged record, whole
    with pytest.raises(StoreError):  # in this process too, a failing write names the file
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(os, "write", lambda fd, data: (_ for _ in ()).throw(OSError(28, "No space left on device")))
            ReplyStore(path).put("more", payload="y")
    assert len(ReplyStore(path)) == int(acknowledged)


# --- concurrent writers ---------------------------------------------------------------------------

CONCURRENT_WRITER = """
import sys
from faultline_eval.core.store import ReplyStore
store = ReplyStore(sys.argv[1], fsync="never")
for i in range(int(sys.argv[3])):
    store.put(f"{sys.argv[2]}-{i}", payload=sys.argv[2] * (i % 5000))
"""


def test_two_processes_appending_to_one_store_never_interleave(tmp_path, warnings):
    path, n = tmp_path / "shared.jsonl", 400
    watching = ReplyStore(path)  # opened before the writers: their records must become visible
    writers = [
        subprocess.Popen([sys.executable, "-c", CONCURRENT_WRITER, str(path), name, str(n)]) for name in ("a", "b")
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    assert watching.get("b-399")["payload"] == "b" * 399  # a miss reads the other processes' appends
    assert len(watching) == 2 * n
    for line in path.read_bytes().splitlines():  # every line whole, one writer's payload
        record = json.loads(line)
        assert set(record["payload"]) <= {record["key"][0]}
    assert len(ReplyStore(path)) == 2 * n and not warnings


# --- kill -9 at seeded points ---------------------------------------------------------------------


@pytest.mark.slow
def test_kill_9_at_20_seeded_points_of_an_appending_process_loses_and_duplicates_nothing(tmp_path):
    faults = _load_faults_benchmark()
    # ~1 ms a record: more records than 20 delays (mean 0.85 s) can cover, so every kill lands in the appends
    result = faults.PIPELINES["store"](20, 0, tmp_path, records=20 * 1_000)
    assert result["killed"] >= 15  # most kills landed while it was appending
    assert result["acknowledged"] > 0
    assert (result["lost"], result["duplicated"], result["differing_files"]) == (0, 0, [])


PARQUET_WRITER = """
import sys, time
import pyarrow as pa, pyarrow.parquet as pq
from faultline_eval.core.store import replacing
began, round = time.monotonic(), 0
while round == 0 or time.monotonic() - began < float(sys.argv[2]):  # rewrite for argv[2] seconds
    version, round = round % 2, round + 1
    table = pa.table({"version": [version] * 200_000, "value": list(range(200_000))})
    with replacing(sys.argv[1]) as temporary:
        pq.write_table(table, str(temporary))
"""


@pytest.mark.slow
def test_a_kill_during_an_atomic_parquet_write_leaves_the_old_or_the_new_file(tmp_path):
    import pyarrow.parquet as pq

    target = tmp_path / "items.parquet"
    subprocess.run([sys.executable, "-c", PARQUET_WRITER, str(target), "0"], check=True)
    seen = []

    def check(_):
        table = pq.read_table(target)  # raises on a torn file
        assert table.num_rows == 200_000 and len(set(table["version"].to_pylist())) == 1
        seen.append(table["version"][0].as_py())

    # each run rewrites the file for 2.5 s, longer than any delay: every kill lands among the writes,
    # however fast the machine
    log = faultkit.run_with_kills(
        [sys.executable, "-c", PARQUET_WRITER, str(target), "2.5"],
        kill_points=8,
        seed=1,
        window_s=(0.4, 1.6),
        between=check,
    )
    assert log.returncode == 0 and log.killed == 8
    check(None)
    assert not list(tmp_path.glob(".items.parquet.*.tmp"))  # the killed writers' temporary files were removed


def test_replacing_keeps_the_old_file_when_the_writer_fails(tmp_path):
    target = tmp_path / "card.md"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with replacing(target) as temporary:
            temporary.write_text("half")
            raise RuntimeError("killed")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["card.md"]


# --- decode cache ---------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["bit flip", "cut short"])
def test_a_damaged_decode_cache_entry_is_named_and_decoded_again(damage, tmp_path, monkeypatch, warnings):
    from faultline_eval.core import decode_cache
    from faultline_eval.core.decode_cache import Decoded

    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    medium = tmp_path / "clip.bin"
    medium.write_bytes(b"media")
    decoded = np.arange(4096, dtype=np.float32).reshape(64, 64)

    def decode():
        return Decoded(decoded.copy(), (0.0,), ())

    decode_cache.clear_memory()
    decode_cache.load("test", [str(medium)], decode)
    [entry] = decode_cache.folder().rglob("*.bin")
    data = bytearray(entry.read_bytes())
    if damage == "bit flip":
        data[-1000] ^= 0x04
    else:
        del data[-1000:]
    entry.write_bytes(bytes(data))
    decode_cache.clear_memory()
    again = decode_cache.load("test", [str(medium)], decode)
    assert np.array_equal(again.array, decoded) and decode_cache.stats.decodes == 1  # never served, decoded again
    [warning] = warnings
    assert str(entry) in warning and ("checksum" if damage == "bit flip" else "cut short") in warning
    decode_cache.clear_memory()
    decode_cache.load("test", [str(medium)], decode)
    assert decode_cache.stats.disk_hits == 1 and len(warnings) == 1  # the entry was rewritten whole
