"""What wrapping an lmms-eval task with SCEval conditions costs per request (issue 27, design §11).

    python benchmarks/wrap.py overhead [--rounds 200] [--tasks mme,clotho_aqa_test] [--image-size 768x1024]
                                       [--audio-seconds 20] [--audio-rate 16000]
    python benchmarks/wrap.py video [--seconds 10] [--width 640] [--height 360] [--rounds 5]
    python benchmarks/wrap.py faithful [--limit 4] [--rounds 20] [--frames 8]
    python benchmarks/wrap.py --smoke                    # every part at CI size

``overhead``: per-request time outside the model of a wrapped task at severity 0 against its
base task on the same docs.

Data: the local copies of ``tests/wrap_datasets.py`` (MME: 4 docs, two PNG images of
``--image-size``, default 96x128; ClothoAQA: 4 docs of ``--audio-seconds`` of audio at
``--audio-rate``, default 1 s at 16 kHz), built in a temporary folder. The base task is the
copy's ``wrapcheck_<task>`` YAML (the installed task YAML pointed at the copy); the wrapped task is
``<task>__clean__var0`` written by ``faultline_eval.tasks.wrap_configs`` with the same data, i.e.
severity 0, where the wrapper only type-checks and re-wraps what the base returns (audio keeps
its rate under ``frames=source``, issue 36, so ``--audio-rate 44100`` adds no resample; under
``frames=sceval_grid`` it would add one, to 16 kHz).

A request's cost here is what lmms-eval does for it outside the model: fetch the doc from the
task's docs (an audio doc is decoded on access), ``doc_to_visual(doc)`` and ``doc_to_text(doc)``.
Both tasks are built once and warmed by one pass; then, round by round, every doc is timed on
the base and on the wrapped task as an interleaved pair (the order alternates by round, so drift
and cache effects fall on both arms alike). Printed per task: the median microseconds per
request of each arm and the ratio wrapped / base (the issue's goal: at most 1.3x).

``video``: decode/corrupt/encode time per request of a wrapped task whose ``doc_to_visual`` gives a
video path (worldsense, videomme, mvbench, ...), against the shared decode cache that SCEval's own
tasks read frames through, measured in the same run. The item is one H.264 (yuv420p, crf 18) +
AAC mp4 of ``--seconds`` at 25 fps and ``--width``x``--height`` (textured frames, a moving
pattern, sensor-like noise). The wrapper's path: frames on the default grid (App. F.2: 1 frame/s,
at most 8) and the audio track through the decode cache, the ``noise`` operator at severity 50 on
the stack (``single_noise_v50``), the lossless MP4 written into the file cache.

Arms, one request each, interleaved round by round (the order rotates; medians printed):

* ``decode cold``:       the decode cache empty in memory and on disk: decode frames + audio track
                         (SCEval's per-request cost the first time an item is seen; the named peer);
* ``decode warm disk``:  memory empty, the entry on disk (a later run, another rank);
* ``decode warm memory``: the entry in memory (every later condition of the same item in a run);
* ``wrapped cold``:      decode cache and file cache empty: decode + corrupt + encode + write;
* ``wrapped new``:       decode in memory, a condition/variant not yet written: corrupt + encode;
* ``wrapped clean new``: the same for ``clean`` (no operator): the re-encode alone;
* ``wrapped hit``:       the file already written (reruns, other models): a stat and a path;
* ``corrupt only`` / ``encode only``: the operator call / :func:`write_video_lossless` alone.

The operating system's page cache is not dropped between arms: "cold" means the project's caches
are empty, not the disk's.

``faithful`` (issue 36): on the local copy of every built-in adapter's task, (1) wrapped ``clean``
minus the base (``<task>__unwrapped``, the same data) on the task's own metric, from one real
``lmms-eval`` run of ``modality_oracle`` with ``modality=fingerprint,video_frames=N`` (a model that
samples N frames of a video file itself with lmms-eval's ``read_video`` and replies from a digest
of what it read; goal 0 on every task); (2) for the video tasks, the per-request time of the base
and of wrapped ``clean`` with faithful video (``frames=source``) once the media cache is warm
(after one pass), interleaved as in ``overhead``, two ways: outside the model only
(``doc_to_visual`` + ``doc_to_text``: the base returns a path, the wrapped task a stat, a digest and
a path), and with the frame sampler's own decode of the file handed over (``read_video``, N
frames: the lossless RGB re-encode against the source's H.264). Goal: at most 1.3x the base with the
decode.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import provenance

# --- overhead part: wrapped clean vs the base task, per request, interleaved pairs ----------------

TESTS = Path(__file__).resolve().parent.parent / "tests"
GOAL = 1.3


def build_pair(root: Path, task: str, options: dict[str, dict]):
    """(base task, wrapped clean task) of ``task``'s local copy, built by lmms-eval's TaskManager."""
    sys.path.insert(0, str(TESTS))
    from wrap_datasets import prepare

    from faultline_eval.tasks import wrap_configs

    prepared = prepare(root / task, [task], options)
    os.environ.update(prepared.env)  # before lmms-eval imports the task's utils
    copy = prepared.copies[task]
    [wrapped] = wrap_configs.write(
        task, [wrap_configs.condition_named("clean")], wrap_configs.data_override(task, copy.dataset_path)
    )
    from lmms_eval.tasks import TaskManager, get_task_dict

    folders = [str(prepared.tasks_dir), str(wrap_configs.task_folder(task))]
    manager = TaskManager("WARNING", include_path=folders, include_defaults=False)
    base_name = prepared.names[task]
    built = get_task_dict([base_name, wrapped], manager)
    return built[base_name], built[wrapped]


def request_ns(task, docs, index: int, sample_frames: int = 0) -> int:
    """Nanoseconds lmms-eval spends on one request of ``task`` outside the model; with
    ``sample_frames=N`` also a frame sampler's decode of every video file handed over (lmms-eval's
    ``read_video``, N frames)."""
    start = time.perf_counter_ns()
    doc = docs[index]
    visuals = task.doc_to_visual(doc)
    task.doc_to_text(doc)
    if sample_frames:
        from lmms_eval.models.model_utils.load_video import read_video

        from faultline_eval.core.media import VIDEO_SUFFIXES

        for item in visuals:
            if isinstance(item, str) and Path(item).suffix.lower() in VIDEO_SUFFIXES:
                read_video(item, num_frm=sample_frames)
    return time.perf_counter_ns() - start


def overhead(
    root: Path, task: str, rounds: int, options: dict[str, dict], sample_frames: int = 0
) -> tuple[float, float]:
    """Median µs per request of the base and of the wrapped clean task, interleaved pairs
    (``sample_frames``: see :func:`request_ns`)."""
    base, wrapped = build_pair(root, task, options)
    base_docs, wrapped_docs = base.test_docs(), wrapped.test_docs()
    if len(base_docs) != len(wrapped_docs):
        raise SystemExit(f"{task}: the wrapped task has {len(wrapped_docs)} docs, the base {len(base_docs)}")
    arms = {"base": (base, base_docs), "wrapped": (wrapped, wrapped_docs)}
    times: dict[str, list[int]] = {"base": [], "wrapped": []}
    for built, docs in arms.values():  # warm-up: one pass each (first-call costs, lazy imports)
        for index in range(len(docs)):
            request_ns(built, docs, index, sample_frames)
    for round_ in range(rounds):
        order = ("base", "wrapped") if round_ % 2 == 0 else ("wrapped", "base")
        for index in range(len(base_docs)):
            for name in order:
                built, docs = arms[name]
                times[name].append(request_ns(built, docs, index, sample_frames))
    return statistics.median(times["base"]) / 1e3, statistics.median(times["wrapped"]) / 1e3


def print_overhead(args: argparse.Namespace, record: provenance.Record) -> None:
    """The ``overhead`` part: build the copies, time the pairs, print the table and the goal."""
    from faultline_eval.core.offline import use_offline_defaults

    use_offline_defaults()
    height, width = (int(side) for side in args.image_size.lower().split("x"))
    options = {
        "mme": {"size": (height, width)},
        "clotho_aqa_test": {"seconds": args.audio_seconds, "rate": args.audio_rate},
    }
    previous = os.environ.get("SCEVAL_CACHE")
    with tempfile.TemporaryDirectory(prefix="bench_wrap_") as scratch:
        root = Path(scratch)
        print(f"per-request time outside the model, median over {args.rounds} rounds x docs (interleaved pairs)")
        print(f"MME images {height}x{width}; ClothoAQA clips {args.audio_seconds:g} s at {args.audio_rate} Hz")
        print(f"{'task':<18}{'base µs':>10}{'clean µs':>10}{'ratio':>8}")
        worst = 0.0
        try:
            for task in args.tasks.split(","):
                base_us, wrapped_us = overhead(root, task, args.rounds, options)
                ratio = wrapped_us / base_us
                worst = max(worst, ratio)
                print(f"{task:<18}{base_us:>10.1f}{wrapped_us:>10.1f}{ratio:>7.2f}x", flush=True)
                what = (
                    f"{task}: {wrapped_us:.0f} µs a request wrapped at severity 0 against the base's {base_us:.0f} µs"
                )
                record.figure(f"overhead/{task}", ratio, "x", what)
        finally:
            if previous is None:
                os.environ.pop("SCEVAL_CACHE", None)
            else:
                os.environ["SCEVAL_CACHE"] = previous
        print(f"worst ratio {worst:.2f}x (goal <= {GOAL}x): {'met' if worst <= GOAL else 'NOT met'}")


# --- video part: decode/corrupt/encode per request vs the decode cache ---------------------------------

SOURCE_FPS = 25
VIDEO_ARMS = (
    "decode cold",
    "decode warm disk",
    "decode warm memory",
    "wrapped cold",
    "wrapped new",
    "wrapped clean new",
    "wrapped hit",
    "corrupt only",
    "encode only",
)
#: Each arm's ratio is printed against this peer (what SCEval's path costs for a first request).
VIDEO_PEER = "decode cold"


def make_video(path: Path, *, seconds: int, width: int, height: int) -> Path:
    """A camera-like source clip: a textured background panning, noise per frame, a tone."""
    from faultline_eval.core.media import SAMPLE_RATE
    from faultline_eval.core.media_processing import write_clip

    rng = np.random.default_rng(0)
    texture = np.kron(rng.integers(0, 256, (height // 8 + 1, width // 8 + 1, 3), dtype=np.uint8), np.ones((8, 8, 1)))
    texture = texture.astype(np.uint8)

    def frames():
        for i in range(seconds * SOURCE_FPS):
            frame = np.roll(texture, 2 * i, axis=1)[:height, :width].astype(np.int16)
            yield np.clip(frame + rng.normal(0, 4, frame.shape), 0, 255).astype(np.uint8)

    tone = 0.3 * np.sin(2 * np.pi * 220 * np.arange(seconds * SAMPLE_RATE) / SAMPLE_RATE)
    return write_clip(path, frames(), Fraction(SOURCE_FPS), tone.astype(np.float32))


class VideoArms:
    """The arms on one source clip: :meth:`prepare` puts the caches in the state an arm measures
    (not timed), :meth:`run` is the timed request; ``request`` numbers make "new" conditions new."""

    def __init__(self, source: Path, scratch: Path) -> None:
        from faultline_eval.tasks.wrapped_media import MediaCorruption, decoded_video

        self.source, self.scratch = str(source), scratch
        self.stack, self.track = decoded_video(self.source)
        self.hit = MediaCorruption(self.noise, None, identity="noise/hit")
        self.stack = np.array(self.stack)  # a private copy: the decode cache is cleared between arms
        self.encode_frames = self.noise(self.stack)

    @staticmethod
    def noise(stack: np.ndarray) -> np.ndarray:
        from sceval_plugin import operators

        return operators.apply("noise", stack, severity=50, variant=1, key="bench/doc")

    def corrupt(self, identity: str, clean: bool = False) -> None:
        from faultline_eval.tasks.wrapped_media import MediaCorruption, corrupt_media

        corrupt_media(
            [self.source], MediaCorruption(None if clean else self.noise, None, identity=identity), where="bench"
        )

    def prepare(self, arm: str) -> None:
        from faultline_eval.core import decode_cache
        from faultline_eval.tasks import wrapped_media
        from faultline_eval.tasks.wrapped_media import corrupt_media, decoded_video

        if arm in ("decode cold", "wrapped cold"):
            decode_cache.clear()
            shutil.rmtree(wrapped_media.folder(), ignore_errors=True)
            return
        decoded_video(self.source)  # on disk and in memory
        if arm == "decode warm disk":
            decode_cache.clear_memory()
        if arm == "wrapped hit":
            corrupt_media([self.source], self.hit, where="bench")

    def run(self, arm: str, request: int) -> None:
        from faultline_eval.core import media
        from faultline_eval.tasks.wrapped_media import corrupt_media, decoded_video

        if arm.startswith("decode"):
            decoded_video(self.source)
        elif arm in ("wrapped cold", "wrapped new"):
            self.corrupt(f"noise/{request}")
        elif arm == "wrapped clean new":
            self.corrupt(f"clean/{request}", clean=True)
        elif arm == "wrapped hit":
            corrupt_media([self.source], self.hit, where="bench")
        elif arm == "corrupt only":
            self.noise(self.stack)
        elif arm == "encode only":
            media.write_video_lossless(self.scratch / f"{request}.mp4", self.encode_frames, 1.0, self.track)
        else:
            raise ValueError(arm)


def video_costs(
    *, seconds: int = 10, width: int = 640, height: int = 360, rounds: int = 5
) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds per request of each arm of :data:`VIDEO_ARMS` (module docstring),
    the arms interleaved round by round in a rotating order, in a cache folder of their own. CPU
    is this process's (all threads): on a shared machine it moves less than the wall clock."""
    previous = os.environ.get("SCEVAL_CACHE")
    with tempfile.TemporaryDirectory(prefix="wrap-bench-") as tmp:
        os.environ["SCEVAL_CACHE"] = str(Path(tmp) / "cache")
        try:
            source = make_video(Path(tmp) / "clip.mp4", seconds=seconds, width=width, height=height)
            arms = VideoArms(source, Path(tmp))
            times: dict[str, list[tuple[float, float]]] = {arm: [] for arm in VIDEO_ARMS}
            request = 0
            for r in range(rounds):
                for arm in VIDEO_ARMS[r % len(VIDEO_ARMS) :] + VIDEO_ARMS[: r % len(VIDEO_ARMS)]:
                    arms.prepare(arm)
                    request += 1
                    start, cpu = time.perf_counter(), time.process_time()
                    arms.run(arm, request)
                    times[arm].append((time.perf_counter() - start, time.process_time() - cpu))
        finally:
            if previous is None:
                os.environ.pop("SCEVAL_CACHE", None)
            else:
                os.environ["SCEVAL_CACHE"] = previous
    return {
        arm: (statistics.median(wall for wall, _ in values), statistics.median(cpu for _, cpu in values))
        for arm, values in times.items()
    }


