"""The report's headline definitions against the SCEval paper's own tables and hand-computed
fixtures: Δsingle (eq. 6, C.2/C.3), FS_S over the panel (Table 20), panel fault and C_asym
(Table 8), the no-text control (G.4), and reports on every subset shape of the catalogue."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from paper_tables import CLEAN, FLASH_SINGLES, JOINT, QWEN_SINGLES
from test_metrics import acc_rows, frame

from sceval_plugin.conditions import PANEL, joint_id, single_id
from sceval_plugin.metrics import add_drops, compute, model_diagnostics, panel_summary
from sceval_plugin.metrics.protocol import below_weakest_single, catalogue_info, weakest_singles

INFO = catalogue_info()


def paper_summary() -> pd.DataFrame:
    """Tables 5/6 as a per-condition summary (fractions): clean, the 56 single cells, 29 joint cells."""
    rows = []
    for model, singles, column in (("gemini-3-flash", FLASH_SINGLES, 1), ("qwen3.5-omni-plus", QWEN_SINGLES, 2)):
        rows.append((model, "clean", CLEAN[model]))
        for op, values in singles.items():
            rows += [(model, single_id(op, s), v) for s, v in zip((10, 30, 50, 70), values)]
        rows += [(model, joint_id(*cell[0]), cell[column]) for cell in JOINT]
    summary = pd.DataFrame(rows, columns=["model", "condition_id", "accuracy"])
    summary["accuracy"] /= 100
    return summary


def test_delta_single_reproduces_the_papers_c3_counts():
    """C.3: Gemini 3 Flash has no positive Δsingle; Qwen3.5-Omni-Plus has 3 of 29, all drop_words x
    noise with v70 (t30/v70 and two trimodal cells), the largest +1.09 pp."""
    drops = add_drops(paper_summary(), INFO)
    joint = drops.dropna(subset=["delta_single"]).set_index(["model", "condition_id"])
    assert joint.groupby(level=0).size().to_dict() == {"gemini-3-flash": 29, "qwen3.5-omni-plus": 29}
    flash, qwen = joint.loc["gemini-3-flash"], joint.loc["qwen3.5-omni-plus"]
    assert (flash["delta_single"] <= 0).all()
    assert set(flash["weakest_single"]) == {"single_drop_words_t70", "single_noise_v70"}
    positive = qwen[qwen["delta_single"] > 0]
    assert sorted(positive.index) == [
        "bi_tv_drop_words_noise_t30_v70",
        "tri_drop_words_noise_mute_t30_v70_a30",
        "tri_drop_words_noise_mute_t70_v70_a30",
    ]
    # by hand: drop_words@70 (64.10) is Qwen's weakest cell; 64.10 - 63.01, - 64.08, - 63.86
    assert positive["delta_single"].to_numpy() * 100 == pytest.approx([1.09, 0.02, 0.24])
    vision_audio = qwen.index.str.startswith("bi_va_")
    assert (qwen.loc[~vision_audio, "weakest_single"] == "single_drop_words_t70").all()
    assert (qwen.loc[vision_audio, "weakest_single"] == "single_mute_a70").all()  # 69.72 < vision's 70.29
    assert (qwen["single_grid"] == "complete").all()
    # The same-severity comparison (a column of its own) is what gave 9 positive cells.
    assert (qwen["delta_single_same_severity"] > 0).sum() == 9
    row = qwen.loc["bi_va_noise_mute_v70_a50"]  # same severity: min(noise@70 70.37, mute@50 71.96)
    assert row["weakest_single_same_severity"] == "single_noise_v70"
    assert row["delta_single_same_severity"] == pytest.approx(0.7037 - 0.7412)
    assert row["delta_single"] == pytest.approx(0.6972 - 0.7412)  # weakest of vision (70.29) and audio (69.72)


def test_the_operator_reading_is_a_named_option():
    """Table 6's caption read per operator: word_shuffle x noise x mute t70/v70/a50 (64.48) is then
    compared with word_shuffle's weakest cell (65.20), a fourth positive cell."""
    drops = add_drops(paper_summary(), INFO, baseline="operator").set_index(["model", "condition_id"])
    cell = drops.loc[("qwen3.5-omni-plus", "tri_word_shuffle_noise_mute_t70_v70_a50")]
    assert cell["weakest_single"] == "single_word_shuffle_t70"
    assert cell["delta_single"] == pytest.approx(0.6520 - 0.6448)
    assert (drops.loc["qwen3.5-omni-plus", "delta_single"] > 0).sum() == 4
    with pytest.raises(ValueError, match="unknown Δsingle baseline"):
        weakest_singles(paper_summary(), INFO, by="severity")


