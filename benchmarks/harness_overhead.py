"""SCEval's per-request overhead inside lmms-eval, against a plain lmms-eval task, in one run.

    python benchmarks/harness_overhead.py [--items 12] [--repeat 3]

Both runs use the same items (8 frames of 640x360 as PNG, 30 s of 16 kHz audio) and the same
no-inference model, which still materialises every request's media (turns each frame into an
array and reads every audio sample) and replies with a fixed JSON answer. The peer is a plain
lmms-eval task over the clean items: its doc_to_visual opens the frames and the audio from disk
for each request, as lmms-eval's own tasks do. Ours is ``sceval_panel`` (clean + 12 joint cells,
3 variants each), so its overhead includes corrupting text, frames and audio, building the
messages and parsing the reply. Per-request overhead = evaluation wall time / requests, best of
--repeat. A breakdown of our stages on one item follows (decode, corrupt, encode, parse).
"""

from __future__ import annotations

import argparse
import json
import os
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

import numpy as np  # noqa: E402
import provenance  # noqa: E402

TARGET_RATIO, TARGET_MS = 2.0, 25.0

PLAIN_TASK = """task: plain_clean
dataset_path: json
dataset_kwargs:
  data_files: {items}
test_split: train
output_type: generate_until
doc_to_visual: !function plain_utils.doc_to_visual
doc_to_text: !function plain_utils.doc_to_text
doc_to_target: gold_key
process_results: !function plain_utils.process_results
generation_kwargs:
  max_new_tokens: 16
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
"""

PLAIN_UTILS = """
import json, os, soundfile
from PIL import Image

ROOT = {root!r}

def doc_to_visual(doc):
    frames = [Image.open(os.path.join(ROOT, p)).convert("RGB") for p in doc["visual"]]
    wave, rate = soundfile.read(os.path.join(ROOT, doc["audio"]), dtype="float32")
    return frames + [{{"array": wave, "sampling_rate": rate}}]

def doc_to_text(doc):
    options = "\\n".join(f"{{k}}. {{v}}" for k, v in sorted(doc["options"].items()))
    return f"{{doc['question']}}\\n{{options}}\\nAnswer with the option letter."

def process_results(doc, results):
    reply = results[0]
    try:
        answer = json.loads(reply).get("answer")
    except Exception:
        answer = reply.strip()[:1]
    return {{"acc": float(answer == doc["gold_key"])}}
"""


def make_items(folder: Path, count: int) -> tuple[Path, Path]:
    import soundfile

    from faultline_eval.core import media

    rng = np.random.default_rng(0)
    rows = []
    t = np.arange(30 * 16_000) / 16_000
    for i in range(count):
        sid = f"bench-{i:03d}"
        base = rng.integers(0, 256, size=(45, 80, 3), dtype=np.uint8)
        paths = []
        for j in range(8):  # smooth-ish natural-looking frames compress like real video frames
            frame = np.kron(np.roll(base, j, axis=1), np.ones((8, 8, 1), np.uint8))
            media.write_image(folder / sid / f"frame_{j}.png", frame)
            paths.append(f"{sid}/frame_{j}.png")
        wave = (0.3 * np.sin(2 * np.pi * (220 + 20 * i) * t) + 0.01 * rng.standard_normal(t.size)).astype(np.float32)
        soundfile.write(folder / sid / "audio.wav", wave, 16_000, subtype="PCM_16")
        rows.append(
            {
                "sample_id": sid,
                "source": "bench",
                "question": f"Which option describes clip {i} best?",
                "options": {"A": "a red disc", "B": "a blue square", "C": "a green circle", "D": "nothing"},
                "gold_key": "A",
                "visual": paths,
                "audio": f"{sid}/audio.wav",
            }
        )
    items = folder / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # The peer gets as many requests as sceval_panel makes (clean + 12 cells x 3 variants), so
    # fixed start-up costs weigh the same on both sides.
    repeated = folder / "plain_items.jsonl"
    repeated.write_text("".join(json.dumps(r) + "\n" for r in rows) * (1 + 12 * 3))
    return items, repeated


def touching_model():
    """A chat model with no inference: it materialises every frame and audio sample it is sent."""
    from lmms_eval.api.model import lmms

    class Touch(lmms):
        is_simple = False

        def __init__(self):
            super().__init__()
            self.touched = 0

        def generate_until(self, requests):
            replies = []
            for request in requests:
                ctx, doc_to_messages, _, doc_id, task, split = request.args
                messages = doc_to_messages(self.task_dict[task][split][doc_id])
                for message in messages:
                    for part in message["content"]:
                        url = part.get("url")
                        if hasattr(url, "size") and hasattr(url, "mode"):
                            self.touched += int(np.asarray(url)[0, 0, 0])
                        elif isinstance(url, dict) and "array" in url:
                            self.touched += int(np.asarray(url["array"]).size)
                replies.append('{"answer": "A", "confidence": "low", "reasoning": "no inference"}')
            return replies

        def loglikelihood(self, requests):
            raise NotImplementedError

        def generate_until_multi_round(self, requests):
            raise NotImplementedError

    return Touch()