def print_video_costs(
    costs: dict[str, tuple[float, float]],
    record: provenance.Record,
    *,
    seconds: int,
    width: int,
    height: int,
    rounds: int,
) -> None:
    peer_wall, peer_cpu = costs[VIDEO_PEER]
    print(
        f"video item: {seconds} s {width}x{height} H.264+AAC at {SOURCE_FPS} fps; grid 1 frame/s, at most 8; "
        f"noise severity 50; {rounds} interleaved rounds, median per request"
    )
    print(f"{'arm':<20} {'wall ms':>9} {'cpu ms':>9} {'wall x peer':>12} {'cpu x peer':>11}   (peer: {VIDEO_PEER})")
    for arm in VIDEO_ARMS:
        wall, cpu = costs[arm]
        print(f"{arm:<20} {wall * 1000:>9.2f} {cpu * 1000:>9.2f} {wall / peer_wall:>12.3f} {cpu / peer_cpu:>11.3f}")
        what = f"{arm}, {width}x{height}: {wall * 1000:.2f} ms wall, {cpu / peer_cpu:.3f}x {VIDEO_PEER}'s CPU time"
        record.figure(f"video/{arm.replace(' ', '_')}_cpu_ms", cpu * 1000, "ms", what)


# --- faithful part: wrapped clean against the base on the task's own metric; faithful video cost ------


