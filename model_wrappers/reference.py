"""``sceval_reference``: an offline model that answers the demo items by signal processing.

It reads only what a real model would be sent (the prompt text, the frames and the audio),
never the dataset document, so it cannot see the gold key. It finds saturated shapes in the
frames (colour from hue, kind from how much of its box a shape fills, size from its area),
finds tone events in the audio (loudness envelope; pitch from the spectrum) and reads a few
keywords in the question. Clean demo accuracy is near 100 %; corruption breaks each of those
steps the way it would break a perception pipeline, so the demo shows real fault lines.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any, Iterable, List, Sequence

import numpy as np
from scipy import ndimage

SAMPLE_RATE = 16_000
HIGH_PITCH_HZ = 700.0  # tones above are "high"
#: Hue ranges (degrees) -> colour name.
HUES = [(20, "red"), (75, "yellow"), (165, "green"), (205, "cyan"), (265, "blue"), (330, "magenta"), (361, "red")]


@dataclass(frozen=True)
class Shape:
    colour: str
    kind: str  # circle | square | triangle
    area: int
    x: float = 0.0  # centroid, pixels from the left (C3PO's spatial questions)
    y: float = 0.0  # centroid, pixels from the top


@dataclass(frozen=True)
class Tone:
    start_s: float
    length_s: float
    pitch_hz: float


# --- perception ---------------------------------------------------------------------------------

def colour_name(rgb: Sequence[float]) -> str:
    r, g, b = (float(v) for v in rgb)
    hi, lo = max(r, g, b), min(r, g, b)
    if hi - lo < 1e-6:
        return "grey"
    if hi == r:
        hue = (60 * (g - b) / (hi - lo)) % 360
    elif hi == g:
        hue = 60 * (b - r) / (hi - lo) + 120
    else:
        hue = 60 * (r - g) / (hi - lo) + 240
    return next(name for limit, name in HUES if hue < limit)


def find_shapes(frame: np.ndarray) -> list[Shape]:
    """Saturated blobs of a frame, largest first."""
    rgb = frame.astype(np.float32)
    hi, lo = rgb.max(axis=-1), rgb.min(axis=-1)
    mask = ((hi - lo) > 0.35 * np.maximum(hi, 1)) & (hi > 40)
    mask = ndimage.binary_opening(mask, iterations=1)
    labels, count = ndimage.label(mask)
    shapes = []
    for index, box in enumerate(ndimage.find_objects(labels), start=1):
        region = labels[box] == index
        area = int(region.sum())
        if area < 40:
            continue
        fill = area / region.size
        kind = "square" if fill > 0.9 else "circle" if fill > 0.65 else "triangle"
        colour = colour_name(rgb[box][region].mean(axis=0))
        ys, xs = np.nonzero(region)
        shapes.append(Shape(colour, kind, area, box[1].start + float(xs.mean()), box[0].start + float(ys.mean())))
    return sorted(shapes, key=lambda s: -s.area)


def find_tones(wave: np.ndarray, rate: int = SAMPLE_RATE) -> list[Tone]:
    """Loud events (10 ms loudness envelope), each with its dominant frequency."""
    hop = rate // 100
    n = wave.size // hop
    if n == 0:
        return []
    frames = wave[: n * hop].reshape(n, hop)
    loudness = np.sqrt((frames**2).mean(axis=1))
    on = loudness > max(0.03, 0.3 * float(loudness.max()))
    labels, count = ndimage.label(on)
    tones = []
    for index, box in enumerate(ndimage.find_objects(labels), start=1):
        start, stop = box[0].start, box[0].stop
        if stop - start < 5:  # shorter than 50 ms: a click, not a tone
            continue
        segment = wave[start * hop : stop * hop]
        spectrum = np.abs(np.fft.rfft(segment * np.hanning(segment.size)))
        pitch = float(np.fft.rfftfreq(segment.size, 1 / rate)[int(spectrum.argmax())])
        tones.append(Tone(start / 100, (stop - start) / 100, pitch))
    return tones


# --- reading the prompt --------------------------------------------------------------------------

_OPTION = re.compile(r"^([A-D])\. (.+)$", re.MULTILINE)


def read_prompt(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(question, options) from the protocol's user prompt; the question may span lines."""
    body, _, options_part = text.partition("\nOptions:")
    question = body.split("Question: ", 1)[1] if "Question: " in body else ""
    return question, [(m.group(1), m.group(2).strip()) for m in _OPTION.finditer(options_part)]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


