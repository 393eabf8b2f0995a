"""The viewer's build time and size, against the report build without it, in the same run.

    python benchmarks/viewer.py [--logs DEMO_OUT] [--models 15] [--budget per_cell=2,wrong_only,max_mb=100]

1. The demo main job (``faultline-eval --model sceval_reference --tasks
   sceval_panel,sceval_single,c3po_all``; or the folder ``--logs`` names): ``sceval report`` and
   ``c3po report`` with and without ``--html`` (default budget), interleaved.
2. A synthetic set of ``--models`` models: the demo run's SCEval logs, one folder per model,
   each model's correctness flipped on a keyed-hash 20% of its trials (so the budget's
   ``wrong_only`` picks differ between models; the records stay real, so media regenerate).
   ``sceval report`` with and without ``--html --html-budget BUDGET``, interleaved.

Prints, for each, the report alone (the peer) and the report with ``--html`` writing a new site
and writing it again over itself (media reused), measured interleaved in the same run: wall and
CPU seconds and their ratios to the peer (issue 28's target: within 1.5x), and the site's size.
On a shared machine the wall times carry its load (the CPU seconds less so); ``--repeats``
keeps the best of several rounds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import provenance

BIN = Path(sys.executable).parent
ENV = {
    **os.environ,
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "NO_ALBUMENTATIONS_UPDATE": "1",
    "WANDB_MODE": "disabled",
}


def timed(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the command's threads and children) of one command."""
    start, cpu = time.perf_counter(), _children_cpu()
    done = provenance.run_command(args, capture_output=True, text=True, env=ENV)
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - start, _children_cpu() - cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def size(folder: Path) -> tuple[float, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 1e6, len(files)


def flipped(model: int, key: str) -> bool:
    return hashlib.blake2b(f"{model}|{key}".encode(), digest_size=2).digest()[0] < 51  # 20 %


def synthesise(logs: Path, root: Path, models: int) -> int:
    """``models`` copies of the demo run's SCEval logs, each with its own correctness."""
    files = sorted(logs.rglob("*_samples_sceval_*.jsonl"))
    lines = 0
    for m in range(models):
        folder = root / f"model_{m:02d}"
        folder.mkdir(parents=True)
        (folder / "20261201_000000_results.json").write_text(json.dumps({"config": {"model": f"model_{m:02d}"}}))
        for path in files:
            out = []
            for text in path.read_text().splitlines():
                line = json.loads(text)
                record = line["sceval_record"]
                key = f"{record['condition_id']}|{record['sample_id']}|{record['variant']}"
                if record["correct"] is not None and flipped(m, key):
                    record["correct"] = 1 - record["correct"]
                    for _name, value in line.items():  # the trial entries (schema 2, or 1: "c")
                        if isinstance(value, dict) and "sample_id" in value and "correct" in value:
                            value["correct"] = record["correct"]
                        elif isinstance(value, dict) and "c" in value and "s" in value:
                            value["c"] = record["correct"]
                record["model"] = f"model_{m:02d}"
                out.append(json.dumps(line))
            lines += len(out)
            (folder / path.name.replace(path.name.split("_samples_")[0], "20261201_000000")).write_text(
                "\n".join(out) + "\n"
            )
    return lines


def compare(
    label: str, peer: list[str], html: list[str], site: Path, repeats: int, record: provenance.Record, key: str
) -> None:
    """Interleaved, so the machine's load falls on all alike: the report alone, the report with a
    new site (``site`` removed first), and the report with the site written again over itself
    (every trial's media reused). Best of ``repeats``; wall and CPU seconds."""
    times: dict[str, list[tuple[float, float]]] = {"report": [], "new site": [], "site again": []}
    for _ in range(repeats):
        shutil.rmtree(site, ignore_errors=True)
        times["report"].append(timed(peer))
        times["new site"].append(timed(html))
        times["site again"].append(timed(html))
    mb, count = size(site)
    best = {k: (min(w for w, _ in v), min(c for _, c in v)) for k, v in times.items()}
    wall, cpu = best["report"]
    print(f"{label}: report alone {wall:.1f} s wall, {cpu:.1f} s CPU; site {mb:.1f} MB in {count} files")
    record.figure(f"{key}/report_s", wall, "s", f"{label}: the report alone, wall ({cpu:.1f} s CPU)")
    record.figure(f"{key}/site_mb", mb, "MB", f"{label}: the site, {count} files")
    for name in ("new site", "site again"):
        w, c = best[name]
        print(
            f"  report + --html, {name}: {w:.1f} s wall (ratio {w / wall:.2f}x), {c:.1f} s CPU (ratio {c / cpu:.2f}x)"
        )
        arm = name.replace(" ", "_")
        record.figure(f"{key}/{arm}_wall_ratio", w / wall, "x", f"{label}: report + --html, {name} / the report, wall")
        record.figure(f"{key}/{arm}_cpu_ratio", c / cpu, "x", "the same, CPU seconds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logs", type=Path, help="the demo main job's output (default: run it here)")
    parser.add_argument("--models", type=int, default=15)
    parser.add_argument("--budget", default="per_cell=2,wrong_only,max_mb=100")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep the outputs in this folder")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"{provenance.SMOKE_HELP}: without --logs, sceval_clean and c3po_ic_t1 on 3 items; 2 synthetic models",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.models, args.repeats = 2, 1
    record = provenance.Record(__file__, peer="the same report without --html")
    root = Path(tempfile.mkdtemp(prefix="viewer-bench-")) if args.keep is None else args.keep
    ENV["SCEVAL_CACHE"] = str(root / "cache")
    try:
        logs = args.logs
        if logs is None:
            start = time.perf_counter()
            logs = provenance.demo_main_job(root / "demo_out", args.smoke, reports=False, env=ENV)
            print(f"demo main job: {time.perf_counter() - start:.1f} s")
        for tool in ("sceval", "c3po"):
            out = root / f"{tool}-report"
            peer = [str(BIN / tool), "report", str(logs), "-o", str(out)] + (["--quiet"] if tool == "sceval" else [])
            label = f"demo main job, {tool} (default budget)"
            compare(label, peer, [*peer, "--html"], out / "html", args.repeats, record, f"demo_{tool}")
        synthetic = root / "synthetic"
        lines = synthesise(logs, synthetic, args.models)
        print(f"synthetic: {args.models} models, {lines} trials")
        out = root / "synthetic-report"
        peer = [str(BIN / "sceval"), "report", str(synthetic), "-o", str(out), "--quiet"]
        compare(
            f"{args.models} models, budget {args.budget}",
            peer,
            [*peer, "--html", "--html-budget", args.budget],
            out / "html",
            args.repeats,
            record,
            "synthetic",
        )
        record.figure("synthetic_trials", lines, "trials", f"{args.models} synthetic models")
        record.write(args.json, smoke=args.smoke)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