def clean_minus_base(
    root: Path, limit: int, frames: int, tasks: list[str] | None = None
) -> dict[tuple[str, str], tuple[float, float]]:
    """(task, metric) -> (base value, wrapped clean value) on each of the task's own metrics, from
    one lmms-eval run of the frame-sampling fingerprint model over ``<task>__unwrapped`` and
    ``<task>__clean__var0`` of every built-in adapter's local copy."""
    import json

    sys.path.insert(0, str(TESTS))
    from wrap_datasets import BUILDERS, prepare

    from faultline_eval.tasks import wrap_configs
    from sceval_plugin.base_task import metric_specs

    tasks = tasks or list(BUILDERS)
    prepared = prepare(root, tasks)
    os.environ.update(prepared.env)
    pairs = {}
    for task in tasks:
        data = wrap_configs.data_override(task, prepared.copies[task].dataset_path)
        [clean] = wrap_configs.write(task, [wrap_configs.condition_named("clean")], data)
        pairs[task] = (wrap_configs.unwrapped_name(task), clean)
    out = root / "run"
    command = [sys.executable, "-m", "lmms_eval", "--model", "modality_oracle"]
    command += ["--model_args", f"modality=fingerprint,video_frames={frames}"]
    command += ["--tasks", ",".join(n for pair in pairs.values() for n in pair), "--limit", str(limit)]
    command += ["--force_simple", "--output_path", str(out)]  # the base audio tasks fail under chat (design §1.6)
    done = provenance.run_command(command, env=prepared.subprocess_env(), capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"lmms-eval failed ({done.returncode}):\n{done.stderr[-4000:]}")
    [results_file] = out.rglob("*_results.json")
    results = json.loads(results_file.read_text())["results"]
    values = {
        (task, spec.name): (results[base].get(f"{spec.name},none"), results[clean].get(f"{spec.name},none"))
        for task, (base, clean) in pairs.items()
        for spec in metric_specs(task)
    }
    # a metric with no item (MME's cognition here) is not reported, one that writes a submission file
    # (air_bench's) reports null: neither has a number to compare
    return {
        key: (float("nan") if b is None else float(b), float("nan") if c is None else float(c))
        for key, (b, c) in values.items()
        if not (b is None and c is None)
    }