# --- deciding ------------------------------------------------------------------------------------

def _pick(options: list[tuple[str, str]], description: str | None) -> str | None:
    if description is None:
        return None
    exact = [k for k, t in options if t.lower() == description]
    if exact:
        return exact[0]
    colour = description.split()[0]
    partial = [k for k, t in options if colour in t.lower().split()]
    return partial[0] if len(partial) == 1 else None


def perceive(question: str, frames: list[np.ndarray], wave: np.ndarray | None) -> tuple[str | None, str, list]:
    """What the pipeline makes of one item without looking at any options: the answer it
    describes ("green", "red circle"; None when a step failed), its reasoning, and the shapes
    it found per frame."""
    q = words(question)
    shapes = [find_shapes(f) for f in frames]
    tones = find_tones(wave) if wave is not None else []
    described = None
    reasoning = "no recognisable task in the question"
    if {"beeps", "frame"} <= set(q) or {"beep", "frame"} <= set(q):
        count = len(tones)
        if 1 <= count <= len(shapes) and shapes[count - 1]:
            described = shapes[count - 1][0].colour
        reasoning = f"heard {count} beep(s); looked at frame {count}"
    elif ("higher" in q or "lower" in q) and "tone" in q:
        which = "higher" if "higher" in q else "lower"
        if len(tones) >= 2:
            tone = max(tones, key=lambda t: t.pitch_hz) if which == "higher" else min(tones, key=lambda t: t.pitch_hz)
            index = min(int(tone.start_s), len(shapes) - 1)
            if shapes and shapes[index]:
                described = f"{shapes[index][0].colour} {shapes[index][0].kind}"
            reasoning = f"the {which} tone starts at {tone.start_s:.2f}s, frame {index + 1}"
        else:
            reasoning = f"expected two tones, heard {len(tones)}"
    elif ("largest" in q or "smallest" in q) and ("high" in q or "low" in q):
        named = "largest" if "largest" in q else "smallest"
        asked = "high" if "high" in q else "low"
        if tones and shapes and len(shapes[0]) == 3:
            heard = "high" if max(tones, key=lambda t: t.length_s).pitch_hz > HIGH_PITCH_HZ else "low"
            by_size = shapes[0]  # largest first
            chosen = (by_size[0] if named == "largest" else by_size[2]) if heard == asked else by_size[1]
            described = chosen.colour
            reasoning = f"heard a {heard} tone; the question asks for the {named} shape if it is {asked}"
        else:
            reasoning = f"found {len(tones)} tone(s) and {len(shapes[0]) if shapes else 0} shape(s)"
    return described, reasoning, shapes


def decide(question: str, options: list[tuple[str, str]], frames: list[np.ndarray], wave: np.ndarray | None) -> dict:
    """The reply object for one item: answer key, confidence, reasoning."""
    described, reasoning, shapes = perceive(question, frames, wave)
    key = _pick(options, described)
    if key is not None:
        return {"answer": key, "confidence": "high", "reasoning": reasoning}
    # Fall back to the most visible colour among the options: a guess, and said to be one.
    seen = [s.colour for frame in shapes for s in frame]
    ranked = sorted(options, key=lambda kv: -sum(c in kv[1].lower().split() for c in seen))
    guess = ranked[0][0] if ranked else "A"
    return {"answer": guess, "confidence": "low", "reasoning": f"{reasoning}; guessing"}


#: The free-form answer when a perception step failed: with no options there is nothing to guess among.
CANNOT_TELL = "cannot tell from the input"


def answer_freely(question: str, frames: list[np.ndarray], wave: np.ndarray | None) -> dict:
    """The reply object for a no-option prompt (SCEval Table 35): what :func:`perceive`
    describes, with its reasoning as the evidence; when a step failed, it says it cannot tell
    (the multiple-choice :func:`decide` would guess the most visible option instead)."""
    described, reasoning, _ = perceive(question, frames, wave)
    return {"answer": described or CANNOT_TELL, "evidence": reasoning}


def _reply(text: str, frames: list[np.ndarray], wave: np.ndarray | None) -> str:
    """The SCEval reply to a prompt: a free-form answer when the prompt says no options are given."""
    from sceval_plugin.eval_prompts import NO_OPTION, NO_OPTION_CUE

    question, options = read_prompt(text)
    if NO_OPTION_CUE in text:  # no options: the answer format follows the question
        return json.dumps(answer_freely(question.split(NO_OPTION.answer_format, 1)[0], frames, wave))
    return json.dumps(decide(question, options, frames, wave))


