"""The shared decode cache: one decode per medium across tasks, processes and runs."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from c3po_fixtures import write_mp4

from c3po_plugin.data.records import item_from_row as c3po_item
from faultline_app.sceval_cli import main
from faultline_eval.core import decode_cache, media
from sceval_plugin.conditions import catalogue
from sceval_plugin.data.records import RecordError, item_from_row
from sceval_plugin.render import render


@pytest.fixture
def dataset(tmp_path, monkeypatch):
    """A one-item video dataset and a cache of its own, empty in memory and on disk."""
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    write_mp4(tmp_path / "data" / "clip.mp4", frames=12, fps=2)
    media.write_audio(tmp_path / "data" / "a.wav", np.linspace(-0.5, 0.5, 16_000, dtype=np.float32), 22_050)
    decode_cache.clear_memory()
    yield tmp_path / "data"
    decode_cache.clear_memory()


def video_item(root: Path, sample_id: str = "v1"):
    row = {
        "sample_id": sample_id,
        "question": "q?",
        "options": ["a", "b"],
        "gold_key": "A",
        "visual": "clip.mp4",
        "audio": "a.wav",
    }
    return item_from_row(row, root)


def item_script(code: str, root: Path) -> str:
    """Python source that builds the fixture's item (``item``, ``digest()``) and then runs ``code``."""
    return textwrap.dedent(f"""
        import hashlib, json
        from faultline_eval.core import decode_cache
        from sceval_plugin.data.records import item_from_row
        item = item_from_row({{"sample_id": "v1", "question": "q?", "options": ["a", "b"], "gold_key": "A",
                              "visual": "clip.mp4", "audio": "a.wav"}}, {str(root)!r})
        digest = lambda: hashlib.sha256(item.frames().tobytes() + item.waveform().tobytes()).hexdigest()
    """) + textwrap.dedent(code)


def run_python(code: str, root: Path) -> dict:
    """Run ``code`` in a fresh interpreter (same cache folder) and return the JSON it prints last."""
    out = subprocess.run(
        [sys.executable, "-c", item_script(code, root)],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_task_and_a_second_process_do_not_decode_again(dataset):
    item = video_item(dataset)
    conditions = [c for c in catalogue() if c.id in ("clean", "single_mute_a30")]  # two tasks of one run
    assert len(conditions) == 2
    for condition in conditions:
        render(item, condition, 0)
    assert decode_cache.stats.decodes == 2  # frames and audio, once each
    assert decode_cache.stats.memory_hits >= 2

    fresh = media.read_video_frames(dataset / "clip.mp4")
    wave, _, notes = media.read_audio(dataset / "a.wav")
    other = run_python(
        'print(json.dumps({"digest": digest(), "decodes": decode_cache.stats.decodes,'
        ' "disk_hits": decode_cache.stats.disk_hits, "notes": item.media_notes()}))',
        dataset,
    )
    assert other["decodes"] == 0 and other["disk_hits"] == 2  # read from disk, memory-mapped
    assert other["digest"] == hashlib.sha256(fresh.frames.tobytes() + wave.tobytes()).hexdigest()  # byte-identical
    assert other["notes"] == [*fresh.notes, *notes] and any("resampled 22050 Hz" in n for n in notes)
    decode_cache.clear_memory()
    cached = video_item(dataset)
    assert cached.frames().dtype == fresh.frames.dtype and cached.frame_times() == fresh.times
    assert not cached.frames().flags.writeable

    # A C3PO item with the same clip shares the entry: one mechanism for both plugins.
    row = {
        "sample_id": "c1",
        "template": "IC02",
        "question": "q?",
        "answer": "a",
        "video": "clip.mp4",
        "audio": "a.wav",
    }
    c3po = c3po_item(row, dataset)
    assert np.array_equal(c3po.frames(), fresh.frames) and decode_cache.stats.decodes == 0


def test_concurrent_writers_and_evictions_never_give_a_corrupt_read(dataset):
    expected = run_python('print(json.dumps({"digest": digest()}))', dataset)["digest"]
    code = """
        for i in range(40):
            decode_cache.clear_memory()
            assert digest() == EXPECTED, i
            if i % 3 == 0:
                decode_cache.evict(0)  # the other process may be reading or writing this entry now
        print(json.dumps({"ok": True}))
    """.replace("EXPECTED", repr(expected))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", item_script(code, dataset)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
        for _ in range(2)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
        assert json.loads(out.strip().splitlines()[-1]) == {"ok": True}
    assert not list(decode_cache.folder().rglob("*.tmp"))  # every temporary file was renamed or removed


def test_a_changed_file_is_decoded_again(tmp_path, monkeypatch):
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    decode_cache.clear_memory()
    image = tmp_path / "f.png"
    media.write_image(image, np.full((8, 8, 3), 10, np.uint8))
    media.write_audio(tmp_path / "a.wav", np.zeros(160, np.float32))
    row = {
        "sample_id": "s",
        "question": "q?",
        "options": ["a", "b"],
        "gold_key": "A",
        "visual": "f.png",
        "audio": "a.wav",
    }
    assert item_from_row(row, tmp_path).frames().max() == 10
    media.write_image(image, np.full((8, 8, 3), 200, np.uint8))
    os.utime(image, ns=(os.stat(image).st_atime_ns, os.stat(image).st_mtime_ns + 1_000_000))
    decode_cache.clear_memory()  # the disk entry of the old file must not be read either
    assert item_from_row(row, tmp_path).frames().max() == 200
    assert decode_cache.stats.decodes == 1 and decode_cache.stats.disk_hits == 0


def test_a_broken_file_raises_the_same_error_every_time_and_is_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    decode_cache.clear_memory()
    (tmp_path / "f.png").write_bytes(b"not a png")
    media.write_audio(tmp_path / "a.wav", np.zeros(160, np.float32))
    row = {
        "sample_id": "s",
        "question": "q?",
        "options": ["a", "b"],
        "gold_key": "A",
        "visual": "f.png",
        "audio": "a.wav",
    }
    item = item_from_row(row, tmp_path)
    for _ in range(2):
        with pytest.raises(RecordError, match=r"sample 's': field 'visual': .*f\.png: cannot decode image"):
            item.frames()
    assert decode_cache.stats.decodes == 0 and not list(decode_cache.folder().rglob("*.bin"))


def test_the_size_limit_evicts_the_oldest_entries_and_sceval_cache_clear_empties_it(dataset, monkeypatch, capsys):
    video_item(dataset).frames()
    [first] = decode_cache.folder().rglob("*.bin")
    # Room for 1.2 first entries: writing a second (3 of the 6 frames) must evict the first.
    monkeypatch.setenv(decode_cache.DISK_ENV, str(1.2 * first.stat().st_size / 1e9))
    video_item(dataset).frames_at_budget(3)
    [second] = decode_cache.folder().rglob("*.bin")
    size = second.stat().st_size
    assert second != first and decode_cache.disk_usage() == size
    assert main(["cache", "clear"]) == 0 and decode_cache.disk_usage() == 0
    assert f"freed {size / 1e6:.1f} MB" in capsys.readouterr().out
