"""Generate SCEval's embedded demo set (synthetic, CC0): ``python -m sceval_plugin.data.make_demo OUT``.

Thirty tri-modal items in three families, each needing the question, the pictures and the
sound together:

- count: frames each show one coloured disc; the audio has k beeps; the question asks for the
  colour of the disc in frame k.
- order: frames each show one coloured shape, one per second; a higher and a lower tone play at
  different seconds; the question asks which shape is on screen during the higher (or lower)
  tone.
- size: one picture with three shapes of different sizes; one tone, high or low; the question
  names a size to report if the tone has a given pitch, and another otherwise.

Each item's ``category`` is its family, and ``key_frame_index`` names the frame holding the
answer (frame k for count, the frame shown during the asked tone for order, 0 for the single
picture of size).

Everything is drawn from a generator seeded by the item number, so the output is identical on
every machine (PNG frames, 16-bit FLAC audio, one ``items.jsonl``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile

from faultline_eval.core import media
from faultline_eval.core.demo_media import BEEP_HZ, COLOURS, HIGH_HZ, LOW_HZ, demo_main, tone_events, write_items
from faultline_eval.core.media import SAMPLE_RATE

WIDTH, HEIGHT = 160, 120
BACKGROUND = 205
SHAPES = ("circle", "square", "triangle")
ITEMS_PER_FAMILY = 10
LICENSE = "CC0-1.0"


def _canvas(rng: np.random.Generator) -> np.ndarray:
    y = np.linspace(-12, 12, HEIGHT)[:, None, None]
    tint = rng.integers(-6, 7, size=3)
    return np.clip(BACKGROUND + y + tint, 0, 255).repeat(WIDTH, axis=1)


def _draw(canvas: np.ndarray, shape: str, colour: str, cx: float, cy: float, half: float) -> None:
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    if shape == "circle":
        mask = (x - cx) ** 2 + (y - cy) ** 2 <= half**2
    elif shape == "square":
        mask = (abs(x - cx) <= half) & (abs(y - cy) <= half)
    else:  # upward triangle inside the same box
        mask = (y <= cy + half) & (y >= cy - half) & (abs(x - cx) <= (y - (cy - half)) / 2)
    canvas[mask] = COLOURS[colour]


def _options(rng: np.random.Generator, gold: str, distractors: list[str]) -> tuple[list[str], str]:
    choices = [gold] + list(rng.choice(sorted(set(distractors) - {gold}), size=3, replace=False))
    order = rng.permutation(4)
    options = [choices[i] for i in order]
    return options, "ABCD"[options.index(gold)]


def _count_item(rng: np.random.Generator) -> dict:
    colours = list(rng.choice(list(COLOURS), size=5, replace=False))
    beeps = int(rng.integers(1, 6))
    frames = []
    for colour in colours:
        canvas = _canvas(rng)
        _draw(canvas, "circle", colour, rng.uniform(35, 125), rng.uniform(35, 85), rng.uniform(14, 20))
        frames.append(canvas)
    audio = tone_events(5.0, [(0.3 + 0.7 * j, 0.18, BEEP_HZ) for j in range(beeps)])
    options, gold = _options(rng, colours[beeps - 1], colours + list(COLOURS))
    question = (
        "Count the beeps in the audio clip. The frames are numbered from 1 in the order shown. "
        "What colour is the disc in the frame whose number equals the number of beeps?"
    )
    return {
        "frames": frames,
        "audio": audio,
        "question": question,
        "options": options,
        "gold_key": gold,
        "key_frame_index": beeps - 1,
        "hidden": {"family": "count", "beeps": beeps},
    }


def _order_item(rng: np.random.Generator) -> dict:
    colours = list(rng.choice(list(COLOURS), size=4, replace=False))
    shapes = [str(s) for s in rng.choice(SHAPES, size=4)]
    frames = []
    for colour, shape in zip(colours, shapes):
        canvas = _canvas(rng)
        _draw(canvas, shape, colour, rng.uniform(40, 120), rng.uniform(40, 80), rng.uniform(16, 22))
        frames.append(canvas)
    high_at, low_at = (int(v) for v in rng.choice(4, size=2, replace=False))
    audio = tone_events(4.0, [(high_at + 0.25, 0.5, HIGH_HZ), (low_at + 0.25, 0.5, LOW_HZ)])
    which = str(rng.choice(["higher", "lower"]))
    target = high_at if which == "higher" else low_at
    described = [f"{c} {s}" for c, s in zip(colours, shapes)]
    extra = [f"{c} {s}" for c in COLOURS for s in SHAPES]
    options, gold = _options(rng, described[target], described + extra)
    question = (
        f"One frame is shown per second while two tones play. Which shape is on screen while the "
        f"{which}-pitched tone is playing?"
    )
    return {
        "frames": frames,
        "audio": audio,
        "question": question,
        "options": options,
        "gold_key": gold,
        "key_frame_index": target,
        "hidden": {"family": "order", "high_at": high_at, "low_at": low_at, "asked": which},
    }


def _size_item(rng: np.random.Generator) -> dict:
    colours = list(rng.choice(list(COLOURS), size=3, replace=False))
    halves = sorted(rng.choice([9.0, 15.0, 22.0], size=3, replace=False))  # small, medium, large
    order = rng.permutation(3)
    canvas = _canvas(rng)
    for slot, i in enumerate(order):
        _draw(canvas, str(rng.choice(["circle", "square"])), colours[i], 28 + 52 * slot, rng.uniform(45, 75), halves[i])
    high = bool(rng.integers(0, 2))
    audio = tone_events(3.0, [(0.5, 1.5, HIGH_HZ if high else LOW_HZ)])
    named = str(rng.choice(["largest", "smallest"]))
    condition = str(rng.choice(["high", "low"]))
    named_colour = colours[2] if named == "largest" else colours[0]
    answer = named_colour if (condition == "high") == high else colours[1]
    options, gold = _options(rng, answer, colours + list(COLOURS))
    question = (
        f"If the tone you hear is {condition}, name the colour of the {named} shape; "
        f"otherwise name the colour of the medium-sized shape."
    )
    return {
        "frames": [canvas],
        "audio": audio,
        "question": question,
        "options": options,
        "gold_key": gold,
        "key_frame_index": 0,
        "hidden": {"family": "size", "tone": "high" if high else "low", "named": named, "if": condition},
    }


FAMILIES = {"count": _count_item, "order": _order_item, "size": _size_item}


def generate(out: Path) -> Path:
    """Write the demo set under ``out`` and return the path of its ``items.jsonl``."""
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for f, (family, make) in enumerate(FAMILIES.items()):
        for i in range(ITEMS_PER_FAMILY):
            sample_id = f"demo-{family}-{i:02d}"
            rng = np.random.default_rng([2026, f, i])
            item = make(rng)
            frame_paths = []
            for j, frame in enumerate(item["frames"]):
                rel = f"media/{sample_id}/frame_{j}.png"
                media.write_image(out / rel, np.clip(np.rint(frame), 0, 255).astype(np.uint8))
                frame_paths.append(rel)
            audio_rel = f"media/{sample_id}/audio.flac"
            soundfile.write(str(out / audio_rel), item["audio"], SAMPLE_RATE, subtype="PCM_16", format="FLAC")
            rows.append(
                {
                    "sample_id": sample_id,
                    "source": "sceval-demo",
                    "category": family,
                    "key_frame_index": item["key_frame_index"],
                    "question": item["question"],
                    "options": dict(zip("ABCD", item["options"])),
                    "gold_key": item["gold_key"],
                    "visual": frame_paths if len(frame_paths) > 1 else frame_paths[0],
                    "audio": audio_rel,
                    "hidden": {**item["hidden"], "license": LICENSE, "generator": "sceval_plugin.data.make_demo"},
                }
            )
    return write_items(out, rows)


def main() -> None:
    demo_main(__doc__, generate)


if __name__ == "__main__":
    main()
