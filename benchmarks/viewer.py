"""The viewer's build time and size: every trial with media, the default budget, the report alone.

    python benchmarks/viewer.py [--logs DEMO_OUT] [--models 5] [--budget per_cell=2,wrong_only,max_mb=100]

1. The demo main job (``faultline-eval --model sceval_reference --tasks
   sceval_panel,sceval_single,c3po_all``; or the folder ``--logs`` names): ``sceval report`` and
   ``c3po report`` alone, with ``--html`` (the default budget), with ``--html --html-budget
   per_cell=all,max_mb=3000`` (every trial with its media) and that again over itself (media
   reused), interleaved.
2. A synthetic set of ``--models`` models: the demo run's SCEval logs, one folder per model,
   each model's correctness flipped on a keyed-hash 20% of its trials (so the budget's
   ``wrong_only`` picks differ between models; the records stay real, so media regenerate).
   ``sceval report`` with and without ``--html --html-budget BUDGET``, interleaved.

Prints for each the report alone (the peer) and each site: wall and CPU seconds, their ratios to
the report and (every trial's site) to the default site, and the site's size. Goals (issue 38):
the default site within 1.5x of the report alone; every trial's site within 2x the default site's
time and 1/5 of the 895 MB it took before content-addressed media (:data:`BEFORE_MB`). On a
shared machine the wall times carry its load (the CPU seconds less so); ``--repeats`` keeps the
best of several rounds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
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


def timed(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the command's threads and children) of one command."""
    start, cpu = time.perf_counter(), _children_cpu()
    # another checkout's code (``env``'s PYTHONPATH) needs a process of its own, not a fork of this one's imports
    run = provenance.run_command if env is None else subprocess.run
    done = run(args, capture_output=True, text=True, env=env or ENV)
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


#: Issue 38: the demo's site with every trial's media (``--html-budget per_cell=all,max_mb=3000``)
#: took 891.5 MB (du: 895 MB) before content-addressed media (commit 5e628c3, measured 2026-12-07).
BEFORE_MB = 891.5
ALL_TRIALS = "per_cell=all,max_mb=3000"


#: Issue 38: the demo's site with every trial's media (``--html-budget per_cell=all,max_mb=3000``)
#: took 891.5 MB (du: 895 MB) before content-addressed media (commit 5e628c3, measured 2026-12-07).
BEFORE_MB = 891.5
ALL_TRIALS = "per_cell=all,max_mb=3000"


def folder(out: Path, name: str) -> Path:
    """Where the site ``name`` is written (" again" writes the site of that name over itself)."""
    return out / name.removesuffix(" again").replace(" ", "_")


def compare(
    label: str,
    peer: list[str],
    sites: dict[str, tuple[list[str], dict | None]],
    out: Path,
    repeats: int,
    record: provenance.Record,
    key: str,
) -> dict[str, tuple[float, float, float]]:
    """Interleaved, so the machine's load falls on all alike: the report alone, then each of
    ``sites`` (name -> the command writing ``folder(out, name)/html`` and its environment; a name
    ending in " again" writes the site of that name over itself, every trial's media reused).
    Best of ``repeats``; returns name -> (wall s, CPU s, site MB)."""
    times: dict[str, list[tuple[float, float]]] = {"report": [], **{name: [] for name in sites}}
    for _ in range(repeats):
        for name in sites:
            if not name.endswith(" again"):
                shutil.rmtree(folder(out, name), ignore_errors=True)
        times["report"].append(timed(peer))
        for name, (command, env) in sites.items():
            times[name].append(timed(command, env))
    best = {}
    for name, runs in times.items():
        mb, count = size(folder(out, name) / "html") if name != "report" else (0.0, 0)
        best[name] = (min(w for w, _ in runs), min(c for _, c in runs), mb)
        if name != "report" and not name.endswith(" again"):
            record.figure(f"{key}/{name.replace(' ', '_')}_mb", mb, "MB", f"{label}: {name}, {count} files")
    wall, cpu, _ = best["report"]
    print(f"{label}: report alone {wall:.1f} s wall, {cpu:.1f} s CPU")
    record.figure(f"{key}/report_s", wall, "s", f"{label}: the report alone, wall ({cpu:.1f} s CPU)")
    for name in sites:
        w, c, mb = best[name]
        print(f"  report + {name}: {mb:.1f} MB, {w:.1f} s wall (ratio {w / wall:.2f}x), {c:.1f} s CPU ({c / cpu:.2f}x)")
        arm = name.replace(" ", "_")
        record.figure(f"{key}/{arm}_wall_ratio", w / wall, "x", f"{label}: report + {name} / the report, wall")
        record.figure(f"{key}/{arm}_cpu_ratio", c / cpu, "x", "the same, CPU seconds")
    return best


