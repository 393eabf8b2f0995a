"""Failure modes of wrong answers, read off the distractors."""

from __future__ import annotations

import pytest

from c3po_plugin.failure_modes import MODES, close, failure_mode

DISTRACTORS = {"audio": "five", "image": "blue triangle", "text": "it fell", "partial": "red triangle"}


@pytest.mark.parametrize("prediction, mode", [
    ("5", "audio_dominance"),                      # number word vs digit
    ("Five.", "audio_dominance"),
    ("a blue triangle", "visual_dominance"),
    ("the blue triangle on the left", "visual_dominance"),  # the claim inside a longer answer
    ("It fell", "text_dominance"),
    ("red triangle", "incomplete_fusion"),
    ("five, blue triangle", "incomplete_fusion"),  # repeats two modalities' claims at once
    ("green circle", "other"),
    ("", "other"),
])
def test_failure_mode(prediction, mode):
    assert failure_mode(prediction, DISTRACTORS) == mode
    assert mode in MODES


def test_video_claims_count_as_visual_and_no_distractors_is_other():
    assert failure_mode("right", {"video": "to the left"}) == "other"
    assert failure_mode("to the left", {"video": "to the left"}) == "visual_dominance"
    assert failure_mode("anything", {}) == "other"


def test_close_is_word_based_not_substring():
    assert not close("reddish", "red") and close("dark red", "red")
