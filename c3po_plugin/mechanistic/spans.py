"""Which input positions belong to which modality, per model family (C3PO App. F.1).

E1 and E2 need, for every position of the sequence the language model reads, its modality:
text (the prompt and the chat template's tokens together, as in the paper's "text and
chat-template tokens combined"), audio, image or video. A model family supports the probes when
its processor expands each medium into placeholder token ids in ``input_ids``; its *span
function* reads them back. A new family needs one entry in :data:`FAMILIES`.

A model whose forward path substitutes media features into ``inputs_embeds`` before the language
model (or builds ``input_ids`` inside a ``chat()`` call) has no such positions to read: it is
listed in :data:`BLOCKED` with that architectural reason (Table 4's "architectural status"), and
only E3, which needs nothing but the generated text, runs on it.

C3PO shows a video as labelled frames, which reach a Qwen model as images. The probes mask video
(App. F.1: "Video token positions are masked from E1 (and E2)"), so image parts that follow the
task's video label (:data:`c3po_plugin.eval_prompt.VIDEO_LABEL`) are marked as video frames, the
others as images (:func:`image_part_roles`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from c3po_plugin.eval_prompt import VIDEO_LABEL

TEXT, AUDIO, IMAGE, VIDEO = 0, 1, 2, 3
MODALITY_NAMES = ("text", "audio", "image", "video")


class Blocked(Exception):
    """The model cannot be probed at the routing level (E1/E2); ``reason`` says why."""

    def __init__(self, model: str, reason: str) -> None:
        super().__init__(f"{model}: E1/E2 blocked: {reason}")
        self.model, self.reason = model, reason


@dataclass(frozen=True)
class Family:
    """How to probe one model family.

    ``language_model(adapter)`` is the module whose forward receives ``input_ids`` (for Qwen-Omni,
    the thinker); its ``get_decoder()`` gives the decoder layers and final norm and its
    ``get_output_embeddings()`` the unembedding. ``spans(input_ids, config, image_roles)`` gives
    one modality code per position."""

    name: str
    language_model: Callable[[Any], Any]
    spans: Callable[[Any, Any, list[str]], np.ndarray]


def image_part_roles(messages: list[dict]) -> list[str]:
    """``"video"`` or ``"image"`` for each image part of ``messages``, in order: an image part
    belongs to a video when the last text part before it is C3PO's video label."""
    video_prefix = VIDEO_LABEL.split("{", 1)[0]
    roles, in_video = [], False
    for message in messages:
        for part in message.get("content", []):
            if part.get("type") == "text":
                in_video = str(part.get("text", "")).startswith(video_prefix)
            elif part.get("type") == "image":
                roles.append("video" if in_video else "image")
            elif part.get("type") in ("audio", "video"):
                in_video = False
    return roles


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) of each maximal run of True."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)))


def qwen_omni_spans(input_ids: Any, config: Any, image_roles: list[str]) -> np.ndarray:
    """Qwen2.5-Omni / Qwen3-Omni thinkers: the processor expands ``<|AUDIO|>``, ``<|IMAGE|>`` and
    ``<|VIDEO|>`` into one placeholder id per audio frame / merged patch group, each image's run
    between its own vision bos/eos markers; the k-th image run is the k-th image part."""
    ids = np.asarray(input_ids.detach().cpu() if hasattr(input_ids, "detach") else input_ids).reshape(-1)
    codes = np.full(ids.shape, TEXT, dtype=np.int8)
    codes[ids == int(config.audio_token_id)] = AUDIO
    codes[ids == int(config.video_token_id)] = VIDEO
    runs = _runs(ids == int(config.image_token_id))
    if image_roles and len(runs) != len(image_roles):
        raise ValueError(
            f"{len(runs)} image placeholder runs in input_ids but {len(image_roles)} image parts in the messages"
        )
    for k, (start, end) in enumerate(runs):
        codes[start:end] = VIDEO if (image_roles[k] if image_roles else "image") == "video" else IMAGE
    return codes


def _thinker_spans(input_ids: Any, config: Any, image_roles: list[str]) -> np.ndarray:
    return qwen_omni_spans(input_ids, config.thinker_config, image_roles)


#: ``config.model_type`` of the loaded model -> how to probe it.
FAMILIES: dict[str, Family] = {
    "qwen2_5_omni": Family("Qwen2.5-Omni thinker", lambda adapter: adapter.model.thinker, _thinker_spans),
    "qwen3_omni_moe": Family("Qwen3-Omni thinker", lambda adapter: adapter.model.thinker, _thinker_spans),
}

#: ``config.model_type`` -> why E1/E2 cannot run (C3PO Table 4's architectural status).
BLOCKED: dict[str, str] = {
    "minicpmo": (
        "MiniCPM-o's chat() builds input_ids itself and get_vllm_embedding substitutes the audio and "
        "image features into inputs_embeds before the language model; post-substitution positions cannot "
        "be located from input_ids"
    ),
}


def family_of(adapter: Any) -> Family:
    """The probe family of a loaded adapter, or :class:`Blocked` with the reason."""
    config = getattr(getattr(adapter, "model", None), "config", None)
    model_type = getattr(config, "model_type", None)
    label = getattr(adapter, "model_id", None) or type(adapter).__name__
    if model_type in FAMILIES:
        return FAMILIES[model_type]
    if model_type in BLOCKED:
        raise Blocked(label, BLOCKED[model_type])
    raise Blocked(
        label,
        f"no modality-span function for model type {model_type!r} (add one to c3po_plugin.mechanistic.spans.FAMILIES)",
    )


def decoder_parts(language_model: Any) -> tuple[list, Any, Any]:
    """(decoder layers, final norm, unembedding) of a HF causal language model."""
    decoder = language_model.get_decoder()
    return list(decoder.layers), decoder.norm, language_model.get_output_embeddings()


def attention_implementation(language_model: Any) -> str:
    layer = decoder_parts(language_model)[0][0]
    return str(getattr(layer.self_attn.config, "_attn_implementation", None))


class InputCapture:
    """Reads the ``input_ids`` of the language model's first forward call (the prefill) and turns
    them into modality codes before any layer runs, so layer hooks can use them at once."""

    def __init__(self, language_model: Any, family: Family, config: Any, image_roles: list[str]) -> None:
        self.family, self.config, self.image_roles = family, config, image_roles
        self.codes: np.ndarray | None = None
        self.input_ids = None
        self._handle = language_model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module: Any, args: tuple, kwargs: dict) -> None:
        if self.codes is not None:
            return
        input_ids = kwargs.get("input_ids", args[0] if args else None)
        if input_ids is None:
            raise RuntimeError("the language model was called without input_ids; spans cannot be located")
        self.input_ids = input_ids[0].detach().cpu()
        self.codes = self.family.spans(self.input_ids, self.config, self.image_roles)

    def remove(self) -> None:
        self._handle.remove()