# --- lmms-eval models ----------------------------------------------------------------------------

def _as_array(image: Any) -> np.ndarray:
    return np.asarray(image.convert("RGB") if hasattr(image, "convert") else image, dtype=np.uint8)


def _audio_array(audio: Any) -> np.ndarray | None:
    if isinstance(audio, dict) and "array" in audio:
        if int(audio.get("sampling_rate", SAMPLE_RATE)) != SAMPLE_RATE:
            raise ValueError("sceval_reference expects 16 kHz audio")
        return np.asarray(audio["array"], dtype=np.float32)
    return None


def _is_c3po(texts: list[str]) -> bool:
    """C3PO prompts ask for a free-form answer (``prompts.ANSWER_CUE``); SCEval's for a choice."""
    from c3po_plugin.eval_prompt import ANSWER_CUE

    return any(ANSWER_CUE in t for t in texts)


def answer_messages(messages: list[dict]) -> str:
    """The reply to lmms-eval chat messages (what doc_to_messages produced)."""
    images, wave, texts = [], None, []
    for message in messages:
        if message.get("role") != "user":
            continue
        for part in message.get("content", []):
            if part.get("type") == "image":
                images.append(_as_array(part["url"]))
            elif part.get("type") == "audio":
                wave = _audio_array(part["url"])
            elif part.get("type") == "text":
                texts.append(part["text"])
    if _is_c3po(texts):
        from .reference_c3po import answer_c3po_messages

        return answer_c3po_messages(messages)
    return _reply("\n".join(texts), images, wave)


def split_visuals(visuals: Iterable[Any]) -> tuple[list[np.ndarray], np.ndarray | None]:
    """doc_to_visual's list as (images in order, the audio clip or None)."""
    images, wave = [], None
    for v in visuals:
        if isinstance(v, dict):
            wave = _audio_array(v)
        else:
            images.append(_as_array(v))
    return images, wave


def answer_visuals(context: str, visuals: Iterable[Any]) -> str:
    """The reply for a simple-model request: prompt text plus doc_to_visual's list."""
    if _is_c3po([context]):
        from .reference_c3po import answer_c3po_visuals

        return answer_c3po_visuals(context, visuals)
    images, wave = split_visuals(visuals)
    return _reply(context, images, wave)


def _lmms_base():
    from lmms_eval.api.model import lmms

    return lmms


class _Reference(_lmms_base()):  # type: ignore[misc]
    model_id = "sceval_reference"

    def __init__(self, **kwargs: Any) -> None:
        from faultline_eval.model_wrappers.model_args import check_model_args

        check_model_args(self.model_id, type(self), kwargs)
        super().__init__()

    def loglikelihood(self, requests):
        raise NotImplementedError("sceval_reference only generates")

    def generate_until_multi_round(self, requests):
        raise NotImplementedError("sceval_reference answers in one round")

    def _answer(self, args: tuple, doc: dict) -> str:
        raise NotImplementedError

    def generate_until(self, requests: List[Any]) -> List[str]:
        from tqdm import tqdm

        from faultline_eval.core import telemetry

        replies = []
        for request in tqdm(requests, disable=self.rank != 0, desc="sceval_reference"):
            start = time.perf_counter()
            doc_id, task, split = request.args[3:6]  # the same place in chat and simple requests
            doc = self.task_dict[task][split][doc_id]
            replies.append(self._answer(request.args, doc))
            # The doc is touched for its row id only, to hand over latency; never for answers.
            telemetry.record(doc["row_id"], telemetry.Call(latency_s=time.perf_counter() - start))
        return replies


class ReferenceChat(_Reference):
    """Chat interface: reads the task's doc_to_messages (frames, audio, text)."""

    is_simple = False

    def _answer(self, args: tuple, doc: dict) -> str:
        ctx, doc_to_messages, *_ = args
        return answer_messages(doc_to_messages(doc))


class ReferenceSimple(_Reference):
    """Simple interface (``--force_simple``): reads doc_to_visual's list and the prompt text."""

    is_simple = True

    def _answer(self, args: tuple, doc: dict) -> str:
        ctx, gen_kwargs, doc_to_visual, *_ = args
        return answer_visuals(ctx, doc_to_visual(doc))
