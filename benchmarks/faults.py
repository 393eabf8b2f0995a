"""Fault injection: kill -9 pipelines at seeded random points, rerun them, count what was lost.

    python benchmarks/faults.py [--pipelines sceval_annotate,sceval_publish] [--kill-points 50] [--seed 0]

(On this branch only the SCEval build pipelines; the store pipelines and the durability figures
come with the store's branch, in the same :data:`PIPELINES` table.) Each pipeline runs a command
under :func:`faultkit.run_with_kills` and compares the result with an uninterrupted run, returning
at least ``kill_points``, ``killed``, ``lost``, ``duplicated``, ``differing_files`` and ``seconds``.

- ``sceval_annotate``: ``sceval build annotate import`` of a filled full pass (3 demo items, 2
  simulated annotators) killed; then, uninterrupted, adjudication, ``manifest`` and
  ``agreement``. ``lost`` / ``duplicated``: label rows of the uninterrupted import missing from, or
  repeated in, ``labels.jsonl``; ``differing_files``: the whole build folder against the
  uninterrupted one's (labels, manifest, funnel, retention, rejected list, agreement);
  ``half_written`` (``torn`` in the table): kills after which ``labels.jsonl`` existed but was not whole.
- ``sceval_publish``: ``sceval build publish`` of that build killed. ``lost`` / ``duplicated``:
  items of the uninterrupted parquet missing from, or repeated in, the published one;
  ``differing_files``: the published folder (parquet, card, manifest, funnel, media) and its
  parent (no ``.published.partial`` left behind); ``half_written``: kills after which
  ``published/`` existed but was not the finished folder (a half-written parquet, say).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import faultkit  # noqa: E402  (tests/faultkit.py: shared with the fault-injection tests)

SCEVAL = str(Path(sys.executable).with_name("sceval"))


def _offline_env() -> dict:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


def _setup(*args) -> None:
    """A preparation step (``sceval ARGS``), in this process: no interpreter start per step."""
    from sceval_plugin.cli import main as sceval_main

    if sceval_main([str(a) for a in args]) != 0:
        raise RuntimeError(f"sceval {' '.join(map(str, args))} failed")


def _sceval(*args, env: dict) -> float:
    """Run ``sceval ARGS`` to the end in a process of its own (it must succeed); returns its wall time."""
    start = time.perf_counter()
    done = subprocess.run([SCEVAL, *map(str, args)], env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"sceval {' '.join(map(str, args))}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.perf_counter() - start


def _filled_build(root: Path) -> Path:
    """A build folder whose full pass is exported and filled (3 demo items, 2 SIMULATED annotators)."""
    from fixtures import copy_demo

    copy_demo(root / "pool", 3)
    (root / "pool" / "funnel.json").write_text(json.dumps({"seed": 0, "budget": 3, "excluded": [], "sources": {
        "sceval-demo": {"examples": 3, "converted": 3, "eligible": 3, "pooled": 3}}}), encoding="utf-8")
    _setup("build", "annotate", "export", root, "--pass", "full", "--annotators", "ann1,ann2")
    _setup("build", "annotate", "simulate", root, "--pass", "full", "--seed", "3")
    return root


def _finish_annotation(build: Path) -> None:
    """Adjudication (simulated), manifest and agreement after the full pass is imported."""
    _setup("build", "annotate", "export", build, "--pass", "adjudication", "--annotators", "senior")
    _setup("build", "annotate", "simulate", build, "--pass", "adjudication", "--seed", "3")
    _setup("build", "annotate", "import", build, "--pass", "adjudication")
    _setup("build", "manifest", build)
    _setup("build", "agreement", build)


def _label_keys(build: Path) -> list[tuple]:
    path = build / "annotation" / "full" / "labels.jsonl"
    if not path.is_file():
        return []
    return [(r["annotator"], r["sheet"], r["sample_id"], r["operator"], r["severity"], r["variant"])
            for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())]


def _counted(expected: list, got: list) -> dict:
    have = collections.Counter(got)
    return {"lost": len(set(expected) - set(have)), "duplicated": sum(n - 1 for n in have.values() if n > 1)}


def sceval_annotate_pipeline(kill_points: int, seed: int, workdir: Path) -> dict:
    """Kill ``sceval build annotate import`` ``kill_points`` times (see the module docstring)."""
    workdir, env = Path(workdir), {**_offline_env(), "SCEVAL_CACHE": str(Path(workdir) / "cache")}
    template = _filled_build(workdir / "template")
    clean, killed = workdir / "clean", workdir / "killed"
    shutil.copytree(template, clean)
    shutil.copytree(template, killed)
    start = time.perf_counter()
    took = _sceval("build", "annotate", "import", clean, "--pass", "full", env=env)
    labels = "annotation/full/labels.jsonl"
    half = _half_written(clean / labels, killed / labels)
    log = faultkit.run_with_kills([SCEVAL, "build", "annotate", "import", str(killed), "--pass", "full"],
                                  kill_points=kill_points, seed=seed, window_s=(0.05, 1.2 * took), env=env,
                                  between=half)
    if log.returncode != 0:
        raise RuntimeError(f"the last import failed: {log.final_output[-2000:]}")
    counts = _counted(_label_keys(clean), _label_keys(killed))
    for build in (clean, killed):
        _finish_annotation(build)
    differing = faultkit.differing_files(faultkit.file_digests(clean), faultkit.file_digests(killed))
    return {"kill_points": kill_points, "killed": log.killed, **counts, "differing_files": differing,
            "half_written": half.count, "seconds": time.perf_counter() - start}


class _half_written:
    """Called after each kill: counts the kills that left ``output`` (a file or folder) present
    but not whole (not the bytes of the uninterrupted run's ``reference``)."""

    def __init__(self, reference: Path, output: Path):
        self.reference, self.output, self.count = reference, output, 0
        self.expected = self._digests(reference)

    @staticmethod
    def _digests(path: Path) -> dict:
        return faultkit.file_digests(path) if path.is_dir() else {"": hashlib.sha256(path.read_bytes()).hexdigest()}

    def __call__(self, index: int) -> None:
        if self.output.exists() and self._digests(self.output) != self.expected:
            self.count += 1


def _published_ids(folder: Path) -> list[str]:
    import pyarrow.parquet as pq

    path = folder / "items.parquet"
    return pq.read_table(path, columns=["sample_id"]).column("sample_id").to_pylist() if path.is_file() else []


def sceval_publish_pipeline(kill_points: int, seed: int, workdir: Path) -> dict:
    """Kill ``sceval build publish`` ``kill_points`` times (see the module docstring)."""
    workdir, env = Path(workdir), {**_offline_env(), "SCEVAL_CACHE": str(Path(workdir) / "cache")}
    template = _filled_build(workdir / "template")
    _setup("build", "annotate", "import", template, "--pass", "full")
    _finish_annotation(template)
    clean, killed = workdir / "clean", workdir / "killed"
    shutil.copytree(template, clean)
    shutil.copytree(template, killed)
    start = time.perf_counter()
    took = _sceval("build", "publish", clean, env=env)
    half = _half_written(clean / "published", killed / "published")
    log = faultkit.run_with_kills([SCEVAL, "build", "publish", str(killed)], kill_points=kill_points, seed=seed,
                                  window_s=(0.05, 1.2 * took), env=env, between=half)
    if log.returncode != 0:
        raise RuntimeError(f"the last publish failed: {log.final_output[-2000:]}")
    counts = _counted(_published_ids(clean / "published"), _published_ids(killed / "published"))
    differing = faultkit.differing_files(faultkit.file_digests(clean), faultkit.file_digests(killed))
    return {"kill_points": kill_points, "killed": log.killed, **counts, "differing_files": differing,
            "half_written": half.count, "seconds": time.perf_counter() - start}


PIPELINES = {}
PIPELINES["sceval_annotate"] = sceval_annotate_pipeline
PIPELINES["sceval_publish"] = sceval_publish_pipeline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipelines", default=",".join(PIPELINES))
    parser.add_argument("--kill-points", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"{'pipeline':18} {'kills':>6} {'killed':>6} {'lost':>5} {'dup':>5} {'differ':>6} {'torn':>5} {'seconds':>8}")
    for name in args.pipelines.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            r = PIPELINES[name](args.kill_points, args.seed, Path(tmp))
        print(f"{name:18} {r['kill_points']:6} {r['killed']:6} {r['lost']:5} {r['duplicated']:5} "
              f"{len(r['differing_files']):6} {r.get('half_written', 0):5} {r['seconds']:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
