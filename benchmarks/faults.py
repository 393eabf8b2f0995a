"""Fault injection: kill -9 pipelines at seeded random points, rerun them, count what was lost;
and what the store's durability costs.

    python benchmarks/faults.py [--pipelines store,sceval_annotate,sceval_publish,...] [--kill-points 50] [--seed 0]
                                [--records 2000] [--rounds 3] [--no-durability]

**Pipelines** (:data:`PIPELINES`, name -> ``(kill_points, seed, workdir) -> dict``): each runs a
command under :func:`faultkit.run_with_kills` (SIGKILL to the process group after a delay drawn
from a seeded generator, ``kill_points`` times, then a run to the end) and compares the result
with an uninterrupted run. Every pipeline returns at least ``kill_points``, ``killed`` (runs the
kill actually cut short), ``lost``, ``duplicated``, ``differing_files`` and ``seconds``.

- ``store``: a process appends records ``r000000``, ``r000001``, ... to one reply store
  (:class:`faultline_eval.core.store.ReplyStore`, default fsync policy), skipping those already stored
  (a resumed run) and, after each ``put`` returns, noting the key in an acknowledgement file.
  ``lost``: acknowledged keys, or keys of the finished run, missing from the store; ``duplicated``:
  keys with more than one valid line; ``differing_files``: the store's bytes against the
  uninterrupted run's (torn tails are cut off, so they must be identical).
- ``sceval_annotate``: ``sceval build annotate import`` of a filled full pass (3 demo items, 2
  simulated annotators) killed; then, uninterrupted, adjudication, ``manifest`` and
  ``agreement``. ``lost`` / ``duplicated``: label rows of the uninterrupted import missing from, or
  repeated in, ``labels.jsonl``; ``differing_files``: the whole build folder against the
  uninterrupted one's (labels, manifest, funnel, retention, rejected list, agreement);
  ``half_written``: kills after which ``labels.jsonl`` existed but was not whole.
- ``sceval_publish``: ``sceval build publish`` of that build killed. ``lost`` / ``duplicated``:
  items of the uninterrupted parquet missing from, or repeated in, the published one;
  ``differing_files``: the published folder (parquet, card, manifest, funnel, media) and its
  parent (no ``.published.partial`` left behind); ``half_written``: kills after which
  ``published/`` existed but was not the finished folder (a half-written parquet, say).
- ``c3po_build``: ``c3po build all`` over the demo pool against the scripted fake Gemini
  (:func:`c3po_build`); ``differing_files``: every output (media, ledgers' content, parquet, card,
  funnel, sheets, figures) against a build never killed.

- ``lmms_run``: ``faultline-eval`` (lmms-eval, ``--log_samples``) running ``sceval_openai`` against
  the local fake OpenAI server, resumed from its reply store after each kill (:func:`lmms_run`):
  records lost or repeated per task, results and per-sample files that differ from an
  uninterrupted run's (wall-clock fields and latencies aside), and requests sent again after
  their reply was stored.

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
import hashlib
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tests load this file by path

import faultkit
import provenance

#: The appending process of the ``store`` pipeline: argv = store file, acknowledgement file,
#: records, seconds to pause after each (so the kills spread over the whole sequence).
STORE_WRITER = """
import os, sys, time
from faultline_eval.core.store import ReplyStore
store, acks = ReplyStore(sys.argv[1]), os.open(sys.argv[2], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
for i in range(int(sys.argv[3])):
    key = f"r{i:06d}"
    if store.get(key) is None:
        store.put(key, i=i, payload="x" * (i * 7919 % 2_000))
        os.write(acks, (key + "\\n").encode())
        time.sleep(float(sys.argv[4]))
"""
STORE_RECORDS = 10_000
SMOKE_STORE_RECORDS = 1_000  # ~2 s of paced appends: the kill window still falls inside
STORE_PAUSE_S = 0.001
KEY = re.compile(r"r\d{6}")


def _offline_env() -> dict:
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "NO_ALBUMENTATIONS_UPDATE": "1",
        "WANDB_MODE": "disabled",
        "OMP_NUM_THREADS": "1",
    }


def store_pipeline(
    kill_points: int,
    seed: int,
    workdir: Path,
    records: int = STORE_RECORDS,
    window_s: tuple[float, float] = (0.2, 1.5),
    pause_s: float = STORE_PAUSE_S,
) -> dict:
    """Kill an appending process ``kill_points`` times (see the module docstring); the records
    (up to 2 kB) are paced ``pause_s`` apart so that the kills spread over the whole sequence."""
    from faultline_eval.core.store import read_records

    workdir = Path(workdir)
    clean, killed = workdir / "clean", workdir / "killed"
    acks = workdir / "acks.txt"
    for folder in (clean, killed):
        folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    command = [sys.executable, "-c", STORE_WRITER, str(killed / "store.jsonl"), str(acks), str(records), str(pause_s)]
    log = faultkit.run_with_kills(
        command, kill_points=kill_points, seed=seed, window_s=window_s, env=_offline_env(), popen=provenance.Popen
    )
    seconds = time.perf_counter() - start
    if log.returncode != 0:
        raise RuntimeError(f"store pipeline: the final run failed ({log.returncode}):\n{log.final_output}")
    provenance.run_command(
        [
            sys.executable,
            "-c",
            STORE_WRITER,
            str(clean / "store.jsonl"),
            str(workdir / "clean_acks.txt"),
            str(records),
            "0",
        ],
        check=True,
        env=_offline_env(),
    )
    lines = collections.Counter(record["key"] for record in read_records(killed / "store.jsonl"))
    acknowledged = set(KEY.findall(acks.read_text()))
    expected = {f"r{i:06d}" for i in range(records)}
    return {
        "kill_points": kill_points,
        "killed": log.killed,
        "lost": len((acknowledged | expected) - set(lines)),
        "duplicated": sum(1 for n in lines.values() if n > 1),
        "differing_files": faultkit.differing_files(faultkit.file_digests(clean), faultkit.file_digests(killed)),
        "seconds": round(seconds, 1),
        "acknowledged": len(acknowledged),
        "records": records,
    }


# --- SCEval build stages (sceval build annotate import, publish) -------------------------------

SCEVAL = str(Path(sys.executable).with_name("sceval"))


def _setup(*args) -> None:
    """A preparation step (``sceval ARGS``), in this process: no interpreter start per step."""
    import contextlib
    import io

    from faultline_app.sceval_cli import main as sceval_main

    with contextlib.redirect_stdout(io.StringIO()):  # the table stays readable
        status = sceval_main([str(a) for a in args])
    if status != 0:
        raise RuntimeError(f"sceval {' '.join(map(str, args))} failed")


#: The sceval pipelines draw kill delays within this share of a warm uninterrupted run: a run that
#: another process slows is still cut short, so the kills test resuming, not the machine's load.
KILL_WINDOW = 0.6


def _warm_seconds(*args, env: dict) -> float:
    """The wall time of ``sceval ARGS`` once caches are warm (a first run warms them): the quicker of
    two runs, so a moment of load on the machine does not stretch the kill window past the runs."""
    _sceval(*args, env=env)
    return min(_sceval(*args, env=env), _sceval(*args, env=env))


def _sceval(*args, env: dict) -> float:
    """Run ``sceval ARGS`` to the end in a process of its own, started as the killed runs are (it must
    succeed); returns its wall time."""
    start = time.perf_counter()
    done = provenance.run_command([SCEVAL, *map(str, args)], env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"sceval {' '.join(map(str, args))}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.perf_counter() - start


def _filled_build(root: Path) -> Path:
    """A build folder whose full pass is exported and filled (3 demo items, 2 SIMULATED annotators)."""
    from fixtures import copy_demo

    copy_demo(root / "pool", 3)
    (root / "pool" / "funnel.json").write_text(
        json.dumps(
            {
                "seed": 0,
                "budget": 3,
                "excluded": [],
                "sources": {"sceval-demo": {"examples": 3, "converted": 3, "eligible": 3, "pooled": 3}},
            }
        ),
        encoding="utf-8",
    )
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
    return [
        (r["annotator"], r["sheet"], r["sample_id"], r["operator"], r["severity"], r["variant"])
        for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())
    ]


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
    took = _warm_seconds("build", "annotate", "import", clean, "--pass", "full", env=env)
    labels = "annotation/full/labels.jsonl"
    half = _half_written(clean / labels, killed / labels)
    log = faultkit.run_with_kills(
        [SCEVAL, "build", "annotate", "import", str(killed), "--pass", "full"],
        kill_points=kill_points,
        seed=seed,
        window_s=(0.05, KILL_WINDOW * took),
        env=env,
        between=half,
        popen=provenance.Popen,
    )
    if log.returncode != 0:
        raise RuntimeError(f"the last import failed: {log.final_output[-2000:]}")
    counts = _counted(_label_keys(clean), _label_keys(killed))
    for build in (clean, killed):
        _finish_annotation(build)
    differing = faultkit.differing_files(faultkit.file_digests(clean), faultkit.file_digests(killed))
    return {
        "kill_points": kill_points,
        "killed": log.killed,
        **counts,
        "differing_files": differing,
        "half_written": half.count,
        "seconds": round(time.perf_counter() - start, 1),
    }


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
    took = _warm_seconds("build", "publish", clean, env=env)
    half = _half_written(clean / "published", killed / "published")
    log = faultkit.run_with_kills(
        [SCEVAL, "build", "publish", str(killed)],
        kill_points=kill_points,
        seed=seed,
        window_s=(0.05, KILL_WINDOW * took),
        env=env,
        between=half,
        popen=provenance.Popen,
    )
    if log.returncode != 0:
        raise RuntimeError(f"the last publish failed: {log.final_output[-2000:]}")
    counts = _counted(_published_ids(clean / "published"), _published_ids(killed / "published"))
    differing = faultkit.differing_files(faultkit.file_digests(clean), faultkit.file_digests(killed))
    return {
        "kill_points": kill_points,
        "killed": log.killed,
        **counts,
        "differing_files": differing,
        "half_written": half.count,
        "seconds": round(time.perf_counter() - start, 1),
    }


# --- c3po build all --------------------------------------------------------------------------------

#: The scripted build of the ``c3po_build`` pipeline: generator scenario and auditor decision by
#: sample index (as tests/test_c3po_build_pipeline.py), over the demo pool's first 7 candidates.
C3PO_GENERATOR = {1: "malformed", 2: "banned-word", 3: "does-not-fit", 4: "malformed-then-good", 5: "sfx"}
C3PO_AUDITOR = {0: "reject", 6: "accept-unusable-media"}


def c3po_build_digests(build_dir: Path) -> dict[str, str]:
    """What a build made, by sha256: every file except the logs of how it ran (``replies/``: reply
    stores and usage with latencies; ``settings.json``: the options given; the raw ledger files,
    whose lines a kill or a retry changes), plus each ledger's content
    (:meth:`~c3po_plugin.construction.ledger.Ledger.snapshot`) as ``ledger/<stage>.jsonl#content``."""
    import hashlib

    from c3po_plugin.construction.ledger import Ledger

    logs = lambda rel: rel.parts[0] in ("replies", "ledger") or str(rel) == "settings.json"  # noqa: E731
    digests = faultkit.file_digests(build_dir, ignore=logs)
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
    machine is; each rerun resumes, so the kills move through every stage), then run to the end.
    ``lost``: samples the uninterrupted build exports that the killed one does not, plus
    candidates the killed build left unsettled (funnel); ``duplicated``: exported rows beyond one
    per sample; ``differing_files``: :func:`c3po_build_digests` that differ."""
    import json

    from build_fakes import Scripted
    from fake_gemini import FakeGemini

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    c3po = str(Path(sys.executable).with_name("c3po"))
    env = {
        **_offline_env(),
        "GEMINI_API_KEY": "faults-key",
        "SCEVAL_CACHE": str(workdir / "cache"),
        "TQDM_DISABLE": "1",
    }
    began = time.perf_counter()
    with FakeGemini(script=Scripted(C3PO_GENERATOR, C3PO_AUDITOR)) as server:
        spec = f"gemini:gemini-test,base_url={server.url},max_retries=1,initial_backoff=0.01,timeout=10"

        def command(build: Path) -> list[str]:
            return [
                c3po,
                "build",
                "all",
                str(build),
                "--pool",
                "demo",
                "--generator",
                spec,
                "--templates",
                templates,
                "--per-template",
                "1-7",
                "--annotators",
                "1",
            ]

        start = time.perf_counter()
        reference = faultkit.run_with_kills(
            command(workdir / "reference"),
            kill_points=0,
            seed=seed,
            window_s=(0, 0),
            env=env,
            cwd=workdir,
            popen=provenance.Popen,
        )
        if reference.returncode != 0:
            raise RuntimeError(f"the uninterrupted c3po build failed:\n{reference.final_output[-3000:]}")
        wall = time.perf_counter() - start
        log = faultkit.run_with_kills(
            command(workdir / "killed"),
            kill_points=kill_points,
            seed=seed,
            window_s=(0.05 * wall, 0.45 * wall),
            env=env,
            cwd=workdir,
            popen=provenance.Popen,
        )
    if log.returncode != 0:
        raise RuntimeError(f"the c3po build run after the kills failed:\n{log.final_output[-3000:]}")
    wanted, got = _exported_ids(workdir / "reference"), _exported_ids(workdir / "killed")
    unsettled = json.loads((workdir / "killed" / "export" / "funnel.json").read_text())["total"]["unsettled"]
    return {
        "kill_points": kill_points,
        "killed": log.killed,
        "lost": len(set(wanted) - set(got)) + unsettled,
        "duplicated": len(got) - len(set(got)),
        "exported": len(got),
        "differing_files": faultkit.differing_files(
            c3po_build_digests(workdir / "reference"), c3po_build_digests(workdir / "killed")
        ),
        "seconds": round(time.perf_counter() - began, 1),
        "uninterrupted_s": round(wall, 1),
    }


BIN = Path(sys.executable).parent


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
    """The request digests whose replies the reply store holds, as the store reads them (a torn
    last line or a damaged one does not count)."""
    from faultline_eval.core.store import read_records

    return {digest for record in read_records(store) for digest in _STORED_REQUEST.findall(json.dumps(record))}


def lmms_run(
    kill_points: int,
    seed: int,
    workdir: Path,
    *,
    tasks: str = "sceval_clean,sceval_t30_v70",
    limit: int | None = None,
    latency_s: float = 0.1,
    concurrency: int = 2,
) -> dict:
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
        model_args = (
            f"base_url={fake.url},store=replies.jsonl,audio_canary=off,max_concurrency={concurrency},max_retries=0"
        )
        faultline = [
            str(BIN / "faultline-eval"),
            "eval",
            "--model",
            "sceval_openai",
            "--model_args",
            model_args,
            "--tasks",
            tasks,
            "--log_samples",
            "--output_path",
            "out/",
            *(["--limit", str(limit)] if limit else []),
        ]
        # the output to a file: a pipe nobody reads while waiting to kill would stall the run
        command = ["sh", "-c", 'exec "$@" > run.log 2>&1', "sh", *faultline]

        def environment(folder: Path) -> dict:
            folder.mkdir(parents=True, exist_ok=True)
            return {**_offline_env(), "SCEVAL_CACHE": str(folder / "cache")}

        def answered() -> int:
            return sum(fake.answered.values())

        reference = workdir / "uninterrupted"
        process = provenance.Popen(command, cwd=reference, env=environment(reference), start_new_session=True)
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
        log = faultkit.run_with_kills(
            command,
            kill_points=kill_points,
            seed=seed,
            window_s=window_s,
            env=env,
            cwd=killed_dir,
            between=between,
            started=lambda: answered() > baseline[0],
            popen=provenance.Popen,
        )
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
    return {
        "kill_points": kill_points,
        "killed": log.killed,
        "lost": lost,
        "duplicated": duplicated,
        "differing_files": differing,
        "resent_after_stored": resent_after_stored,
        "resent": sum(final.values()) - len(final),
        "requests": len(expected),
        "unanswered": len(set(expected) - set(final)),
        "stale_files": stale,
        "returncode": log.returncode,
        "final_output": (killed_dir / "run.log").read_text()[-4000:],
        "seconds": round(time.perf_counter() - started_at, 1),
    }


PIPELINES: dict[str, Callable[[int, int, Path], dict]] = {
    "store": store_pipeline,
    "c3po_build": c3po_build,
    "sceval_annotate": sceval_annotate_pipeline,
    "sceval_publish": sceval_publish_pipeline,
    "lmms_run": lmms_run,
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
        from faultline_eval.core.store import ReplyStore

        with ReplyStore(path, fsync=policy) as store:
            for index in range(len(lines)):
                store.put(f"k{index}", payload=PAYLOAD)

    return append


PAYLOAD = "x" * 180
ARMS: dict[str, Callable[[Path, list[str]], None]] = {
    "plain open(a).write": _plain,
    "plain write + flush": _plain_flushed,
    "store, fsync never": _store("never"),
    "store, fsync batch (default)": _store("batch"),
    "store, fsync per record": _store("record"),
}


def durability(records: int, rounds: int, folder: Path | None = None) -> dict[str, float]:
    """Median appends per second of each arm (see the module docstring)."""
    import json

    lines = [json.dumps({"key": f"k{i}", "payload": PAYLOAD}) + "\n" for i in range(records)]
    rates: dict[str, list[float]] = {name: [] for name in ARMS}
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        names = list(ARMS)
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
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
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"{provenance.SMOKE_HELP}: store (1,000 records), sceval_annotate, sceval_publish at 3 kill points, "
        "200 records per durability arm",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    args = parser.parse_args(argv)
    if args.smoke:  # lmms_run and c3po_build run at CI size in their own tests (test_fault_lmms_run.py, ...)
        # 3 kill points: seed 0's first delays fall late in the window, after a short run may have ended
        args.kill_points, args.records, args.rounds = 3, 200, 1
        args.pipelines = "store,sceval_annotate,sceval_publish"
    record = provenance.Record(__file__, peer="the same pipeline never killed; plain appends", argv=argv)
    chosen = [name.strip() for name in args.pipelines.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(PIPELINES))
    if unknown:
        parser.error(f"unknown pipeline(s) {unknown}; choose from {sorted(PIPELINES)}")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.workdir or tmp)
        print(
            f"{'pipeline':<16}{'kill points':>12}{'killed':>8}{'lost':>6}{'duplicated':>11}{'differing':>10}"
            f"{'seconds':>9}"
        )
        for name in chosen:
            sized = {"records": SMOKE_STORE_RECORDS} if args.smoke and name == "store" else {}
            result = PIPELINES[name](args.kill_points, args.seed, root / name, **sized)
            failed |= bool(
                result["lost"] or result["duplicated"] or result["differing_files"] or result.get("half_written")
            )
            print(
                f"{name:<16}{result['kill_points']:>12}{result['killed']:>8}{result['lost']:>6}"
                f"{result['duplicated']:>11}{len(result['differing_files']):>10}{result['seconds']:>9}"
            )
            for path in result["differing_files"][:10]:
                print(f"    differs: {path}")
            what = f"{name}: of {result['kill_points']} kill points, {result['killed']} cut a run short"
            for key in ("lost", "duplicated"):
                record.figure(f"{name}/{key}", result[key], "records", what)
            record.figure(f"{name}/differing_files", len(result["differing_files"]), "files", what)
            record.figure(f"{name}/seconds", result["seconds"], "s", f"{name}: the whole pipeline, kills and reruns")
    if not args.no_durability:
        rates = durability(args.records, args.rounds)
        plain = rates["plain open(a).write"]
        print(
            f"\nappends/s, {args.records} records of ~{len(PAYLOAD) + 40} bytes, median of {args.rounds} "
            f"interleaved rounds"
        )
        for name, rate in rates.items():
            print(f"{name:<30}{rate:>12,.0f}/s{rate / plain:>9.3f}x plain")
            record.figure(f"appends/{name}", rate, "appends/s", f"{args.records} records, median of {args.rounds}")
    record.write(args.json, smoke=args.smoke)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
