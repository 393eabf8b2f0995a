"""Fault injection: kill -9 each pipeline at seeded random points, rerun it, compare with a run never killed.

    python benchmarks/faults.py [--pipelines c3po_build] [--kill-points 50] [--seed 0]

Each entry of :data:`PIPELINES` is ``(kill_points, seed, workdir) -> dict`` with at least
``kill_points``, ``killed`` (runs the kill actually cut short), ``lost``, ``duplicated``,
``differing_files`` and ``seconds``; the tests call the same functions at CI size.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

for _k, _v in {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
               "NO_ALBUMENTATIONS_UPDATE": "1", "WANDB_MODE": "disabled", "TQDM_DISABLE": "1"}.items():
    os.environ.setdefault(_k, _v)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


# --- c3po build all --------------------------------------------------------------------------------

#: The scripted build of the kill test: generator scenario and auditor decision by sample index
#: (as tests/test_c3po_build_pipeline.py), over the demo pool's first 7 candidates of each template.
C3PO_GENERATOR = {1: "malformed", 2: "banned-word", 3: "does-not-fit", 4: "malformed-then-good", 5: "sfx"}
C3PO_AUDITOR = {0: "reject", 6: "accept-unusable-media"}


def c3po_build_digests(build_dir: Path) -> dict[str, str]:
    """What a build made, by sha256: every file except the logs of how it ran (``replies/``: reply
    stores and usage with latencies; ``settings.json``: the options given; the raw ledger files,
    whose lines a kill or a retry changes), plus each ledger's content
    (:meth:`~c3po_plugin.build.ledger.Ledger.snapshot`) as ``ledger/<stage>.jsonl#content``."""
    from faultkit import file_digests

    from c3po_plugin.build.ledger import Ledger

    logs = lambda rel: rel.parts[0] in ("replies", "ledger") or str(rel) == "settings.json"  # noqa: E731
    digests = file_digests(build_dir, ignore=logs)
    for ledger in sorted((build_dir / "ledger").glob("*.jsonl")):
        snapshot = Ledger(build_dir, ledger.stem).snapshot()
        digests[f"ledger/{ledger.name}#content"] = hashlib.sha256(snapshot.encode()).hexdigest()
    return digests


def _exported_ids(build_dir: Path) -> list[str]:
    import pyarrow.parquet as pq

    parquet = build_dir / "export" / "items.parquet"
    return pq.read_table(parquet, columns=["sample_id"]).column("sample_id").to_pylist() if parquet.is_file() else []


def c3po_build(kill_points: int, seed: int, workdir: Path, templates: str = "IC01") -> dict:
    """``c3po build all`` over the demo pool against the scripted fake Gemini (tests/build_fakes.py),
    killed ``kill_points`` times at delays drawn from ``(0.05 T, 0.45 T)`` (T: the uninterrupted
    build's wall time on this machine, so the kills fall inside the build however loaded the
    machine is; each rerun resumes, so the kills move through every stage), then run to the end. ``lost``: samples the reference exports that the killed
    build does not, plus candidates the killed build left unsettled; ``duplicated``: exported rows
    beyond one per sample; ``differing_files``: :func:`c3po_build_digests` that differ."""
    from build_fakes import Scripted
    from fake_gemini import FakeGemini
    from faultkit import differing_files, run_with_kills

    workdir = Path(workdir)
    c3po = str(Path(sys.executable).with_name("c3po"))
    env = {**os.environ, "GEMINI_API_KEY": "faults-key", "SCEVAL_CACHE": str(workdir / "cache"), "TQDM_DISABLE": "1"}
    began = time.perf_counter()
    with FakeGemini(script=Scripted(C3PO_GENERATOR, C3PO_AUDITOR)) as server:
        spec = f"gemini:gemini-test,base_url={server.url},max_retries=1,initial_backoff=0.01,timeout=10"

        def command(build: Path) -> list[str]:
            return [c3po, "build", "all", str(build), "--pool", "demo", "--generator", spec, "--templates", templates,
                    "--per-template", "1-7", "--annotators", "1"]

        start = time.perf_counter()
        reference = run_with_kills(command(workdir / "reference"), kill_points=0, seed=seed, window_s=(0, 0),
                                   env=env, cwd=workdir)
        if reference.returncode != 0:
            raise RuntimeError(f"the uninterrupted c3po build failed:\n{reference.final_output[-3000:]}")
        wall = time.perf_counter() - start
        log = run_with_kills(command(workdir / "killed"), kill_points=kill_points, seed=seed,
                             window_s=(0.05 * wall, 0.45 * wall), env=env, cwd=workdir)
    if log.returncode != 0:
        raise RuntimeError(f"the c3po build run after the kills failed:\n{log.final_output[-3000:]}")
    wanted, got = _exported_ids(workdir / "reference"), _exported_ids(workdir / "killed")
    import json

    unsettled = json.loads((workdir / "killed" / "export" / "funnel.json").read_text())["total"]["unsettled"]
    return {"kill_points": kill_points, "killed": log.killed, "lost": len(set(wanted) - set(got)) + unsettled,
            "duplicated": len(got) - len(set(got)), "exported": len(got),
            "differing_files": differing_files(c3po_build_digests(workdir / "reference"),
                                               c3po_build_digests(workdir / "killed")),
            "seconds": round(time.perf_counter() - began, 1), "uninterrupted_s": round(wall, 1)}


PIPELINES = {
    "c3po_build": c3po_build,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipelines", default=",".join(PIPELINES), help=f"comma-separated, of {', '.join(PIPELINES)}")
    parser.add_argument("--kill-points", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rows = []
    for name in args.pipelines.split(","):
        with tempfile.TemporaryDirectory(prefix=f"faults-{name}-") as folder:
            result = PIPELINES[name](args.kill_points, args.seed, Path(folder))
        rows.append((name, result["kill_points"], result["killed"], result["lost"], result["duplicated"],
                     len(result["differing_files"]), result["seconds"]))
        for path in result["differing_files"][:10]:
            print(f"{name}: differs: {path}")
    print(f"{'pipeline':<14} {'kill points':>11} {'killed':>7} {'lost':>5} {'duplicated':>10} {'differing':>9} {'seconds':>8}")
    for row in rows:
        print(f"{row[0]:<14} {row[1]:>11} {row[2]:>7} {row[3]:>5} {row[4]:>10} {row[5]:>9} {row[6]:>8}")
    return 0 if all(r[3] == r[4] == r[5] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
