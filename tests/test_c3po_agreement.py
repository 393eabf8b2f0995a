"""Judge validation as in the C3PO paper's Appendix D: agreement and Cohen's kappa between two
judges per evaluated model, with mean, min and max across models; verdict files by hand."""

from __future__ import annotations

import json

import pytest

from c3po_plugin.report.verdict_files import agreement
from faultline_app.c3po_cli import main

# (model, sample, verdict A, verdict B, exact match)
LINES = (
    # m1: 4 decided pairs, 3 agree: YES/YES, NO/NO, NO/NO, YES/NO -> kappa 0.5
    [
        ("m1", f"s{i}", a, b, False)
        for i, (a, b) in enumerate([("YES", "YES"), ("NO", "NO"), ("NO", "NO"), ("YES", "NO")])
    ]
    # m2: perfect agreement on 2 YES and 2 NO -> kappa 1; one exact match; one judge error
    + [
        ("m2", f"s{i}", a, b, False)
        for i, (a, b) in enumerate([("YES", "YES"), ("YES", "YES"), ("NO", "NO"), ("NO", "NO")])
    ]
    + [("m2", "s8", None, None, True), ("m2", "s9", "YES", None, False)]
    # Human: total disagreement; listed, but not part of the judge's validation summary
    + [("Human", "s0", "YES", "NO", False), ("Human", "s1", "NO", "YES", False)]
)


def write(path, index: int, judge_id: str) -> str:
    rows = [
        {"model": m, "sample_id": s, "run": 0, "verdict": v[index], "exact_match": x, "judge_id": judge_id}
        for m, s, *v, x in LINES
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture
def files(tmp_path):
    return write(tmp_path / "a.jsonl", 0, "judge-a"), write(tmp_path / "b.jsonl", 1, "judge-b")


def test_agreement_and_kappa_per_model_then_across_models(files):
    result = agreement(*files)
    per_model = {r["model"]: r for r in result["per_model"]}
    assert list(per_model) == ["m1", "m2", "Human"]
    m1, m2 = per_model["m1"], per_model["m2"]
    # m1: p_o = 3/4, p_e = (2/4)(1/4) + (2/4)(3/4) = 1/2, kappa = (3/4 - 1/2) / (1/2) = 1/2
    assert (m1["compared"], m1["agreement"], m1["kappa"]) == (4, 0.75, pytest.approx(0.5))
    assert m1["confusion"] == {"YES/YES": 1, "YES/NO": 1, "NO/YES": 0, "NO/NO": 2}
    assert (m2["compared"], m2["agreement"], m2["kappa"]) == (4, 1.0, 1.0)
    assert (m2["exact_match_trials"], m2["either_failed"]) == (1, 1)
    assert per_model["Human"]["kappa"] == pytest.approx(-1.0)
    assert result["models"] == 2  # Human is left out of the summary
    assert result["agreement"] == {"mean": pytest.approx(0.875), "min": 0.75, "max": 1.0}
    assert result["kappa"] == {"mean": pytest.approx(0.75), "min": pytest.approx(0.5), "max": 1.0}
    assert result["pooled"]["compared"] == 10  # one pooled kappa is reported beside, not instead
    assert (result["judge_a"], result["judge_b"]) == ("judge-a", "judge-b")


def test_the_final_grade_reading_counts_exact_matches_as_agreed_yes(files):
    m2 = {r["model"]: r for r in agreement(*files, include_exact=True)["per_model"]}["m2"]
    assert m2["compared"] == 5 and m2["confusion"]["YES/YES"] == 3


def test_the_command_prints_one_line_per_model_and_the_spread(files, capsys):
    assert main(["judge-agreement", *files]) == 0
    out = capsys.readouterr().out
    assert "m1" in out and "0.750" in out and "0.50" in out
    assert (
        "across 2 evaluated model(s) (Human left out): agreement mean 0.875; kappa mean 0.75, min 0.50, max 1.00" in out
    )
