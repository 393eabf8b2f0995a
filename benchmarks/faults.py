"""Fault injection: kill -9 pipelines at seeded random points, rerun them, count what was lost;
and what the store's durability costs.

    python benchmarks/faults.py [--pipelines store,...] [--kill-points 50] [--seed 0]
                                [--records 2000] [--rounds 3] [--no-durability]

**Pipelines** (:data:`PIPELINES`, name -> ``(kill_points, seed, workdir) -> dict``): each runs a
command under :func:`faultkit.run_with_kills` (SIGKILL to the process group after a delay drawn
from a seeded generator, ``kill_points`` times, then a run to the end) and compares the result
with an uninterrupted run. Every pipeline returns at least ``kill_points``, ``killed`` (runs the
kill actually cut short), ``lost``, ``duplicated``, ``differing_files`` and ``seconds``.

- ``store``: a process appends records ``r000000``, ``r000001``, ... to one reply store
  (:class:`sceval_plugin.store.ReplyStore`, default fsync policy), skipping those already stored
  (a resumed run) and, after each ``put`` returns, noting the key in an acknowledgement file.
  ``lost``: acknowledged keys, or keys of the finished run, missing from the store; ``duplicated``:
  keys with more than one valid line; ``differing_files``: the store's bytes against the
  uninterrupted run's (torn tails are cut off, so they must be identical).

**Durability** (printed after the pipelines): appends per second of ``--records`` records of
~200 bytes to a fresh file by a plain ``open(path, "a").write`` per record (buffered, one close),
the same with a ``flush`` per record (what the reply store did before: a kill keeps every
record, but a torn tail was written onto and nothing was checked or locked), and by :meth:`ReplyStore.put` with fsync ``never``, ``batch`` (the default) and ``record``; the
arms are interleaved round by round (order rotated), the median of ``--rounds`` is printed with
its ratio to the plain write.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import faultkit  # noqa: E402  (tests/faultkit.py: shared with the fault-injection tests)

#: The appending process of the ``store`` pipeline: argv = store file, acknowledgement file,
#: records, seconds to pause after each (so the kills spread over the whole sequence).
STORE_WRITER = """
import os, sys, time
from sceval_plugin.store import ReplyStore
store, acks = ReplyStore(sys.argv[1]), os.open(sys.argv[2], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
for i in range(int(sys.argv[3])):
    key = f"r{i:06d}"
    if store.get(key) is None:
        store.put(key, i=i, payload="x" * (i * 7919 % 2_000))
        os.write(acks, (key + "\\n").encode())
        time.sleep(float(sys.argv[4]))
"""
STORE_RECORDS = 10_000
STORE_PAUSE_S = 0.001
KEY = re.compile(r"r\d{6}")


def _offline_env() -> dict:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


def store_pipeline(kill_points: int, seed: int, workdir: Path, records: int = STORE_RECORDS,
                   window_s: tuple[float, float] = (0.2, 1.5), pause_s: float = STORE_PAUSE_S) -> dict:
    """Kill an appending process ``kill_points`` times (see the module docstring); the records
    (up to 2 kB) are paced ``pause_s`` apart so that the kills spread over the whole sequence."""
    from sceval_plugin.store import read_records

    workdir = Path(workdir)
    clean, killed = workdir / "clean", workdir / "killed"
    acks = workdir / "acks.txt"
    for folder in (clean, killed):
        folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    command = [sys.executable, "-c", STORE_WRITER, str(killed / "store.jsonl"), str(acks), str(records),
               str(pause_s)]
    log = faultkit.run_with_kills(command, kill_points=kill_points, seed=seed, window_s=window_s,
                                  env=_offline_env())
    seconds = time.perf_counter() - start
    if log.returncode != 0:
        raise RuntimeError(f"store pipeline: the final run failed ({log.returncode}):\n{log.final_output}")
    subprocess.run([sys.executable, "-c", STORE_WRITER, str(clean / "store.jsonl"), str(workdir / "clean_acks.txt"),
                    str(records), "0"], check=True, env=_offline_env())
    lines = collections.Counter(record["key"] for record in read_records(killed / "store.jsonl"))
    acknowledged = set(KEY.findall(acks.read_text()))
    expected = {f"r{i:06d}" for i in range(records)}
    return {"kill_points": kill_points, "killed": log.killed, "lost": len((acknowledged | expected) - set(lines)),
            "duplicated": sum(1 for n in lines.values() if n > 1),
            "differing_files": faultkit.differing_files(faultkit.file_digests(clean), faultkit.file_digests(killed)),
            "seconds": round(seconds, 1), "acknowledged": len(acknowledged), "records": records}


PIPELINES: dict[str, Callable[[int, int, Path], dict]] = {
    "store": store_pipeline,
}


# --- durability ----------------------------------------------------------------------------------

def _plain(path: Path, lines: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line)


def _plain_flushed(path: Path, lines: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line)
            handle.flush()


def _store(policy: str) -> Callable[[Path, list[str]], None]:
    def append(path: Path, lines: list[str]) -> None:
        from sceval_plugin.store import ReplyStore

        with ReplyStore(path, fsync=policy) as store:
            for index in range(len(lines)):
                store.put(f"k{index}", payload=PAYLOAD)
    return append


PAYLOAD = "x" * 180
ARMS: dict[str, Callable[[Path, list[str]], None]] = {
    "plain open(a).write": _plain, "plain write + flush": _plain_flushed, "store, fsync never": _store("never"),
    "store, fsync batch (default)": _store("batch"), "store, fsync per record": _store("record"),
}


def durability(records: int, rounds: int, folder: Path | None = None) -> dict[str, float]:
    """Median appends per second of each arm (see the module docstring)."""
    import json

    lines = [json.dumps({"key": f"k{i}", "payload": PAYLOAD}) + "\n" for i in range(records)]
    rates: dict[str, list[float]] = {name: [] for name in ARMS}
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        names = list(ARMS)
        for r in range(rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                path = Path(tmp) / f"{r}-{len(rates[name])}-{names.index(name)}.jsonl"
                start = time.perf_counter()
                ARMS[name](path, lines)
                rates[name].append(records / (time.perf_counter() - start))
                path.unlink()
    return {name: statistics.median(values) for name, values in rates.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipelines", default=",".join(PIPELINES), help=f"comma-separated, of {sorted(PIPELINES)}")
    parser.add_argument("--kill-points", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--records", type=int, default=2000, help="records per durability arm and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-durability", action="store_true")
    parser.add_argument("--workdir", help="where pipelines write (default: a temporary folder)")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.pipelines.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(PIPELINES))
    if unknown:
        parser.error(f"unknown pipeline(s) {unknown}; choose from {sorted(PIPELINES)}")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.workdir or tmp)
        print(f"{'pipeline':<16}{'kill points':>12}{'killed':>8}{'lost':>6}{'duplicated':>11}{'differing':>10}"
              f"{'seconds':>9}")
        for name in chosen:
            result = PIPELINES[name](args.kill_points, args.seed, root / name)
            failed |= bool(result["lost"] or result["duplicated"] or result["differing_files"])
            print(f"{name:<16}{result['kill_points']:>12}{result['killed']:>8}{result['lost']:>6}"
                  f"{result['duplicated']:>11}{len(result['differing_files']):>10}{result['seconds']:>9}")
            for path in result["differing_files"][:10]:
                print(f"    differs: {path}")
    if not args.no_durability:
        rates = durability(args.records, args.rounds)
        plain = rates["plain open(a).write"]
        print(f"\nappends/s, {args.records} records of ~{len(PAYLOAD) + 40} bytes, median of {args.rounds} "
              f"interleaved rounds")
        for name, rate in rates.items():
            print(f"{name:<30}{rate:>12,.0f}/s{rate / plain:>9.3f}x plain")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
