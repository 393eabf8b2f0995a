"""Failure modes of wrong answers, read off the distractors: one fixture per rule of
c3po_plugin.failure_modes."""

from __future__ import annotations

import pytest

from c3po_plugin.failure_modes import DOMINANCE, MODES, close, failure_mode

DISTRACTORS = {"audio": "five", "image": "blue triangle", "text": "it fell", "partial": "red triangle"}


@pytest.mark.parametrize(
    "prediction, mode",
    [
        ("5", "audio_dominance"),  # rule 5, one family; number word vs digit
        ("Five.", "audio_dominance"),
        ("a blue triangle", "visual_dominance"),
        ("the blue triangle on the left", "visual_dominance"),  # rule 1: the claim inside a longer answer
        ("It fell", "text_dominance"),
        ("red triangle", "incomplete_fusion"),  # rule 4: only the partial fusion says it
        ("five, blue triangle", "incomplete_fusion"),  # rule 3: repeats two disagreeing claims at once
        ("green circle", "other"),  # rule 2
        ("", "other"),
    ],
)
def test_failure_mode(prediction, mode):
    assert failure_mode(prediction, DISTRACTORS) == mode
    assert mode in MODES


def test_two_agreeing_misleading_modalities_are_dominance_not_fusion():
    """Issue 11: an answer matching the distractor that two modalities agree on is dominance by
    those modalities (rule 5), whether or not the partial distractor says the same."""
    agreeing = {"audio": "yes", "image": "yes"}  # the demo's compliance item
    assert failure_mode("Yes", agreeing) == "joint_dominance"
    assert failure_mode("yes", {"audio": "yes", "text": "Yes.", "partial": "yes"}) == "joint_dominance"
    assert failure_mode("to the left", {"image": "left side", "video": "to the left"}) == "visual_dominance"
    assert failure_mode("red", {"image": "red", "partial": "red"}) == "visual_dominance"
    assert "joint_dominance" in DOMINANCE and "incomplete_fusion" not in DOMINANCE


def test_an_exact_repetition_outranks_an_overlap():
    """Rule 1: "blue" equals the image's claim and only overlaps the partial "blue square"."""
    assert failure_mode("blue", {"image": "blue", "partial": "blue square"}) == "visual_dominance"
    assert failure_mode("blue square", {"image": "blue", "partial": "blue square"}) == "incomplete_fusion"


def test_video_claims_count_as_visual_and_no_distractors_is_other():
    assert failure_mode("right", {"video": "to the left"}) == "other"
    assert failure_mode("to the left", {"video": "to the left"}) == "visual_dominance"
    assert failure_mode("anything", {}) == "other"


def test_close_is_word_based_not_substring():
    assert not close("reddish", "red") and close("dark red", "red")
