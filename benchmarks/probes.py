"""Cost of a mechanism-probe trial against a clean trial, measured in the same run on the demo.

    python benchmarks/probes.py [--repeat 5] [--family desync]

For every probe condition, the time to build what the model is sent for each demo trial (the
task's ``doc_to_messages``: render with the probe and its donor, PIL frames, audio dict, prompt)
is measured interleaved with the clean condition's: each round times clean, then the probe, on
the same 30 items, so drift of the machine hits both. Per trial: the median over rounds, after
one warm-up (media decoding is cached, as it is in a run). The ratio is probe / clean.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

os.environ.setdefault("SCEVAL_SOURCE", "demo")

import provenance

from faultline_eval.tasks import sceval_task as task
from sceval_plugin import probe_conditions as probes
from sceval_plugin.conditions import catalogue


def seconds_per_trial(docs: list[dict]) -> float:
    start = time.perf_counter()
    for doc in docs:
        task.doc_to_messages(doc)
    return (time.perf_counter() - start) / len(docs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--family", choices=probes.PROBE_FAMILIES, help="only this probe family")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"{provenance.SMOKE_HELP}: the first probe condition of each family, one round",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    args = parser.parse_args()
    record = provenance.Record(__file__, peer="the clean condition's trials")
    conditions = [
        c for c in catalogue() if c.probe is not None and args.family in (None, probes.get(c.probe.name).family)
    ]
    if args.smoke:
        args.repeat = 1
        first = {probes.get(c.probe.name).family: c for c in reversed(conditions)}
        conditions = [c for c in conditions if c in first.values()]
    clean_docs = task.build_rows(catalogue().get("clean"))[0]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs; {len(clean_docs)} demo trials per condition, "
        f"median of {args.repeat} interleaved rounds\n"
    )
    print(f"{'condition':<34}{'probe ms/trial':>15}{'clean ms/trial':>15}{'ratio':>8}")
    ratios = []
    for condition in conditions:
        docs = task.build_rows(condition)[0]
        seconds_per_trial(docs), seconds_per_trial(clean_docs)  # warm-up: decoding and caches
        probe_times, clean_times = [], []
        for _ in range(args.repeat):
            clean_times.append(seconds_per_trial(clean_docs))
            probe_times.append(seconds_per_trial(docs))
        probe_ms, clean_ms = 1000 * statistics.median(probe_times), 1000 * statistics.median(clean_times)
        ratios.append(probe_ms / clean_ms)
        print(f"{condition.id:<34}{probe_ms:>15.2f}{clean_ms:>15.2f}{probe_ms / clean_ms:>8.2f}")
        record.figure(
            condition.id, probe_ms / clean_ms, "x", f"{probe_ms:.2f} ms a trial against clean's {clean_ms:.2f} ms"
        )
    print(
        f"\nprobe / clean per trial: median ratio {statistics.median(ratios):.2f}, "
        f"max {max(ratios):.2f} ({conditions[ratios.index(max(ratios))].id})"
    )
    record.figure("median_ratio", statistics.median(ratios), "x", "median over the probe conditions of probe / clean")
    record.figure("min_ratio", min(ratios), "x", f"the cheapest ({conditions[ratios.index(min(ratios))].id})")
    record.figure("max_ratio", max(ratios), "x", f"the dearest ({conditions[ratios.index(max(ratios))].id})")
    record.write(args.json, smoke=args.smoke)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
