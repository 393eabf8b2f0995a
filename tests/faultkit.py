"""Kill a pipeline with SIGKILL at seeded random points, rerun it, and compare with an uninterrupted run.

The fault-injection tests and ``benchmarks/faults.py`` share this: a command is started, killed
(its whole process group, ``kill -9``) after a delay drawn from a seeded generator, started again,
and so on; then it runs to the end. The caller compares the outputs with those of a run that was
never killed (:func:`tree_digest`, :func:`differing_files`).
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class KillLog:
    """What :func:`run_with_kills` did: the delay drawn for each start, how many starts the kill
    cut short (a run that ended before its delay was not killed), and the final run's exit status."""

    delays: list[float] = field(default_factory=list)
    killed: int = 0
    returncode: int | None = None
    final_output: str = ""


def _start(
    command: Sequence[str], env: dict | None, cwd: str | Path | None, popen: type[subprocess.Popen]
) -> subprocess.Popen:
    return popen(
        list(command),
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.communicate()


def run_with_kills(
    command: Sequence[str],
    *,
    kill_points: int,
    seed: int,
    window_s: tuple[float, float],
    env: dict | None = None,
    cwd: str | Path | None = None,
    timeout_s: float = 600,
    between: Callable[[int], None] | None = None,
    started: Callable[[], bool] | None = None,
    popen: type[subprocess.Popen] = subprocess.Popen,
) -> KillLog:
    """Kill ``command`` with SIGKILL ``kill_points`` times, each after a delay drawn uniformly from
    ``window_s`` by ``random.Random(seed)``, then run it once more to completion.

    A run that ends before its delay was not killed and does not count: another delay is drawn and
    the command started again, up to ``2 * kill_points`` starts, so a window measured on a slower
    run (a loaded machine speeds up) still lands the kills a test asks for. ``between(i)``, if
    given, runs after the i-th start (to damage a file, say). ``started()``, if given, is polled
    after each start and the delay counts from when it first returns true (say, when a fake server
    has answered this run's first request), so kills land in the work rather than in a start-up of
    varying length. ``popen`` starts each run (``benchmarks/faults.py`` passes its own). The last
    run's exit status and output are in the returned :class:`KillLog`.
    """
    rng = random.Random(seed)
    log = KillLog()
    for index in range(2 * kill_points):
        if log.killed == kill_points:
            break
        delay = rng.uniform(*window_s)
        log.delays.append(delay)
        process = _start(command, env, cwd, popen)
        while started is not None and not started() and process.poll() is None:
            time.sleep(0.01)
        try:
            process.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            log.killed += 1
        else:
            process.communicate()
        if between is not None:
            between(index)
    process = _start(command, env, cwd, popen)
    output, _ = process.communicate(timeout=timeout_s)
    log.returncode, log.final_output = process.returncode, output
    return log


def file_digests(root: str | Path, ignore: Callable[[Path], bool] = lambda path: False) -> dict[str, str]:
    """sha256 of every file under ``root``, keyed by its path relative to ``root``."""
    root = Path(root)
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not ignore(path.relative_to(root))
    }


def differing_files(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """Paths present in only one of two :func:`file_digests`, or with different bytes."""
    return sorted(name for name in a.keys() | b.keys() if a.get(name) != b.get(name))
