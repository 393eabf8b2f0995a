"""SCEval statistics against small hand-computed fixtures."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from faultline_eval.core.stats import compare_two
from sceval_plugin.metrics import (
    add_drops,
    bootstrap_means,
    check_comparable,
    comparisons,
    condition_summary,
    holm,
    least_squares_slope,
    mcnemar_exact,
    model_diagnostics,
    option_order_summary,
    per_sample,
    percentile_interval,
    resample_weights,
)
from sceval_plugin.metrics.protocol import TRIAL_COLUMNS, catalogue_info

INFO = catalogue_info()


def frame(rows, **defaults):
    """rows: (model, condition, sample, variant, correct or None, invalid)"""
    base = {"n_options": 4, "prompt_id": "p", "dataset": "d", "answer": None, **defaults}
    data = [dict(zip(("model", "condition_id", "sample_id", "variant", "correct", "invalid"), r), **base) for r in rows]
    out = pd.DataFrame(data, columns=list(TRIAL_COLUMNS))
    out["correct"] = out["correct"].astype(float)
    return out


def summarise(trials, b=200):
    samples = per_sample(trials)
    return samples, add_drops(condition_summary(trials, samples, b=b), INFO)


def test_mean_and_worst_variant_with_missing_variants_and_partial_coverage():
    trials = frame(
        [
            ("m", "single_noise_v70", "s1", 0, 1, None),
            ("m", "single_noise_v70", "s1", 1, 0, None),
            ("m", "single_noise_v70", "s1", 2, None, "parse_failure"),
            ("m", "single_noise_v70", "s2", 0, 1, None),
            ("m", "single_noise_v70", "s2", 1, 1, None),  # variant 2 missing
            ("m", "single_noise_v70", "s3", 0, None, "refusal"),
            ("m", "single_noise_v70", "s3", 1, None, "empty"),
            ("m", "single_noise_v70", "s3", 2, None, "api_failure"),
        ]
    )
    samples, summary = summarise(trials)
    row = summary.iloc[0]
    assert row["accuracy"] == pytest.approx((0.5 + 1.0) / 2)  # s3 has no valid output
    assert row["worst_variant_accuracy"] == pytest.approx(0.5)  # variant 1: (0 + 1) / 2
    assert row["coverage"] == pytest.approx(4 / 8) and row["valid_trials"] == 4 and row["trials"] == 8
    assert (row["invalid_parse_failure"], row["invalid_refusal"], row["invalid_empty"], row["invalid_api_failure"]) == (
        1,
        1,
        1,
        1,
    )
    assert row["n_samples"] == 2
    strict = samples.set_index("sample_id")["strict"]
    assert strict.to_dict() == pytest.approx({"s1": 1 / 3, "s2": 1.0, "s3": 0.0})


def test_degenerate_bootstrap_when_every_sample_scores_the_same():
    trials = frame([("m", "clean", f"s{i}", 0, 1, None) for i in range(20)])
    _, summary = summarise(trials)
    assert summary.iloc[0][["accuracy", "ci_low", "ci_high"]].tolist() == [1.0, 1.0, 1.0]


def test_bootstrap_is_a_seeded_resample_of_samples():
    values = np.random.default_rng(3).random(50)
    w = resample_weights(50, b=500, seed=7)
    assert w.shape == (500, 50) and (w.sum(axis=1) == 50).all()
    assert np.array_equal(w, resample_weights.__wrapped__(50, b=500, seed=7)), "a pure function of (n, b, seed)"
    assert not np.array_equal(w, resample_weights(50, b=500, seed=8))
    boot = bootstrap_means(values, w)[0]
    # the same as averaging explicit resamples: sample k takes each index w[k, i] times
    explicit = [np.repeat(values, w[k].astype(int)).mean() for k in range(3)]
    assert boot[:3] == pytest.approx(explicit)
    lo, hi = percentile_interval(boot)
    assert lo < values.mean() < hi
    se = values.std(ddof=1) / math.sqrt(50)
    assert hi - lo == pytest.approx(2 * 1.96 * se, rel=0.25)


def test_mcnemar_exact_against_the_binomial_formula():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 0) == pytest.approx(2 * 0.5**5)
    p = 2 * sum(math.comb(12, k) for k in range(3)) / 2**12  # b=10, c=2, two-sided
    assert mcnemar_exact(10, 2) == pytest.approx(p)
    assert mcnemar_exact(2, 10) == pytest.approx(p)


def test_holm_against_a_worked_example():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    out = holm([0.2, float("nan"), 0.01])
    assert out[0] == pytest.approx(0.2) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)


def test_least_squares_slope():
    assert least_squares_slope([0, 10, 30, 50, 70], [0.9, 0.8, 0.6, 0.4, 0.2]) == pytest.approx(-0.01)
    assert math.isnan(least_squares_slope([0, 10], [0.5, float("nan")]))


def acc_rows(model, values):
    """One sample per condition scoring the given accuracy exactly (10 samples, deterministic)."""
    rows = []
    for cid, acc in values.items():
        k = round(acc * 10)
        rows += [(model, cid, f"s{i}", 0, 1 if i < k else 0, None) for i in range(10)]
    return rows


def test_delta_single_uses_the_weakest_single_component_from_the_catalogue():
    trials = frame(
        acc_rows(
            "m",
            {
                "clean": 0.9,
                "single_drop_words_t30": 0.6,
                "single_noise_v70": 0.5,
                "bi_tv_drop_words_noise_t30_v70": 0.4,
            },
        )
    )
    _, summary = summarise(trials)
    row = summary.set_index("condition_id").loc["bi_tv_drop_words_noise_t30_v70"]
    assert row["weakest_single"] == "single_noise_v70"
    assert row["delta_single"] == pytest.approx(0.1) and row["delta_base"] == pytest.approx(0.5)


def test_fault_line_misleading_fragility_and_shortcut_gap():
    values = {
        "clean": 0.9,
        "missing_vision": 0.6,
        "shortcut_text_only": 0.5,
        "bi_tv_drop_words_noise_t30_v30": 0.6,
        "bi_tv_drop_words_noise_t70_v70": 0.4,
    }
    for op in ("noise", "occlusion"):
        values.update({f"single_{op}_v10": 0.9, f"single_{op}_v30": 0.7, f"single_{op}_v50": 0.5})
    values.update({"single_noise_v70": 0.3, "single_occlusion_v70": 0.5})
    trials = frame(acc_rows("m", values), n_options=4)
    _, summary = summarise(trials)
    d = model_diagnostics(summary, trials, INFO).iloc[0]
    assert d["FS_tv"] == pytest.approx(0.9 - 0.5)
    assert d["M_v"] == pytest.approx(0.6 - 0.4)  # missing minus mean of the severity-70 vision cells
    expected = np.polyfit([0, 10, 30, 50, 70], [0.9, 0.9, 0.7, 0.5, 0.4], 1)[0]
    assert d["S_v"] == pytest.approx(expected)
    assert d["G"] == pytest.approx(0.5 - 0.25)
    assert math.isnan(d["FS_ta"]) and math.isnan(d["S_a"])


def test_option_order_consistency():
    rows = []
    for k in range(4):
        cid = f"order{k}_clean"
        rows += [("m", cid, "s1", 0, 1, None), ("m", cid, "s2", 0, 1 if k < 2 else 0, None)]
    trials = frame(rows)
    trials["answer"] = ["A", "B", "A", "B", "A", "C", "A", "C"]
    _, summary = summarise(trials)
    o = option_order_summary(trials, summary, INFO).iloc[0]
    assert o["base"] == "clean" and o["mean_order"] == pytest.approx(0.75) and o["worst_order"] == pytest.approx(0.5)
    assert o["consistency"] == pytest.approx(0.5)


def test_comparisons_zero_discordance_single_model_and_different_sample_sets():
    rows = acc_rows("a", {"clean": 0.8, "single_noise_v70": 0.8})  # identical outcomes: no discordant pairs
    trials = frame(rows)
    samples, summary = summarise(trials)
    c = comparisons(samples, summary, INFO, b=200)
    assert list(c["kind"]) == ["clean_vs_condition"]  # one model: no model pairs
    row = c.iloc[0]
    assert (row["b"], row["c"], row["p_mcnemar"], row["diff"]) == (0, 0, 1.0, 0.0)
    assert not row["significant"]

    other = frame([("b", "clean", f"s{i}", 0, 0, None) for i in range(5, 15)])  # overlaps s5..s9 only
    samples, summary = summarise(pd.concat([trials, other]))
    pair = comparisons(samples, summary, INFO, b=200)
    pair = pair[(pair["kind"] == "model_vs_model")].iloc[0]
    assert pair["n"] == 5 and pair["mean_a"] == pytest.approx(0.6) and pair["mean_b"] == 0.0


def test_holm_within_blocks_and_flips_between_invalid_treatments():
    rows = [("m", "clean", f"s{i}", 0, 1, None) for i in range(30)]
    # 12 wrong + 10 invalid under noise@70; the invalid ones decide significance
    rows += [("m", "single_noise_v70", f"s{i}", 0, 0, None) for i in range(12)]
    rows += [("m", "single_noise_v70", f"s{i}", 0, None, "refusal") for i in range(12, 22)]
    rows += [("m", "single_noise_v70", f"s{i}", 0, 1, None) for i in range(22, 30)]
    rows += [("m", "single_mute_a70", f"s{i}", 0, 0 if i < 3 else 1, None) for i in range(30)]
    samples, summary = summarise(frame(rows))
    c = comparisons(samples, summary, INFO, b=200).set_index("condition_b")
    noise, mute = c.loc["single_noise_v70"], c.loc["single_mute_a70"]
    assert noise["family"] == mute["family"] == "single"
    family = holm([noise["p_mcnemar"], mute["p_mcnemar"]])  # one Holm family: the single block
    assert [noise["p_holm"], mute["p_holm"]] == pytest.approx(list(family))
    assert noise["b"] == 22 and noise["n_valid_pairs"] == 20
    assert mute["b"] == 3 and not mute["significant"]
    assert noise["significant"] and noise["significant_missing"]  # 12 discordant still significant
    rows2 = [r for r in rows if not (r[1] == "single_noise_v70" and r[4] == 0)]
    rows2 += [("m", "single_noise_v70", f"s{i}", 0, 1, None) for i in range(12)]
    samples, summary = summarise(frame(rows2))
    flip = comparisons(samples, summary, INFO, b=200).set_index("condition_b").loc["single_noise_v70"]
    assert flip["significant"] and not flip["significant_missing"] and flip["flips"]


def test_mixed_prompts_or_datasets_are_refused():
    a = frame([("m1", "clean", "s1", 0, 1, None)], prompt_id="sceval-json-v1")
    b = frame([("m2", "clean", "s1", 0, 1, None)], prompt_id="lab-prompt-v2")
    with pytest.raises(ValueError, match=r"different prompt templates \(lab-prompt-v2: m2; sceval-json-v1: m1\)"):
        check_comparable(pd.concat([a, b]), INFO)
    c = frame([("m2", "clean", "s1", 0, 1, None)], dataset="demo#other", prompt_id="sceval-json-v1")
    with pytest.raises(ValueError, match="different dataset versions"):
        check_comparable(pd.concat([a, c]), INFO)
    cot = frame([("m1", "prompt_cot_clean", "s1", 0, 1, None)], prompt_id="sceval-cot-v1")
    check_comparable(pd.concat([a, cot]), INFO)  # prompt variants are their own block


def test_compare_two_is_the_reports_model_vs_model_comparison_in_the_order_asked():
    """One paired comparison (core.stats.compare_two) serves the report and the viewer: its rows are
    the report's model-vs-model rows, with A and B as asked (not in name order), Holm within each family."""
    rows = acc_rows("zeta", {"clean": 0.9, "single_noise_v70": 0.3, "single_mute_a70": 0.8})
    rows += acc_rows("alpha", {"clean": 0.5, "single_noise_v70": 0.7, "single_mute_a70": 0.8})
    trials = frame(rows)
    samples, summary = summarise(trials)
    report = comparisons(samples, summary, INFO, b=200)
    report = report[report["kind"] == "model_vs_model"].set_index("condition_a")
    assert set(report["model_a"]) == {"alpha"}  # the report orders a pair by name
    families = {cid: c.family for cid, c in INFO.items()}
    two = compare_two(samples, "zeta", "alpha", families=families, b=200)
    assert list(two.index) == sorted(report.index) and set(two["model_a"]) == {"zeta"}
    for cell, row in two.iterrows():
        theirs = report.loc[cell]
        assert (row["n"], row["b"], row["c"]) == (theirs["n"], theirs["c"], theirs["b"])  # A and B swapped
        assert row["diff"] == pytest.approx(-theirs["diff"]) and row["p_holm"] == pytest.approx(theirs["p_holm"])
        assert row["ci_low"] == pytest.approx(-theirs["ci_high"]) and row["family"] == theirs["family"]
    assert two.loc["clean", "diff"] == pytest.approx(0.4) and two.loc["single_mute_a70", "diff"] == 0
    # no common row or no common sample: nothing compared, nothing invented
    assert compare_two(samples, "zeta", "nobody").empty


