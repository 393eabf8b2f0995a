"""Normalised robustness (ImageNet-C's CE and relative CE) against numbers worked by hand."""

import math

import pytest

from sceval_plugin.data.sceval_published import published_rows
from sceval_plugin.metrics.normalised import (
    RobustnessReference,
    corruption_errors,
    mean_corruption_errors,
    reference_from_published,
)

OPERATORS = {"noise": "vision", "mute": "audio", "drop_words": "text"}
REFERENCE = RobustnessReference(
    "ref", "hand", 90.0, {("noise", 30): 85.0, ("noise", 70): 75.0, ("mute", 70): 90.0, ("drop_words", 70): 80.0}
)


def test_ce_and_relative_ce_match_hand_computation():
    cells = {
        ("noise", 30): 70.0,
        ("noise", 70): 60.0,
        ("mute", 70): 80.0,
        ("drop_words", 50): 70.0,
        ("drop_words", 70): 60.0,
    }
    per_op = corruption_errors(80.0, cells, REFERENCE, OPERATORS).set_index("operator")
    # noise: errors 30 + 40 = 70 against 15 + 25 = 40 -> 175 %; relative (10 + 20) / (5 + 15) -> 150 %.
    assert per_op.loc["noise", "ce"] == pytest.approx(175.0)
    assert per_op.loc["noise", "relative_ce"] == pytest.approx(150.0)
    assert per_op.loc["noise", "severities"] == [30, 70]
    # mute: error 20 against 10 -> 200 %; the reference loses nothing, so the relative CE is undefined and said so.
    assert per_op.loc["mute", "ce"] == pytest.approx(200.0)
    assert math.isnan(per_op.loc["mute", "relative_ce"]) and "loses no accuracy" in per_op.loc["mute", "note"]
    # drop_words: severity 50 is not in the reference, so only 70 is summed: 40 / 20 -> 200 %; (40-20)/(20-10) -> 200 %.
    assert per_op.loc["drop_words", "severities"] == [70] and per_op.loc["drop_words", "not_in_reference"] == [50]
    assert per_op.loc["drop_words", "ce"] == pytest.approx(200.0)
    assert per_op.loc["drop_words", "relative_ce"] == pytest.approx(200.0)
    means = mean_corruption_errors(per_op.reset_index()).set_index("modality")
    assert means.loc["overall", "mce"] == pytest.approx((175 + 200 + 200) / 3)
    assert means.loc["overall", "relative_mce"] == pytest.approx((150 + 200) / 2)
    assert means.loc["vision", "mce"] == pytest.approx(175.0) and means.loc["overall", "operators"] == 3


def test_a_published_reference_against_itself_scores_100_and_is_pinned_by_version():
    rows = published_rows()
    ref = reference_from_published(rows, "Gemini 3 Flash", "6")
    assert ref.label == "Gemini 3 Flash (sceval_v1 Table 6)" and ref.clean == 80.95 and len(ref.cells) == 56
    per_op = corruption_errors(ref.clean, ref.cells, ref, rows.operators)
    assert per_op["ce"].to_numpy() == pytest.approx(100.0)
    table2 = reference_from_published(rows, "GPT-4o", "2")
    assert {s for _, s in table2.cells} == {70} and len(table2.cells) == 14
    with pytest.raises(KeyError, match="no row 'GPT-5'"):
        reference_from_published(rows, "GPT-5", "2")
