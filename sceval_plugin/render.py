"""What a model is shown for one (item, condition, variant): a :class:`Trial`.

Pure: the same item, condition and variant give the same trial in any process. Corruptions use
the item's sample id as the key, so a variant is a function of (sample id, operator, severity,
variant); in a joint condition, deterministic operators ignore the variant index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sceval_plugin import operators
from sceval_plugin import probe_conditions as probes
from sceval_plugin.conditions import Condition
from sceval_plugin.data.records import OmniItem
from sceval_plugin.eval_prompts import GENERIC_INSTRUCTION

BLANK_LEVEL = 128  # neutral mid-grey for the missing-vision control
#: The shortcut controls that show no media at all (G.5).
NO_MEDIA_CONTROLS = ("shortcut_question_options", "shortcut_text_only", "shortcut_options_only")


@dataclass(frozen=True)
class Trial:
    sample_id: str
    question: str  # "" when the control removes it
    context: str
    options: tuple[tuple[str, str], ...]  # as shown (reordered and relabelled for option orders)
    gold_key: str  # remapped to the shown order
    frames: np.ndarray | None  # (N, H, W, 3) uint8; None when not shown or not rendered
    audio: np.ndarray | None  # mono float32 at 16 kHz; None when not shown or not rendered
    visual_kind: str | None  # "image" | "video frames" | None (not shown)
    audio_shown: bool
    option_map: tuple[str, ...]  # original key of each shown option, in shown order
    not_applicable: str | None = None  # why the condition's control or probe does not apply to this item
    frame_times: tuple[float, ...] | None = None  # seconds into the clip of the frames shown (video frames)
    donor_id: str | None = None  # the second item a probe drew its evidence from (mismatch, distractor)


def reorder_options(options, gold_key: str, shift: int):
    """Cyclic Latin-square order ``shift``: shown position j holds original option (j + shift) mod n."""
    n = len(options)
    keys = [k for k, _ in options]
    source = [options[(j + shift) % n] for j in range(n)]
    shown = tuple((keys[j], text) for j, (_, text) in enumerate(source))
    original = tuple(k for k, _ in source)
    return shown, keys[original.index(gold_key)], original


def corrupt(condition: Condition, modality: str, data: Any, variant: int, key: str) -> Any:
    """``data`` of ``modality`` (the question stem, ``(N,H,W,3)`` uint8 frames, mono float32 audio
    at 16 kHz) under ``condition``'s corruptions of that modality, in catalogue order; unchanged
    when it has none. Variant ``v`` of the condition is variant ``min(v, variants - 1)`` of each
    operator (an operator with fewer variants repeats its last), keyed by ``key`` (the sample id):
    the one rule by which SCEval items and wrapped lmms-eval tasks draw their corruptions."""
    for c in condition.corruptions:
        if c.modality == modality:
            spec = operators.get(c.operator)
            data = operators.apply(
                c.operator, data, severity=c.severity, variant=min(variant, spec.variants - 1), key=key
            )
    return data


def media_identity(condition: Condition, modality: str, variant: int) -> tuple | None:
    """What :func:`render` makes of an item's ``modality`` ("vision" or "audio") depends on
    beyond the item: the operators :func:`corrupt` applies to it, each with its severity and the
    variant it draws, and a control that blanks or drops it. Two (condition, variant) pairs with
    equal identities send an item the same frames (or clip), so a viewer renders them once. None
    for a probe, whose media also depend on a donor and the probe's own rules."""
    if condition.probe is not None:
        return None
    if condition.control in NO_MEDIA_CONTROLS:
        return (modality, "not shown")
    ops = tuple(
        (c.operator, c.severity, min(variant, operators.get(c.operator).variants - 1))
        for c in condition.corruptions
        if c.modality == modality
    )
    return (modality, ops, condition.control if condition.control == f"missing_{modality}" else None)


def corrupts(condition: Condition, modality: str) -> bool:
    """Whether ``condition`` corrupts ``modality`` (an operator of it, at any severity)."""
    return any(c.modality == modality for c in condition.corruptions)


def control_not_applicable(item: OmniItem, condition: Condition) -> str | None:
    """Why ``condition``'s control cannot do its job on ``item`` (None when it can): the no-text
    control (G.4) on an item whose only text is the question and options has nothing to remove,
    so its prompt would equal clean's and it would duplicate the clean condition."""
    if condition.control == "missing_text" and not item.context.strip():
        return "no_text_evidence"
    return None


def render(item: OmniItem, condition: Condition, variant: int = 0, *, with_media: bool = True, donors=None) -> Trial:
    """Apply ``condition`` (corruptions, control, probe, option order) to ``item`` for ``variant``.

    ``with_media=False`` renders the text alone (no decoding, no pixel or sample work), except
    for probes, whose applicability and text can depend on the media. ``donors`` is the donor
    picker of a probe that needs a second item (:class:`sceval_plugin.probe_conditions.DonorPicker`).
    """
    with_media = with_media or condition.probe is not None
    if not 0 <= variant < condition.variants:
        raise ValueError(f"condition {condition.id!r} has {condition.variants} variant(s), got {variant}")
    control = condition.control
    no_media = control in NO_MEDIA_CONTROLS
    question, context = item.question, item.context
    frames = item.frames() if with_media and not no_media else None
    audio = item.waveform() if with_media and not no_media else None

    question = corrupt(condition, "text", question, variant, item.sample_id)
    if frames is not None:
        frames = corrupt(condition, "vision", frames, variant, item.sample_id)
    if audio is not None:
        audio = corrupt(condition, "audio", audio, variant, item.sample_id)

    # G.4's no-text control removes the textual evidence beyond the question and options (which
    # stay: they ask the task); G.5's visual+audio shortcut also replaces the question.
    if control == "missing_text":
        context = ""
    elif control == "shortcut_visual_audio":
        question, context = GENERIC_INSTRUCTION, ""
    elif control == "missing_vision" and frames is not None:
        frames = np.full_like(frames, BLANK_LEVEL)
    elif control == "missing_audio" and audio is not None:
        audio = np.zeros_like(audio)
    if control in ("shortcut_question_options", "shortcut_options_only"):
        context = ""
    if control == "shortcut_options_only":
        question = ""

    kind = None if no_media else ("image" if item.visual_kind == "image" else "video frames")
    times = None if no_media else item.frame_times()
    not_applicable, donor_id = control_not_applicable(item, condition), None
    if condition.probe is not None:
        shown, donor_id, not_applicable = probes.apply(
            condition.probe,
            probes.Evidence(item, question, context, frames, audio, times, kind),
            variant=variant,
            donors=donors,
        )
        question, context, frames, audio, times, kind = (
            shown.question,
            shown.context,
            shown.frames,
            shown.audio,
            shown.frame_times,
            shown.visual_kind,
        )
    options, gold, original = reorder_options(item.options, item.gold_key, condition.option_order)
    return Trial(
        item.sample_id,
        question,
        context,
        options,
        gold,
        frames,
        audio,
        kind,
        not no_media,
        original,
        not_applicable,
        times,
        donor_id,
    )
