"""Items per minute through the LLM build stages at concurrency 1 and 16, in one run.

    python benchmarks/build.py [--items 32] [--latency 0.25] [--repeat 3]

A local fake Gemini server (``tests/fake_gemini.py``, scripted by ``tests/build_fakes.py``)
answers every request after ``--latency`` seconds, as a remote model would; ``generate`` →
``classify`` → ``audit`` then run through the real google-genai client on ``--items`` image
candidates of AttributeComposition (IC01). Between classify and audit, each item gets a 2 s
tone as its synthesized audio (written straight into the synthesize ledger: the media stage is
not what is timed). The peer is the same pipeline at concurrency 1; the two settings alternate,
each on a fresh build folder, and the best of ``--repeat`` counts. Printed: items per minute at
each concurrency and their ratio, and the requests each run sent.
"""

from __future__ import annotations

import argparse
import os
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
    "TQDM_DISABLE": "1",
}.items():
    os.environ.setdefault(_k, _v)
os.environ.setdefault("GEMINI_API_KEY", "benchmark-key")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import provenance  # noqa: E402
from build_fakes import Scripted, write_candidates  # noqa: E402
from fake_gemini import FakeGemini  # noqa: E402


def one_build(server: FakeGemini, folder: Path, items: int, concurrency: int) -> tuple[float, int, int]:
    """(seconds, accepted items, requests sent) of generate → classify → audit on a fresh folder."""
    from c3po_plugin.construction.audit import run_audit
    from c3po_plugin.construction.classify import run_classify
    from c3po_plugin.construction.generate import run_generate
    from c3po_plugin.construction.ledger import Ledger
    from c3po_plugin.data.make_demo import tone, write_audio

    write_candidates(folder, "IC01", items)
    write_audio(folder / "media" / "items" / "tone.wav", tone(True))
    spec = f"gemini:gemini-bench,base_url={server.url},max_retries=0"
    sent = len(server.requests)
    start = time.perf_counter()
    run_generate(folder, generator=spec, concurrency=concurrency, templates=["IC01"])
    run_classify(folder, templates=["IC01"])
    synth = Ledger(folder, "synthesize")
    for sample_id in Ledger(folder, "classify").ok():
        synth.record(sample_id, "ok", data={"audio": "media/items/tone.wav", "image": None})
    counts = run_audit(folder, templates=["IC01"])
    return time.perf_counter() - start, counts["ok"], len(server.requests) - sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.25, help="seconds the fake server takes per reply")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help=f"{provenance.SMOKE_HELP}: 4 items, 0.05 s latency, once")
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.items, args.latency, args.repeat = 4, 0.05, 1
    record = provenance.Record(__file__, peer="the same build at concurrency 1")
    best: dict[int, tuple[float, int, int]] = {}
    with tempfile.TemporaryDirectory() as tmp, FakeGemini(script=Scripted({}), latency=args.latency) as server:
        for run in range(args.repeat):
            for concurrency in (1, 16):  # interleaved, so drift hits both alike
                result = one_build(server, Path(tmp) / f"c{concurrency}-r{run}", args.items, concurrency)
                if concurrency not in best or result[0] < best[concurrency][0]:
                    best[concurrency] = result
    print(f"{args.items} candidates, fake server latency {args.latency:.2f} s, best of {args.repeat}")
    rate = {}
    for concurrency, (seconds, accepted, requests) in sorted(best.items()):
        rate[concurrency] = 60 * accepted / seconds
        print(
            f"  concurrency {concurrency:2d}: {seconds:6.2f} s, {requests} requests, {accepted} accepted items, "
            f"{rate[concurrency]:7.1f} items/min"
        )
    print(f"concurrency 16 / concurrency 1: {rate[16] / rate[1]:.1f}x items per minute")
    for concurrency, (seconds, _, requests) in sorted(best.items()):
        record.figure(
            f"concurrency_{concurrency}_items_per_min",
            rate[concurrency],
            "items/min",
            f"{requests} requests in {seconds:.1f} s",
        )
    record.figure("speedup", rate[16] / rate[1], "x", f"items/min at concurrency 16 / 1, {args.latency} s fake latency")
    record.write(args.json, smoke=args.smoke)


if __name__ == "__main__":
    main()
