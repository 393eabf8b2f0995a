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

Media are read as :mod:`.reference` reads them (PIL images, lists of them, audio dicts, image,
audio and video paths through the shared decode cache), and requests go through the one request
lifecycle (:mod:`.local_requests`).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

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
}
#: The open-question reply when the modality is missing.
UNKNOWN = "unknown"
_YES_NO = re.compile(r"(?im)\byes or no\b|^\s*(is|are|does|do|did|was|were|can|could|has|have|will)\b")


def perceived(modality: str, frames: list[np.ndarray], wave: np.ndarray | None) -> str | None:
    """The one word ``modality`` gives for these media, or None when it is missing."""
    return MODALITIES[modality](frames, wave)


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

    def __init__(self, modality: str = "audio", **kwargs: Any) -> None:
        check_model_args(self.model_id, type(self), kwargs)
        if modality not in MODALITIES:
            raise ValueError(f"{self.model_id}: modality={modality!r}; choose one of {sorted(MODALITIES)}")
        super().__init__()
        self.modality = modality

    def loglikelihood(self, requests):
        raise NotImplementedError(f"{self.model_id} only generates")

    def generate_until_multi_round(self, requests):
        raise NotImplementedError(f"{self.model_id} answers in one round")

    def media_and_prompt(self, messages: list[dict]) -> tuple[list[np.ndarray], np.ndarray | None, str]:
        raise NotImplementedError

    def generate_until(self, requests: list[Any]) -> list[str]:
        def answer(messages: list[dict], gen_kwargs: dict) -> str:
            frames, wave, prompt = self.media_and_prompt(messages)
            return oracle_reply(prompt, perceived(self.modality, frames, wave))

        return answer_requests(self, requests, answer, f"{self.model_id}[{self.modality}]")


class ModalityOracleChat(_ModalityOracle):
    """Chat interface: reads the task's doc_to_messages (or lmms-eval's automatic messages)."""

    is_simple = False

    def media_and_prompt(self, messages: list[dict]) -> tuple[list[np.ndarray], np.ndarray | None, str]:
        frames, wave, texts = conversation_media(messages)
        return frames, wave, "\n".join(texts)


class ModalityOracleSimple(_ModalityOracle):
    """Simple interface (``--force_simple``): reads doc_to_visual's list and the prompt text."""

    is_simple = True

    def media_and_prompt(self, messages: list[dict]) -> tuple[list[np.ndarray], np.ndarray | None, str]:
        visuals, context = visuals_and_context(messages)
        frames, wave = split_visuals(visuals)
        return frames, wave, context
