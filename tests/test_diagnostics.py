"""The Appendix-C diagnostics on small trial tables whose numbers are computed by hand."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from sceval_plugin.metrics import add_drops, condition_summary, model_diagnostics, per_sample
from sceval_plugin.metrics.diagnostics import DiagnosticOptions, appendix_c
from sceval_plugin.metrics.drops import (
    ALL_MODELS,
    accuracy_by_source,
    family_summary,
    interaction_cells,
    operator_groups,
    source_breakdown,
    steepest_channels,
    sub_additivity,
)
from sceval_plugin.metrics.humans import HUMAN, human_audit, human_excess_drop
from sceval_plugin.metrics.protocol import catalogue_info
from sceval_plugin.metrics.reliability import calibration, failure_overlap, invalid_items, prompt_shift, seed_stability

INFO = catalogue_info()
TV_T30_V70 = "bi_tv_drop_words_noise_t30_v70"  # canonical, panel
TV_T30_V30 = "bi_tv_drop_words_noise_t30_v30"  # canonical, panel
TVA_PANEL = "tri_drop_words_noise_mute_t30_v70_a30"


def trials(
    model: str, condition: str, outcomes, *, confidence=None, source=None, invalid="parse_failure", answers=None
) -> list[dict]:
    """Trial rows: ``outcomes[i]`` is sample i's list of per-variant outcomes (1, 0 or None = invalid)."""
    rows = []
    for i, per_variant in enumerate(outcomes):
        for v, c in enumerate(per_variant if isinstance(per_variant, (list, tuple)) else [per_variant]):
            rows.append(
                {
                    "model": model,
                    "condition_id": condition,
                    "sample_id": f"s{i}",
                    "variant": v,
                    "correct": np.nan if c is None else float(c),
                    "invalid": invalid if c is None else None,
                    "n_options": 4,
                    "prompt_id": "sceval-json-v1",
                    "dataset": "d#1",
                    "answer": None if c is None else (answers[i] if answers else ("A" if c else "B")),
                    "confidence": confidence[i] if confidence else None,
                    "source": source[i] if source else "src",
                }
            )
    return rows


