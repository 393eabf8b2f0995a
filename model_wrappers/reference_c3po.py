"""``sceval_reference`` on C3PO: short free-form answers by signal processing.

Like the SCEval side (:mod:`.reference`), it reads only what a real model is sent: the labelled
video frames, the picture, the audio and the prompt text (never the dataset doc or the gold
answer). Perception is :mod:`.reference_perception`'s: :func:`find_shapes` (colour, kind, size, centroid of
each saturated blob) and :func:`find_tones` (loud events with their start, length and pitch;
"high" above ``HIGH_PITCH_HZ``).

The question grammar (what the demo generator, :mod:`c3po_plugin.data.make_demo`, writes), tried in
this order, first match wins:

===================================  ==========================================================
question contains                    answer
===================================  ==========================================================
"count along the row"                the picture's shape, from the left, at the beep count:
                                     its colour ("what colour") or kind
"narrates one step"                  the frame just before the narrated last <beeps> frames
"by hand"                            picture count minus beeps
"how many more"                      "<beeps - picture count> more"
"enough"                             yes when picture count >= beeps
"just left of the <kind>"            colour of the landmark's left (high tone) / right neighbour
"placed next"                        tone number <picture count + 1>, mapped to a kind by
                                     "high tone placed a <kind> ... low tone a <kind>"
"heading home or leaving home"       the mover's direction against "high ... home is to the <side>"
"end up"                             track the ball named by the tone ("high tone singles out
                                     the <colour> one, a low tone the <colour> one"), frame 1 on
"chimes as it lights"                the shape on screen in the second the chime starts
"bin"                                the bin the mover heads for (high tone) or the other (low)
"appearance of the shape in the      the <beeps>-th frame showing the picture's shape: its side
picture"                             ("which side") or its second ("which second")
"at which step"                      first step whose placed kind differs from the tone
                                     procedure ("high for placing a <kind>, low for a <kind>")
"set the <kind> moving"              the other object that moved before the <kind> did
"which way"                          the mover's direction
"actually stop"                      whether the mover ever stands still between two frames
"limit"                              whether the most objects seen at once stay within the
                                     count on the posted sign (the picture)
"by day or by night"                 whether the picture shows the sun ("sun is a <colour> ball")
"the <place> or the <place>"         the place whose sound ("birdsong"/"horns") is heard
"what shapes"                        the kind the picture shows, plural
"what colour"                        the colour of the largest shape
"how many", "which gate"             a count
===================================  ==========================================================

Its conflict policy is fixed and documented, so the demo shows real failure modes:

- colours and shapes come from the eyes, and a still picture is preferred over video frames
  when both are there (fails when the picture is the disclaimed evidence: image dominance);
- counts come from the ears: when the audio has beeps, a plain count is the number of beeps
  (fails when the audio is a fabricated or outdated tally: audio dominance);
- a place or scene is recognised from its soundscape (fails on acoustic mismatches);
- the ``Note:`` line (text evidence) is read but ignored, and a posted rule is taken from the
  picture (fails when the note updates the sign);
- numbers are given with their noun when the question's grammar asks for an amount or a step
  ("2 more", "step 3"): right, but exact match misses them, so they need the judge.

Unknown question forms, or perception that finds nothing usable, answer "unknown".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from c3po_plugin import eval_prompt as prompts
from faultline_eval.model_wrappers.reference_perception import (
    HIGH_PITCH_HZ,
    Shape,
    Tone,
    audio_wave,
    find_shapes,
    find_tones,
    image_array,
    split_visuals,
)

UNKNOWN = "unknown"
KINDS = ("circle", "square", "triangle")
#: What a sound means for a place (the one piece of world knowledge the grammar uses).
SOUND_OF_PLACE = {"birdsong": "forest", "horns": "harbour"}


@dataclass
class Evidence:
    """What the model was sent, split by kind."""

    frames: list[np.ndarray]
    picture: np.ndarray | None
    wave: np.ndarray | None
    question: str
    note: str  # read, never used (the policy ignores text evidence)

    @property
    def q(self) -> str:
        return self.question.lower()

    def frame_shapes(self) -> list[list[Shape]]:
        return [find_shapes(f) for f in self.frames]

    def picture_shapes(self) -> list[Shape]:
        return find_shapes(self.picture) if self.picture is not None else []

    def tones(self) -> list[Tone]:
        return find_tones(self.wave) if self.wave is not None else []

    @property
    def width(self) -> int:
        source = self.frames[0] if self.frames else self.picture
        return int(source.shape[1]) if source is not None else 0


# --- reading what was sent -----------------------------------------------------------------------


def read_user(text: str) -> tuple[str, str]:
    """(question, note) from the prompt's question block."""
    note = question = ""
    for line in text.splitlines():
        if line.startswith(prompts.CONTEXT_LABEL):
            note = line[len(prompts.CONTEXT_LABEL) :].strip()
        elif line.startswith(prompts.QUESTION_LABEL):
            question = line[len(prompts.QUESTION_LABEL) :].strip()
    return question, note


