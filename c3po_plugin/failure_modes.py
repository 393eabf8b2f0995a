"""Why a wrong answer is wrong, read off the item's distractor answers (paper §4.3, F.5).

Each distractor is what one modality alone would make you answer (``audio``, ``image``,
``video``, ``text`` for the text/prior reading) or an answer that fuses the evidence only in
part (``partial``). A wrong answer close to exactly one modality's distractor is *dominated* by
that modality (image and video together count as visual dominance, the paper's dom-img); close
to ``partial``, or to the claims of several modalities at once, it is *incomplete fusion*;
anything else is *other* (including items without distractors).
"""

from __future__ import annotations

from typing import Mapping

from c3po_plugin.grading import exact_match, normalize, token_f1

MODES = ("audio_dominance", "visual_dominance", "text_dominance", "incomplete_fusion", "other")
LABELS = {
    "audio_dominance": "dominated by audio",
    "visual_dominance": "dominated by image/video",
    "text_dominance": "dominated by text/prior",
    "incomplete_fusion": "incomplete fusion",
    "other": "other",
}
_FAMILY = {"audio": "audio_dominance", "image": "visual_dominance", "video": "visual_dominance",
           "text": "text_dominance"}
#: Token-overlap F1 at or above which an answer counts as repeating a distractor.
CLOSE_F1 = 0.6


def close(prediction: str, claim: str) -> bool:
    """The prediction repeats ``claim``: equal after normalisation, the claim's words appear
    in order inside it, or their token F1 is at least :data:`CLOSE_F1`."""
    if exact_match(prediction, claim):
        return True
    p, c = f" {normalize(prediction)} ", f" {normalize(claim)} "
    return (c.strip() != "" and c in p) or token_f1(prediction, claim) >= CLOSE_F1


def failure_mode(prediction: str, distractors: Mapping[str, str]) -> str:
    """The mode (one of :data:`MODES`) of a prediction already graded wrong."""
    if "partial" in distractors and close(prediction, distractors["partial"]):
        return "incomplete_fusion"
    families = {_FAMILY[k] for k, claim in distractors.items() if k in _FAMILY and close(prediction, claim)}
    if len(families) == 1:
        return families.pop()
    return "incomplete_fusion" if families else "other"