def test_the_compare_page_orders_cells_by_the_size_of_the_change():
    """The viewer's changed-cells table: largest |B - A| first, its interval B - A, untested cells last."""
    from faultline_eval.viewer.compare import changed_cells

    rows = acc_rows("a", {"clean": 0.9, "single_noise_v70": 0.5, "single_mute_a70": 0.9})
    rows += acc_rows("b", {"clean": 0.8, "single_noise_v70": 0.9, "single_mute_a70": 0.1})
    samples, _ = summarise(frame(rows))
    tested = compare_two(samples, "a", "b", b=200)
    counts = pd.DataFrame({"a_only": [3], "b_only": [1]}, index=["clean"])
    table = changed_cells(["clean", "single_mute_a70", "single_noise_v70", "untested_cell"], tested, counts)
    assert list(table.index) == ["single_mute_a70", "single_noise_v70", "clean", "untested_cell"]
    assert table.loc["single_mute_a70", "change"] == pytest.approx(-0.8)
    assert table.loc["single_noise_v70", "change_low"] <= 0.4 <= table.loc["single_noise_v70", "change_high"]
    assert (table.loc["clean", "a_only"], table.loc["clean", "b_only"], table.loc["untested_cell", "a_only"]) == (
        3,
        1,
        0,
    )
    assert not table.loc["untested_cell", "tested"] and bool(table.loc["single_mute_a70", "significant"])