_VIDEO_LABEL = re.compile(re.escape(prompts.VIDEO_LABEL).replace(r"\{n\}", r"\d+").replace(r"\{times\}", ".*"))


def evidence_from_messages(messages: list[dict]) -> Evidence:
    """Split a chat turn by its labels: images after the video label are frames, the image
    after the image label is the picture."""
    frames, picture, wave, texts = [], None, None, []
    target = None
    for message in messages:
        if message.get("role") != "user":
            continue
        for part in message.get("content", []):
            kind = part.get("type")
            if kind == "text":
                text = part["text"]
                texts.append(text)
                target = (
                    "frames"
                    if _VIDEO_LABEL.fullmatch(text.strip())
                    else "picture"
                    if text.strip() == prompts.IMAGE_LABEL
                    else target
                )
            elif kind == "image":
                if target == "picture" and picture is None:
                    picture = image_array(part["url"])
                else:
                    frames.append(image_array(part["url"]))
            elif kind == "audio":
                wave = audio_wave(part["url"])
    block = next((t for t in reversed(texts) if prompts.ANSWER_CUE in t), "")
    return Evidence(frames, picture, wave, *read_user(block))


def evidence_from_visuals(context: str, visuals: Iterable[Any]) -> Evidence:
    """Split doc_to_visual's list with the legend in the prompt text (frames first, then the
    picture, then the audio)."""
    images, wave = split_visuals(visuals)
    found = re.search(r"(\d+) video frame", context)
    n_frames = int(found.group(1)) if found else 0
    has_picture = "1 picture" in context
    picture = images[n_frames] if has_picture and len(images) > n_frames else None
    return Evidence(images[:n_frames], picture, wave, *read_user(context))


# --- perception helpers --------------------------------------------------------------------------


def beeps(ev: Evidence) -> int:
    return len(ev.tones())


def high(ev: Evidence) -> bool | None:
    tones = ev.tones()
    if not tones:
        return None
    return max(tones, key=lambda t: t.length_s).pitch_hz > HIGH_PITCH_HZ


def side(ev: Evidence, x: float) -> str:
    return "left" if x < ev.width / 2 else "right"


def noun(kind: str, question: str) -> str:
    return "ball" if kind == "circle" and "ball" in question else kind


def key(shape: Shape) -> tuple[str, str]:
    return shape.colour, shape.kind


def track(frames: list[list[Shape]], identity: tuple[str, str]) -> list[Shape | None]:
    """One object followed through the frames by its colour and kind."""
    return [next((s for s in shapes if key(s) == identity), None) for shapes in frames]


def mover(frames: list[list[Shape]]) -> list[Shape] | None:
    """The track of the object that moves the most (objects keep their colour and kind)."""
    best, best_travel = None, 0.0
    for identity in {key(s) for s in frames[0]} if frames else ():
        path = track(frames, identity)
        if any(p is None for p in path):
            continue
        travel = sum(abs(b.x - a.x) + abs(b.y - a.y) for a, b in zip(path, path[1:]))
        if travel > best_travel:
            best, best_travel = path, travel
    return best


def count_of(shapes: list[Shape], question: str) -> int:
    """Shapes of the kind the question names (all when it names none)."""
    named = [k for k in KINDS if k in question or (k == "circle" and "ball" in question)]
    return sum(1 for s in shapes if not named or s.kind in named)


def visible_count(ev: Evidence) -> int:
    if ev.picture is not None:
        return count_of(ev.picture_shapes(), ev.q)
    return max((count_of(f, ev.q) for f in ev.frame_shapes()), default=0)


# --- the grammar ---------------------------------------------------------------------------------


def count_along_row(ev: Evidence) -> str:
    row = sorted(ev.picture_shapes(), key=lambda s: s.x)
    k = beeps(ev)
    if not 1 <= k <= len(row):
        return UNKNOWN
    return row[k - 1].colour if "what colour" in ev.q else row[k - 1].kind


def unnarrated_step(ev: Evidence) -> str:
    steps = [f[0] for f in ev.frame_shapes() if f]
    index = len(steps) - beeps(ev) - 1
    return f"{steps[index].colour} {steps[index].kind}" if 0 <= index < len(steps) else UNKNOWN


