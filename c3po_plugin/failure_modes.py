"""Why a wrong answer is wrong, read off the item's distractor answers (paper §3.3.1, §4.3, F.5
Table 12).

Each distractor is what one misleading source alone would make you answer (``audio``,
``image``, ``video``, ``text`` for the text/prior reading) or an answer that fuses the evidence
only in part (``partial``). The paper splits failures into *dominance* (the model trusted one
modality and ignored the others; Table 12's dom-aud, dom-img, dom-txt) and *incomplete fusion*
(it combined the evidence only in part; inc-fus).

The rules, applied to an answer already graded wrong (:func:`failure_mode`):

1. **Which claims it repeats.** A claim is repeated when the answer equals it after
   normalisation, or contains its words in order, or their token F1 is at least
   :data:`CLOSE_F1` (:func:`close`). If the answer *equals* some claims, only those count
   (an exact repetition is better evidence than an overlap).
2. **None** (or no distractors at all): ``other``.
3. **Several different claims** (the answer mixes what disagreeing sources say, e.g. "five,
   blue triangle" when audio says five and the image a blue triangle): ``incomplete_fusion``.
4. **One claim, said by the ``partial`` distractor only**: ``incomplete_fusion``.
5. **One claim, said by one or more misleading modalities** (the partial distractor may say it
   too): *dominance by those modalities*. One family gives ``audio_dominance``,
   ``visual_dominance`` (image and video are one family, the paper's dom-img) or
   ``text_dominance``; two agreeing families (audio and image both say "yes") give
   ``joint_dominance``. Agreeing misleading modalities are dominance, not fusion: the model
   followed them instead of the evidence that settles the question.

:data:`DOMINANCE` lists the modes that count as dominance in the dominance/incomplete-fusion
split of §4.3 (86-95 % dominance across the paper's cohort).
"""

from __future__ import annotations

from collections.abc import Mapping

from faultline_eval.judges.matching import exact_match, normalize, token_f1

MODES = ("audio_dominance", "visual_dominance", "text_dominance", "joint_dominance", "incomplete_fusion", "other")
DOMINANCE = ("audio_dominance", "visual_dominance", "text_dominance", "joint_dominance")
LABELS = {
    "audio_dominance": "dominated by audio",
    "visual_dominance": "dominated by image/video",
    "text_dominance": "dominated by text/prior",
    "joint_dominance": "dominated by agreeing modalities",
    "incomplete_fusion": "incomplete fusion",
    "other": "other",
}
_FAMILY = {
    "audio": "audio_dominance",
    "image": "visual_dominance",
    "video": "visual_dominance",
    "text": "text_dominance",
}
#: Token-overlap F1 at or above which an answer counts as repeating a distractor.
CLOSE_F1 = 0.6


def close(prediction: str, claim: str) -> bool:
    """The prediction repeats ``claim``: equal after normalisation, the claim's words appear
    in order inside it, or their token F1 is at least :data:`CLOSE_F1`."""
    if exact_match(prediction, claim):
        return True
    p, c = f" {normalize(prediction)} ", f" {normalize(claim)} "
    return (c.strip() != "" and c in p) or token_f1(prediction, claim) >= CLOSE_F1


def repeated_claims(prediction: str, distractors: Mapping[str, str]) -> dict[str, str]:
    """Rule 1: ``{source: claim}`` of the distractors the prediction repeats (only the ones it
    equals, when there are such)."""
    equal = {k: c for k, c in distractors.items() if exact_match(prediction, c)}
    return equal or {k: c for k, c in distractors.items() if close(prediction, c)}


def failure_mode(prediction: str, distractors: Mapping[str, str]) -> str:
    """The mode (one of :data:`MODES`) of a prediction already graded wrong (module docstring)."""
    repeated = repeated_claims(prediction, distractors)
    if not repeated:
        return "other"
    if len({normalize(c) for c in repeated.values()}) > 1:
        return "incomplete_fusion"
    families = {_FAMILY[k] for k in repeated if k in _FAMILY}
    if not families:
        return "incomplete_fusion"
    return families.pop() if len(families) == 1 else "joint_dominance"