def frame(*parts: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([row for part in parts for row in part])


def numbers_of(t: pd.DataFrame) -> SimpleNamespace:
    """The protocol's summary and per-model diagnostics (the paired tests are not needed here)."""
    summary = add_drops(condition_summary(t, per_sample(t), b=200), INFO)
    return SimpleNamespace(summary=summary, diagnostics=model_diagnostics(summary, t, INFO))


def everything(t: pd.DataFrame, options: DiagnosticOptions | None = None):
    n = numbers_of(t)
    return appendix_c(t, per_sample(t), n.summary, n.diagnostics, INFO, options, b=200)


def test_seed_stability_at_the_weakest_single_cell_and_every_stochastic_cell():
    # variant accuracies of single_noise_v70: v0 = 3/4, v1 = 2/4, v2 = 1/4
    noisy = [[1, 1, 1], [1, 0, 0], [1, 1, 0], [0, 0, 0]]
    t = frame(
        trials("m", "clean", [1, 1, 1, 1]),
        trials("m", "single_noise_v70", noisy),
        trials("m", "single_noise_v30", [[1, 1, 1]] * 4),
        trials("m", "single_drop_words_t70", [1, 0, 1, 0]),
    )
    out = seed_stability(t, numbers_of(t).summary, INFO).set_index("condition_id")
    v70 = out.loc["single_noise_v70"]
    assert v70["weakest_for"] == "vision" and v70["n_var"] == 3
    assert v70["accuracy"] == pytest.approx((1 + 1 / 3 + 2 / 3 + 0) / 4)  # eq. 3: per-sample means first
    assert v70["worst_variant_accuracy"] == pytest.approx(0.25)
    assert v70["std"] == pytest.approx(0.25)  # sample std of (.75, .5, .25)
    assert v70["median"] == pytest.approx(0.5) and v70["worst2_mean"] == pytest.approx(0.375)
    assert v70["best_variant_accuracy"] == pytest.approx(0.75)
    assert out.loc["single_noise_v30", "weakest_for"] == "" and out.loc["single_noise_v30", "std"] == 0
    text = out.loc["single_drop_words_t70"]  # deterministic, but the weakest text cell
    assert text["weakest_for"] == "text" and text["n_var"] == 1 and math.isnan(text["std"])
    assert "clean" not in out.index
    population = seed_stability(t, numbers_of(t).summary, INFO, ddof=0).set_index("condition_id")
    assert population.loc["single_noise_v70", "std"] == pytest.approx(np.std([0.75, 0.5, 0.25]))


def test_sub_additivity_uses_same_severity_single_drops():
    t = frame(
        trials("m", "clean", [1, 1, 1, 1]),
        trials("m", "single_drop_words_t30", [1, 1, 1, 0]),
        trials("m", "single_noise_v70", [1, 1, 0, 0]),
        trials("m", "single_noise_v30", [1, 1, 1, 1]),
        trials("m", TV_T30_V70, [1, 1, 0, 0]),  # additive 1 - .25 - .5 = .25, Δint = +.25
        trials("m", TV_T30_V30, [1, 0, 1, 0]),  # additive 1 - .25 - 0 = .75, Δint = -.25
        trials("m", "bi_tv_drop_words_noise_t70_v70", [0, 0, 0, 0]),  # no t70 single: left out
        trials("m", "bi_tv_word_shuffle_noise_t70_v70", [0, 0, 0, 0]),  # replacement: not canonical
        # a second model where every item is far gentler than additive: Δint = 0 - (1 - 1 - 1) = +1
        trials("n", "clean", [1, 1, 1, 1]),
        trials("n", "single_drop_words_t30", [0, 0, 0, 0]),
        trials("n", "single_noise_v70", [0, 0, 0, 0]),
        trials("n", TV_T30_V70, [0, 0, 0, 0]),
    )
    n = numbers_of(t)
    cells = interaction_cells(n.summary, INFO).set_index(["model", "condition_id"])
    assert cells.loc[("m", TV_T30_V70), "additive"] == pytest.approx(0.25)
    assert cells.loc[("m", TV_T30_V30), "delta_int"] == pytest.approx(-0.25)
    assert ("m", "bi_tv_drop_words_noise_t70_v70") not in cells.index
    assert ("m", "bi_tv_word_shuffle_noise_t70_v70") not in cells.index
    out = sub_additivity(per_sample(t), n.summary, INFO, b=500).set_index(["model", "block"])
    m = out.loc[("m", "tv")]
    assert m["n_cells"] == 2 and m["mean_actual"] == pytest.approx(0.5) and m["mean_additive"] == pytest.approx(0.5)
    assert m["mean_delta_int"] == pytest.approx(0.0) and m["share_sub_additive"] == 0.5
    assert m["p_bootstrap"] > 0.8  # per-item interactions (0, -.5, 0, +.5): no evidence either way
    assert out.loc[("n", "tv"), "mean_delta_int"] == pytest.approx(1.0)
    assert out.loc[("n", "tv"), "p_bootstrap"] == 0.0 and out.loc[("n", "tv"), "n_items"] == 4


def test_calibration_ece_and_over_confident_errors():
    t = frame(trials("m", "clean", [1, 1, 0, 0, 1, None], confidence=["high", "High ", "high", "low", None, "low"]))
    row = calibration(t).iloc[0]
    # high: 3 answers, 2 right, stated 5/6; low: 1 answer, wrong, stated 1/6
    assert row["ece"] == pytest.approx((3 * abs(2 / 3 - 5 / 6) + 1 * abs(0 - 1 / 6)) / 4)
    assert row["rated"] == 4 and row["unrated"] == 1 and row["wrong"] == 2
    assert row["rho_oc"] == pytest.approx(0.5)
    assert row["confidence_right"] == pytest.approx(5 / 6) and row["confidence_wrong"] == pytest.approx(0.5)
    assert row["share_high"] == pytest.approx(0.75) and row["share_medium"] == 0
    other = calibration(t, values={"low": 0.0, "medium": 0.5, "high": 1.0}).iloc[0]
    assert other["ece"] == pytest.approx((3 * (1 / 3) + 0) / 4)
    assert calibration(frame(trials("m", "clean", [1, 0]))).empty  # no confidence logged


def test_failure_overlap_jaccard_shared_hard_and_idiosyncratic():
    # failure sets: a = {s1, s2}, b = {s2, s3}, c = {s2}
    t = frame(
        trials("a", "clean", [1, 0, 0, 1, 1, 1]),
        trials("b", "clean", [1, 1, 0, 0, 1, 1]),
        trials("c", "clean", [1, 1, 0, 1, 1, 1]),
        trials("a", "missing_text", [1, 1]),
    )
    out = failure_overlap(per_sample(t)).set_index("condition_id")
    clean = out.loc["clean"]
    assert clean["models"] == 3 and clean["items"] == 6 and clean["pairs"] == 3
    assert clean["mean_jaccard"] == pytest.approx((1 / 3 + 1 / 2 + 1 / 2) / 3)
    assert clean["shared_hard_threshold"] == 2 and clean["shared_hard"] == 1
    assert clean["idiosyncratic"] == 2 and clean["union"] == 3 and clean["failed_by_all"] == 1
    lone = out.loc["missing_text"]
    assert lone["models"] == 1 and lone["pairs"] == 0 and math.isnan(lone["mean_jaccard"])
    strict = failure_overlap(per_sample(t), shared_fraction=1.0).set_index("condition_id")
    assert strict.loc["clean", "shared_hard_threshold"] == 3


def test_failure_overlap_counts_invalid_outputs_as_failures():
    t = frame(trials("a", "clean", [None, 1]), trials("b", "clean", [None, 1]))
    row = failure_overlap(per_sample(t)).iloc[0]
    assert row["union"] == 1 and row["mean_jaccard"] == 1.0


def test_source_breakdown_splits_every_cell_by_source():
    src = ["A", "A", "B", "B"]
    t = frame(
        trials("m", "clean", [1, 1, 1, 0], source=src),
        trials("m", TV_T30_V70, [1, 0, 0, 0], source=src),
        trials("m", TVA_PANEL, [0, 0, 0, 0], source=src),
        trials("m", "single_noise_v70", [1, 1, 1, 0], source=src),
    )
    by_source = accuracy_by_source(per_sample(t), t)
    cell = by_source.set_index(["condition_id", "source"])
    assert cell.loc[("clean", "B"), "accuracy"] == 0.5 and cell.loc[("clean", "B"), "n"] == 2
    out = source_breakdown(by_source, INFO).set_index("source")
    assert out.loc["A", "clean"] == 1.0 and out.loc["A", "tv_mean"] == 0.5 and out.loc["A", "tva_mean"] == 0.0
    assert out.loc["A", "strongest_drop"] == 1.0 and out.loc["A", "strongest_condition"] == TVA_PANEL
    assert out.loc["B", "strongest_drop"] == 0.5 and out.loc["B", "tv_cells"] == 1
    assert accuracy_by_source(per_sample(t), t.drop(columns="source")).empty


def test_families_and_steepest_channel():
    t = frame(
        trials("p1", "clean", [1, 1, 1, 1]),
        trials("p1", "single_drop_words_t70", [1, 1, 0, 0]),
        trials("p1", "single_noise_v70", [1, 1, 1, 1]),
        trials("o1", "clean", [1, 1, 0, 0]),
        trials("o1", "single_drop_words_t70", [1, 1, 0, 0]),
        trials("o1", "single_noise_v70", [1, 0, 0, 0]),
        trials("x", "clean", [1, 0, 0, 0]),
    )
    n = numbers_of(t)
    steep = steepest_channels(n.diagnostics).set_index("model")
    assert steep.loc["p1", "steepest"] == "text" and steep.loc["o1", "steepest"] == "vision"
    assert steep.loc["p1", "S_t"] == pytest.approx(-0.5 / 70)
    assert pd.isna(steep.loc["x", "steepest"])
    fam = family_summary(n.summary, n.diagnostics, INFO, {"p1": "Proprietary", "o1": "Open"}).set_index("family")
    assert list(fam.index) == ["Proprietary", "Open", "gap (Proprietary − Open)"]
    assert fam.loc["Proprietary", "n"] == 1 and fam.loc["Proprietary", "delta_text"] == pytest.approx(0.5)
    assert fam.loc["Open", "delta_vision"] == pytest.approx(0.25)
    gap = fam.loc["gap (Proprietary − Open)"]
    assert gap["clean"] == pytest.approx(0.5)  # higher clean accuracy: positive
    assert gap["delta_text"] == pytest.approx(-0.5) and gap["delta_vision"] == pytest.approx(0.25)


def test_operator_groups_split_primary_and_stress_operators():
    t = frame(
        trials("m", "clean", [1, 1, 1, 1]),
        trials("m", "single_noise_v70", [1, 1, 0, 0]),
        trials("m", "single_mute_a70", [0, 0, 0, 0]),
        trials("m", "single_noise_v30", [0, 0, 0, 0]),
    )
    out = operator_groups(numbers_of(t).summary, INFO).set_index(["model", "group"])
    assert out.loc[("m", "primary"), "mean_drop"] == pytest.approx(0.5)
    assert out.loc[("m", "stress"), "mean_drop"] == pytest.approx(1.0)
    assert out.loc[("m", "all"), "mean_drop"] == pytest.approx(0.75) and out.loc[("m", "all"), "operators"] == 2
    assert out.loc[(ALL_MODELS, "all"), "mean_drop"] == pytest.approx(0.75)


def test_prompt_shift_compares_the_same_cells():
    t = frame(
        trials("m", "clean", [1, 1, 1, 1]),
        trials("m", "prompt_cot_clean", [1, 1, 0, None]),
        trials("m", "single_noise_v70", [0, 0, 0, 0]),
    )  # a base cell with no variant run: not compared
    row = prompt_shift(numbers_of(t).summary, INFO).iloc[0]
    assert row["bases"] == 1 and row["accuracy_json"] == 1.0 and row["accuracy_cot"] == pytest.approx(2 / 3)
    assert row["coverage_cot"] == pytest.approx(0.75) and row["invalid_shift"] == pytest.approx(0.25)
    assert row["worst_prompt"] == "cot" and math.isnan(row["accuracy_open"])


def test_invalid_items_per_block_by_category():
    t = frame(
        trials("m", TV_T30_V70, [None, 1, 0, 1], invalid="parse_failure"),
        trials("m", "bi_va_noise_mute_v70_a50", [1, None, 1, 1], invalid="refusal"),
        trials("m", TVA_PANEL, [None, 1, 1, 1], invalid="empty"),
    )
    out = invalid_items(t, INFO).set_index("group")
    bi = out.loc["bimodal"]
    assert bi["items"] == 4 and bi["items_parse_failure"] == 1 and bi["items_refusal"] == 1
    assert bi["items_any_invalid"] == 2 and bi["valid_items"] == 2 and bi["answered_items"] == 4
    tri = out.loc["trimodal"]
    assert tri["items_empty"] == 1 and tri["answered_items"] == 3 and tri["items_api_failure"] == 0


def test_human_reference_excess_drop_on_the_shared_cohort():
    model = frame(trials("m", "clean", [1, 1, 1, 1, 1]), trials("m", "single_noise_v70", [1, 0, 0, 0, 0]))
    # humans: clean s0 by two annotators who agree, s4 unanswered; noise s3 by two who disagree
    humans = frame(
        trials(HUMAN, "clean", [[1, 1], 1, 1, 1], answers=["A", "A", "A", "A"]),
        trials(HUMAN, "single_noise_v70", [1, 1, 1, [0, 1]], answers=["A", "A", "A", "B"]),
    )
    humans.loc[
        (humans["condition_id"] == "single_noise_v70") & (humans["sample_id"] == "s3") & (humans["variant"] == 1),
        "answer",
    ] = "A"
    audit = human_audit(humans).set_index("condition_id")
    assert audit.loc["clean", "items"] == 4 and audit.loc["clean", "human_accuracy"] == 1.0
    assert audit.loc["clean", "agreement"] == 1.0 and audit.loc["clean", "agreement_items"] == 1
    assert audit.loc["single_noise_v70", "human_accuracy"] == pytest.approx(3.5 / 4)
    assert audit.loc["single_noise_v70", "agreement"] == 0.0
    row = human_excess_drop(per_sample(model), humans, b=500).iloc[0]
    # cohort s0..s3: model drops (0, 1, 1, 1), human drops (0, 0, 0, .5)
    assert row["n"] == 4 and row["model_drop"] == pytest.approx(0.75) and row["human_drop"] == pytest.approx(0.125)
    assert row["excess_drop"] == pytest.approx(0.625)
    assert 0 <= row["ci_low"] <= 0.625 <= row["ci_high"] <= 1


@pytest.mark.parametrize("shape", ["one condition", "one model no clean", "invalid only", "no singles", "singles only"])
def test_every_diagnostic_degrades_on_partial_runs(shape):
    if shape == "one condition":
        t = frame(trials("m", "clean", [1, 0, 1]))
    elif shape == "one model no clean":
        t = frame(trials("m", "single_noise_v70", [[1, 0, 1]] * 3), trials("m", TV_T30_V70, [0, 1, 1]))
    elif shape == "invalid only":
        t = frame(
            trials("m", "clean", [None, None]),
            trials("n", "clean", [None, None]),
            trials("m", TV_T30_V70, [None, None]),
        )
    elif shape == "no singles":
        t = frame(
            trials("m", "clean", [1, 1]),
            trials("n", "clean", [1, 0]),
            trials("m", TV_T30_V70, [0, 1]),
            trials("n", TV_T30_V70, [0, 0]),
        )
    else:
        t = frame(trials("m", "clean", [1, 1]), trials("m", "single_noise_v70", [[1, 0, 1]] * 2))
    humans = frame(trials(HUMAN, "clean", [1, 1]))
    out = everything(t, DiagnosticOptions(families={"m": "F"}, human_trials=humans))
    assert set(out) >= {
        "seed_stability",
        "sub_additivity",
        "calibration",
        "failure_overlap",
        "source_breakdown",
        "families",
        "steepest_channel",
        "operator_groups",
        "prompt_shift",
        "invalid_items",
        "human_audit",
        "human_excess_drop",
    }
    for name, d in out.items():
        assert isinstance(d.frame, pd.DataFrame), name
        assert d.notes or not d.frame.empty, name  # what cannot be computed says why
    assert out["calibration"].notes  # no confidence in these trials
    assert "prompt-variant" in " ".join(out["prompt_shift"].notes)
    if shape == "one model no clean":
        assert out["sub_additivity"].frame.empty and out["sub_additivity"].notes
    if shape == "no singles":
        assert "single" in " ".join(out["seed_stability"].notes)