def by_hand(ev: Evidence) -> str:
    return str(visible_count(ev) - beeps(ev))


def how_many_more(ev: Evidence) -> str:
    return f"{beeps(ev) - visible_count(ev)} more"


def enough(ev: Evidence) -> str:
    return "yes" if visible_count(ev) >= beeps(ev) else "no"


def neighbour(ev: Evidence) -> str:
    landmark = re.search(r"just left of the (\w+)", ev.q).group(1)
    row = sorted(ev.picture_shapes(), key=lambda s: s.x)
    at = next((i for i, s in enumerate(row) if s.kind == landmark), None)
    pitch = high(ev)
    if at is None or pitch is None:
        return UNKNOWN
    target = at - 1 if pitch else at + 1
    return row[target].colour if 0 <= target < len(row) else UNKNOWN


def placed_next(ev: Evidence) -> str:
    hi = re.search(r"high tone placed an? (\w+)", ev.q)
    lo = re.search(r"low tone an? (\w+)", ev.q)
    tones = ev.tones()
    shown = len(ev.picture_shapes())
    if not (hi and lo) or shown >= len(tones):
        return UNKNOWN
    return hi.group(1) if tones[shown].pitch_hz > HIGH_PITCH_HZ else lo.group(1)


def home(ev: Evidence) -> str:
    where = dict(re.findall(r"(high|low) tone means home is to the (left|right)", ev.q))
    path, pitch = mover(ev.frame_shapes()), high(ev)
    if not path or pitch is None or ("high" if pitch else "low") not in where:
        return UNKNOWN
    going = "right" if path[-1].x > path[0].x else "left"
    return "heading home" if going == where["high" if pitch else "low"] else "leaving home"


def end_up(ev: Evidence) -> str:
    found = re.search(r"high tone singles out the (\w+) one, a low tone the (\w+) one", ev.q)
    frames, pitch = ev.frame_shapes(), high(ev)
    if not found or pitch is None or not frames:
        return UNKNOWN
    colour = found.group(1 if pitch else 2)
    current = next((s for s in frames[0] if s.colour == colour), None)
    if current is None:
        return UNKNOWN
    for shapes in frames[1:]:  # nearest neighbour, one frame at a time
        if shapes:
            current = min(shapes, key=lambda s: (s.x - current.x) ** 2 + (s.y - current.y) ** 2)
    return side(ev, current.x)


def chime(ev: Evidence) -> str:
    tones, frames = ev.tones(), ev.frame_shapes()
    if not tones or not frames:
        return UNKNOWN
    shapes = frames[min(int(tones[0].start_s), len(frames) - 1)]
    return f"{shapes[0].colour} {shapes[0].kind}" if shapes else UNKNOWN


def bin_outcome(ev: Evidence) -> str:
    frames, pitch = ev.frame_shapes(), high(ev)
    path = mover(frames)
    if not path or pitch is None:
        return UNKNOWN
    bins = sorted((s for s in frames[-1] if key(s) != key(path[-1])), key=lambda s: s.x)
    if len(bins) != 2:
        return UNKNOWN
    heading = bins[0] if path[-1].x < path[0].x else bins[1]
    other = bins[1] if heading is bins[0] else bins[0]
    return (heading if pitch else other).colour


def appearance(ev: Evidence) -> str:
    reference = ev.picture_shapes()
    if not reference:
        return UNKNOWN
    seen = [(t, s) for t, shapes in enumerate(ev.frame_shapes()) for s in shapes if key(s) == key(reference[0])]
    k = beeps(ev)
    if not 1 <= k <= len(seen):
        return UNKNOWN
    second, shape = seen[k - 1]
    return side(ev, shape.x) if "which side" in ev.q else str(second + 1)


def departure(ev: Evidence) -> str:
    found = re.search(r"high for placing an? (\w+), low for an? (\w+)", ev.q)
    frames = ev.frame_shapes()
    if not found or not frames:
        return UNKNOWN
    placed = [s.kind for s in sorted(frames[-1], key=lambda s: s.x)]
    proper = [found.group(1) if t.pitch_hz > HIGH_PITCH_HZ else found.group(2) for t in ev.tones()]
    for step, (done, due) in enumerate(zip(placed, proper), start=1):
        if done != due:
            return f"step {step}"
    return "none"


