"""Fault injection: kill -9 pipelines at seeded random points, rerun, compare with an uninterrupted run.

    python benchmarks/faults.py [--pipelines lmms_run] [--kill-points 50] [--seed 0]

Each pipeline is a function ``(kill_points, seed, workdir) -> dict`` with at least
``kill_points, killed, lost, duplicated, differing_files, seconds`` (tests/faultkit.py does the
killing); ``main`` runs the chosen ones and prints a table. The tests call the same functions
with CI-sized parameters.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from faultkit import run_with_kills  # noqa: E402

BIN = Path(sys.executable).parent
ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TRANSFORMERS_OFFLINE": "1",
       "NO_ALBUMENTATIONS_UPDATE": "1", "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1"}

# --- lmms_run: an lmms-eval run of sceval_openai against the fake OpenAI server -------------------

#: What legitimately differs between two runs of the same evaluation: wall-clock fields of the
#: results, the memory addresses in the reprs of the task functions lmms-eval writes into the
#: results' ``configs``, and each record's latency and its note that the reply was restored from
#: the reply store (a resumed run restores the latency the reply first had, and says so).
RESULTS_TIME_FIELDS = ("date", "start_time", "end_time", "total_evaluation_time_seconds", "efficiency")
RECORD_TIME_FIELDS = ("latency_s",)
RESTORED_NOTE = "restored from the reply store"
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")
_STORED_REQUEST = re.compile(r"request ([0-9a-f]{16})")


def _run_outputs(out: Path) -> tuple[dict, dict[str, list[dict]], int]:
    """The newest run's results (time fields dropped) and per-task sample lines (latency dropped),
    and how many files older runs (killed ones) left in ``out``."""
    results = sorted(out.rglob("*_results.json"))
    newest = results[-1].name.split("_results.json")[0]
    summary = json.loads(_ADDRESS.sub("", results[-1].read_text()))
    for name in RESULTS_TIME_FIELDS:
        summary.pop(name, None)
    samples: dict[str, list[dict]] = {}
    for path in sorted(out.rglob(f"{newest}_samples_*.jsonl")):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        for line in lines:
            record = next((v for k, v in line.items() if k.endswith("_record") and isinstance(v, dict)), {})
            for name in RECORD_TIME_FIELDS:
                record.pop(name, None)
            if record.get("failure_detail") == RESTORED_NOTE:
                record["failure_detail"] = ""
        samples[path.name.split("_samples_", 1)[1]] = lines
    stale = sum(1 for p in out.rglob("*") if p.is_file() and not p.name.startswith(newest))
    return summary, samples, stale


def _differences(a, b, path: str = "") -> list[str]:
    """The JSON paths where ``a`` and ``b`` differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(a.keys() | b.keys()) for d in _differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [path]


def _stored_requests(store: Path) -> set[str]:
    """The request digests whose replies the reply store holds (a torn last line does not count,
    as the store does not read it)."""
    stored: set[str] = set()
    if store.exists():
        for line in store.read_text(errors="replace").splitlines():
            try:
                json.loads(line)
            except ValueError:
                continue
            stored.update(_STORED_REQUEST.findall(line))
    return stored