def test_below_weakest_single_counts_per_block():
    summary = add_drops(paper_summary(), INFO)
    counts = below_weakest_single(summary, pd.DataFrame(), INFO).set_index(["model", "block"])
    qwen = counts.loc["qwen3.5-omni-plus"]
    assert qwen.loc["all", ["joint_cells", "below_weakest_single", "below_same_severity"]].tolist() == [29, 3, 9]
    assert qwen.loc["tv", "below_weakest_single"] == 1 and qwen.loc["tva", "below_weakest_single"] == 2
    assert qwen.loc["all", "max_cell"] == "bi_tv_drop_words_noise_t30_v70"
    assert qwen.loc["all", "max_delta_single"] == pytest.approx(0.0109)
    assert counts.loc[("gemini-3-flash", "all"), "below_weakest_single"] == 0
    assert list(counts.loc["gemini-3-flash"].index) == ["tv", "ta", "va", "tva", "all"]


def test_a_partial_single_grid_is_said_so():
    values = {
        "clean": 0.9,
        "single_noise_v70": 0.5,
        "single_drop_words_t30": 0.6,
        "single_drop_words_t70": 0.3,
        "bi_tv_drop_words_noise_t30_v70": 0.4,
    }
    numbers = compute(frame(acc_rows("m", values)), INFO, b=50)
    row = numbers.summary.set_index("condition_id").loc["bi_tv_drop_words_noise_t30_v70"]
    assert row["weakest_single"] == "single_drop_words_t70" and row["single_grid"] == "partial"
    assert row["delta_single"] == pytest.approx(0.3 - 0.4)
    assert row["delta_single_same_severity"] == pytest.approx(0.5 - 0.4)  # min(t30 0.6, v70 0.5)
    grid = numbers.weakest_singles.set_index("modality")
    assert grid.loc["text", ["observed_cells", "catalogue_cells"]].tolist() == [2, 16]
    assert not grid["complete"].any()
    assert any("partial single-modality grid" in n and "text 2 of 16" in n for n in numbers.notes)
    tests = numbers.comparisons.set_index("kind").loc["single_vs_joint"]
    assert tests["condition_a"] == "single_drop_words_t70"  # the Holm tests use the paper's baseline


def panel_values(clean, tv, ta, va, tva, asymmetry=0.0):
    """Every panel cell of a block at the block's mean; t70/v70 and t30/v70 moved apart by
    ``asymmetry`` (keeping the TV mean)."""
    values = {"clean": clean}
    for cid in PANEL:
        values[cid] = {"tv": tv, "ta": ta, "va": va, "tva": tva}[INFO[cid].block]
    values["bi_tv_drop_words_noise_t70_v70"] += asymmetry / 2
    values["bi_tv_drop_words_noise_t30_v70"] -= asymmetry / 2
    return values


def test_fault_lines_panel_fault_and_asymmetry_match_table_8():
    """Gemini 3.1 Pro in Table 8: clean 84.15, TV 78.62, TA 79.97, VA 81.17, TVA 78.04, panel
    fault 4.70, C_asym +1.15."""
    values = panel_values(0.8415, 0.7862, 0.7997, 0.8117, 0.7804, asymmetry=0.0115)
    summary = add_drops(
        pd.DataFrame([("g", c, a) for c, a in values.items()], columns=["model", "condition_id", "accuracy"]).assign(
            coverage=1.0
        ),
        INFO,
    )
    trials = frame([("g", "clean", "s0", 0, 1, None)])
    d = model_diagnostics(summary, trials, INFO).iloc[0]
    assert [d[f"FS_{b}"] for b in ("tv", "ta", "va", "tva")] == pytest.approx([0.0553, 0.0418, 0.0298, 0.0611])
    p = panel_summary(summary, INFO).iloc[0]
    assert round(100 * p["panel_fault"], 2) == 4.70 and p["C_asym"] == pytest.approx(0.0115)
    assert p["cells"] == 12


