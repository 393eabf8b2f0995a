"""Operator speed against named peers, measured in the same run on the same data.

    pip install ".[bench]"   # imagecorruptions (needs setuptools<80 for pkg_resources)
    python benchmarks/operators.py [--repeat 7] [--mode single|threaded|both] [--only NAME,...] [--smoke] [--json PATH]

Data: an 8-frame 640x360 uint8 clip and 30 s of mono float32 audio at 16 kHz. Every SCEval
operator runs at severity 70 (its heaviest setting) against its peer:
- vision operators with an imagecorruptions equivalent: that function at its heaviest severity
  5, applied frame by frame as that package requires (goal: ours >= 3x faster);
- the gain operators (brightness, overexposure) and occlusion: a plain NumPy copy of the clip,
  the least any operator that writes a new clip can cost (goal for the gain operators: <= 5x);
- audio: audiomentations where it has an equivalent, else a copy of the waveform.
``noise`` is also timed under seed scheme 1 (the float32 ziggurat it replaced).

Floor rows time one necessary step of an operator alone against the same peer, so a missed goal
shows whether any implementation of the operator's definition could meet it: ``low_resolution``
is bit-identical to albumentations' Downscale(INTER_AREA, INTER_LINEAR), so its two OpenCV
resize calls (the shrink by a non-integer factor is OpenCV's scalar area loop) are its floor.

Each pair is timed interleaved (ours, peer, ours, peer, ...) so drift of a shared machine hits
both, and the best of --repeat rounds after one warm-up is kept. Both passes run in one process:
"single" pins every pool to one thread (OpenCV's, our frame pool, which follows OpenCV's, and
BLAS/OpenMP through threadpoolctl), "threaded" restores the defaults.

Without imagecorruptions the script refuses (exit 3), except under ``--smoke``, which then times
those operators against a NumPy copy, says so, and exits 3 after the rest of the run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

import cv2
import numpy as np
import provenance

from sceval_plugin import operators

# SCEval operator -> imagecorruptions function (the nearest equivalent).
IMAGECORRUPTIONS_PEER = {
    "noise": "gaussian_noise",
    "defocus_blur": "defocus_blur",
    "motion_blur": "motion_blur",
    "low_resolution": "pixelate",
}
GAIN_OPERATORS = ("brightness", "overexposure")
TARGET_SPEEDUP_VS_PEER = 3.0
TARGET_RATIO_VS_COPY = 5.0


@dataclass
class Pair:
    name: str
    ours: Callable[[], object]
    peer_label: str
    peer: Callable[[], object]
    #: "speedup" (peer / ours must reach TARGET_SPEEDUP_VS_PEER), "copy" (ours / copy must stay
    #: within TARGET_RATIO_VS_COPY) or "" (reported only).
    goal: str = ""
    #: For a floor row: the operator whose necessary step ``ours`` times alone.
    floor_of: str = ""


def interleaved_best_ms(a: Callable[[], object], b: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best wall time of ``a`` and of ``b`` over ``repeat`` alternating rounds, after a warm-up."""
    a(), b()
    best_a = best_b = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        a()
        best_a = min(best_a, time.perf_counter() - start)
        start = time.perf_counter()
        b()
        best_b = min(best_b, time.perf_counter() - start)
    return best_a * 1000, best_b * 1000


@contextlib.contextmanager
def seed_scheme(number: int):
    old = os.environ.get("SCEVAL_SEED_SCHEME")
    os.environ["SCEVAL_SEED_SCHEME"] = str(number)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SCEVAL_SEED_SCHEME")
        else:
            os.environ["SCEVAL_SEED_SCHEME"] = old


@contextlib.contextmanager
def threads(single: bool):
    """One thread everywhere (``single``) or the defaults."""
    default = cv2.getNumThreads()
    limits = contextlib.nullcontext()
    if single:
        try:
            from threadpoolctl import threadpool_limits

            limits = threadpool_limits(1)
        except ImportError:
            pass
        cv2.setNumThreads(1)
    try:
        with limits:
            yield
    finally:
        cv2.setNumThreads(default)


