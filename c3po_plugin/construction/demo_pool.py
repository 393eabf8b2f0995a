"""The demo base-media pool for ``c3po build`` (synthetic, CC0, made by code in a few seconds).

The shapes-and-tones world of the C3PO demo set (:mod:`c3po_plugin.data.make_demo`), as *base*
media with annotations in the pool format of :mod:`c3po_plugin.construction.select`: enough pictures,
clips and sounds for every built-in template's base modality and selection filter (the tags of
:data:`c3po_plugin.construction.specs.TAGS`). It is a stand-in for the paper's sources (App. A: Ego4D,
HowTo100M, EPIC-Kitchens, OOPS, Visual Genome, COCO, TextVQA, Visual Counterfact), which cannot
be shipped: it lets the whole pipeline run offline, not produce a meaningful benchmark.

- pictures (128x96 PNG): rows of shapes to count, a crate with shapes inside, a panel of
  shapes standing for a sign, a sun or moon over trees;
- clips (5 s MP4, 2 fps, silent): shapes placed one per second (a procedure), balls moving,
  a ball knocking a square, lights turning on; three carry an audio track of tone runs
  (tagged ``speech``: the stand-in for a narrated segment) for templates whose base is audio
  extracted from a video;
- sounds (16 kHz WAV): tone runs.

Everything is drawn from numpy Generators seeded by the item's number: the same bytes on every
run with the same libraries.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np

from c3po_plugin.data import make_demo as demo
from faultline_eval.core import media
from faultline_eval.core.demo_media import tone_events
from faultline_eval.core.media_processing import write_clip
from faultline_eval.core.store import write_atomic

SEED = 4113
LICENSE = "CC0-1.0"
SHAPES = ("circle", "square", "triangle")


def _row_of_shapes(rng):
    n = int(rng.integers(2, 7))
    colour, kind = demo.pick(rng, demo.COLOURS, 1)[0], str(rng.choice(SHAPES))
    return demo.picture(rng, [(kind, colour, x, 48 + rng.uniform(-10, 10), 9) for x in demo.row(n)]), {"count": n}


def _crate(rng):
    colour, kind = demo.pick(rng, demo.COLOURS, 1)[0], str(rng.choice(SHAPES))
    objs = [("box", "grey", 64, 50, 58)] + [(kind, colour, x, 50, 9) for x in (40, 64, 88)]
    return demo.picture(rng, objs), {"contents": f"{kind}s"}


def _sign(rng):
    colours = demo.pick(rng, demo.COLOURS, 2)
    objs = [("box", "grey", 64, 48, 60), ("square", colours[0], 44, 48, 12), ("circle", colours[1], 84, 48, 12)]
    return demo.picture(rng, objs), {"shows": f"{colours[0]} square, {colours[1]} circle"}


def _sky(rng):
    day = bool(rng.integers(0, 2))
    objs = [("circle", "yellow" if day else "cyan", 100, 20, 12)] + [("triangle", "green", x, 72, 16) for x in (24, 56)]
    return demo.picture(rng, objs), {"time": "day" if day else "night"}


def _procedure(rng):
    colour = demo.pick(rng, demo.COLOURS, 1)[0]
    kinds = [str(k) for k in rng.choice(SHAPES, size=4)]
    xs = demo.row(4)
    return [[(kinds[j], colour, xs[j], 48, 11) for j in range(min(t + 1, 4))] for t in range(5)], {"steps": kinds}


def _moving(rng):
    colours = demo.pick(rng, demo.COLOURS, 2)
    xs = np.linspace(16, 112, 5)
    return [[("circle", colours[0], float(x), 36, 10), ("circle", colours[1], float(128 - x), 64, 10)] for x in xs], {
        "balls": colours
    }


def _knock(rng):
    ball_x, box_x = [16, 40, 64, 64, 64], [90, 90, 90, 102, 114]
    return [[("circle", "red", ball_x[t], 52, 10), ("square", "blue", box_x[t], 52, 10)] for t in range(5)], {
        "cause": "red circle"
    }


def _lights(rng):
    colours, order = demo.pick(rng, demo.COLOURS, 3), [int(i) for i in rng.integers(0, 3, size=5)]
    return [
        [(SHAPES[j], colours[j] if j == order[t] else "grey", x, 48, 13) for j, x in enumerate(demo.row(3))]
        for t in range(5)
    ], {"order": order}


def _tones(rng) -> np.ndarray:
    highs = [bool(h) for h in rng.integers(0, 2, size=int(rng.integers(3, 6)))]
    return tone_events(5.0, [(0.3 + 0.9 * j, 0.5, demo.HIGH_HZ if h else demo.LOW_HZ) for j, h in enumerate(highs)])


#: (base id prefix, modality, count, tags, maker)
POOL: list[tuple[str, str, int, tuple[str, ...], Callable]] = [
    ("shapes-row", "image", 4, ("objects", "counting"), _row_of_shapes),
    ("crate", "image", 2, ("container", "objects"), _crate),
    ("sign", "image", 2, ("sign", "text", "objects"), _sign),
    ("sky", "image", 2, ("clock", "outdoor", "place"), _sky),
    ("placing", "video", 3, ("procedure", "kitchen", "action"), _procedure),
    ("moving", "video", 2, ("motion", "objects", "counting"), _moving),
    ("knock", "video", 2, ("action", "interaction", "fail", "motion"), _knock),
    ("lights", "video", 2, ("sound_source", "interaction", "place", "outdoor"), _lights),
    ("narrated", "video+audio", 3, ("procedure", "speech", "action"), _procedure),
    ("tones", "audio", 2, ("procedure", "speech"), None),
]


def make_demo_pool(out: str | Path) -> Path:
    """Write the pool under ``out`` (once: an existing complete pool is reused) and return ``out``."""
    out = Path(out)
    annotations = out / "annotations.jsonl"
    if annotations.is_file():
        return out
    rows, number = [], 0
    for prefix, kind, count, tags, make in POOL:
        for i in range(count):
            rng = np.random.default_rng([SEED, number])
            number += 1
            base_id = f"{prefix}-{i + 1}"
            facts: dict = {}
            if kind == "image":
                image, facts = make(rng)
                rel = f"media/{base_id}.png"
                media.write_image(out / rel, image)
            elif kind == "audio":
                rel = f"media/{base_id}.wav"
                demo.write_audio(out / rel, _tones(rng))
            else:
                seconds, facts = make(rng)
                rel = f"media/{base_id}.mp4"
                frames = demo.video(rng, seconds)
                if kind == "video":
                    demo.write_video(out / rel, frames)
                else:
                    write_clip(out / rel, frames, Fraction(demo.VIDEO_FPS), _tones(rng))
            rows.append(
                {
                    "id": base_id,
                    "path": rel,
                    "modality": kind.split("+")[0],
                    "tags": list(tags),
                    "license": LICENSE,
                    "description": facts,
                }
            )
    # written last, atomically: its presence means the pool is complete
    write_atomic(annotations, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return out