def print_faithful(args: argparse.Namespace, record: provenance.Record) -> None:
    from faultline_eval.core.offline import use_offline_defaults

    use_offline_defaults()
    previous = {name: os.environ.get(name) for name in ("SCEVAL_CACHE", "HF_HOME")}
    try:
        with tempfile.TemporaryDirectory(prefix="bench_wrap_faithful_") as scratch:
            root = Path(scratch)
            start = time.perf_counter()
            chosen = [t.strip() for t in args.faithful_tasks.split(",") if t.strip()] or None
            values = clean_minus_base(root / "metric", args.limit, args.frames, chosen)
            print(
                f"wrapped clean minus base (<task>__unwrapped, same local copy) on the task's own metric, "
                f"{args.limit} docs, modality_oracle fingerprint sampling {args.frames} frames itself "
                f"(one lmms-eval run, {time.perf_counter() - start:.0f} s)"
            )
            print(f"{'task':<24}{'metric':<28}{'base':>9}{'clean':>9}{'diff':>8}")
            for (task, metric), (base, clean) in values.items():
                print(f"{task:<24}{metric:<28}{base:>9.2f}{clean:>9.2f}{clean - base:>8.2f}")
                record.figure(
                    f"faithful/{task}/{metric}_clean_minus_base",
                    clean - base,
                    metric,
                    f"{task}: {metric} {clean:g} wrapped clean, {base:g} base",
                )
            # a number on one side only is a difference too
            worst = max(
                abs(clean - base) if clean == clean and base == base else math.inf for base, clean in values.values()
            )
            print(f"largest |clean - base| {worst:g} (goal 0): {'met' if worst == 0 else 'NOT met'}")
            print(f"\nper request, media cache warm, {args.rounds} rounds x docs (interleaved pairs), faithful video")
            print(
                f"{'task':<24}{'base µs':>10}{'clean µs':>10}{'ratio':>7}{'+decode base':>14}{'clean':>9}{'ratio':>7}"
            )
            worst = 0.0
            from wrap_datasets import VIDEO_TASKS  # on sys.path since clean_minus_base

            for task in [t for t in VIDEO_TASKS if chosen is None or t in chosen]:
                outside = overhead(root / "requests", task, args.rounds, {})
                decoded = overhead(root / "decoded", task, args.rounds, {}, sample_frames=args.frames)
                ratio = decoded[1] / decoded[0]
                worst = max(worst, ratio)
                print(
                    f"{task:<24}{outside[0]:>10.1f}{outside[1]:>10.1f}{outside[1] / outside[0]:>6.2f}x"
                    f"{decoded[0]:>14.1f}{decoded[1]:>9.1f}{ratio:>6.2f}x",
                    flush=True,
                )
                record.figure(
                    f"faithful/{task}_request_ratio_with_decode",
                    ratio,
                    "x",
                    f"{task}: {decoded[1]:.0f} µs a request wrapped clean incl. sampling {args.frames} frames, base {decoded[0]:.0f} µs",
                )
                record.figure(
                    f"faithful/{task}_request_ratio_outside_model",
                    outside[1] / outside[0],
                    "x",
                    f"{task}: {outside[1]:.0f} µs outside the model wrapped clean, base {outside[0]:.0f} µs",
                )
            print(
                f"worst ratio with the decode {worst:.2f}x (goal <= {GOAL}x): {'met' if worst <= GOAL else 'NOT met'}"
            )
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help=f"{provenance.SMOKE_HELP}: both parts, tiny media")
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    parts = parser.add_subparsers(dest="part")
    over = parts.add_parser("overhead", help="wrapped clean vs the base task per request (image, audio)")
    over.add_argument("--rounds", type=int, default=200)
    over.add_argument("--tasks", default="mme,clotho_aqa_test", help="comma-separated; image and audio tasks")
    over.add_argument("--image-size", default="96x128", help="HxW of the MME images")
    over.add_argument("--audio-seconds", type=float, default=1.0, help="length of the ClothoAQA clips")
    over.add_argument("--audio-rate", type=int, default=16_000, help="sample rate of the ClothoAQA clips")
    video = parts.add_parser("video", help="decode/corrupt/encode per request vs the decode cache")
    video.add_argument("--seconds", type=int, default=10)
    video.add_argument("--width", type=int, default=640)
    video.add_argument("--height", type=int, default=360)
    video.add_argument("--rounds", type=int, default=5)
    faithful = parts.add_parser("faithful", help="wrapped clean minus base per adapter; faithful video cost")
    faithful.add_argument("--limit", type=int, default=4, help="docs per task (even: MME asserts pairs)")
    faithful.add_argument("--rounds", type=int, default=20)
    faithful.add_argument("--frames", type=int, default=8, help="frames the model samples per video file")
    faithful.add_argument("--faithful-tasks", default="", help="comma-separated adapters' tasks (default: all)")
    for part in (over, video, faithful):  # also after the part's name; SUPPRESS keeps a value given before it
        part.add_argument("--smoke", action="store_true", default=argparse.SUPPRESS, help="as above")
        part.add_argument("--json", type=Path, metavar="PATH", default=argparse.SUPPRESS, help="as above")
    args = parser.parse_args()
    if args.part is None and not args.smoke:
        parser.error("name a part: overhead, video or faithful (or give --smoke for all at CI size)")
    record = provenance.Record(
        __file__,
        peer="the base lmms-eval task (faithful: <task>__unwrapped on the same copy); the decode cache's cold decode",
    )
    if args.smoke:
        smoke = {"rounds": 2, "tasks": "mme,clotho_aqa_test", "image_size": "24x32", "audio_seconds": 0.5}
        smoke |= {"audio_rate": 16_000, "seconds": 2, "width": 96, "height": 64, "limit": 2, "frames": 8}
        smoke |= {"faithful_tasks": "worldsense,mme,clotho_aqa_test"}  # video with audio, image, audio
        args = argparse.Namespace(**(smoke | {"part": args.part, "smoke": True, "json": args.json}))
    if args.part in ("overhead", None):
        print_overhead(args, record)
    if args.part in ("video", None):
        settings = {"seconds": args.seconds, "width": args.width, "height": args.height, "rounds": args.rounds}
        print_video_costs(video_costs(**settings), record, **settings)
    if args.part in ("faithful", None):
        print_faithful(args, record)
    record.write(args.json, smoke=args.smoke)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