def pairs(clip: np.ndarray, audio: np.ndarray, corrupt) -> list[Pair]:
    def ours(name: str, data: np.ndarray) -> Callable[[], object]:
        return lambda: operators.apply(name, data, severity=70, key="bench")

    def imagecorruptions(function: str) -> Callable[[], object]:
        if corrupt is None:  # --smoke without the peer: the operator still runs, against a copy
            return clip.copy
        return lambda: [corrupt(frame, corruption_name=function, severity=5) for frame in clip]

    def noise_scheme_1() -> object:
        with seed_scheme(1):
            return operators.apply("noise", clip, severity=70, key="bench")

    out = []
    for name in operators.names("vision"):
        if name in IMAGECORRUPTIONS_PEER:
            peer = IMAGECORRUPTIONS_PEER[name] if corrupt is not None else "missing: a numpy copy instead"
            out.append(Pair(name, ours(name, clip), f"imagecorruptions {peer}", imagecorruptions(peer), "speedup"))
            if name == "noise":
                out.append(Pair("noise (scheme 1)", noise_scheme_1, f"imagecorruptions {peer}", imagecorruptions(peer)))
            if name == "low_resolution":
                out += low_resolution_floor(clip, imagecorruptions(peer), f"imagecorruptions {peer}")
        else:
            out.append(Pair(name, ours(name, clip), "numpy copy", clip.copy, "copy" if name in GAIN_OPERATORS else ""))
    audio_peers = {}
    try:
        import audiomentations as am

        peak = float(np.abs(audio).max())
        audio_peers = {
            "mute": (
                "audiomentations TimeMask(0.7)",
                am.TimeMask(min_band_part=0.7, max_band_part=0.7, fade_duration=0.0, p=1.0),
            ),
            "distortion": ("audiomentations Clip(0.3 peak)", am.Clip(a_min=-0.3 * peak, a_max=0.3 * peak, p=1.0)),
        }
    except ImportError:
        pass
    for name in operators.names("audio"):
        if name in audio_peers:
            label, transform = audio_peers[name]
            out.append(
                Pair(
                    name,
                    ours(name, audio),
                    label,
                    lambda transform=transform: transform(samples=audio, sample_rate=16_000),
                )
            )
        else:
            out.append(Pair(name, ours(name, audio), "numpy copy", audio.copy))
    return out


def low_resolution_floor(clip: np.ndarray, peer: Callable[[], object], peer_label: str) -> list[Pair]:
    """The two resize calls of ``low_resolution`` at severity 70, each alone, frame by frame."""
    factor = operators.get("low_resolution").parameter(70)
    height, width = clip.shape[1:3]
    shrunk = [cv2.resize(frame, None, fx=factor, fy=factor, interpolation=cv2.INTER_AREA) for frame in clip]
    out = np.empty_like(clip)

    def shrink() -> None:
        for frame in clip:
            cv2.resize(frame, None, fx=factor, fy=factor, interpolation=cv2.INTER_AREA)

    def enlarge() -> None:
        for i, small in enumerate(shrunk):
            cv2.resize(small, (width, height), dst=out[i], interpolation=cv2.INTER_LINEAR)

    return [
        Pair(" INTER_AREA only", shrink, peer_label, peer, floor_of="low_resolution"),
        Pair(" INTER_LINEAR only", enlarge, peer_label, peer, floor_of="low_resolution"),
    ]