def timed_run(task: str, task_manager, repeat: int) -> tuple[float, int]:
    from lmms_eval.evaluator import simple_evaluate

    best, requests = float("inf"), 0
    for _ in range(repeat):
        from faultline_eval.core import decode_cache

        decode_cache.clear()  # every run decodes its media afresh (the cache is this run's own)
        model = touching_model()
        start = time.perf_counter()
        out = simple_evaluate(model=model, tasks=[task], task_manager=task_manager, verbosity="ERROR")
        best = min(best, time.perf_counter() - start)
        requests = sum(v["effective"] for v in out["n-samples"].values())
    return best, requests


def stage_breakdown(items_path: Path) -> dict[str, float]:
    """Our stages on the first item for the heaviest panel cell (noise@70 + drop_words + mute)."""
    from faultline_eval.core import decode_cache
    from faultline_eval.tasks import sceval_task as task
    from sceval_plugin.conditions import catalogue
    from sceval_plugin.render import render

    condition = catalogue().get("tri_drop_words_noise_mute_t30_v70_a30")
    doc = task.build_rows(condition)[0][0]
    item = task._item(doc["item"])
    out = {}
    decode_cache.clear()
    start = time.perf_counter()
    item.frames(), item.waveform()
    out["decode (once per item, cached)"] = time.perf_counter() - start
    start = time.perf_counter()
    trial = render(item, condition, 1)
    out["corrupt text+frames+audio"] = time.perf_counter() - start
    start = time.perf_counter()
    task._images(trial), task._audio(trial), task._prompt(condition, trial)
    out["encode messages"] = time.perf_counter() - start
    start = time.perf_counter()
    task.process_results(doc, ['{"answer": "A", "confidence": "low"}'])
    out["parse + record"] = time.perf_counter() - start
    return {k: v * 1000 for k, v in out.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help=f"{provenance.SMOKE_HELP}: 1 item, once")
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.items, args.repeat = 1, 1
    record = provenance.Record(__file__, peer="a plain lmms-eval task over the clean items")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        items, repeated = make_items(tmp / "data", args.items)
        os.environ["SCEVAL_SOURCE"] = str(items.parent)
        os.environ["SCEVAL_CACHE"] = str(tmp / "cache")  # cleared between runs: not the user's cache
        plain = tmp / "plain"
        plain.mkdir()
        (plain / "plain.yaml").write_text(PLAIN_TASK.format(items=repeated))
        (plain / "plain_utils.py").write_text(PLAIN_UTILS.format(root=str(items.parent)))

        import lmms_eval.models  # noqa: F401  (loads our entry point, which adds the SCEval task folder)
        from lmms_eval.tasks import TaskManager

        manager = TaskManager("ERROR", include_path=str(plain), include_defaults=False)
        plain_s, plain_n = timed_run("plain_clean", manager, args.repeat)
        ours_s, ours_n = timed_run("sceval_panel", manager, args.repeat)
        stages = stage_breakdown(items)

    plain_ms, ours_ms = 1000 * plain_s / plain_n, 1000 * ours_s / ours_n
    print(f"items: {args.items} x (8 frames 640x360 PNG + 30 s 16 kHz audio); best of {args.repeat} runs\n")
    print(f"{'run':<44}{'requests':>9}{'wall s':>9}{'ms/request':>12}")
    print(f"{'plain lmms-eval task (peer), clean items':<44}{plain_n:>9}{plain_s:>9.2f}{plain_ms:>12.1f}")
    print(f"{'sceval_panel (clean + 12 joint cells)':<44}{ours_n:>9}{ours_s:>9.2f}{ours_ms:>12.1f}")
    ratio = ours_ms / plain_ms
    print(f"\nratio to lmms-eval's own per-request overhead: {ratio:.2f}x (target <= {TARGET_RATIO}x)")
    print(f"our per-request overhead: {ours_ms:.1f} ms (target <= {TARGET_MS} ms)\n")
    print("our stages, one item, tri_drop_words_noise_mute_t30_v70_a30:")
    for name, ms in stages.items():
        print(f"  {name:<34}{ms:>8.1f} ms")
    record.figure("plain_ms_per_request", plain_ms, "ms", f"the plain task, {plain_n} requests")
    record.figure("ours_ms_per_request", ours_ms, "ms", f"sceval_panel, {ours_n} requests (goal <= {TARGET_MS} ms)")
    record.figure("ratio", ratio, "x", f"ours / the plain task's per-request time (goal <= {TARGET_RATIO}x)")
    record.write(args.json, smoke=args.smoke)
    return 0 if args.smoke or (ratio <= TARGET_RATIO and ours_ms <= TARGET_MS) else 1


if __name__ == "__main__":
    raise SystemExit(main())