def cause(ev: Evidence) -> str:
    target = re.search(r"set the (\w+) moving", ev.q).group(1)
    frames = ev.frame_shapes()
    identities = {key(s) for s in frames[0]} if frames else set()
    paths = {i: track(frames, i) for i in identities}
    paths = {i: p for i, p in paths.items() if all(s is not None for s in p)}

    def first_move(path: list[Shape]) -> int | None:
        return next((t for t, (a, b) in enumerate(zip(path, path[1:])) if abs(b.x - a.x) + abs(b.y - a.y) > 3), None)

    moved = next((first_move(p) for i, p in paths.items() if i[1] == target), None)
    if moved is None:
        return UNKNOWN
    earlier = [i for i, p in paths.items() if i[1] != target and (first_move(p) is not None and first_move(p) < moved)]
    if not earlier:
        return UNKNOWN
    colour, kind = earlier[0]
    return f"{colour} {noun(kind, ev.q)}"


def which_way(ev: Evidence) -> str:
    path = mover(ev.frame_shapes())
    return UNKNOWN if not path else ("right" if path[-1].x > path[0].x else "left")


def stopped(ev: Evidence) -> str:
    path = mover(ev.frame_shapes())
    if not path:
        return UNKNOWN
    return "yes" if any(abs(b.x - a.x) + abs(b.y - a.y) < 2 for a, b in zip(path, path[1:])) else "no"


def limit(ev: Evidence) -> str:
    frames = ev.frame_shapes()
    if ev.picture is None or not frames:
        return UNKNOWN
    posted = len(ev.picture_shapes())  # the sign; the note that updates it is ignored (policy)
    most = max(len(f) for f in frames)
    return "yes" if most <= posted else "no"


def day_or_night(ev: Evidence) -> str:
    sun = re.search(r"sun is an? (\w+) ball", ev.q)
    if not sun:
        return UNKNOWN
    return "day" if any(s.kind == "circle" and s.colour == sun.group(1) for s in ev.picture_shapes()) else "night"


def place(ev: Evidence) -> str:
    """Scenes are recognised by ear (policy): the place whose sound is heard."""
    tones = ev.tones()
    if not tones:
        return UNKNOWN
    long_low = sum(t.length_s for t in tones if t.pitch_hz <= HIGH_PITCH_HZ) > sum(
        t.length_s for t in tones if t.pitch_hz > HIGH_PITCH_HZ
    )
    return SOUND_OF_PLACE["horns" if long_low else "birdsong"]


def what_shapes(ev: Evidence) -> str:
    shapes = ev.picture_shapes() or (ev.frame_shapes() or [[]])[0]
    if not shapes:
        return UNKNOWN
    kinds = [s.kind for s in shapes]
    return max(KINDS, key=kinds.count) + ("s" if len(kinds) > 1 else "")


def what_colour(ev: Evidence) -> str:
    """The eyes decide colours, and a still picture is preferred over video frames (policy)."""
    shapes = ev.picture_shapes() or next((f for f in ev.frame_shapes() if f), [])
    return shapes[0].colour if shapes else UNKNOWN


def count(ev: Evidence) -> str:
    """The ears decide counts (policy): beeps when there are any, else what is seen."""
    k = beeps(ev)
    return str(k) if k else str(visible_count(ev))


GRAMMAR: list[tuple[str, Callable[[Evidence], str]]] = [
    (r"count along the row", count_along_row),
    (r"narrates one step", unnarrated_step),
    (r"by hand", by_hand),
    (r"how many more", how_many_more),
    (r"\benough\b", enough),
    (r"just left of the \w+", neighbour),
    (r"placed next", placed_next),
    (r"heading home or leaving home", home),
    (r"\bend up\b", end_up),
    (r"chimes as it lights", chime),
    (r"\bbin\b", bin_outcome),
    (r"appearance of the shape in the picture", appearance),
    (r"at which step", departure),
    (r"set the \w+ moving", cause),
    (r"which way", which_way),
    (r"actually stop", stopped),
    (r"\blimit\b", limit),
    (r"by day or by night", day_or_night),
    (r"the (forest|harbour) or the (forest|harbour)", place),
    (r"what shapes", what_shapes),
    (r"what colou?r", what_colour),
    (r"how many|which gate", count),
]


def answer(ev: Evidence) -> str:
    for pattern, rule in GRAMMAR:
        if re.search(pattern, ev.q):
            return rule(ev)
    return UNKNOWN


def answer_c3po_messages(messages: list[dict]) -> str:
    """The reply to a C3PO chat turn (what doc_to_messages produced)."""
    return answer(evidence_from_messages(messages))


def answer_c3po_visuals(context: str, visuals: Iterable[Any]) -> str:
    """The reply to a C3PO simple-model request (prompt text with its legend, doc_to_visual's list)."""
    return answer(evidence_from_visuals(context, visuals))