def test_fault_line_scores_ignore_joint_cells_outside_the_panel():
    values = panel_values(0.9, 0.6, 0.7, 0.8, 0.5)
    base = compute(frame(acc_rows("m", values)), INFO, b=50).diagnostics.iloc[0]
    values["bi_tv_drop_words_noise_t50_v50"] = 0.1  # extended suite, not in the panel
    more = compute(frame(acc_rows("m", values)), INFO, b=50).diagnostics.iloc[0]
    assert base["FS_tv"] == more["FS_tv"] == pytest.approx(0.3)
    assert base["drop_all_tv"] == pytest.approx(0.3)
    assert more["drop_all_tv"] == pytest.approx(0.9 - (4 * 0.6 + 0.1) / 5)


def test_no_text_control_counts_items_without_textual_evidence_and_restricts_m_t():
    """missing_text is scored only on items with text beyond question and options, and M_t compares
    it with the severity-70 text cells on those same items."""
    rows = acc_rows("m", {"clean": 1.0})
    flagged = {f"s{i}" for i in range(4, 10)}  # s4..s9 have no context: the control does not apply
    rows += [("m", "missing_text", f"s{i}", 0, 1 if i < 3 else 0, None) for i in range(10)]
    for op in ("drop_words", "typo_ocr", "word_shuffle", "sentence_break"):
        rows += [("m", single_id(op, 70), f"s{i}", 0, 1 if i < 2 else 0, None) for i in range(10)]
    trials = frame(rows)
    trials["not_applicable"] = [
        ("no_text_evidence" if r[1] == "missing_text" and r[2] in flagged else None) for r in rows
    ]
    numbers = compute(trials, INFO, b=50)
    acc = numbers.summary.set_index("condition_id")["accuracy"]
    assert acc["missing_text"] == pytest.approx(3 / 4)  # s0..s3, not the 6 items it does not apply to
    assert numbers.diagnostics.iloc[0]["M_t"] == pytest.approx(3 / 4 - 2 / 4)  # text cells on s0..s3 too
    na = numbers.not_applicable.iloc[0]
    assert (na["condition_id"], na["reason"], na["items"], na["items_run"]) == (
        "missing_text",
        "no_text_evidence",
        6,
        10,
    )
    assert any("6 of 10 item(s) have no textual evidence beyond the question and options" in n for n in numbers.notes)
    # no item with textual evidence: no missing_text accuracy, no M_t, and a note that says why
    trials["not_applicable"] = ["no_text_evidence" if r[1] == "missing_text" else None for r in rows]
    numbers = compute(trials, INFO, b=50)
    assert "missing_text" not in set(numbers.summary["condition_id"])
    assert math.isnan(numbers.diagnostics.iloc[0]["M_t"])
    assert any("10 of 10" in n and "not computed" in n for n in numbers.notes)


# --- every subset shape gives a report ------------------------------------------------------------

SHAPES = {
    "one condition": [("m", {"bi_tv_drop_words_noise_t30_v70": 0.4})],
    "clean and a prompt variant": [("m", {"clean": 0.8, "prompt_cot_clean": 0.7})],
    "one model, no clean": [
        (
            "m",
            {
                "single_noise_v70": 0.5,
                "single_drop_words_t30": 0.6,
                "bi_tv_drop_words_noise_t30_v70": 0.4,
                "bi_ta_drop_words_mute_t30_a30": 0.5,
            },
        )
    ],
    "no single cells": [
        ("a", {"clean": 0.9, "bi_tv_drop_words_noise_t30_v70": 0.4}),
        ("b", {"clean": 0.7, "bi_tv_drop_words_noise_t30_v70": 0.5}),
    ],
    "invalid-only samples": [("m", {"clean": 0.9, "single_noise_v70": None, "bi_va_noise_mute_v70_a50": 0.3})],
}


