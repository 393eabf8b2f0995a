"""``modality_oracle``: a scripted calibration model whose answer depends on exactly ONE modality.

``--model modality_oracle --model_args modality=audio`` (or ``modality=vision``) reads one fact
from the media of the request, and nothing else:

- ``audio``: the pitch of the longest tone, ``"high"`` or ``"low"``
  (:func:`.reference_perception.pitch_word`);
- ``vision``: the colour name of most saturated pixels over the images or frames
  (:func:`.reference_perception.dominant_colour`).

It then answers the prompt with that word, in the form the prompt asks for:

- lettered options (``A. ...``, ``(A) ...``): the letter of the one option that names the word;
- a yes/no question (``Is ...?``, ``... yes or no``): ``Yes`` when the question names the word;
- otherwise: the word itself (a one-word answer or a transcript).

With the modality missing (no such item, silence, blank or grey frames), or when no option or
more than one names the word, it answers a fixed guess: the first option's letter, ``No``, or
:data:`UNKNOWN`. So on data whose answer is encoded in one modality (the local copies of
``tests/wrap_datasets.py`` encode it in the tone pitch and in the colour) the numbers of a
modality-necessity audit are known before the run: removing the oracle's modality brings it to
the fixed guess's rate, removing any other modality changes nothing. It is a calibration
instrument for the wrapped tasks (issue 27) and their audit, not a model of anything.

``--model_args modality=fingerprint`` answers from everything it was shown instead: a BLAKE2b
digest of the frames and audio samples it read (an audio dict as received: its rate, shape and
every value, not resampled), turned into one option's letter, ``Yes``/``No``,
or the digest itself (:func:`fingerprint_reply`). Its replies change with any pixel or sample, so
two runs that give the same replies doc for doc were shown the same media (wrapped ``clean`` against
the base task, issue 36).

``video_frames=N`` makes it sample N frames of a video file itself, with lmms-eval's own
``read_video`` (PyAV, ``linspace`` over the frame count), as lmms-eval's video models do, in place
of SCEval's frame grid through the decode cache; the video's audio track is then not read.

Media are read as :mod:`.reference` reads them (PIL images, lists of them, audio dicts, image,
audio and video paths through the shared decode cache), and requests go through the one request
lifecycle (:mod:`.local_requests`).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from faultline_eval.core.media import SAMPLE_RATE, VIDEO_SUFFIXES
from faultline_eval.model_wrappers.chat_messages import visuals_and_context
from faultline_eval.model_wrappers.lmms_base import HostSideModel, lmms_base
from faultline_eval.model_wrappers.local_requests import answer_requests
from faultline_eval.model_wrappers.model_args import check_model_args
from faultline_eval.model_wrappers.reference import base_options
from faultline_eval.model_wrappers.reference_perception import (
    conversation_media,
    dominant_colour,
    pitch_word,
    split_visuals,
)

#: The modality each setting reads, and how it turns (frames, audio) into one word.
MODALITIES = {
    "audio": lambda frames, wave: pitch_word(wave),
    "vision": lambda frames, wave: dominant_colour(frames),
    "fingerprint": lambda frames, wave: fingerprint(frames, wave),
}
#: The open-question reply when the modality is missing.
UNKNOWN = "unknown"
_YES_NO = re.compile(r"(?im)\byes or no\b|^\s*(is|are|does|do|did|was|were|can|could|has|have|will)\b")


def perceived(modality: str, frames: list[np.ndarray], wave: np.ndarray | None) -> str | None:
    """The one word ``modality`` gives for these media, or None when it is missing."""
    return MODALITIES[modality](frames, wave)


def fingerprint(frames: list[np.ndarray], wave: np.ndarray | None) -> str | None:
    """A digest (16 hex digits) of every frame (shape and pixels) and audio sample read; None
    when there are none."""
    if not frames and wave is None:
        return None
    digest = hashlib.blake2b(digest_size=8)
    for frame in frames:
        pixels = np.ascontiguousarray(frame, dtype=np.uint8)
        digest.update(repr(pixels.shape).encode() + pixels.tobytes())
    if wave is not None:
        digest.update(b"audio" + np.ascontiguousarray(wave, dtype=np.float32).tobytes())
    return digest.hexdigest()


def as_received(audio: dict[str, Any]) -> dict[str, Any]:
    """An audio dict's samples as the task sent them, for the fingerprint: its rate, its shape and
    every value, read as one 16 kHz clip (so nothing resamples or downmixes it, which would hide a
    change of rate or channels: the same soxr resampler on both sides gives the same 16 kHz clip)."""
    samples = np.asarray(audio["array"])
    header = np.array([int(audio["sampling_rate"]), *samples.shape], dtype=np.float64)
    return {"array": np.concatenate([header, samples.ravel().astype(np.float64)]), "sampling_rate": SAMPLE_RATE}


def fingerprint_reply(prompt: str, word: str | None) -> str:
    """The reply to ``prompt`` drawn from the digest ``word``: the letter of option
    ``digest mod count``, ``Yes``/``No`` by its last bit, or the digest itself (no media:
    the fixed guesses of :func:`oracle_reply`)."""
    if word is None:
        return oracle_reply(prompt, None)
    number = int(word, 16)
    options = base_options(prompt)
    if options:
        return options[number % len(options)][0]
    if _YES_NO.search(prompt):
        return "Yes" if number & 1 else "No"
    return word


def _names(text: str, word: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", text, re.IGNORECASE) is not None


def oracle_reply(prompt: str, word: str | None) -> str:
    """The reply to ``prompt`` given the perceived ``word`` (None: the modality is missing)."""
    options = base_options(prompt)
    if options:
        naming = [letter for letter, text in options if word is not None and _names(text, word)]
        return naming[0] if len(naming) == 1 else options[0][0]
    if _YES_NO.search(prompt):
        return "Yes" if word is not None and _names(prompt, word) else "No"
    return word or UNKNOWN


class _ModalityOracle(HostSideModel, lmms_base()):  # type: ignore[misc]
    model_id = "modality_oracle"

    def __init__(self, modality: str = "audio", video_frames: int | str = 0, **kwargs: Any) -> None:
        check_model_args(self.model_id, type(self), kwargs)
        if modality not in MODALITIES:
            raise ValueError(f"{self.model_id}: modality={modality!r}; choose one of {sorted(MODALITIES)}")
        try:
            self.video_frames = int(video_frames)
        except ValueError:
            self.video_frames = -1
        if self.video_frames < 0:
            raise ValueError(
                f"{self.model_id}: video_frames={video_frames!r}; give a whole number of frames (0: SCEval's grid)"
            )
        super().__init__()
        self.modality = modality

    def sampled(self, item: Any) -> Any:
        """A video file's N frames as lmms-eval's ``read_video`` samples them (``video_frames=N``);
        for the fingerprint, an audio dict as received (:func:`as_received`); any other item as it is."""
        if self.modality == "fingerprint" and isinstance(item, dict) and "array" in item:
            return as_received(item)
        if not self.video_frames or not isinstance(item, (str, os.PathLike)):
            return item
        if Path(item).suffix.lower() not in VIDEO_SUFFIXES:
            return item
        from lmms_eval.models.model_utils.load_video import read_video  # heavy: lmms-eval's video reader

        return list(read_video(os.fspath(item), num_frm=self.video_frames))

    def loglikelihood(self, requests):
        raise NotImplementedError(f"{self.model_id} only generates")

    def generate_until_multi_round(self, requests):
        raise NotImplementedError(f"{self.model_id} answers in one round")

    def media_and_prompt(self, messages: list[dict]) -> tuple[list[np.ndarray], np.ndarray | None, str]:
        raise NotImplementedError

    def generate_until(self, requests: list[Any]) -> list[str]:
        def answer(messages: list[dict], gen_kwargs: dict) -> str:
            frames, wave, prompt = self.media_and_prompt(messages)
            reply = fingerprint_reply if self.modality == "fingerprint" else oracle_reply
            return reply(prompt, perceived(self.modality, frames, wave))

        return answer_requests(self, requests, answer, f"{self.model_id}[{self.modality}]")


class ModalityOracleChat(_ModalityOracle):
    """Chat interface: reads the task's doc_to_messages (or lmms-eval's automatic messages)."""

    is_simple = False

    def media_and_prompt(self, messages: list[dict]) -> tuple[list[np.ndarray], np.ndarray | None, str]:
        parts = [
            {**m, "content": [self._sampled_part(p) for p in m["content"]]} if isinstance(m.get("content"), list) else m
            for m in messages
        ]
        frames, wave, texts = conversation_media(parts)
        return frames, wave, "\n".join(texts)

    def _sampled_part(self, part: Any) -> Any:
        if isinstance(part, dict) and part.get("type") in ("image", "video", "audio"):
            return {**part, "url": self.sampled(part["url"])}
        return part


class ModalityOracleSimple(_ModalityOracle):
    """Simple interface (``--force_simple``): reads doc_to_visual's list and the prompt text."""

    is_simple = True

    def media_and_prompt(self, messages: list[dict]) -> tuple[list[np.ndarray], np.ndarray | None, str]:
        visuals, context = visuals_and_context(messages)
        frames, wave = split_visuals([self.sampled(item) for item in visuals])
        return frames, wave, context
