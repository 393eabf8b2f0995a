"""The probes' numbers (trust bias, desync slope, budget and position gaps) on hand-made trial
tables, and the probe part of `sceval report` through the real lmms-eval CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sceval_plugin.metrics.probe_effects import family_metrics, probe_conditions, trust_bias
from sceval_plugin.metrics.protocol import TRIAL_COLUMNS, catalogue_info, compute

INFO = catalogue_info()
EXTRA = ("confidence", "source", "donor", "follows_donor", "donor_key_map")


def trial(cid, sample, correct, answer, *, donor=None, follows=None, key_map=None, na=None):
    return {
        "model": "m",
        "condition_id": cid,
        "sample_id": sample,
        "variant": 0,
        "correct": np.nan if correct is None else float(correct),
        "invalid": None,
        "n_options": 4,
        "prompt_id": "sceval-json-v1",
        "dataset": "d",
        "answer": answer,
        "not_applicable": na,
        "confidence": "high",
        "source": "s",
        "donor": donor,
        "follows_donor": follows,
        "donor_key_map": key_map,
    }


def frame(rows):
    return pd.DataFrame(rows)[list(TRIAL_COLUMNS) + list(EXTRA)]


def test_trust_bias_counts_answers_that_follow_the_donor_under_both_readings():
    cid = "probe_mismatch_audio_category"
    rows = [trial("clean", s, 1, "A") for s in ("s1", "s2", "s3", "s4", "s5")]
    rows[1]["answer"] = "C"  # the model's clean answer to s2 is its option C
    rows += [
        trial(cid, "s1", 0, "B", donor="s2", follows="B", key_map="-BD-"),  # follows the donor's gold
        trial(cid, "s2", 1, "A", donor="s3", follows="C", key_map="-CB-"),  # keeps its own evidence
        trial(cid, "s3", 0, "D", donor="s4", follows="C", key_map="--CD"),  # neither
        trial(cid, "s4", 0, "B", donor="s1", follows=None, key_map="----"),  # undetermined
        trial(cid, "s5", None, None, donor="s1", follows="B", key_map="-B--"),  # invalid output: not counted
    ]
    t = frame(rows)
    gold = trust_bias(t, INFO, b=200).set_index(["modality", "tier"])
    assert gold.loc[("audio", "category"), "trust_bias"] == pytest.approx(1 / 3)
    assert gold.loc[("audio", "category"), "follows_item"] == pytest.approx(1 / 3)
    assert gold.loc[("audio", "category"), "follows_neither"] == pytest.approx(1 / 3)
    assert tuple(gold.loc[("audio", "category"), ["determinable", "undetermined"]]) == (3, 1)
    assert gold.loc[("audio", "all"), "trust_bias"] == pytest.approx(1 / 3)
    # donor_clean_answer: s1's donor s2 was answered C clean, which maps to s1's D (not its answer B);
    # s2's donor s3 was answered A clean, mapping to "-" (undetermined); s3's donor s4: A -> "-".
    clean = trust_bias(t, INFO, reading="donor_clean_answer", b=200).set_index(["modality", "tier"])
    assert tuple(clean.loc[("audio", "category"), ["determinable", "undetermined"]]) == (1, 3)
    assert clean.loc[("audio", "category"), "trust_bias"] == 0.0
    with pytest.raises(ValueError, match="trust-bias reading"):
        trust_bias(t, INFO, reading="mystery")


def test_desync_slope_budget_gap_position_gap_and_distractor_effect():
    samples = [f"s{i}" for i in range(10)]

    def cell(cid, right):  # ``right`` of the ten samples answered correctly
        return [trial(cid, s, int(k < right), "A") for k, s in enumerate(samples)]

    rows = cell("clean", 10)
    for shift, right in ((-2.0, 6), (-1.0, 8), (1.0, 9), (2.0, 7)):
        label = f"{'minus' if shift < 0 else 'plus'}{abs(shift):g}s"
        rows += cell(f"probe_desync_{label}", right)
    rows += cell("probe_frame_budget_1", 4) + cell("probe_frame_budget_8", 9) + cell("probe_frame_budget_16", 10)
    rows += cell("probe_key_frame_first", 9) + cell("probe_key_frame_last", 5)
    rows += cell("probe_distractor_audio", 7) + cell("probe_distractor_text", 10)
    rows += cell("probe_distractor_appended_audio", 0)  # a named option: its own column, not in the mean
    t = frame(rows)
    numbers = compute(t, INFO, b=200, model_pairs=False)
    table = probe_conditions(numbers.summary, numbers.comparisons, numbers.not_applicable, INFO, t)
    m = family_metrics(table).iloc[0]
    # accuracy on |shift|: (0, 1.0), (1, 0.8), (1, 0.9), (2, 0.6), (2, 0.7)
    x, y = np.array([0, 1, 1, 2, 2]), np.array([1.0, 0.8, 0.9, 0.6, 0.7])
    assert m["desync_slope"] == pytest.approx(np.polyfit(x, y, 1)[0])
    assert m["desync_slope_late"] == pytest.approx(np.polyfit([0, 1, 2], [1.0, 0.9, 0.7], 1)[0])
    assert m["budget_gap_1"] == pytest.approx(0.5) and m["budget_gap_16"] == pytest.approx(-0.1)
    assert m["budget_gap"] == pytest.approx(0.5)
    assert m["position_gap"] == pytest.approx(0.4)
    assert m["distractor_effect"] == pytest.approx((0.3 + 0.0) / 2) and m["distractor_effect_appended_audio"] == 1.0
    # every probe family is its own Holm family in the clean-vs-condition tests, its named options another
    families = set(numbers.comparisons.loc[numbers.comparisons["condition_b"].str.startswith("probe_"), "family"])
    assert families == {
        "probe_desync",
        "probe_frame_budget",
        "probe_key_frame",
        "probe_distractor",
        "probe_distractor_options",
    }
    row = table.set_index("condition_id").loc["probe_frame_budget_1"]
    assert row["drop"] == pytest.approx(0.6) and row["p_holm"] >= row["p_mcnemar"]


BIN = Path(sys.executable).parent


@pytest.mark.slow
def test_probes_run_through_lmms_eval_and_sceval_report_writes_their_tables(tmp_path):
    env = {**os.environ, "SCEVAL_CACHE": str(tmp_path / "cache")}
    tasks = "sceval_clean,sceval_probes_mismatch,sceval_probes_key_frame,sceval_probes_desync"
    done = subprocess.run(
        [
            str(BIN / "lmms-eval"),
            "--model",
            "sceval_reference",
            "--tasks",
            tasks,
            "--log_samples",
            "--output_path",
            "out/",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "sceval_probe_desync_minus8s" in done.stdout and "sceval_probe_key_frame_middle" in done.stdout
    line = json.loads(next(tmp_path.rglob("*_samples_sceval_probe_key_frame_first.jsonl")).read_text().splitlines()[-1])
    assert line["sceval_record"]["probe"] == {
        "family": "key_frame",
        "name": "key_frame",
        "parameter": "first",
        "not_applicable": "single_frame",
        "donor": None,
    }  # a size item
    done = subprocess.run(
        [str(BIN / "sceval"), "report", "out", "-o", "report", "--bootstrap", "200", "--quiet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = tmp_path / "report"
    for name in (
        "probes_mismatch",
        "probes_key_frame",
        "probes_desync",
        "probes_summary",
        "probes_trust_bias",
        "probes_calibration",
    ):
        assert (report / f"{name}.md").is_file() and (report / f"{name}.csv").is_file(), name
    for name in ("probe_desync", "probe_key_frame"):
        assert (report / f"{name}.png").stat().st_size > 10_000 and (report / f"{name}.pdf").is_file()
    assert not (report / "probe_frame_budget.png").exists()  # not run: not drawn, and said so
    assert "figure probe_frame_budget not drawn" in done.stderr
    data = json.loads((report / "report.json").read_text())["probes"]
    trust = {(r["modality"], r["tier"]): r for r in data["trust_bias"]}
    assert set(trust) == {(m, t) for m in ("text", "vision", "audio") for t in ("random", "category", "answer", "all")}
    assert all(0 <= r["trust_bias"] <= 1 and r["determinable"] > 0 for r in trust.values())
    desync = pd.read_csv(report / "probes_desync.csv")
    assert len(desync) == 10 and (desync["p_holm"] >= desync["p_mcnemar"]).all()
    assert desync.set_index("parameter").loc[0.5, "accuracy"] > desync.set_index("parameter").loc[-8.0, "accuracy"]
    assert "single_frame" in json.dumps(json.loads((report / "report.json").read_text())["not_applicable"])
