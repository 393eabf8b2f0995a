"""Operator speed against named peers, measured in the same run on the same data.

    pip install ".[bench]"   # imagecorruptions (needs setuptools<80 for pkg_resources)
    python benchmarks/operators.py [--repeat 5]

Vision: an 8-frame 640x360 clip; every SCEval vision operator at severity 70 (its heaviest
setting) against imagecorruptions' nearest equivalent at its heaviest severity 5, applied frame
by frame as that package requires. Floors: a plain NumPy copy of the clip (for the gain
operators) and drawing the same number of Gaussian samples with NumPy's default generator
(for noise). Audio: 30 s at 16 kHz against audiomentations where it has an equivalent.
Times are the best of --repeat runs after one warm-up.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from typing import Callable

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

import numpy as np  # noqa: E402

from sceval_plugin import operators  # noqa: E402

# SCEval operator -> imagecorruptions function (the "nearest equivalent").
IMAGECORRUPTIONS_PEER = {
    "noise": "gaussian_noise",
    "defocus_blur": "defocus_blur",
    "motion_blur": "motion_blur",
    "brightness": "brightness",
    "overexposure": "brightness",
    "low_resolution": "pixelate",
}
TARGET_VS_PEER = 3.0
TARGET_VS_COPY = 5.0


def best_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up: imports, caches, thread pool start
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from imagecorruptions import corrupt
    except ImportError as exc:
        raise SystemExit(f"the peer is missing ({exc}); install it with: pip install '.[bench]'")

    rng = np.random.default_rng(0)
    clip = rng.integers(0, 256, size=(8, 360, 640, 3), dtype=np.uint8)
    audio = (0.3 * rng.standard_normal(30 * 16_000)).astype(np.float32)
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, numpy {np.__version__}")
    print(f"data: clip {clip.shape} uint8 ({clip.nbytes / 1e6:.1f} MB); audio {audio.size} samples float32\n")

    copy_ms = best_ms(lambda: clip.copy(), args.repeat)
    draw_ms = best_ms(lambda: np.random.default_rng(1).standard_normal(clip.shape, dtype=np.float32), args.repeat)
    peer_cache: dict[str, float] = {}
    failures = []
    print(f"{'operator':<16}{'ours ms':>9}  {'peer (imagecorruptions, sev 5)':<32}{'peer ms':>9}{'speed-up':>10}  floor ratio")
    for name in operators.names("vision"):
        ours = best_ms(lambda: operators.apply(name, clip, severity=70, key="bench"), args.repeat)
        peer = IMAGECORRUPTIONS_PEER.get(name)
        line = f"{name:<16}{ours:>9.1f}  "
        if peer:
            if peer not in peer_cache:
                peer_cache[peer] = best_ms(
                    lambda: [corrupt(frame, corruption_name=peer, severity=5) for frame in clip], args.repeat
                )
            speedup = peer_cache[peer] / ours
            line += f"{peer:<32}{peer_cache[peer]:>9.1f}{speedup:>9.1f}x"
            if speedup < TARGET_VS_PEER:
                failures.append(f"{name}: {speedup:.1f}x vs {peer} (target >= {TARGET_VS_PEER}x)")
        else:
            line += f"{'-':<32}{'':>9}{'':>10}"
        if name in ("brightness", "overexposure"):
            ratio = ours / copy_ms
            line += f"  {ratio:.1f}x numpy copy ({copy_ms:.2f} ms)"
            if ratio > TARGET_VS_COPY:
                failures.append(f"{name}: {ratio:.1f}x a numpy copy (target <= {TARGET_VS_COPY}x)")
        if name == "noise":
            line += f"  {ours / draw_ms:.2f}x drawing the Gaussians ({draw_ms:.1f} ms)"
        print(line)

    print()
    audio_peers = {}
    try:
        import audiomentations as am

        peak = float(np.abs(audio).max())
        audio_peers = {
            "mute": ("TimeMask(0.7)", am.TimeMask(min_band_part=0.7, max_band_part=0.7, fade_duration=0.0, p=1.0)),
            "distortion": ("Clip(+-0.3 peak)", am.Clip(a_min=-0.3 * peak, a_max=0.3 * peak, p=1.0)),
        }
    except ImportError:
        pass
    print(f"{'operator':<16}{'ours ms':>9}  {'peer (audiomentations)':<32}{'peer ms':>9}{'speed-up':>10}")
    for name in operators.names("audio"):
        ours = best_ms(lambda: operators.apply(name, audio, severity=70, key="bench"), args.repeat)
        line = f"{name:<16}{ours:>9.2f}  "
        if name in audio_peers:
            label, transform = audio_peers[name]
            theirs = best_ms(lambda: transform(samples=audio, sample_rate=16_000), args.repeat)
            line += f"{label:<32}{theirs:>9.2f}{theirs / ours:>9.1f}x"
        print(line)

    print()
    if failures:
        print("targets missed:\n  " + "\n  ".join(failures))
        return 1
    print(f"all targets met: shared vision operators >= {TARGET_VS_PEER}x imagecorruptions, "
          f"gain operators <= {TARGET_VS_COPY}x a numpy copy")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