def against(label: str, best: dict, record: provenance.Record, key: str, base: str) -> None:
    """Every trial's site against the default one ``base``: time (issue 38's goal: at most 2x)."""
    (w, c, _), (bw, bc, _) = best["every trial"], best[base]
    print(f"  every trial / {base}: {w / bw:.2f}x wall, {c / bc:.2f}x CPU")
    arm = base.replace(" ", "_")
    record.figure(f"{key}/every_trial_vs_{arm}_wall", w / bw, "x", f"{label}: every trial's site / the {base}, wall")
    record.figure(f"{key}/every_trial_vs_{arm}_cpu", c / bc, "x", "the same, CPU seconds")


def checkout(commit: str, into: Path) -> dict[str, str]:
    """The tree of ``commit`` extracted into ``into`` (git archive): the environment that runs its code."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(provenance.ROOT), "archive", commit], capture_output=True)
    if archive.returncode:
        raise SystemExit(f"git archive {commit} failed: {archive.stderr.decode()[-500:]}")
    untar = subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, capture_output=True)
    if untar.returncode:
        raise SystemExit(f"extracting {commit} failed: {untar.stderr.decode()[-500:]}")
    return {**ENV, "PYTHONPATH": str(into)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logs", type=Path, help="the demo main job's output (default: run it here)")
    parser.add_argument("--models", type=int, default=5)
    parser.add_argument("--budget", default="per_cell=2,wrong_only,max_mb=100")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep the outputs in this folder")
    parser.add_argument(
        "--before",
        metavar="COMMIT",
        help="also time the default and every trial's site of COMMIT's code (its tree by git archive, run "
        "through PYTHONPATH) in the same rounds: issue 38 measured against 5e628c3",
    )
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
        before = checkout(args.before, root / "before") if args.before else None
        for tool in ("sceval", "c3po"):
            report = [str(BIN / tool), "report", str(logs)] + (["--quiet"] if tool == "sceval" else [])
            out = root / f"{tool}-sites"
            every = ["--html", "--html-budget", ALL_TRIALS]
            sites = {"default site": ([*report, "-o", str(folder(out, "default site")), "--html"], None)}
            if before:
                command = [*report, "-o", str(folder(out, "default site before")), "--html"]
                sites["default site before"] = (command, before)
                sites["every trial before"] = ([*report, "-o", str(folder(out, "every trial before")), *every], before)
            sites["every trial"] = ([*report, "-o", str(folder(out, "every trial")), *every], None)
            sites["every trial again"] = sites["every trial"]
            label = f"demo main job, {tool}"
            best = compare(
                label, [*report, "-o", str(out / "report")], sites, out, args.repeats, record, f"demo_{tool}"
            )
            for base in ("default site", "default site before") if before else ("default site",):
                against(label, best, record, f"demo_{tool}", base)
            if tool == "sceval":
                print(
                    f"  every trial: {best['every trial'][2]:.1f} MB (before content-addressed media: {BEFORE_MB} MB)"
                )
        synthetic = root / "synthetic"
        lines = synthesise(logs, synthetic, args.models)
        print(f"synthetic: {args.models} models, {lines} trials")
        out = root / "synthetic-sites"
        report = [str(BIN / "sceval"), "report", str(synthetic), "--quiet"]
        site = [*report, "-o", str(folder(out, "new site")), "--html", "--html-budget", args.budget]
        compare(
            f"{args.models} models, budget {args.budget}",
            [*report, "-o", str(out / "report")],
            {"new site": (site, None), "new site again": (site, None)},
            out,
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