def run_pass(title: str, rows: list[Pair], repeat: int, record: provenance.Record) -> list[str]:
    """Time every pair, print one table, record each ratio, return the goals missed."""
    print(f"== {title} (cv2 threads: {cv2.getNumThreads()})")
    print(f"{'operator':<18}{'ours ms':>9}  {'peer':<34}{'peer ms':>9}  {'ratio':<20}{'goal'}")
    missed, floors = [], {}
    for row in rows:
        ours_ms, peer_ms = interleaved_best_ms(row.ours, row.peer, repeat)
        if row.peer_label == "numpy copy":
            ratio, text = ours_ms / peer_ms, f"{ours_ms / peer_ms:.2f}x the copy"
        else:
            ratio, text = peer_ms / ours_ms, f"{peer_ms / ours_ms:.2f}x faster"
        goal = ""
        if row.goal == "speedup":
            met = ratio >= TARGET_SPEEDUP_VS_PEER
            goal = f">= {TARGET_SPEEDUP_VS_PEER:g}x faster: {'met' if met else 'MISSED'}"
        elif row.goal == "copy":
            met = ratio <= TARGET_RATIO_VS_COPY
            goal = f"<= {TARGET_RATIO_VS_COPY:g}x the copy: {'met' if met else 'MISSED'}"
        if row.goal and not met:
            missed.append((row.name, f"{title}: {row.name} {text} ({goal})"))
        if row.floor_of:
            floors.setdefault(row.floor_of, []).append(f"{row.name.strip()} {text}")
        print(f"{row.name:<18}{ours_ms:>9.2f}  {row.peer_label:<34}{peer_ms:>9.2f}  {text:<20}{goal}")
        what = f"{row.name.strip()}: {ours_ms:.2f} ms against {row.peer_label}'s {peer_ms:.2f} ms, {title}"
        record.figure(f"{title}/{row.name.strip()}", ratio, "x", what)
    for name, steps in floors.items():
        print(f"floor of {name} (each necessary step alone vs the same peer): {'; '.join(steps)}")
    print()
    return [line + (f"; floor: {', '.join(floors[name])}" if name in floors else "") for name, line in missed]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--mode", choices=("single", "threaded", "both"), default="both")
    parser.add_argument(
        "--only",
        type=lambda text: set(text.split(",")),
        default=None,
        help="comma-separated operator names (with their floor and scheme-1 rows)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"{provenance.SMOKE_HELP}: a 2-frame 96x64 clip and 1 s of audio, one round, single-threaded",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    args = parser.parse_args()
    record = provenance.Record(__file__, peer="imagecorruptions, audiomentations, a numpy copy")
    missing = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from imagecorruptions import corrupt
    except ImportError as exc:
        missing = f"imagecorruptions ({exc}); install it with: pip install '.[bench]'"
        if not args.smoke:
            return provenance.peer_missing(missing)
        corrupt = None
    frames, height, width, seconds = (2, 64, 96, 1) if args.smoke else (8, 360, 640, 30)
    if args.smoke:
        args.repeat, args.mode = 1, "single"

    rng = np.random.default_rng(0)
    clip = rng.integers(0, 256, size=(frames, height, width, 3), dtype=np.uint8)
    audio = (0.3 * rng.standard_normal(seconds * 16_000)).astype(np.float32)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, numpy {np.__version__}, opencv {cv2.__version__}, "
        f"seed scheme {operators.seed_scheme()}"
    )
    print(
        f"data: clip {clip.shape} uint8 ({clip.nbytes / 1e6:.1f} MB); audio {audio.size} samples float32; "
        f"best of {args.repeat} interleaved rounds\n"
    )
    rows = pairs(clip, audio, corrupt)
    if args.only:
        unknown = args.only - set(operators.names())
        if unknown:
            parser.error(f"--only: no operator named {', '.join(sorted(unknown))}")
        rows = [row for row in rows if (row.floor_of or row.name.split(" (")[0]) in args.only]
    missed = []
    for title, single in (("single-threaded", True), ("threaded", False)):
        if args.mode in ("both", title.split("-")[0]):
            with threads(single):
                missed += run_pass(title, rows, args.repeat, record)
    record.write(args.json, smoke=args.smoke)
    if missing:
        return provenance.peer_missing(missing)
    if args.smoke:
        return 0
    if missed:
        print("goals missed:\n  " + "\n  ".join(missed))
        return 1
    print(
        f"all goals met: operators with an imagecorruptions peer >= {TARGET_SPEEDUP_VS_PEER:g}x faster, "
        f"gain operators <= {TARGET_RATIO_VS_COPY:g}x a numpy copy"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
