"""Requests/s of the Qwen adapters at ``batch_size`` 1, 4 and 8, measured in the same run.

    python benchmarks/batched_generation.py [--items 16] [--rounds 2] [--device cpu] [--model qwen2_5_omni]

The tiny random checkpoint of the tests (``faultline tiny-model qwen2_5_omni`` or ``qwen3_omni``)
answers ``sceval_clean`` on ``--items`` demo items through lmms-eval's evaluator, greedy, 8 new
tokens (the random model never stops early, so every row generates all 8). Arms run in turn,
their order rotating each round; each arm loads the model afresh (the evaluator frees it after
a run) and its time is the whole ``simple_evaluate`` call, media preparation included. Printed:
median requests/s per batch size and the ratio to batch 1, and whether every arm gave the same
replies (greedy decoding must not depend on the batch size).
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import tempfile
import time
from pathlib import Path

import provenance

for _k, _v in {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "NO_ALBUMENTATIONS_UPDATE": "1",
    "WANDB_MODE": "disabled",
}.items():
    os.environ.setdefault(_k, _v)

CLASSES = {"qwen2_5_omni": "Qwen2_5OmniChat", "qwen3_omni": "Qwen3OmniChat"}


def timed_run(model_class, checkpoint: Path, batch_size: int, items: int, device: str) -> tuple[float, dict]:
    import lmms_eval.models  # noqa: F401  (our entry point adds the SCEval task folder)
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    model = model_class(pretrained=str(checkpoint), device=device, store="none", batch_size=batch_size)
    start = time.perf_counter()
    out = simple_evaluate(
        model=model,
        tasks=["sceval_clean"],
        limit=items,
        gen_kwargs="max_new_tokens=8",
        log_samples=True,
        verbosity="ERROR",
        task_manager=TaskManager("ERROR", include_defaults=False),
    )
    elapsed = time.perf_counter() - start
    return elapsed, {s["doc"]["row_id"]: s["resps"][0][0] for s in out["samples"]["sceval_clean"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--model", choices=sorted(CLASSES), default="qwen2_5_omni")
    parser.add_argument("--batch-sizes", default="1,4,8")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"{provenance.SMOKE_HELP}: 2 items, batch sizes 1 and 2, one round, no warm-up",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.items, args.rounds, args.batch_sizes = 2, 1, "1,2"
    record = provenance.Record(__file__, peer=f"batch_size {args.batch_sizes.split(',')[0]}")
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    from faultline_eval.model_wrappers.tiny_checkpoints import BUILDERS

    model_class = getattr(importlib.import_module(f"faultline_eval.model_wrappers.{args.model}"), CLASSES[args.model])
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SCEVAL_CACHE"] = str(Path(tmp) / "cache")
        checkpoint = BUILDERS[args.model](Path(tmp) / "tiny")
        if not args.smoke:  # a smoke run's times say nothing: no warm-up
            timed_run(model_class, checkpoint, 1, 2, args.device)  # warm-up: first-call costs fall on no arm
        times: dict[int, list[float]] = {b: [] for b in sizes}
        replies: dict[int, dict] = {}
        for r in range(args.rounds):
            for b in sizes[r % len(sizes) :] + sizes[: r % len(sizes)]:
                elapsed, replies[b] = timed_run(model_class, checkpoint, b, args.items, args.device)
                times[b].append(elapsed)
    base = args.items / statistics.median(times[sizes[0]])
    print(
        f"tiny {args.model} on {args.device}: sceval_clean, {args.items} requests, 8 new tokens, "
        f"{args.rounds} interleaved rounds (median)"
    )
    print(f"{'batch_size':>10} {'requests/s':>11} {'vs batch ' + str(sizes[0]):>12}")
    for b in sizes:
        rate = args.items / statistics.median(times[b])
        print(f"{b:>10} {rate:>11.2f} {rate / base:>11.2f}x")
    same = all(replies[b] == replies[sizes[0]] for b in sizes)
    print(f"greedy replies identical across batch sizes: {same}")
    for b in sizes:
        rate = args.items / statistics.median(times[b])
        record.figure(f"batch_{b}_requests_per_s", rate, "requests/s", f"tiny {args.model} on {args.device}, batch {b}")
        record.figure(f"batch_{b}_ratio", rate / base, "x", f"batch {b} / batch {sizes[0]} requests/s")
    record.figure("replies_identical", str(same), "", "greedy replies identical across batch sizes")
    record.write(args.json, smoke=args.smoke)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
