"""Decodes per item and wall time of a panel-sized request sequence: the shared decode cache
against the per-function ``lru_cache(64)`` it replaced, measured in the same run.

    python benchmarks/decode_cache.py [--items 96] [--rounds 3]

Data: ``--items`` items, each an 8 s 640x360 mp4 (4 fps; App. F.2 samples 8 frames) and 8 s of
16 kHz audio. The request sequence is a ``sceval_panel`` run's media accesses: for each of
its 13 tasks (clean + the 12 cells of Table 31) in turn, every item, 3 variants per cell (the
clean task has 1), each request reading the item's frames and waveform. Corruption and
encoding are left out: they are the same for every arm (each request touches every memory
page of its media, so mapped entries are paged in).

Arms, interleaved round by round (their order rotates):

* ``lru(64)``: the old behaviour, one ``functools.lru_cache(maxsize=64)`` per medium kind;
* ``cold``: the decode cache with empty memory and disk (a first run);
* ``warm``: the decode cache with empty memory and the disk the cold arm left (a later run,
  or another data-parallel rank).

Printed per arm: fresh decodes per medium (an item has two: its frames and its audio) and the median wall time; then ratios to ``lru(64)``.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import provenance

PANEL_TASKS = 13  # clean + the 12 cells of Table 31
VARIANTS = 3


def make_items(folder: Path, count: int) -> list:
    import av

    from faultline_eval.core import media
    from sceval_plugin.data.records import item_from_row

    rng = np.random.default_rng(0)
    items = []
    for i in range(count):
        sid = f"bench-{i:03d}"
        (folder / sid).mkdir(parents=True, exist_ok=True)
        base = np.kron(rng.integers(0, 256, size=(45, 80, 3), dtype=np.uint8), np.ones((8, 8, 1), np.uint8))
        with av.open(str(folder / sid / "clip.mp4"), "w") as container:
            stream = container.add_stream("mpeg4", rate=4)
            stream.width, stream.height, stream.pix_fmt = 640, 360, "yuv420p"
            for j in range(32):
                frame = av.VideoFrame.from_ndarray(np.roll(base, 4 * j, axis=1), format="rgb24")
                for packet in stream.encode(frame):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)
        t = np.arange(8 * 16_000) / 16_000
        media.write_audio(folder / sid / "audio.wav", (0.3 * np.sin(2 * np.pi * (220 + i) * t)).astype(np.float32))
        items.append(
            item_from_row(
                {
                    "sample_id": sid,
                    "question": "q?",
                    "options": ["a", "b"],
                    "gold_key": "A",
                    "visual": f"{sid}/clip.mp4",
                    "audio": f"{sid}/audio.wav",
                },
                folder,
            )
        )
    return items


def requests(items: list):
    for task in range(PANEL_TASKS):
        for item in items:
            for _ in range(1 if task == 0 else VARIANTS):
                yield item


def touch(array: np.ndarray) -> int:
    """Read one byte of every 4 kB page, so a memory-mapped entry is paged in as a request using it
    would, without timing arithmetic every arm does alike."""
    return int(array.reshape(-1).view(np.uint8)[::4096].sum())


def run_lru(items: list) -> tuple[float, int]:
    """The replaced mechanism: ``lru_cache(64)`` over the same decoders."""
    from faultline_eval.core.record_fields import decode_audio, decode_frames

    decodes = 0

    @functools.lru_cache(maxsize=64)
    def frames(paths):
        nonlocal decodes
        decodes += 1
        return decode_frames(paths)

    @functools.lru_cache(maxsize=64)
    def audio(path):
        nonlocal decodes
        decodes += 1
        return decode_audio(path)

    start = time.perf_counter()
    for item in requests(items):
        touch(frames(item.visual).array), touch(audio(item.audio).array)
    return time.perf_counter() - start, decodes


def run_cache(items: list, *, cold: bool) -> tuple[float, int]:
    from faultline_eval.core import decode_cache

    if cold:
        decode_cache.clear()
    decode_cache.clear_memory()
    start = time.perf_counter()
    for item in requests(items):
        touch(item.frames()), touch(item.waveform())
    return time.perf_counter() - start, decode_cache.stats.decodes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help=f"{provenance.SMOKE_HELP}: 2 items, one round")
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.items, args.rounds = 2, 1
    record = provenance.Record(__file__, peer="lru_cache(64) per medium kind")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SCEVAL_CACHE"] = str(Path(tmp) / "cache")  # this run's own, cleared by the cold arm
        items = make_items(Path(tmp) / "data", args.items)
        n_requests = sum(1 for _ in requests(items))
        arms = {
            "lru(64)": run_lru,
            "cold": lambda it: run_cache(it, cold=True),
            "warm": lambda it: run_cache(it, cold=False),
        }
        times: dict[str, list[float]] = {name: [] for name in arms}
        decodes: dict[str, int] = {}
        for r in range(args.rounds):
            order = ["lru(64)", "cold", "warm"] if r % 2 == 0 else ["cold", "warm", "lru(64)"]
            for name in order:  # warm always follows cold: it reads what cold wrote
                elapsed, count = arms[name](items)
                times[name].append(elapsed)
                decodes[name] = count
    print(
        f"{args.items} items (8 s 640x360 mp4 + 8 s audio), {n_requests} requests "
        f"({PANEL_TASKS} panel tasks), {args.rounds} interleaved rounds"
    )
    print(f"{'arm':<9} {'decodes/medium':>15} {'median s':>9} {'requests/s':>11}")
    for name in arms:
        median = statistics.median(times[name])
        print(f"{name:<9} {decodes[name] / args.items / 2:>15.2f} {median:>9.2f} {n_requests / median:>11.0f}")
    peer = statistics.median(times["lru(64)"])
    for name in ("cold", "warm"):
        print(
            f"{name} vs lru(64): {peer / statistics.median(times[name]):.1f}x faster, "
            f"{decodes['lru(64)'] / max(decodes[name], 1):.0f}x fewer decodes"
            if decodes[name]
            else f"{name} vs lru(64): {peer / statistics.median(times[name]):.1f}x faster, no decodes at all"
        )
    for name in arms:
        record.figure(f"{name}_s", statistics.median(times[name]), "s", f"{name}: {n_requests} requests, median")
        record.figure(f"{name}_decodes_per_medium", decodes[name] / args.items / 2, "", f"{name}: decodes per medium")
    for name in ("cold", "warm"):
        record.figure(f"{name}_speedup", peer / statistics.median(times[name]), "x", f"lru(64) / {name}")
    record.write(args.json, smoke=args.smoke)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
