"""Calibrate and time the offline embedding judge against token-F1, in the same run.

    python benchmarks/embedding_judge.py [--repeat 3]

Data: faultline_eval/judges/calibration.jsonl, 162 hand-labelled pairs on which normalised exact
match fails (81 equivalent, 81 not; 42 of them under long, demo-style questions). Scores swept
over the YES threshold 0.00..1.00 (step 0.01), keeping the highest Cohen's kappa against the
labels (ties: farthest from any score, then higher), by faultline_eval.core.agreement.best_threshold:

* guards + embedding (the judge): pairs a guard rule decides count as +inf (YES) or -inf (NO),
  so only the cosines of the rest move with the threshold; one row per text form;
* embedding alone (guards=False), one row per text form;
* the peer, SQuAD token-F1 (faultline_eval.judges.matching.token_f1).

Speed: pairs per second through EmbeddingJudge.judge (model already loaded, best of --repeat
after a warm-up) and through token_f1, on this machine's CPUs. Exit status 1 when the module's
THRESHOLD / CALIBRATION_* no longer match what this sweep finds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import provenance

from faultline_eval.core.agreement import best_threshold
from faultline_eval.judges import embedding
from faultline_eval.judges.base import JudgeRequest
from faultline_eval.judges.matching import exact_match, token_f1


def best_s(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"{provenance.SMOKE_HELP}: 20 of the pairs, the default text form, one timing",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.repeat = 1
    record = provenance.Record(__file__, peer="SQuAD token-F1")

    rows = [json.loads(line) for line in embedding.CALIBRATION_PATH.read_text().splitlines() if line.strip()]
    forms = embedding.TEXT_FORMS
    if args.smoke:
        rows, forms = rows[:10] + rows[-10:], [embedding.DEFAULT_FORM]
    labels = [bool(r["equivalent"]) for r in rows]
    requests = [JudgeRequest(f"cal-{i}", r["question"], r["gold"], r["prediction"]) for i, r in enumerate(rows)]
    leaks = sum(exact_match(r["prediction"], r["gold"]) for r in rows)
    long_q = sum(len(r["question"].split()) >= 15 for r in rows)
    import torch

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads)"
    )
    print(
        f"data: {len(rows)} pairs, {sum(labels)} equivalent, {long_q} with questions of 15+ words, "
        f"{leaks} solved by exact match\n"
    )

    start = time.perf_counter()
    embedding.load_model()
    print(f"model load (imports included): {time.perf_counter() - start:.1f} s\n")

    print(f"{'scorer':<40}{'threshold':>10}{'kappa':>8}{'accuracy':>10}")
    chosen = alone = None
    for guards in (True, False):
        for form in forms:
            verdicts = embedding.EmbeddingJudge(text_form=form, guards=guards).judge(requests)
            scores = [embedding.score(v) for v in verdicts]
            t, kappa, acc = best_threshold(scores, labels)
            name = f"{'guards + ' if guards else ''}embedding, form {form!r}"
            print(f"{name:<40}{t:>10.2f}{kappa:>8.3f}{acc:>10.3f}")
            if form == embedding.DEFAULT_FORM:
                if guards:
                    chosen = (t, kappa, acc, verdicts, scores)
                else:
                    alone = (t, kappa, acc)
    f1_scores = [token_f1(r["prediction"], r["gold"]) for r in rows]
    f1_t, f1_kappa, f1_acc = best_threshold(f1_scores, labels)
    print(f"{'token-F1 (peer)':<40}{f1_t:>10.2f}{f1_kappa:>8.3f}{f1_acc:>10.3f}")

    assert chosen is not None and alone is not None
    t, kappa, acc, verdicts, scores = chosen
    print(
        f"\nchosen: guards + form {embedding.DEFAULT_FORM!r}, threshold {t:.2f}: kappa {kappa:.3f}, "
        f"accuracy {acc:.3f} (module constant {embedding.THRESHOLD:.2f}, documented kappa "
        f"{embedding.CALIBRATION_KAPPA:.3f}); embedding alone {alone[1]:.3f}, token-F1 {f1_kappa:.3f}"
    )
    deciders = Counter(v.raw.split()[0].split(":")[0 if v.raw.startswith("cos:") else 1] for v in verdicts)
    wrong = Counter(
        v.raw.split()[0].split(":")[0 if v.raw.startswith("cos:") else 1]
        for v, s, y in zip(verdicts, scores, labels)
        if (s >= t) != y
    )
    print("decided by: " + ", ".join(f"{k} {n} ({wrong[k]} wrong)" for k, n in deciders.most_common()))
    misses = Counter(r["kind"] for r, s, y in zip(rows, scores, labels) if (s >= t) != y)
    print("disagreements by kind: " + ", ".join(f"{k} {n}" for k, n in misses.most_common()))

    judge = embedding.EmbeddingJudge()
    ours = best_s(lambda: judge.judge(requests), args.repeat)
    peer = best_s(lambda: [token_f1(r["prediction"], r["gold"]) for r in rows], args.repeat)
    ours_rate, peer_rate = len(rows) / ours, len(rows) / peer
    print(
        f"\nthroughput: embedding judge {ours_rate:,.0f} pairs/s, token-F1 {peer_rate:,.0f} pairs/s "
        f"(embedding is {peer_rate / ours_rate:,.0f}x slower; kappa {kappa:.3f} vs {f1_kappa:.3f})"
    )
    record.figure("kappa", kappa, "", f"Cohen's kappa of the guarded judge at threshold {t:.2f}")
    record.figure("accuracy", acc, "", "its accuracy")
    record.figure("threshold", t, "", "the best threshold")
    record.figure("embedding_alone_kappa", alone[1], "", "kappa of the embedding without guards")
    record.figure("token_f1_kappa", f1_kappa, "", "kappa of token F1 at its best threshold")
    record.figure("pairs_per_s", ours_rate, "pairs/s", "the embedding judge's throughput")
    record.figure("slowdown", peer_rate / ours_rate, "x", "token-F1 pairs/s / the judge's")
    record.write(args.json, smoke=args.smoke)
    if not args.smoke and (
        abs(t - embedding.THRESHOLD) > 1e-9
        or abs(kappa - embedding.CALIBRATION_KAPPA) > 0.0005
        or abs(acc - embedding.CALIBRATION_ACCURACY) > 0.0005
    ):
        print("the module constants are stale: update THRESHOLD / CALIBRATION_* in faultline_eval/judges/embedding.py")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
