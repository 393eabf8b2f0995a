"""The condition catalogue (paper Appendices F.3, G.1-G.6) and the task files generated from it."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from faultline_eval.tasks import TASKS_DIR
from faultline_eval.tasks.sceval_configs import is_builtin, out_of_date, render_task_files
from sceval_plugin.conditions import catalogue

PAPER_29 = """bi_tv_drop_words_noise_t30_v30 bi_tv_drop_words_noise_t30_v70 bi_tv_drop_words_noise_t70_v30
bi_tv_drop_words_noise_t70_v70 bi_tv_drop_words_occlusion_t70_v30 bi_tv_word_shuffle_noise_t70_v70
bi_ta_drop_words_mute_t30_a30 bi_ta_drop_words_mute_t30_a50 bi_ta_drop_words_mute_t70_a30
bi_ta_drop_words_mute_t70_a50 bi_ta_drop_words_remove_t70_a50 bi_ta_word_shuffle_mute_t70_a50
bi_va_noise_mute_v30_a30 bi_va_noise_mute_v30_a50 bi_va_noise_mute_v70_a30 bi_va_noise_mute_v70_a50
bi_va_noise_remove_v70_a50 bi_va_occlusion_mute_v30_a50
tri_drop_words_noise_mute_t30_v30_a30 tri_drop_words_noise_mute_t30_v30_a50 tri_drop_words_noise_mute_t30_v70_a30
tri_drop_words_noise_mute_t30_v70_a50 tri_drop_words_noise_mute_t70_v30_a30 tri_drop_words_noise_mute_t70_v30_a50
tri_drop_words_noise_mute_t70_v70_a30 tri_drop_words_noise_mute_t70_v70_a50 tri_drop_words_noise_remove_t70_v70_a50
tri_drop_words_occlusion_mute_t70_v30_a50 tri_word_shuffle_noise_mute_t70_v70_a50""".split()
REPLACEMENTS = {
    "bi_tv_drop_words_occlusion_t70_v30",
    "bi_tv_word_shuffle_noise_t70_v70",
    "bi_ta_word_shuffle_mute_t70_a50",
    "bi_ta_drop_words_remove_t70_a50",
    "bi_va_occlusion_mute_v30_a50",
    "bi_va_noise_remove_v70_a50",
    "tri_word_shuffle_noise_mute_t70_v70_a50",
    "tri_drop_words_occlusion_mute_t70_v30_a50",
    "tri_drop_words_noise_remove_t70_v70_a50",
}
PANEL = """bi_tv_drop_words_noise_t30_v30 bi_tv_drop_words_noise_t30_v70 bi_tv_drop_words_noise_t70_v30
bi_tv_drop_words_noise_t70_v70 bi_ta_drop_words_mute_t30_a30 bi_ta_drop_words_mute_t70_a50 bi_va_noise_mute_v30_a30
bi_va_noise_mute_v70_a50 tri_drop_words_noise_mute_t30_v30_a30 tri_drop_words_noise_mute_t30_v70_a30
tri_drop_words_noise_mute_t70_v70_a30 tri_word_shuffle_noise_mute_t70_v70_a50""".split()


def test_catalogue_sizes_match_the_paper():
    cat = catalogue()
    blocks = Counter(c.block for c in cat)
    assert blocks["clean"] == 1 and blocks["single"] == 56
    assert (blocks["tv"], blocks["ta"], blocks["va"], blocks["tva"]) == (10, 10, 9, 17)  # 46 = 29 + 17
    assert sorted(c.id for c in cat.in_suite("combined")) == sorted(PAPER_29)
    assert len(cat.in_suite("combined_extended")) == 46
    assert {c.id for c in cat.in_suite("combined") if c.role == "replacement"} == REPLACEMENTS
    assert sorted(c.id for c in cat.in_suite("panel")) == sorted(PANEL)
    assert blocks["missing"] == 3 and blocks["shortcut"] == 4
    assert blocks["option_order"] == 24 and blocks["prompt"] == 12


def test_single_cells_and_variants():
    cat = catalogue()
    single = [c for c in cat if c.block == "single"]
    assert {(c.corruptions[0].operator, c.corruptions[0].severity) for c in single} == {
        (op, s) for op in __import__("sceval_plugin").operators.names() for s in (10, 30, 50, 70)
    }
    assert cat.get("single_noise_v70").variants == 3 and cat.get("single_motion_blur_v70").variants == 1
    assert cat.get("tri_drop_words_noise_mute_t30_v70_a30").severities == {"text": 30, "vision": 70, "audio": 30}
    assert cat.get("tri_drop_words_noise_mute_t30_v70_a30").total_severity == 130


def test_short_aliases_for_the_canonical_operator_cells():
    by_task = catalogue().by_task()
    for alias, cid in [
        ("sceval_t30_v70", "bi_tv_drop_words_noise_t30_v70"),
        ("sceval_t70_a50", "bi_ta_drop_words_mute_t70_a50"),
        ("sceval_v30_a30", "bi_va_noise_mute_v30_a30"),
        ("sceval_t30_v70_a30", "tri_drop_words_noise_mute_t30_v70_a30"),
    ]:
        assert by_task[alias].id == cid
    assert not catalogue().get("bi_tv_word_shuffle_noise_t70_v70").aliases


def test_controls_orders_and_prompts():
    cat = catalogue()
    assert [cat.get(f"order{k}_clean").option_order for k in range(4)] == [0, 1, 2, 3]
    assert (
        cat.get("order2_bi_tv_drop_words_noise_t30_v70").corruptions
        == cat.get("bi_tv_drop_words_noise_t30_v70").corruptions
    )
    assert {cat.get(f"prompt_{p}_clean").prompt_id for p in ("cot", "open")} == {"sceval-cot-v1", "sceval-open-v1"}
    assert cat.get("clean").prompt_id == "sceval-json-v1"
    assert {c.control for c in cat if c.block in ("missing", "shortcut")} == {
        "missing_text",
        "missing_vision",
        "missing_audio",
        "shortcut_question_options",
        "shortcut_text_only",
        "shortcut_visual_audio",
        "shortcut_options_only",
    }


def test_committed_task_files_match_the_catalogue():
    builtin = [c for c in catalogue() if is_builtin(c)]
    drift = out_of_date(TASKS_DIR / "sceval", builtin)
    assert not drift, f"tasks/sceval drifted from the catalogue ({drift[:3]}); run `sceval tasks tasks/sceval --write`"
    # template, placeholder; conditions; no-option twins; aliases; the 35 mechanism-probe conditions (Table 17,
    # G.10's audio gaps included) and the 4 named options of probes.OPTIONS
    assert len(render_task_files(builtin)) == 2 + 146 + 6 + 36 + 35 + 4


@pytest.mark.slow
def test_sceval_conditions_prints_the_catalogue():
    done = subprocess.run([str(Path(sys.executable).with_name("sceval")), "conditions"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for c in catalogue():
        row = next(line for line in lines if line.split()[:1] == [c.id])
        assert c.task_name in row and c.block in row
    assert lines[-1] == f"{len(catalogue())} condition(s)"
    single = subprocess.run(
        [str(Path(sys.executable).with_name("sceval")), "conditions", "--block", "tva"], capture_output=True, text=True
    )
    assert single.stdout.splitlines()[-1] == "17 condition(s)"
