"""`sceval report` end to end against a straightforward pandas + Python-loop reference.

    python benchmarks/report.py [--models 15] [--samples 273] [--keep DIR] [--smoke] [--json PATH]

Synthesises lmms-eval output folders (results JSON + one per-sample JSONL per task, lines
shaped like real ones) for N models x the full condition catalogue x S samples x up to 3
variants, then, in the same run:

1. ``sceval report --no-model-pairs --no-figures`` (a subprocess, so its wall time and peak
   memory are its own), the workload the reference also does (it draws no figures), run before
   and again after the reference, its time the mean of the two (load that changes during the
   reference's minutes hits both sides of the ratio);
2. ``sceval report``, complete: intervals, every paired comparison including model vs model,
   tables, plots, JSON (what the figures and model pairs cost on top);
3. the reference (written here, in the obvious way): ``json.loads`` every line, pandas groupby
   for variant aggregation, and a Python loop of B = 1000 resamples per interval and per
   clean-vs-condition paired comparison (+ exact McNemar), Holm within blocks.

Prints wall time, peak memory (max RSS) and the speed-up. Targets: at least 10x faster than the
reference and under 60 s on 2 cores for the full report.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import provenance

from sceval_plugin.sceval_trial import SCEvalTrial

B = 1000
#: ``--smoke``'s resamples: the reference's whole path, not its cost (a smoke run's ratio says nothing).
SMOKE_B = 20


def synthesise(root: Path, models: int, samples: int) -> int:
    from sceval_plugin.conditions import catalogue
    from sceval_plugin.operators import seed_scheme
    from sceval_plugin.probe_conditions import READINGS

    rng = np.random.default_rng(0)
    prompt = (
        "You are a careful assistant that answers questions about pictures and sound. " * 4
        + "\n\nQuestion: Which coloured shape moves to the right while the high tone beeps twice?\n"
        + "Options:\nA. red circle\nB. blue square\nC. green triangle\nD. yellow circle\n"
        + "x" * 300
    )
    conditions = list(catalogue())
    ability = rng.uniform(0.55, 0.9, size=models)
    difficulty = rng.normal(0, 1, size=samples)
    lines_written = 0
    for m in range(models):
        name = f"model_{m:02d}"
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "20261129_000000_results.json").write_text(json.dumps({"config": {"model": name, "model_args": ""}}))
        for c in conditions:
            damage = 0.004 * c.total_severity
            p_ok = 1 / (1 + np.exp(-(3 * (ability[m] - damage) - difficulty[:, None] + 1)))
            draws = rng.random((samples, c.variants))
            invalid = rng.random((samples, c.variants)) < 0.03
            out = []
            for i in range(samples):
                sid = f"item-{i:04d}"
                for v in range(c.variants):
                    correct = None if invalid[i, v] else int(draws[i, v] < p_ok[i, 0])
                    answer = None if correct is None else ("A" if correct else "BCD"[(i + v) % 3])
                    reply = (
                        "I cannot tell."
                        if correct is None
                        else json.dumps({"answer": answer, "confidence": "high", "reasoning": "synthetic"})
                    )
                    trial = SCEvalTrial(
                        sid,
                        v,
                        correct,
                        None if correct is not None else "refusal",
                        answer,
                        4,
                        None if correct is None else "high",
                        "bench",
                    ).to_json()
                    record = {
                        "model": name,
                        "prompt_id": "sceval-json-v1",
                        "sample_id": sid,
                        "source": "bench",
                        "dataset": "bench#0123456789abcdef",
                        "condition_id": c.id,
                        "block": c.block,
                        "operators": {
                            x.modality: {"operator": x.operator, "severity": x.severity} for x in c.corruptions
                        },
                        "control": c.control,
                        "option_order": c.option_order,
                        "variant": v,
                        "cohort": "gold_preserved",
                        "released_variant": False,
                        # as the task writes them (tasks/sceval_task.py): a probe log without
                        # probe_readings is one of the earlier reading, which the report leaves out
                        "seed_scheme": seed_scheme(),
                        "probe_readings": READINGS if c.probe is not None else None,
                        "media": {
                            "root": "/data/sceval-release",
                            "visual": [f"media/{sid}/frame_{k}.png" for k in range(8)],
                            "audio": f"media/{sid}/audio.wav",
                        },
                        "raw_response": reply,
                        "parsed_answer": answer,
                        "parsed_answer_original_key": answer,
                        "confidence": None if correct is None else "high",
                        "gold_key": "A",
                        "n_options": 4,
                        "correct": correct,
                        "invalid": None if correct is not None else "refusal",
                        "latency_s": 0.8,
                        "retries": 0,
                        "failure_detail": "",
                    }
                    line = {
                        "doc_id": len(out),
                        "target": "A",
                        "filtered_resps": reply,
                        "token_counts": [None],
                        "doc_hash": "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b",
                        "sceval_accuracy": trial,
                        "sceval_worst_variant_accuracy": trial,
                        "sceval_coverage": trial,
                        "sceval_valid_trials": trial,
                        "sceval_invalid_api_failure": None,
                        "sceval_invalid_parse_failure": None,
                        "sceval_invalid_refusal": record["invalid"],
                        "sceval_invalid_empty": None,
                        "sceval_excluded_trials": c.id,
                        "sceval_record": record,
                        "input": prompt,
                    }
                    out.append(json.dumps(line))
            (folder / f"20261129_000000_samples_{c.task_name}.jsonl").write_text("\n".join(out) + "\n")
            lines_written += len(out)
    return lines_written


def run_report(runs: list[Path], out: Path, *extra: str) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of `sceval report` in its own process."""
    start = time.perf_counter()
    code = (
        "import resource, sys; from faultline_app.sceval_cli import main; rc = main(sys.argv[1:]); "
        "print('PEAK_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(rc)"
    )
    done = provenance.run_command(
        [sys.executable, "-c", code, "report", *map(str, runs), "-o", str(out), "--quiet", *extra],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    peak_kb = next(int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("PEAK_KB"))
    return wall, peak_kb / 1024


def reference(runs: list[Path], resamples: int = B) -> tuple[float, float, dict]:
    """The obvious implementation: full json.loads, pandas groupby, Python-loop bootstrap of ``resamples``."""
    import pandas as pd
    from scipy import stats

    start = time.perf_counter()
    rows = []
    for run in runs:
        for path in sorted(run.rglob("*_samples_sceval_*.jsonl")):
            with open(path) as handle:
                for line in handle:
                    r = json.loads(line)["sceval_record"]
                    rows.append(
                        {
                            "model": r["model"],
                            "condition": r["condition_id"],
                            "sample": r["sample_id"],
                            "variant": r["variant"],
                            "correct": r["correct"],
                            "block": r["block"],
                        }
                    )
    df = pd.DataFrame(rows)
    df["correct"] = df["correct"].astype(float)
    df["strict"] = df["correct"].fillna(0)
    per_sample = (
        df.groupby(["model", "condition", "sample"])
        .agg(score=("correct", "mean"), strict=("strict", "mean"), block=("block", "first"))
        .reset_index()
    )
    rng = np.random.default_rng(1)
    intervals = {}
    for (model, condition), g in per_sample.groupby(["model", "condition"]):
        values = g["score"].dropna().to_numpy()
        means = [rng.choice(values, size=len(values), replace=True).mean() for _ in range(resamples)]
        intervals[(model, condition)] = (values.mean(), np.percentile(means, 2.5), np.percentile(means, 97.5))
    tests = []
    for model, g in per_sample.groupby("model"):
        clean = g[g["condition"] == "clean"].set_index("sample")
        for condition, h in g[g["condition"] != "clean"].groupby("condition"):
            h = h.set_index("sample")
            common = clean.index.intersection(h.index)
            d = (clean.loc[common, "strict"] - h.loc[common, "strict"]).to_numpy()
            boots = [rng.choice(d, size=len(d), replace=True).mean() for _ in range(resamples)]
            a, b_ = clean.loc[common, "strict"] >= 0.5, h.loc[common, "strict"] >= 0.5
            bb, cc = int((a & ~b_).sum()), int((~a & b_).sum())
            p = 1.0 if bb + cc == 0 else stats.binomtest(bb, bb + cc, 0.5).pvalue
            tests.append(
                (model, h["block"].iloc[0], condition, np.percentile(boots, 2.5), np.percentile(boots, 97.5), p)
            )
    tests = pd.DataFrame(tests, columns=["model", "block", "condition", "lo", "hi", "p"])
    adjusted = []
    for _, g in tests.groupby(["block"]):
        ps = g["p"].sort_values()
        m = len(ps)
        adj = np.minimum(1, np.maximum.accumulate((m - np.arange(m)) * ps.to_numpy()))
        adjusted += list(adj)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return wall, peak, {"intervals": len(intervals), "tests": len(tests)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=15)
    parser.add_argument("--samples", type=int, default=273)
    parser.add_argument("--keep", type=Path, help="write the synthetic logs here and keep them")
    parser.add_argument(
        "--smoke", action="store_true", help=f"{provenance.SMOKE_HELP}: 2 models x 4 samples, B = {SMOKE_B}"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.models, args.samples = 2, 4
    record = provenance.Record(__file__, peer="reference: json.loads + pandas groupby + Python-loop bootstrap")
    root = args.keep or Path(tempfile.mkdtemp(prefix="sceval-report-bench-"))
    try:
        start = time.perf_counter()
        lines = synthesise(root / "runs", args.models, args.samples)
        size = sum(p.stat().st_size for p in (root / "runs").rglob("*.jsonl")) / 1e9
        print(
            f"synthesised {lines:,} per-sample lines ({size:.2f} GB) for {args.models} models in "
            f"{time.perf_counter() - start:.0f} s; {os.cpu_count()} CPUs\n"
        )
        runs = sorted((root / "runs").iterdir())
        # The lean report brackets the reference (run before and after it, its time the mean), so a
        # change of load on the machine during the reference's minutes hits both sides of the ratio.
        lean = ("--no-model-pairs", "--no-figures")
        before_s, lean_mb = run_report(runs, root / "report_lean", *lean)
        resamples = SMOKE_B if args.smoke else B
        ref_s, ref_mb, counts = reference(runs, resamples)
        after_s, _ = run_report(runs, root / "report_lean_after", *lean)
        lean_s = (before_s + after_s) / 2
        full_s, full_mb = run_report(runs, root / "report_full")
        print(f"{'run':<58}{'wall s':>9}{'peak MB':>10}")
        print(f"{'sceval report (everything, incl. model-vs-model)':<58}{full_s:>9.1f}{full_mb:>10.0f}")
        print(f"{'sceval report --no-model-pairs --no-figures':<58}{lean_s:>9.1f}{lean_mb:>10.0f}")
        print(f"  (before the reference {before_s:.1f} s, after it {after_s:.1f} s)")
        print(f"{'reference: json.loads + groupby + Python-loop bootstrap':<58}{ref_s:>9.1f}{ref_mb:>10.0f}")
        print(f"  ({counts['intervals']} intervals and {counts['tests']} paired tests, B = {resamples})")
        ratio = ref_s / lean_s
        print(f"\nspeed-up on the same workload: {ratio:.1f}x (target >= 10x)")
        print(f"full report: {full_s:.1f} s (target < 60 s)")
        record.figure(
            "trials", lines, "per-sample lines", f"{args.models} models x {args.samples} samples, {size:.2f} GB"
        )
        record.figure("report_s", full_s, "s", "sceval report, complete (model-vs-model tests, figures)")
        record.figure("report_peak_mb", full_mb, "MB", "its peak memory")
        record.figure(
            "lean_s",
            lean_s,
            "s",
            "sceval report --no-model-pairs --no-figures (the reference's workload), mean of a run before and one "
            f"after the reference ({before_s:.1f} s, {after_s:.1f} s)",
        )
        record.figure("reference_s", ref_s, "s", "the reference")
        record.figure("speedup", ratio, "x", "reference / sceval report --no-model-pairs --no-figures (goal >= 10x)")
        record.write(args.json, smoke=args.smoke)
        return 0 if args.smoke or (ratio >= 10 and full_s < 60) else 1
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
