"""`sceval report`'s section beside the paper's published models: ranks and their intervals worked by
hand from Table 2, the subset warning, and the normalised scores pinned to their reference."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from sceval_plugin.metrics.protocol import catalogue_info
from sceval_plugin.report.published_section import published_section

INFO = catalogue_info()


def _numbers(items: int) -> SimpleNamespace:
    summary = pd.DataFrame(
        {
            "model": ["m", "m", "m"],
            "condition_id": ["clean", "single_noise_v70", "single_noise_v30"],
            "accuracy": [0.80, 0.70, 0.75],
            "ci_low": [0.70, 0.60, 0.65],
            "ci_high": [0.90, 0.80, 0.85],
            "n_samples": [items, items, items],
        }
    )
    panel = pd.DataFrame({"model": ["m"], "panel_fault": [np.nan]})
    return SimpleNamespace(summary=summary, panel=panel)


def test_ranks_among_table_2_with_intervals_and_the_subset_warning():
    section = published_section(_numbers(30), pd.DataFrame({"prompt_id": ["sceval-json-v1"]}), INFO)
    table = {t.name: t for t in section.tables}["published_comparison"]
    raw = table.raw.set_index("quantity")
    # clean 80 %: four published rows above (84.15, 83.50, 82.40, 80.95) -> 5th of 16; at 90 % first; at 70 %
    # ten rows above (the seven proprietary, Qwen3.5-Omni-Plus 73.63, MiniCPM-o 4.5 74.50, Qwen3-Omni-30B 71.20) -> 11th.
    assert raw.loc["clean accuracy", ["rank", "rank_low", "rank_high", "of"]].tolist() == [5, 1, 11, 16]
    # noise@70 at 70 %: above it only 73.57, 73.00, 73.93, 70.26, 70.37 -> 6th.
    assert raw.loc["noise@70 accuracy", "rank"] == 6
    assert "published, not re-run" in table.caption and "30 vs the paper's 273" in table.caption
    assert any("indicative" in note for note in section.notes)
    assert section.numbers["published_comparison"]["version"] == "sceval_v1"
    assert section.numbers["normalised_robustness"]["reference"] == "Gemini 3 Flash (sceval_v1 Table 6)"


def test_the_full_item_set_has_no_subset_warning():
    section = published_section(_numbers(273), pd.DataFrame({"prompt_id": ["sceval-json-v1"]}), INFO)
    assert not any("indicative" in note for note in section.notes)


def test_the_reference_can_be_a_run_or_a_published_row_and_an_unknown_name_is_refused():
    trials = pd.DataFrame({"prompt_id": ["sceval-json-v1"]})
    section = published_section(_numbers(30), trials, INFO, reference="m")
    means = {t.name: t for t in section.tables}["normalised_robustness"].raw.set_index("modality")
    assert (
        means.loc["overall", "mce"] == 100.0
        and section.numbers["normalised_robustness"]["reference"] == "m (a run of this report)"
    )
    gpt = published_section(_numbers(30), trials, INFO, reference="GPT-4o")
    assert gpt.numbers["normalised_robustness"]["reference"] == "GPT-4o (sceval_v1 Table 2)"
    # noise@70 only (Table 2 is severity 70): error 30 against GPT-4o's 100 - 73.93 = 26.07.
    per_op = {t.name: t for t in gpt.tables}["normalised_robustness_operators"].raw.set_index("operator")
    assert per_op.loc["noise", "ce"] == pytest.approx(100 * 30 / 26.07) and per_op.loc["noise", "not_in_reference"] == [
        30
    ]
    with pytest.raises(ValueError, match="'GPT-5' is neither a model of these runs"):
        published_section(_numbers(30), trials, INFO, reference="GPT-5")
