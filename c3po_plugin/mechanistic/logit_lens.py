"""E2: logit-lens latent recovery at the media positions (C3PO App. F.1, Table 7).

One forward pass (the prefill of a one-token greedy generation through the adapter). After each
decoder layer, the hidden state at every audio and image position goes through the model's
final norm and unembedding; a position is a *hit* at that layer when its top-K (K = 10) token
ids meet the sample's reference vocabulary: the content-word lemmas (:mod:`.lemmas`) of the
audio transcript and the image description, each encoded with the model's tokenizer with and
without a leading space (every piece id of each encoding is in the vocabulary).

``latent_m``: the hit rate over modality m's positions and the last five layers;
``latent_recovery``: the mean over all (modality, position, layer) triples of those layers.
Video positions are masked, as in E1 (App. F.1); ``include_video=True`` adds them.

Memory: hooks reduce each layer's hidden states at once, in chunks of positions, so the kept
state is ``layers x modalities`` counts and the largest transient is ``chunk x vocabulary``
logits.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from c3po_plugin.mechanistic.lemmas import content_lemmas
from c3po_plugin.mechanistic.spans import AUDIO, IMAGE, MODALITY_NAMES, VIDEO, InputCapture, decoder_parts

TOP_K = 10
LAST_LAYERS = 5
CHUNK = 256


@functools.lru_cache(maxsize=4096)
def reference_ids(tokenizer: Any, text: str, lemmatizer: str = "simplemma") -> frozenset[int]:
    """The reference vocabulary of one sample for one tokenizer (cached per text and tokenizer,
    i.e. per sample and model)."""
    ids: set[int] = set()
    for lemma in set(content_lemmas(text, lemmatizer)):
        for form in (lemma, " " + lemma):
            ids.update(tokenizer.encode(form, add_special_tokens=False))
    return frozenset(ids)


def lens_hits(hidden: Any, norm: Any, unembedding: Any, reference: Any, k: int = TOP_K) -> Any:
    """Bool per row of ``hidden`` (positions, d): whether the top-k ids of
    ``unembedding(norm(hidden))`` meet the ``reference`` id tensor."""
    import torch

    hits = []
    for start in range(0, hidden.shape[0], CHUNK):
        logits = unembedding(norm(hidden[start : start + CHUNK]))
        top = logits.topk(min(k, logits.shape[-1]), dim=-1).indices
        hits.append(torch.isin(top, reference).any(dim=-1))
    return torch.cat(hits) if hits else torch.zeros(0, dtype=torch.bool)


class LensRecorder:
    """Per-layer hit counts per modality, from hooks on the decoder layers at the prefill."""

    def __init__(
        self,
        language_model: Any,
        capture: InputCapture,
        reference: frozenset[int],
        include_video: bool = False,
        k: int = TOP_K,
    ) -> None:
        import torch

        layers, self.norm, self.unembedding = decoder_parts(language_model)
        self.capture, self.k = capture, k
        self.modalities = (AUDIO, IMAGE) + ((VIDEO,) if include_video else ())
        self.reference = torch.tensor(sorted(reference), dtype=torch.long)
        self.hits = np.zeros((len(layers), len(self.modalities)), dtype=int)
        self.positions = np.zeros(len(self.modalities), dtype=int)
        self._done = [False] * len(layers)
        self._handles = [layer.register_forward_hook(self._hook(i)) for i, layer in enumerate(layers)]

    def _hook(self, index: int):
        import torch

        def hook(module, args, output):
            if self._done[index]:  # decode steps: only the prefill is read
                return
            self._done[index] = True
            hidden = (output[0] if isinstance(output, tuple) else output)[0]
            codes = torch.as_tensor(self.capture.codes, device=hidden.device)
            with torch.no_grad():
                for j, code in enumerate(self.modalities):
                    rows = hidden[codes == code]
                    self.positions[j] = rows.shape[0]
                    if rows.shape[0]:
                        self.hits[index, j] = int(
                            lens_hits(rows, self.norm, self.unembedding, self.reference.to(hidden.device), self.k).sum()
                        )

        return hook

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()


def latent_scores(hits: np.ndarray, positions: np.ndarray, names: list[str], last: int = LAST_LAYERS) -> dict:
    """latent_m per modality and latent_recovery over the last ``last`` layers (None where a
    modality has no positions)."""
    tail = hits[-last:]
    out = {
        f"latent_{name}": (float(tail[:, j].sum() / (positions[j] * len(tail))) if positions[j] else None)
        for j, name in enumerate(names)
    }
    total = positions.sum() * len(tail)
    out["latent_recovery"] = float(tail.sum() / total) if total else None
    return out


def probe_logit_lens(
    adapter: Any,
    family: Any,
    messages: list[dict],
    image_roles: list[str],
    reference_text: str,
    *,
    lemmatizer: str = "simplemma",
    include_video: bool = False,
    k: int = TOP_K,
) -> dict:
    """E2 on one sample."""
    language_model = family.language_model(adapter)
    reference = reference_ids(adapter.processor.tokenizer, reference_text, lemmatizer)
    capture = InputCapture(language_model, family, adapter.model.config, image_roles)
    recorder = LensRecorder(language_model, capture, reference, include_video, k)
    try:
        adapter._answer(messages, {"max_new_tokens": 1, "temperature": 0})
    finally:
        recorder.remove()
        capture.remove()
    names = [MODALITY_NAMES[c] for c in recorder.modalities]
    rates = recorder.hits / np.maximum(recorder.positions, 1)[None, :]
    return {
        "hit_rate": {name: rates[:, j].tolist() for j, name in enumerate(names)},
        "positions": dict(zip(names, recorder.positions.tolist())),
        "reference_size": len(reference),
        "top_k": k,
        "lemmatizer": lemmatizer,
        "sequence_length": int(np.asarray(capture.codes).size),
        **latent_scores(recorder.hits, recorder.positions, names),
    }
