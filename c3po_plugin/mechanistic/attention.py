"""E1: the attention budget per modality, layer by layer, while the model generates (C3PO App. F.1, §4.1).

For each generated token and each decoder layer: the attention row of the position that predicts
the token, averaged over heads, restricted to the input positions and normalised to a
distribution; its mass summed over the text, audio and image spans gives ``alpha`` (video
positions are masked: left out before the normalisation, so the three shares sum to 1). The
sample's per-layer triple is the mean of the per-step triples. From it:

* ``entropy[l] = -sum_m alpha[l, m] log2 alpha[l, m]`` in bits (between modalities, at most
  log2 3);
* ``mid_entropy``: the mean of ``entropy`` over the middle layers, relative depth
  ``l / (L - 1)`` in ``mid_layers`` (default [1/3, 2/3]: the paper names a middle range but does
  not print it; when no layer falls inside, the layer nearest the range's centre);
* ``argmin_depth``: the relative depth of the entropy minimum (Table 8).

Memory: weights are reduced inside a forward hook on each layer's attention module, so at most
one layer's ``heads x query x key`` tensor exists at a time (the eager kernel materialises it
anyway) and what is kept is ``layers x 3`` numbers. Eager attention is required: SDPA and
FlashAttention never form the weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from c3po_plugin.mechanistic.spans import (
    AUDIO,
    IMAGE,
    MODALITY_NAMES,
    TEXT,
    InputCapture,
    attention_implementation,
    decoder_parts,
)

MID_LAYERS_DEFAULT = (1 / 3, 2 / 3)
_CODES = (TEXT, AUDIO, IMAGE)


class NotEager(RuntimeError):
    """The model's attention kernel does not form attention weights."""


def require_eager(language_model: Any, model: str) -> None:
    """Refuse SDPA and FlashAttention (they never materialise the weights E1 reads)."""
    implementation = attention_implementation(language_model)
    if implementation != "eager":
        raise NotEager(
            f"E1 needs eager attention; {model} runs {implementation!r} (SDPA and FlashAttention do not "
            "expose attention weights). Add attn_implementation=eager to --model_args."
        )


def entropy_bits(alpha: np.ndarray) -> np.ndarray:
    """Shannon entropy in bits of each row of ``alpha`` (rows are distributions; 0 log 0 = 0)."""
    p = np.clip(np.asarray(alpha, dtype=np.float64), 0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log2(p), 0.0)
    return terms.sum(axis=-1)


def mid_layer_indices(n_layers: int, mid_layers: tuple[float, float] = MID_LAYERS_DEFAULT) -> list[int]:
    """The layers whose relative depth ``l / (L - 1)`` lies in ``mid_layers`` (both ends in)."""
    low, high = mid_layers
    depth = np.arange(n_layers) / max(n_layers - 1, 1)
    inside = [int(i) for i in np.flatnonzero((depth >= low - 1e-9) & (depth <= high + 1e-9))]
    return inside or [int(np.argmin(np.abs(depth - (low + high) / 2)))]


def summarise(alpha: np.ndarray, mid_layers: tuple[float, float] = MID_LAYERS_DEFAULT) -> dict:
    """Entropy curve, mid-layer entropy and argmin depth of a (layers, 3) alpha matrix."""
    entropy = entropy_bits(alpha)
    middle = mid_layer_indices(len(entropy), mid_layers)
    return {
        "entropy": entropy.tolist(),
        "mid_layers": middle,
        "mid_entropy": float(entropy[middle].mean()),
        "argmin_depth": float(np.argmin(entropy) / max(len(entropy) - 1, 1)),
    }


class AttentionBudget:
    """Forward hooks that turn each layer's attention weights into running per-modality sums.

    ``mask_modalities`` (an ablation, and how the tests check the sums): key positions of those
    modalities get the mask's minimum in every layer, so no query can attend to them."""

    def __init__(self, language_model: Any, capture: InputCapture, mask_modalities: Sequence[str] = ()) -> None:
        import torch

        self.layers = decoder_parts(language_model)[0]
        self.capture = capture
        self.masked = {MODALITY_NAMES.index(m) for m in mask_modalities}
        self.sums = np.zeros((len(self.layers), 3))
        self.steps = np.zeros(len(self.layers), dtype=int)
        self.peak_attention_bytes = 0
        self._membership = None  # (positions, 3) one-hot of text/audio/image, built at the first hook
        self._torch = torch
        self._handles = []
        for index, layer in enumerate(self.layers):
            self._handles.append(layer.self_attn.register_forward_hook(self._reduce(index)))
            if self.masked:
                self._handles.append(layer.self_attn.register_forward_pre_hook(self._mask, with_kwargs=True))

    def _reduce(self, index: int):
        torch = self._torch

        def hook(module, args, output):
            weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
            if weights is None:
                raise NotEager(
                    "the attention module returned no weights; load the model with attn_implementation=eager"
                )
            self.peak_attention_bytes = max(self.peak_attention_bytes, weights.numel() * weights.element_size())
            if self._membership is None:  # video positions belong to no column: masked
                codes = torch.as_tensor(self.capture.codes, device=weights.device)
                self._membership = torch.stack([codes == code for code in _CODES], dim=1).float()
            row = weights[0, :, -1, : self._membership.shape[0]].float().mean(dim=0)  # the query predicting the token
            masses = row @ self._membership
            self.sums[index] += (masses / masses.sum().clamp_min(1e-30)).cpu().numpy()
            self.steps[index] += 1

        return hook

    def _mask(self, module, args, kwargs):
        mask = kwargs.get("attention_mask")
        if mask is None:
            raise RuntimeError("no attention mask reached the attention module; cannot mask a modality")
        codes = np.asarray(self.capture.codes)
        columns = np.flatnonzero(np.isin(codes, list(self.masked)))
        mask = mask.clone()
        if mask.dtype == self._torch.bool:
            mask[..., columns] = False
        else:
            mask[..., columns] = self._torch.finfo(mask.dtype).min
        return args, {**kwargs, "attention_mask": mask}

    def alpha(self) -> np.ndarray:
        """(layers, 3): the mean over generated tokens of (alpha_text, alpha_audio, alpha_image)."""
        return self.sums / np.maximum(self.steps, 1)[:, None]

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()


def probe_attention(
    adapter: Any,
    family: Any,
    messages: list[dict],
    image_roles: list[str],
    *,
    max_new_tokens: int = 128,
    mask_modalities: Sequence[str] = (),
    mid_layers: tuple[float, float] = MID_LAYERS_DEFAULT,
) -> dict:
    """E1 on one sample: generate greedily through the adapter with the hooks in place."""
    language_model = family.language_model(adapter)
    require_eager(language_model, getattr(adapter, "model_id", type(adapter).__name__))
    capture = InputCapture(language_model, family, adapter.model.config, image_roles)
    budget = AttentionBudget(language_model, capture, mask_modalities)
    try:
        reply = adapter._answer(messages, {"max_new_tokens": max_new_tokens, "temperature": 0})
    finally:
        budget.remove()
        capture.remove()
    alpha = budget.alpha()
    codes = np.asarray(capture.codes)
    return {
        "alpha": alpha.tolist(),
        "alpha_mean": alpha.mean(axis=0).tolist(),
        **summarise(alpha, mid_layers),
        "steps": int(budget.steps.max(initial=0)),
        "reply": reply,
        "positions": {name: int((codes == code).sum()) for code, name in enumerate(MODALITY_NAMES)},
        "sequence_length": int(codes.size),
        "peak_attention_bytes": int(budget.peak_attention_bytes),
        "masked": list(mask_modalities),
    }
