"""Generate C3PO's embedded demo set (synthetic, CC0): ``python -m c3po_plugin.data.make_demo OUT``.

A toy world that a signal-processing model can perceive, with one or two items for each of
the 25 templates (:mod:`c3po_plugin.templates`), so every category and tier is covered:

- pictures (PNG) and video (MP4, 2 fps, 5 s, so the protocol's 1 fps sampling sees 5 frames)
  show saturated coloured circles, squares and triangles on a light background; grey things
  (boxes, unlit shapes) are scenery;
- audio (16 kHz mono WAV, 8-bit PCM to keep the demo small) carries beeps (counted), single
  high (1320 Hz) or low (330 Hz) tones, tones at given seconds, or runs of tones.

The meaning of a sound is a small code that the question itself states ("a high tone means
the spot just left of the square"), because the world has no speech. The questions follow the
grammar that ``sceval_reference`` reads (``model_wrappers/reference_c3po.py``). Each item keeps
its template's logic: Information Composition items need both the visual and the audio part;
Counterfactual Conflict items have one misleading modality and a framing that says which to
trust. ``distractors`` name what a misleading or partial reading would answer.

Everything is drawn from numpy Generators seeded by the item's number, so the output is the
same byte for byte on every run with the same libraries (no global RNG, no ``hash()``).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import soundfile

from c3po_plugin.templates import registry
from faultline_eval.core import media
from faultline_eval.core.demo_media import BEEP_HZ, COLOURS, HIGH_HZ, LOW_HZ, demo_main, tone_events, write_items
from faultline_eval.core.media import SAMPLE_RATE

WIDTH, HEIGHT = 128, 96
BACKGROUND = 212
GREY = (150, 150, 150)
VIDEO_FPS = 2
VIDEO_SECONDS = 5
LICENSE = "CC0-1.0"
SEED = 3404
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")

# An object on screen: (kind, colour name or "grey", x, y, half size).
Obj = tuple


# --- drawing -------------------------------------------------------------------------------------


def canvas(rng: np.random.Generator) -> np.ndarray:
    tint = rng.integers(-5, 6, size=3)
    return np.broadcast_to(np.clip(BACKGROUND + tint, 0, 255), (HEIGHT, WIDTH, 3)).astype(np.float32).copy()


def draw(img: np.ndarray, obj: Obj) -> None:
    kind, colour, cx, cy, half = obj
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    if kind == "circle":
        mask = (x - cx) ** 2 + (y - cy) ** 2 <= half**2
    elif kind in ("square", "box"):
        mask = (abs(x - cx) <= half) & (abs(y - cy) <= half * (0.6 if kind == "box" else 1))
    else:  # upward triangle inside the same box
        mask = (y <= cy + half) & (y >= cy - half) & (abs(x - cx) <= (y - (cy - half)) / 2)
    img[mask] = GREY if colour == "grey" else COLOURS[colour]


def picture(rng: np.random.Generator, objs: list[Obj]) -> np.ndarray:
    img = canvas(rng)
    for obj in objs:
        draw(img, obj)
    return img.astype(np.uint8)


def video(rng: np.random.Generator, seconds: list[list[Obj]]) -> list[np.ndarray]:
    """2 fps frames from one object list per second; half-second frames interpolate positions
    when consecutive seconds hold the same objects (same count, kinds and colours)."""
    assert len(seconds) == VIDEO_SECONDS
    base = canvas(rng)
    frames = []
    for i, objs in enumerate(seconds):
        for half_step in (0, 1):
            nxt = seconds[i + 1] if i + 1 < len(seconds) else objs
            same = len(nxt) == len(objs) and all(a[:2] == b[:2] for a, b in zip(objs, nxt))
            shown = [
                (a[0], a[1], (a[2] + b[2]) / 2, (a[3] + b[3]) / 2, a[4]) if half_step and same else a
                for a, b in zip(objs, nxt if same else objs)
            ]
            img = base.copy()
            for obj in shown:
                draw(img, obj)
            frames.append(img.astype(np.uint8))
    return frames


def write_video(path: Path, frames: list[np.ndarray]) -> None:
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=VIDEO_FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.codec_context.time_base = Fraction(1, VIDEO_FPS)
        stream.codec_context.thread_count = 1
        stream.options = {"crf": "16", "preset": "medium", "threads": "1"}
        for frame in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def write_audio(path: Path, wave: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), np.clip(wave, -1, 1), SAMPLE_RATE, subtype="PCM_U8", format="WAV")


# --- sounds --------------------------------------------------------------------------------------


def beeps(k: int, seconds: float = 3.0) -> np.ndarray:
    return tone_events(seconds, [(0.3 + 0.4 * j, 0.15, BEEP_HZ) for j in range(k)])


def tone(high: bool, seconds: float = 2.0, start: float = 0.5, length: float = 0.8) -> np.ndarray:
    return tone_events(seconds, [(start, length, HIGH_HZ if high else LOW_HZ)])


def tone_run(highs: list[bool], seconds: float = 3.0) -> np.ndarray:
    return tone_events(seconds, [(0.3 + 0.45 * j, 0.25, HIGH_HZ if h else LOW_HZ) for j, h in enumerate(highs)])


# --- helpers -------------------------------------------------------------------------------------


def pick(rng: np.random.Generator, pool, k: int) -> list[str]:
    return [str(v) for v in rng.choice(list(pool), size=k, replace=False)]


def row(n: int) -> list[float]:
    """x centres of ``n`` evenly spaced slots."""
    step = WIDTH / n
    return [step * (i + 0.5) for i in range(n)]


def plural(kind: str) -> str:
    return kind + "s"


def word(n: int) -> str:
    return NUMBER_WORDS[n]


# --- Information Composition ---------------------------------------------------------------------


def ic01_colour(rng):
    colours, kinds = pick(rng, COLOURS, 3), pick(rng, ("circle", "square", "triangle"), 3)
    k = int(rng.integers(1, 4))
    objs = [(kd, c, x, 48 + rng.uniform(-8, 8), 14) for kd, c, x in zip(kinds, colours, row(3))]
    d = {"image": colours[0]}
    if colours[3 - k] != colours[k - 1]:
        d["partial"] = colours[3 - k]
    return dict(
        image=picture(rng, objs),
        audio=beeps(k),
        question="The beeps count along the row of shapes from the left. What colour is the shape they land on?",
        answer=colours[k - 1],
        distractors=d,
        difficulty=3,
        human_answer="crimson" if colours[k - 1] == "red" else colours[k - 1],
        hidden={"beeps": k},
    )


def ic01_shape(rng):
    colours, kinds = pick(rng, COLOURS, 3), pick(rng, ("circle", "square", "triangle"), 3)
    k = 3  # counting from the right would land on the first shape, the image-only guess
    objs = [(kd, c, x, 48 + rng.uniform(-8, 8), 14) for kd, c, x in zip(kinds, colours, row(3))]
    return dict(
        image=picture(rng, objs),
        audio=beeps(k),
        question="The beeps count along the row of shapes from the left. What shape do they land on?",
        answer=kinds[k - 1],
        distractors={"image": kinds[0]},
        difficulty=3,
        hidden={"beeps": k},
    )


def ic02(rng):
    colours, kinds = pick(rng, COLOURS, 5), [str(v) for v in rng.choice(["circle", "square", "triangle"], size=5)]
    k = 3
    seconds = [[(kinds[i], colours[i], 64 + rng.uniform(-20, 20), 48 + rng.uniform(-10, 10), 16)] for i in range(5)]
    gold = 5 - k - 1
    return dict(
        video=video(rng, seconds),
        audio=beeps(k),
        question="Each beep narrates one step of the sequence, and the beeps describe only the final steps. "
        "What is the last step that goes unnarrated? Give its colour and shape.",
        answer=f"{colours[gold]} {kinds[gold]}",
        distractors={"video": f"{colours[0]} {kinds[0]}", "partial": f"{colours[gold + 1]} {kinds[gold + 1]}"},
        difficulty=6,
        hidden={"beeps": k},
    )


def ic03(rng):
    n, k = 5, 2
    colour = pick(rng, COLOURS, 1)[0]
    objs = [("box", "grey", 64, 52, 62)] + [("circle", colour, x, 52, 9) for x in row(n)]
    return dict(
        image=picture(rng, objs),
        audio=beeps(k),
        question="The tray started empty. Each beep is a ball rolling onto it from outside the frame; "
        "the rest were put there by hand. How many balls were put there by hand?",
        answer=str(n - k),
        distractors={"image": str(n), "audio": str(k)},
        difficulty=5,
        hidden={"visible": n, "beeps": k},
    )


def ic04_more(rng):
    n, k = 3, 5
    colour = pick(rng, COLOURS, 1)[0]
    objs = [("square", colour, x, 48 + rng.uniform(-6, 6), 11) for x in row(n)]
    return dict(
        image=picture(rng, objs),
        audio=beeps(k),
        question="The order calls for one square per beep. How many more squares are needed to fill it?",
        answer=word(k - n),
        distractors={"image": str(n), "audio": str(k)},
        difficulty=4,
        human_answer=str(k - n),
        hidden={"visible": n, "beeps": k},
    )


def ic04_enough(rng):
    n, k = 4, 3
    colour = pick(rng, COLOURS, 1)[0]
    objs = [("circle", colour, x, 48 + rng.uniform(-6, 6), 11) for x in row(n)]
    return dict(
        image=picture(rng, objs),
        audio=beeps(k),
        question="The order calls for one circle per beep. Are there enough circles to fill it?",
        answer="yes",
        distractors={},
        difficulty=3,
        hidden={"visible": n, "beeps": k},
    )


def ic05(rng):
    colours = pick(rng, COLOURS, 4)
    others = [str(v) for v in rng.choice(["circle", "triangle"], size=4)]
    at = 1 + int(rng.integers(0, 2))
    kinds = [("square" if i == at else others[i]) for i in range(4)]
    high = bool(rng.integers(0, 2))
    target = at - 1 if high else at + 1
    objs = [(kd, c, x, 48 + rng.uniform(-10, 10), 11) for kd, c, x in zip(kinds, colours, row(4))]
    return dict(
        image=picture(rng, objs),
        audio=tone(high),
        question="A high tone means the spot just left of the square; a low tone means the spot just right "
        "of it. What colour is the shape in that spot?",
        answer=colours[target],
        distractors={"partial": colours[at + 1 if high else at - 1]},
        difficulty=4,
        human_answer=colours[at + 1 if high else at - 1],
        hidden={"high": high},
    )


def ic06(rng):
    highs = [True, False, False, True, True]
    n = 2  # the picture shows the first n placements
    colour = pick(rng, COLOURS, 1)[0]
    objs = [("circle" if h else "square", colour, x, 48, 10) for h, x in zip(highs[:n], row(5))]
    return dict(
        image=picture(rng, objs),
        audio=tone_run(highs),
        question="Each high tone placed a circle and each low tone a square, left to right, in the order "
        "heard. The row is shown partway through. What shape was placed next?",
        answer="square",
        distractors={"image": "circle", "audio": "circle"},
        difficulty=5,
        hidden={"tones": ["high" if h else "low" for h in highs], "shown": n},
    )


def ic07(rng):
    colour = pick(rng, COLOURS, 1)[0]
    rightwards = True
    xs = np.linspace(20, 108, 5) if rightwards else np.linspace(108, 20, 5)
    seconds = [[("circle", colour, float(x), 50, 12)] for x in xs]
    high = True  # home is on the left, and the circle moves right: leaving
    return dict(
        video=video(rng, seconds),
        audio=tone(high),
        question="A high tone means home is to the left; a low tone means home is to the right. "
        "Is the ball heading home or leaving home?",
        answer="leaving home",
        distractors={"partial": "heading home"},
        difficulty=4,
        human_answer="leaving",
        hidden={"high": high, "moves": "right"},
    )


def ic08(rng):
    first = pick(rng, ("red", "blue", "green", "magenta"), 2)
    # ball A crosses over the top from left to right, ball B underneath from right to left; after
    # the first second both turn yellow, so only their tracks tell them apart
    a = [(20, 40), (44, 28), (64, 22), (88, 28), (108, 40)]
    b = [(108, 58), (84, 68), (64, 74), (40, 68), (20, 58)]
    seconds = []
    for t in range(5):
        ca, cb = (first[0], first[1]) if t == 0 else ("yellow", "yellow")
        seconds.append([("circle", ca, *a[t], 11), ("circle", cb, *b[t], 11)])
    high = False  # singles out B, which ends on the left
    return dict(
        video=video(rng, seconds),
        audio=tone(high),
        question=f"At first one ball is {first[0]} and the other {first[1]}; a high tone singles out the "
        f"{first[0]} one, a low tone the {first[1]} one. Where does the singled-out ball end up, "
        "left or right?",
        answer="left",
        distractors={"partial": "right"},
        difficulty=7,
        hidden={"high": high},
    )


def ic09(rng):
    colours, kinds = pick(rng, COLOURS, 3), pick(rng, ("circle", "square", "triangle"), 3)
    order = [2, 0, 1, 0, 2]
    chime = 2
    seconds = [
        [(kinds[j], colours[j] if j == order[t] else "grey", x, 48, 13) for j, x in enumerate(row(3))] for t in range(5)
    ]
    target = order[chime]
    return dict(
        video=video(rng, seconds),
        audio=tone_events(4.0, [(chime + 0.3, 0.4, BEEP_HZ)]),
        question="The shapes light up one at a time, and one of them chimes as it lights up. Which one "
        "chimed? Give its colour and shape.",
        answer=f"{colours[target]} {kinds[target]}",
        distractors={
            "video": f"{colours[order[0]]} {kinds[order[0]]}",
            "partial": f"{colours[order[chime + 1]]} {kinds[order[chime + 1]]}",
        },
        difficulty=5,
        human_answer=f"the {colours[target]} one",
        hidden={"chime_s": chime},
    )


def ic10(rng):
    c_left, c_right = pick(rng, COLOURS, 2)
    heading_left = True
    xs = np.linspace(64, 44, 5) if heading_left else np.linspace(64, 84, 5)
    seconds = [
        [
            ("square", c_left, 18, 80, 12),
            ("square", c_right, 110, 80, 12),
            (
                "circle",
                next(c for c in ("yellow", "cyan", "green") if c not in (c_left, c_right)),
                float(x),
                14 + 8 * t,
                7,
            ),
        ]
        for t, x in enumerate(xs)
    ]
    high = False  # bounced into the other bin
    return dict(
        video=video(rng, seconds),
        audio=tone(high),
        question="A high plop means the ball landed in the bin it was heading for; a low clang means it "
        "bounced into the other bin. What colour is the bin it ended up in?",
        answer=c_right,
        distractors={"video": c_left},
        difficulty=6,
        hidden={"high": high},
    )


def ic11(rng, ask_frame: bool):
    ref_colour, ref_kind = "magenta", "triangle"
    others = [c for c in COLOURS if c != ref_colour]
    fill = pick(rng, others, 5)
    # where the reference shape is (None, "left", "right") each second
    where = ["left", None, "right", "left", "right"] if not ask_frame else ["right", None, "left", "right", None]
    seconds = []
    for t, side in enumerate(where):
        other_kind = str(rng.choice(["circle", "square"]))
        if side is None:
            objs = [(other_kind, fill[t], 32, 48, 12), ("circle", fill[(t + 1) % 5], 96, 48, 12)]
        else:
            ref_x, other_x = (32, 96) if side == "left" else (96, 32)
            objs = [(ref_kind, ref_colour, ref_x, 48, 13), (other_kind, fill[t], other_x, 48, 12)]
            if ask_frame and t == 2:  # the second appearance is half hidden behind another shape
                objs = [(ref_kind, ref_colour, ref_x, 48, 13), ("square", fill[t], ref_x + 14, 52, 12)]
        seconds.append(objs)
    img = picture(rng, [(ref_kind, ref_colour, 64, 48, 22)])
    if ask_frame:
        return dict(
            video=video(rng, seconds),
            image=img,
            audio=beeps(2),
            question="The beeps say which appearance of the shape in the picture to look for, counting "
            "from its first. At which second does that appearance start, counting seconds from 1?",
            answer="3",
            distractors={"partial": "1"},
            difficulty=8,
            hidden={"appearances": [1, 3, 4], "beeps": 2},
        )
    return dict(
        video=video(rng, seconds),
        image=img,
        audio=beeps(3),
        question="The beeps say which appearance of the shape in the picture to look for, counting from "
        "its first. On which side of the screen is it at that appearance?",
        answer="left",
        distractors={"partial": "right"},
        difficulty=6,
        hidden={"beeps": 3},
    )


# --- Counterfactual Conflict ---------------------------------------------------------------------


def cc01(rng):
    colour = pick(rng, ("blue", "cyan", "magenta", "yellow"), 1)[0]
    return dict(
        image=picture(rng, [("square", colour, 64, 48, 20)]),
        audio=tone(True),
        question="The square is the printed tag. Someone who has never seen it hums high if they think it "
        "is red and low if they think it is green. What colour is the tag?",
        answer=colour,
        distractors={"audio": "red"},
        difficulty=3,
        hidden={"high": True},
    )


def cc02(rng):
    colour = pick(rng, COLOURS, 1)[0]
    objs = [("box", "grey", 64, 50, 58)] + [("triangle", colour, x, 50, 10) for x in (36, 64, 92)]
    return dict(
        image=picture(rng, objs),
        audio=tone(True),
        question="The crate's owner hums high to say it holds circles and low to say it holds squares. "
        "What shapes does the crate actually hold?",
        answer="triangles",
        distractors={"audio": "circles"},
        difficulty=3,
        hidden={"high": True},
    )


def cc03(rng):
    return dict(
        image=picture(rng, [("box", "grey", 64, 48, 16), ("circle", "green", 64, 48, 13)]),
        audio=tone(False),
        question="The tones were recorded an hour ago: high meant the signal light was green, low that it "
        "was red. What colour is the signal light now?",
        answer="green",
        distractors={"audio": "red"},
        difficulty=4,
        hidden={"high": False},
    )


def cc04(rng):
    n, k = 2, 4
    objs = [("box", "grey", 64, 48, 56)] + [("square", "blue", x, 48, 10) for x in (48, 80)]
    return dict(
        image=picture(rng, objs),
        audio=beeps(k),
        question="The sign shows the open gate's number as a count of squares, but it is from last week. "
        "A minute ago the number of the gate open now was announced, one beep per number. "
        "Which gate is open now?",
        answer=str(k),
        distractors={"image": str(n)},
        difficulty=5,
        human_answer="gate 4",
        hidden={"sign": n, "beeps": k},
    )


def cc05(rng, n: int, k: int, kind: str):
    colour = pick(rng, COLOURS, 1)[0]
    objs = [(kind, colour, x, 48 + rng.uniform(-12, 12), 10) for x in row(n)]
    return dict(
        image=picture(rng, objs),
        audio=beeps(k),
        question=f"A helper called out a tally of the {plural(kind)}, one beep each. How many {plural(kind)} "
        "are actually there?",
        answer=word(n),
        distractors={"audio": str(k)},
        difficulty=4,
        human_answer=word(n) if n != 4 else "5",
        hidden={"visible": n, "beeps": k},
    )


def cc06(rng):
    return dict(
        image=picture(rng, [("circle", "yellow", 96, 22, 14), ("triangle", "green", 30, 70, 20)]),
        audio=tone(False),
        question="In this world the sun is a yellow ball and the moon a cyan one. The tone comes from a "
        "recording made at another time: high by day, low by night. Was the picture taken by day "
        "or by night?",
        answer="day",
        distractors={"audio": "night"},
        difficulty=3,
        hidden={"high": False},
    )


def cc07(rng):
    seconds = [[("triangle", "green", x, 40 + 20 * ((i + t) % 2), 12) for i, x in enumerate(row(4))] for t in range(5)]
    return dict(
        video=video(rng, seconds),
        audio=tone_events(3.5, [(0.3, 1.2, LOW_HZ), (2.0, 1.2, LOW_HZ)]),
        question="Trees are green triangles and boats blue squares; birdsong is quick high chirps and ship "
        "horns are long low tones. Where is this, the forest or the harbour?",
        answer="forest",
        distractors={"audio": "harbour"},
        difficulty=5,
        hidden={},
    )


def cc08(rng):
    # the ball rolls up to the square and stops beside it; only then does the square move off
    ball_x = [16, 40, 64, 64, 64]
    box_x = [90, 90, 90, 102, 114]
    seconds = [[("circle", "red", ball_x[t], 52, 10), ("square", "blue", box_x[t], 52, 10)] for t in range(5)]
    return dict(
        video=video(rng, seconds),
        audio=tone_events(3.0, [(0.5, 1.5, HIGH_HZ)]),
        question="A long high whistle is the wind. What set the square moving?",
        answer="red circle",
        distractors={"audio": "wind"},
        difficulty=5,
        human_answer="the ball",
        hidden={},
    )


def cc09(rng, ask_now: bool):
    n, k = 2, 4
    seconds = [[("triangle", "green", x, 50, 14) for x in (40, 88)] for _ in range(5)]
    question = "The beeps recall how many towers stood here long ago, one beep per tower. " + (
        "How many towers stand here today?" if ask_now else "How many towers stood here long ago?"
    )
    return dict(
        video=video(rng, seconds),
        audio=beeps(k),
        question=question,
        answer=str(n if ask_now else k),
        distractors={"audio": str(k)} if ask_now else {"video": str(n)},
        difficulty=4 if ask_now else 3,
        hidden={"now": n, "past": k},
    )


def cc10(rng):
    colour = pick(rng, COLOURS, 1)[0]
    xs = np.linspace(100, 24, 5)
    seconds = [[("circle", colour, float(x), 48, 12)] for x in xs]
    return dict(
        video=video(rng, seconds),
        audio=tone(False),
        question="The commentator hums high to say the ball went left and low to say it went right. Which "
        "way did the ball actually go?",
        answer="left",
        distractors={"audio": "right"},
        difficulty=3,
        human_answer="to the left",
        hidden={"high": False},
    )


def cc11(rng):
    proper = [True, False, True, True]  # circle, square, circle, circle
    done = [True, False, False, True]  # step 3 placed a square instead
    colour = pick(rng, COLOURS, 1)[0]
    xs = row(4)
    seconds = [
        [("circle" if done[j] else "square", colour, xs[j], 48, 11) for j in range(min(t + 1, 4))] for t in range(5)
    ]
    return dict(
        video=video(rng, seconds),
        audio=tone_run(proper),
        question="The proper procedure is played as tones, one per step: high for placing a circle, low for "
        "a square. At which step did the worker depart from it?",
        answer="3",
        distractors={"text": "none"},
        difficulty=6,
        hidden={},
    )  # text prior: done as told


def cc12(rng):
    real, shown = "red", "blue"
    seconds = [[("circle", real, float(x), 56, 12)] for x in np.linspace(24, 104, 5)]
    return dict(
        video=video(rng, seconds),
        image=picture(rng, [("circle", shown, 64, 48, 20)]),
        audio=tone(True),
        question="The picture is only an illustration from the catalogue. The seller hums high to say the "
        "ball is red and low to say it is blue. What colour is the ball being sold?",
        answer=real,
        distractors={"image": shown},
        difficulty=6,
        human_answer="scarlet",
        hidden={},
    )


def cc13(rng):
    n_video, n_image, k = 3, 5, 2
    seconds = [[("box", "grey", 64, 48, 60)] + [("square", "green", x, 48, 9) for x in row(n_video)] for _ in range(5)]
    img = picture(rng, [("box", "grey", 64, 48, 60)] + [("square", "green", x, 48, 8) for x in row(n_image)])
    return dict(
        video=video(rng, seconds),
        image=img,
        audio=beeps(k),
        question="Three readings of one tank, one bar or beep per litre: the gauge being filmed was "
        "calibrated today, the photographed one last year, and the beeps are a worker's guess. "
        "How many litres are in the tank?",
        answer=str(n_video),
        distractors={"image": str(n_image), "audio": str(k)},
        difficulty=7,
        hidden={},
    )


def cc14_limit(rng):
    colour = pick(rng, COLOURS, 1)[0]
    counts = [1, 2, 3, 3, 2]
    seconds = [[("circle", colour, x, 48, 10) for x in row(4)[:c]] for c in counts]
    sign = picture(rng, [("box", "grey", 64, 48, 60)] + [("circle", colour, x, 48, 8) for x in row(4)])
    return dict(
        video=video(rng, seconds),
        image=sign,
        audio=tone(True),
        context="Since Monday at most two balls may be in the pen at once; the posted sign still shows the old limit.",
        question="The keeper hums high to report that the limit was kept, low that it was broken. Was the limit kept?",
        answer="no",
        distractors={"image": "yes", "audio": "yes"},
        difficulty=8,
        hidden={"counts": counts},
    )


def cc14_stop(rng):
    xs = [14, 40, 66, 92, 116]
    seconds = [[("square", "yellow", 70, 30, 10), ("circle", "cyan", xs[t], 66, 10)] for t in range(5)]
    sign = picture(rng, [("square", "yellow", 40, 48, 16), ("circle", "cyan", 88, 48, 12)])
    return dict(
        video=video(rng, seconds),
        image=sign,
        audio=tone(True),
        context="Rule: every visitor must stop beside the yellow square before walking past it.",
        question="The guard hums high to report that the visitor stopped, low that it did not. Did the "
        "visitor actually stop?",
        answer="no",
        distractors={"audio": "yes"},
        difficulty=6,
        hidden={},
    )


#: (sample name, template id, builder). The order is the items' order in items.jsonl.
ITEMS: list[tuple[str, str, Callable]] = [
    ("attribute-colour", "IC01", ic01_colour),
    ("attribute-shape", "IC01", ic01_shape),
    ("instructional-gap", "IC02", ic02),
    ("offscreen-causality", "IC03", ic03),
    ("quantity-shortfall", "IC04", ic04_more),
    ("quantity-enough", "IC04", ic04_enough),
    ("spatial", "IC05", ic05),
    ("temporal-sequence", "IC06", ic06),
    ("reinterpretation", "IC07", ic07),
    ("feature-tracking", "IC08", ic08),
    ("event-attribution", "IC09", ic09),
    ("silent-outcome", "IC10", ic10),
    ("reference-side", "IC11", lambda rng: ic11(rng, False)),
    ("reference-second", "IC11", lambda rng: ic11(rng, True)),
    ("authority", "CC01", cc01),
    ("container", "CC02", cc02),
    ("live-vs-recorded", "CC03", cc03),
    ("outdated-sign", "CC04", cc04),
    ("fabricated-squares", "CC05", lambda rng: cc05(rng, 3, 5, "square")),
    ("fabricated-circles", "CC05", lambda rng: cc05(rng, 4, 2, "circle")),
    ("temporal-context", "CC06", cc06),
    ("acoustic-scene", "CC07", cc07),
    ("causal", "CC08", cc08),
    ("history-past", "CC09", lambda rng: cc09(rng, False)),
    ("history-now", "CC09", lambda rng: cc09(rng, True)),
    ("narration", "CC10", cc10),
    ("procedure", "CC11", cc11),
    ("disclaimed", "CC12", cc12),
    ("measurement-chain", "CC13", cc13),
    ("compliance-limit", "CC14", cc14_limit),
    ("compliance-stop", "CC14", cc14_stop),
]


def generate(out: Path) -> Path:
    """Write the demo set under ``out`` and return the path of its ``items.jsonl``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for number, (name, template_id, build) in enumerate(ITEMS):
        template = registry().get(template_id)
        sample_id = f"c3po-demo-{number:02d}-{name}"
        item = build(np.random.default_rng([SEED, number]))
        row_ = {
            "sample_id": sample_id,
            "template": template.id,
            "category": template.category,
            "tier": template.tier,
            "question": item["question"],
            "answer": item["answer"],
        }
        if "video" in item:
            rel = f"media/video/{sample_id}.mp4"
            write_video(out / rel, item["video"])
            row_["video"] = rel
        if "image" in item:
            rel = f"media/image/{sample_id}.png"
            media.write_image(out / rel, item["image"])
            row_["image"] = rel
        if "audio" in item:
            rel = f"media/audio/{sample_id}.wav"
            write_audio(out / rel, item["audio"])
            row_["audio"] = rel
        if item.get("context"):
            row_["context"] = item["context"]
        if item.get("distractors"):
            row_["distractors"] = {k: v for k, v in item["distractors"].items() if v != item["answer"]}
        row_["difficulty"] = item["difficulty"]
        if item.get("human_answer"):
            row_["human_answer"] = item["human_answer"]
        row_["source"] = "c3po-demo"
        row_["hidden"] = {**item.get("hidden", {}), "license": LICENSE, "generator": "c3po_plugin.data.make_demo"}
        rows.append(row_)
    return write_items(out, rows)


def main() -> None:
    demo_main(__doc__, generate)


if __name__ == "__main__":
    main()