def lmms_run(kill_points: int, seed: int, workdir: Path, *, tasks: str = "sceval_clean,sceval_t30_v70",
             limit: int | None = None, latency_s: float = 0.1, concurrency: int = 2) -> dict:
    """kill -9 ``faultline-eval`` (lmms-eval with ``--log_samples``) running ``sceval_openai``
    against the local fake OpenAI server, ``kill_points`` times, each at a delay drawn by
    ``random.Random(seed)`` from the run's first answered request, resuming each time from the
    reply store; then run it to the end and compare with an uninterrupted run. The delays are
    uniform in ``(0, 1.5 x R / kill_points)``, R the request phase of the uninterrupted run, so
    each kill takes about 3/4 of its share of the requests: most kills land among the requests,
    the last ones also in scoring and writing (a run with nothing left to send is not killed).

    Returns ``lost`` / ``duplicated`` records (by doc id, per task, against the uninterrupted
    run), ``differing_files`` (the final run's results and per-sample files whose content differs
    from the uninterrupted run's, ignoring :data:`RESULTS_TIME_FIELDS` and each record's
    :data:`RECORD_TIME_FIELDS`), ``resent_after_stored`` (requests the fake answered again after
    the reply store held their reply; must be 0), ``resent`` (all repeats, those killed between
    answer and store included), ``stale_files`` (outputs older, killed runs left) and the exit
    status of the final run.
    """
    from fake_openai import FakeOpenAI

    workdir = Path(workdir)
    started_at = time.perf_counter()
    with FakeOpenAI(latency=latency_s, tag_replies=True) as fake:
        fake.httpd.handle_error = lambda request, address: None  # a killed client resets its connection
        model_args = (f"base_url={fake.url},store=replies.jsonl,audio_canary=off,max_concurrency={concurrency},"
                      "max_retries=0")
        faultline = [str(BIN / "faultline-eval"), "eval", "--model", "sceval_openai", "--model_args", model_args,
                     "--tasks", tasks, "--log_samples", "--output_path", "out/",
                     *(["--limit", str(limit)] if limit else [])]
        # the output to a file: a pipe nobody reads while waiting to kill would stall the run
        command = ["sh", "-c", 'exec "$@" > run.log 2>&1', "sh", *faultline]

        def environment(folder: Path) -> dict:
            folder.mkdir(parents=True, exist_ok=True)
            return {**os.environ, **ENV, "SCEVAL_CACHE": str(folder / "cache")}

        def answered() -> int:
            return sum(fake.answered.values())

        reference = workdir / "uninterrupted"
        process = subprocess.Popen(command, cwd=reference, env=environment(reference), start_new_session=True)
        while answered() == 0 and process.poll() is None:
            time.sleep(0.01)
        first_answer = last_answer = time.perf_counter()
        seen = answered()
        while process.poll() is None:
            if answered() != seen:
                seen, last_answer = answered(), time.perf_counter()
            time.sleep(0.01)
        if process.returncode != 0:
            raise RuntimeError(f"the uninterrupted run failed: {(reference / 'run.log').read_text()[-3000:]}")
        request_s = last_answer - first_answer
        expected = collections.Counter(fake.answered)
        fake.answered.clear()

        killed_dir = workdir / "killed"
        env = environment(killed_dir)
        baseline = [0]
        snapshots: list[tuple[set[str], collections.Counter]] = []

        def between(index: int) -> None:
            snapshots.append((_stored_requests(killed_dir / "replies.jsonl"), collections.Counter(fake.answered)))
            baseline[0] = answered()

        window_s = (0.0, 1.5 * request_s / max(1, kill_points))
        log = run_with_kills(command, kill_points=kill_points, seed=seed, window_s=window_s, env=env,
                             cwd=killed_dir, between=between, started=lambda: answered() > baseline[0])
        final = collections.Counter(fake.answered)

    want_summary, want_samples, _ = _run_outputs(reference / "out")
    got_summary, got_samples, stale = _run_outputs(killed_dir / "out")
    lost = duplicated = 0
    differing = [f"results.json{d}" for d in _differences(want_summary, got_summary)][:10]
    for task, lines in want_samples.items():
        got = got_samples.get(task, [])
        ids = collections.Counter(line["doc_id"] for line in got)
        lost += len({line["doc_id"] for line in lines} - set(ids))
        duplicated += sum(n - 1 for n in ids.values())
        if sorted(got, key=lambda x: x["doc_id"]) != sorted(lines, key=lambda x: x["doc_id"]):
            differing.append(f"samples_{task}")
    resent_after_stored = sum(final[d] - counts[d] for stored, counts in snapshots for d in stored)
    return {"kill_points": kill_points, "killed": log.killed, "lost": lost, "duplicated": duplicated,
            "differing_files": differing, "resent_after_stored": resent_after_stored,
            "resent": sum(final.values()) - len(final), "requests": len(expected),
            "unanswered": len(set(expected) - set(final)), "stale_files": stale, "returncode": log.returncode,
            "final_output": (killed_dir / "run.log").read_text()[-4000:],
            "seconds": round(time.perf_counter() - started_at, 1)}


PIPELINES = {
    "lmms_run": lmms_run,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipelines", default=",".join(PIPELINES))
    parser.add_argument("--kill-points", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    columns = ("kill_points", "killed", "lost", "duplicated", "differing_files", "seconds")
    print("pipeline  " + "  ".join(columns))
    failed = False
    for name in args.pipelines.split(","):
        with tempfile.TemporaryDirectory(prefix=f"faults-{name}-") as tmp:
            row = PIPELINES[name](args.kill_points, args.seed, Path(tmp))
        failed |= bool(row["lost"] or row["duplicated"] or row["differing_files"])
        print(f"{name}  " + "  ".join(str(row[c]) for c in columns)
              + "  " + "  ".join(f"{k}={v}" for k, v in row.items() if k not in columns and k != "final_output"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