def shape_trials(spec) -> pd.DataFrame:
    rows = []
    for model, values in spec:
        for cid, value in values.items():
            if value is None:  # every trial of every sample invalid
                rows += [(model, cid, f"s{i}", 0, None, "parse_failure") for i in range(10)]
            else:
                rows += acc_rows(model, {cid: value})
    return frame(rows, prompt_id="sceval-json-v1")


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_subset_shape_computes_what_it_can_and_notes_the_rest(shape):
    numbers = compute(shape_trials(SHAPES[shape]), INFO, b=50)
    notes = " | ".join(numbers.notes)
    if shape == "one condition":
        assert numbers.summary["accuracy"].tolist() == pytest.approx([0.4])
        assert "no clean condition" in notes and "one model" in notes and "1 of 12 cells" in notes
    elif shape == "clean and a prompt variant":
        assert numbers.summary.set_index("condition_id")["delta_base"]["prompt_cot_clean"] == pytest.approx(0.1)
        assert numbers.comparisons["kind"].tolist() == ["clean_vs_condition"]
    elif shape == "one model, no clean":
        row = numbers.summary.set_index("condition_id").loc["bi_tv_drop_words_noise_t30_v70"]
        assert row["delta_single"] == pytest.approx(0.1) and math.isnan(row["delta_base"])
        assert math.isnan(
            numbers.summary.set_index("condition_id").loc["bi_ta_drop_words_mute_t30_a30", "delta_single"]
        )
        assert "no clean condition" in notes and "1 joint cell(s) have no Δsingle" in notes
    elif shape == "no single cells":
        assert numbers.summary["delta_single"].isna().all()
        assert "no single-modality cells with a valid output (a, b)" in notes
        assert set(numbers.comparisons["kind"]) == {"clean_vs_condition", "model_vs_model"}
    elif shape == "invalid-only samples":
        row = numbers.summary.set_index("condition_id").loc["single_noise_v70"]
        assert math.isnan(row["accuracy"]) and row["invalid_parse_failure"] == 10 and row["coverage"] == 0
        assert "single_noise_v70 (m): no valid output in 10 trial(s)" in notes
        test = numbers.comparisons.set_index("condition_b").loc["single_noise_v70"]
        assert test["b"] == 9 and test["diff"] == pytest.approx(0.9)  # invalid counts as incorrect


@pytest.mark.parametrize("shape", ["one condition", "no single cells", "invalid-only samples"])
def test_the_report_writes_what_it_can_and_lists_skipped_figures(shape, tmp_path, monkeypatch):
    from sceval_plugin import report

    trials = shape_trials(SHAPES[shape])
    monkeypatch.setattr(report, "read_runs", lambda runs, progress=True: (trials, []))
    done = report.build_report(["fake"], tmp_path, b=50, progress=False)
    written = {p.split("/")[-1] for p in done["written"]}
    data = json.loads((tmp_path / "report.json").read_text())
    skipped = data["figures_skipped"]
    if shape == "one condition":
        assert set(skipped) == {"severity_curves", "joint_scatter", "drop_heatmap"}
        assert "controls.md" not in written and "joint.md" in written
        assert any(n.startswith("table controls not written") for n in data["notes"])
    else:  # two models x one joint cell, one model x one: too few points for a scatter (joint.md has them)
        assert set(skipped) == {"severity_curves", "drop_heatmap", "joint_scatter"}
        assert skipped["joint_scatter"].endswith("too few for a scatter: see joint.md") and "joint.md" in written
    for name in skipped:
        assert not (tmp_path / f"{name}.png").exists()
        assert any(n.startswith(f"figure {name} not drawn: ") for n in done["notes"])
    assert data["notes"] == done["notes"]
    assert np.isfinite([c["accuracy"] for c in data["conditions"] if c["accuracy"] is not None]).all()
