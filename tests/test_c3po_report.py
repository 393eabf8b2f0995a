"""The C3PO report on hand-made lmms-eval logs of two models whose every number is known.

alpha (two run folders, run index 0 in each; folder r0 also logged c3po_ic_t1, which repeats its
IC01 trials) and beta (one folder, C3PO_RUNS=2: run indices 0 and 1) answer eight items, two per
template IC01 (IC T1), IC07 (IC T2), CC01 (CC T1), CC08 (CC T2). Per-sample scores:

    sample   alpha (r0, r1)  beta (v0, v1)                  beta, ungradable as missing
    ic01-a   1, 1   -> 1     judge-YES x2  -> 1 (exact-only 0)
    ic01-b   1, 0   -> .5    empty x2      -> 0
    ic07-a   1, 1   -> 1     API failure x2 -> 0           not gradable
    ic07-b   1, 1   -> 1     exact x2      -> 1
    cc01-a   1, 1   -> 1     wrong (audio) x2 -> 0
    cc01-b   1, 1   -> 1     wrong (text) x2  -> 0
    cc08-a   0, 0   -> 0     wrong (audio) x2 -> 0
    cc08-b   0, 0   -> 0     judge error, judge-YES -> .5  1

Human answers exist for ic01-a (right), cc01-a (wrong), cc08-a (right).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from c3po_plugin.report import ReportError, build_report
from c3po_plugin.report.reader import read_runs

TEMPLATES = {
    "IC01": ("AttributeComposition", "ic", 1),
    "IC07": ("ContextualReinterpretation", "ic", 2),
    "CC01": ("AttributeAuthorityArbitration", "cc", 1),
    "CC08": ("CausalMisattribution", "cc", 2),
}
SAMPLES = {f"{t.lower()}-{k}": t for t in TEMPLATES for k in "ab"}
HUMAN = {"ic01-a": 1, "cc01-a": 0, "cc08-a": 1}
METRIC_KEYS = (
    "c3po_accuracy",
    "c3po_worst_run_accuracy",
    "c3po_exact_match_accuracy",
    "c3po_coverage",
    "c3po_graded",
    "c3po_judge_decisions",
    "c3po_judge_errors",
    "c3po_human_accuracy",
)
DATASET = "c3po_demo#abc123"

# (correct, invalid, exact, judged, judge_error, failure_mode) shorthands
RIGHT_EXACT = (1, None, 1, False, False, None)
RIGHT_JUDGE = (1, None, 0, True, False, None)
EMPTY = (0, "empty", 0, False, False, None)
API = (None, "api_failure", 0, False, False, None)
JUDGE_ERROR = (None, None, 0, False, True, None)


def wrong(mode: str) -> tuple:
    return (0, None, 0, True, False, mode)


ALPHA_R0 = dict.fromkeys(SAMPLES, RIGHT_EXACT) | {
    "cc08-a": wrong("text_dominance"),
    "cc08-b": wrong("incomplete_fusion"),
}
ALPHA_R1 = ALPHA_R0 | {"ic01-b": wrong("visual_dominance")}
BETA = {
    0: {
        "ic01-a": RIGHT_JUDGE,
        "ic01-b": EMPTY,
        "ic07-a": API,
        "ic07-b": RIGHT_EXACT,
        "cc01-a": wrong("audio_dominance"),
        "cc01-b": wrong("text_dominance"),
        "cc08-a": wrong("audio_dominance"),
        "cc08-b": JUDGE_ERROR,
    }
}
BETA[1] = BETA[0] | {"cc08-b": RIGHT_JUDGE}


def line(doc_id: int, sample: str, run: int, outcome: tuple, model: str, prompt_id: str) -> str:
    correct, invalid, exact, judged, error, mode = outcome
    template = SAMPLES[sample]
    name, category, tier = TEMPLATES[template]
    prediction = "" if invalid == "empty" else ("gold" if exact else "red car")
    entry = {
        "s": sample,
        "v": run,
        "c": correct,
        "i": invalid,
        "t": template,
        "x": exact,
        "j": judged,
        "e": error,
        "m": mode,
        "h": HUMAN.get(sample),
    }
    record = {
        "model": model,
        "prompt_id": prompt_id,
        "sample_id": sample,
        "template_id": template,
        "template": name,
        "category": category,
        "tier": tier,
        "run": run,
        "dataset": DATASET,
        "question": "What?",
        "gold": "gold",
        "prediction": prediction,
        "judge_id": "qwen3-omni-judge",
        "correct": correct,
        "failure_mode": mode,
        "distractors": {"audio": "red car", "image": "blue bike"},
        "difficulty": 3,
        "human_answer": "gold" if sample in HUMAN else None,
        "human_correct": HUMAN.get(sample),
    }
    out = {
        "doc_id": doc_id,
        "target": "gold",
        "filtered_resps": [prediction],
        **dict.fromkeys(METRIC_KEYS, entry),
        **{f"c3po_invalid_{c}": invalid for c in ("api_failure", "empty", "refusal")},
        "c3po_excluded": "all",
        "c3po_record": repr(record),
    }
    return json.dumps(out)


def write_run(
    folder: Path,
    model: str,
    model_args: str,
    runs: dict[int, dict],
    *,
    tasks=("all",),
    prompt_id: str = "c3po-short-v1",
) -> None:
    folder.mkdir(parents=True)
    stamp = "20261129_120000"
    (folder / f"{stamp}_results.json").write_text(json.dumps({"config": {"model": model, "model_args": model_args}}))
    for task in tasks:
        lines = [
            line(i, s, run, outcomes[s], model, prompt_id)
            for run, outcomes in runs.items()
            for i, s in enumerate(SAMPLES)
            if task == "all" or SAMPLES[s].lower().startswith(task[:2]) and TEMPLATES[SAMPLES[s]][2] == int(task[-1])
        ]
        (folder / f"{stamp}_samples_c3po_{task}.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("c3po_runs")
    write_run(root / "alpha_r0", "alpha", "pretrained=org/alpha", {0: ALPHA_R0}, tasks=("all", "ic_t1"))
    write_run(root / "alpha_r1", "alpha", "pretrained=org/alpha", {0: ALPHA_R1})
    write_run(root / "beta_out" / "beta__model", "beta", "", BETA)  # lmms-eval's model subfolder
    return [root / "alpha_r0", root / "alpha_r1", root / "beta_out"]


@pytest.fixture(scope="module")
def report(runs, tmp_path_factory) -> tuple[Path, dict, dict]:
    out = tmp_path_factory.mktemp("report")
    result = build_report(runs, out, b=300, seed=7)
    return out, result, json.loads((out / "report.json").read_text())


ALPHA, BETA_M = "alpha:org/alpha", "beta"


def acc(report_json: dict, model: str, group: str) -> dict:
    return next(r for r in report_json["accuracy"] if r["model"] == model and r["group"] == group)


@pytest.mark.parametrize(
    "model, group, expected, n",
    [
        (ALPHA, "IC01", 0.75, 2),
        (ALPHA, "IC07", 1.0, 2),
        (ALPHA, "CC01", 1.0, 2),
        (ALPHA, "CC08", 0.0, 2),
        (ALPHA, "IC T1", 0.75, 2),
        (ALPHA, "CC T2", 0.0, 2),
        (ALPHA, "IC", 0.875, 4),
        (ALPHA, "CC", 0.5, 4),
        (ALPHA, "Overall", 5.5 / 8, 8),
        (BETA_M, "IC01", 0.5, 2),
        (BETA_M, "IC07", 0.5, 2),
        (BETA_M, "CC01", 0.0, 2),
        (BETA_M, "CC08", 0.25, 2),
        (BETA_M, "IC", 0.5, 4),
        (BETA_M, "CC", 0.125, 4),
        (BETA_M, "Overall", 2.5 / 8, 8),
        ("Human", "IC T1", 1.0, 1),
        ("Human", "CC T1", 0.0, 1),
        ("Human", "CC T2", 1.0, 1),
        ("Human", "Overall", 2 / 3, 3),
    ],
)
def test_accuracy_by_hand(report, model, group, expected, n):
    """#YES / #Total (paper §3.2): API failures and judge errors count as not correct."""
    row = acc(report[2], model, group)
    assert row["accuracy"] == pytest.approx(expected) and row["n_samples"] == n
    assert row["ci_low"] - 1e-12 <= row["accuracy"] <= row["ci_high"] + 1e-12


@pytest.mark.parametrize(
    "group, expected, n",
    [
        ("IC07", 1.0, 1),
        ("CC08", 0.5, 2),
        ("IC", 2 / 3, 3),
        ("CC", 0.25, 4),
        ("Overall", 3 / 7, 7),
        ("IC01", 0.5, 2),
    ],
)
def test_the_ungradable_as_missing_figure_is_beside_it(report, group, expected, n):
    row = acc(report[2], BETA_M, group)
    assert row["accuracy_gradable"] == pytest.approx(expected) and row["n_gradable"] == n
    alpha = acc(report[2], ALPHA, group)  # nothing ungradable: both readings agree
    assert alpha["accuracy_gradable"] == pytest.approx(alpha["accuracy"]) and alpha["n_gradable"] == alpha["n_samples"]


def test_dedupe_across_task_logs(runs):
    trials, notes = read_runs(runs)
    assert len(trials) == 8 + 8 + 16  # alpha r0's c3po_ic_t1 log repeats 2 trials: kept once
    assert any("2 repeated trial(s)" in n for n in notes)
    assert set(trials["model"]) == {ALPHA, BETA_M}
    assert trials["difficulty"].eq(3).all() and trials["prompt_id"].eq("c3po-short-v1").all()


def test_two_settings_of_one_checkpoint_are_two_models(tmp_path):
    """Issue 35: runs that differ in a model argument are two models, named by it; a store is not one."""
    write_run(tmp_path / "bf16", "alpha", "pretrained=org/alpha,dtype=bfloat16", {0: ALPHA_R0})
    write_run(tmp_path / "fp32", "alpha", "pretrained=org/alpha,dtype=float32,store=none", {0: ALPHA_R1})
    write_run(tmp_path / "fp32_again", "alpha", "dtype=float32,pretrained=org/alpha", {0: ALPHA_R1})
    trials, notes = read_runs([tmp_path / "bf16", tmp_path / "fp32", tmp_path / "fp32_again"])
    assert trials.groupby("model")["folder"].nunique().to_dict() == {
        f"{ALPHA} (dtype=bfloat16)": 1,
        f"{ALPHA} (dtype=float32)": 2,  # two runs of one model
    }
    assert len(trials) == 3 * 8 and notes == []


def test_tier_table_is_table3_layout(report):
    out, _, data = report
    rows = {r["model"]: r for r in data["tier_table"]}
    assert list(rows) == [ALPHA, BETA_M, "Human"]
    assert [k for k in rows[ALPHA] if k != "model"] == ["IC T1", "IC T2", "CC T1", "CC T2", "Overall"]
    assert rows["Human"]["IC T2"] is None and rows["Human"]["Overall"] == pytest.approx(2 / 3)
    md = (out / "tier_table.md").read_text()
    assert "| model | IC T1 | IC T2 | CC T1 | CC T2 | Overall |" in md
    assert f"| {ALPHA} | 75.0 | 100.0 | 100.0 | 0.0 | 68.8 |" in md
    assert "| Human | 100.0 | – | 0.0 | 100.0 | 66.7 |" in md


def test_overall_exact_match_coverage_and_judge(report):
    rows = {r["model"]: r for r in report[2]["overall"]}
    beta = rows[BETA_M]
    assert beta["exact_accuracy"] == pytest.approx(1 / 8)  # judge-accepted answers do not count
    assert rows[ALPHA]["exact_accuracy"] == pytest.approx(5.5 / 8)
    assert beta["ic_accuracy"] == pytest.approx(0.5) and beta["cc_accuracy"] == pytest.approx(0.125)
    assert beta["accuracy_gradable"] == pytest.approx(3 / 7)
    assert (beta["trials"], beta["valid_trials"]) == (16, 13) and beta["coverage"] == pytest.approx(13 / 16)
    assert (beta["judge_decisions"], beta["judge_errors"]) == (9, 1)
    assert (beta["invalid_api_failure"], beta["invalid_empty"], beta["invalid_refusal"]) == (2, 2, 0)
    assert rows["Human"]["accuracy"] == pytest.approx(2 / 3)
    cov = {(r["model"], r["category"]): r for r in report[2]["coverage"]}
    assert cov[(BETA_M, "ic")]["invalid_api_failure"] == 2 and cov[(BETA_M, "cc")]["coverage"] == pytest.approx(7 / 8)


def test_failure_mode_shares(report):
    modes = {(r["model"], r["template_id"]): r for r in report[2]["failure_modes"]}
    cc01 = modes[(BETA_M, "CC01")]
    assert cc01["wrong"] == 4 and cc01["share_audio_dominance"] == 0.5 and cc01["share_text_dominance"] == 0.5
    assert modes[(BETA_M, "CC08")]["share_audio_dominance"] == 1.0
    assert modes[(BETA_M, "IC01")]["wrong"] == 0  # an empty reply is wrong but has no failure mode
    assert modes[(BETA_M, "IC01")]["share_other"] is None
    everything = modes[(BETA_M, "all")]
    assert everything["wrong"] == 6 and everything["share_audio_dominance"] == pytest.approx(4 / 6)
    assert everything["dominance"] == 6 and everything["share_dominance"] == 1.0
    alpha = modes[(ALPHA, "all")]  # text x2, incomplete fusion x2, visual x1
    assert alpha["wrong"] == 5 and alpha["dominance"] == 3 and alpha["share_dominance"] == pytest.approx(0.6)
    assert alpha["share_incomplete_fusion"] == pytest.approx(0.4)
    cohort = modes[("Cohort mean", "all")]  # Table 12: the models' shares averaged, counts summed
    assert cohort["wrong"] == 6 + 5 and cohort["visual_dominance"] == 1
    assert cohort["share_dominance"] == pytest.approx((1.0 + 0.6) / 2)
    assert cohort["share_audio_dominance"] == pytest.approx((4 / 6 + 0) / 2)
    assert modes[("Cohort mean", "IC01")]["share_visual_dominance"] == 1.0  # beta had nothing wrong there
    for r in report[2]["failure_modes"]:
        if r["wrong"]:
            assert sum(
                r[f"share_{m}"]
                for m in (
                    "audio_dominance",
                    "visual_dominance",
                    "text_dominance",
                    "joint_dominance",
                    "incomplete_fusion",
                    "other",
                )
            ) == pytest.approx(1.0)
    md = (report[0] / "failure_modes.md").read_text()
    assert "dom-multi" in md and "| dominance |" in md and "CC08 CausalMisattribution" in md


def test_every_output_exists_and_images_are_valid(report):
    out, result, data = report
    for name in ("tier_table", "template_table", "failure_modes", "overall"):
        for ext in ("md", "csv", "tex"):
            assert (out / f"{name}.{ext}").stat().st_size > 0, (name, ext)
            assert str(out / f"{name}.{ext}") in result["written"]
    for png in ("template_accuracy", "failure_modes", "tier_accuracy", "dominance_split", "difficulty"):
        with Image.open(out / f"{png}.png") as image:
            assert image.format == "PNG" and image.width > 600 and image.height > 400
            assert image.info["dpi"][0] == pytest.approx(200, abs=1)
        assert (out / f"{png}.pdf").read_bytes().startswith(b"%PDF") and str(out / f"{png}.pdf") in result["written"]
    assert "\\begin{tabular}" in (out / "overall.tex").read_text()
    assert "AttributeComposition" in (out / "template_table.md").read_text()
    assert result["models"] == [ALPHA, BETA_M] and result["trials"] == 32
    assert "beta: 31.2 [" in result["summary"] and "42.9 with ungradable trials as missing" in result["summary"]
    assert "repeated trial" in result["summary"] and "judge qwen3-omni-judge" in result["summary"]
    assert data["graded_by"] == {
        ALPHA: ["qwen3-omni-judge"],
        BETA_M: ["qwen3-omni-judge"],
        "Human": ["qwen3-omni-judge"],
    }
    assert (
        "graded by" in (out / "overall.md").read_text() and "ungradable as missing" in (out / "overall.md").read_text()
    )
    assert not any("stand-in" in n for n in result["notes"])  # only the embedding judge is flagged
    assert data["settings"]["bootstrap_resamples"] == 300 and data["settings"]["seed"] == 7
    fp = {f["model"]: f for f in data["fingerprints"]}
    assert fp[ALPHA]["prompt_id"] == ["c3po-short-v1"] and len(fp[ALPHA]["folders"]) == 2


def test_intervals_are_reproducible_with_the_seed(runs, report, tmp_path):
    again = json.loads(Path(build_report(runs, tmp_path / "a", b=300, seed=7)["written"][-1]).read_text())
    assert again["accuracy"] == report[2]["accuracy"]
    other = json.loads(Path(build_report(runs, tmp_path / "b", b=300, seed=8)["written"][-1]).read_text())
    point = [(r["accuracy"]) for r in other["accuracy"]]
    assert point == [r["accuracy"] for r in report[2]["accuracy"]]
    assert [(r["ci_low"], r["ci_high"]) for r in other["accuracy"]] != [
        (r["ci_low"], r["ci_high"]) for r in report[2]["accuracy"]
    ]


def test_verdicts_override_the_judge(runs, tmp_path):
    lines = [
        {"model": "beta", "sample_id": "ic01-a", "run": 0, "verdict": "NO", "exact_match": False},  # was YES
        {"model": "beta", "sample_id": "ic07-b", "run": 0, "verdict": "NO", "exact_match": True},  # exact stays right
        {"model": "beta", "sample_id": "cc01-a", "run": 0, "verdict": "YES", "exact_match": False},  # was NO
        {"model": "beta", "sample_id": "cc08-b", "run": 1, "verdict": None, "exact_match": False},  # now ungradable
        {"model": "beta", "sample_id": "ic01-b", "run": 0, "verdict": "YES", "exact_match": False},  # empty: no effect
        {"model": "beta", "sample_id": "nope", "run": 0, "verdict": "YES", "exact_match": False},  # matches nothing
    ]
    path = tmp_path / "verdicts.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    result = build_report(runs, tmp_path / "r", b=200, seed=7, verdicts=path)
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert acc(data, BETA_M, "IC01")["accuracy"] == pytest.approx(0.25)  # ic01-a .5, ic01-b 0
    assert acc(data, BETA_M, "IC07")["accuracy"] == 0.5 and acc(data, BETA_M, "IC07")["accuracy_gradable"] == 1.0
    assert acc(data, BETA_M, "CC01")["accuracy"] == pytest.approx(0.25)
    assert acc(data, BETA_M, "CC08")["n_gradable"] == 1  # cc08-b has no gradable run left ...
    assert acc(data, BETA_M, "CC08")["n_samples"] == 2  # ... and counts as not correct
    assert acc(data, BETA_M, "Overall")["accuracy"] == pytest.approx(2 / 8)
    assert acc(data, BETA_M, "Overall")["accuracy_gradable"] == pytest.approx(2 / 6)
    assert acc(data, ALPHA, "Overall")["accuracy"] == pytest.approx(5.5 / 8)  # other model untouched
    modes = {(r["model"], r["template_id"]): r for r in data["failure_modes"]}
    assert modes[(BETA_M, "IC01")]["audio_dominance"] == 1  # "red car" repeats the audio's claim
    assert modes[(BETA_M, "CC01")]["wrong"] == 3
    beta = next(r for r in data["overall"] if r["model"] == BETA_M)
    assert beta["judge_errors"] == 2
    assert any("1 line(s) matched no trial" in n for n in result["notes"])
    assert any("re-graded 4 trial(s)" in n for n in result["notes"])


def test_human_lines_of_a_verdict_file_regrade_the_human_answers(runs, tmp_path):
    lines = [
        {"model": "Human", "sample_id": "ic01-a", "run": 0, "verdict": "NO", "exact_match": False},  # was right
        {"model": "Human", "sample_id": "cc01-a", "run": 0, "verdict": "YES", "exact_match": False},  # was wrong
        {"model": "Human", "sample_id": "cc08-a", "run": 0, "verdict": None, "exact_match": False},  # ungraded now
    ]
    path = tmp_path / "verdicts.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    result = build_report(runs, tmp_path / "r", b=200, seed=7, verdicts=path)
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert acc(data, "Human", "IC01")["accuracy"] == 0.0 and acc(data, "Human", "CC01")["accuracy"] == 1.0
    assert acc(data, "Human", "Overall")["accuracy"] == pytest.approx(1 / 3)  # the ungraded answer is not correct
    assert acc(data, "Human", "Overall")["n_samples"] == 3 and acc(data, "Human", "Overall")["n_gradable"] == 2
    assert acc(data, "Human", "Overall")["accuracy_gradable"] == pytest.approx(0.5)
    assert acc(data, ALPHA, "Overall")["accuracy"] == pytest.approx(5.5 / 8)  # models untouched
    assert any("re-graded the human answers of 3 item(s)" in n for n in result["notes"])


def test_refuses_mixed_prompt_ids(runs, tmp_path):
    write_run(tmp_path / "alpha_r2", "alpha", "pretrained=org/alpha", {0: ALPHA_R0}, prompt_id="c3po-long-v2")
    with pytest.raises(
        ReportError,
        match=r"alpha:org/alpha.*prompt_id.*c3po-long-v2.*c3po-short-v1|"
        r"alpha:org/alpha.*prompt_id.*c3po-short-v1.*c3po-long-v2",
    ):
        build_report([*runs, tmp_path / "alpha_r2"], tmp_path / "r", b=50)


def test_the_index_lists_every_file_with_what_it_answers_figures_first(report):
    out, result, data = report
    index = (out / "index.md").read_text()
    written = {Path(p).name for p in result["written"]}
    assert written == {p.name for p in out.iterdir()} and "index.md" in written
    assert written <= set(re.findall(r"\]\(([^)]+)\)", index))
    assert index.index("## Open first") < index.index("## Units and signs") < index.index("## Figures")
    assert index.index("## Figures") < index.index("## Tables")
    assert "1. [tier_accuracy.png](tier_accuracy.png): Accuracy (%) per category and tier" in index
    assert set(data["conventions"]) == {"accuracy", "points", "interval"}
    assert data["figure_captions"]["template_accuracy"].startswith("Accuracy (%) per template")


def test_template_bars_are_named_and_a_measured_zero_is_marked(report, monkeypatch):
    """The template figure names every template (id and name) and tells 0 % from no data."""
    import pandas as pd

    from c3po_plugin.report import plots
    from sceval_plugin.report.plots import pyplot

    accuracy = pd.DataFrame(report[2]["accuracy"])
    templates = accuracy[accuracy["level"] == "template"]
    zero = templates[templates["accuracy"] == 0]
    assert len(zero), "the fixture has a template some model got all wrong"
    captured = []
    monkeypatch.setattr(plots, "save", lambda fig, path: captured.append(fig) or [])
    plots.template_accuracy(accuracy, Path("unused"))
    ax = captured[0].axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "IC01 AttributeComposition" in labels and labels.index("IC01 AttributeComposition") == 0
    texts = [t.get_text() for t in ax.texts]
    assert sum(t.startswith("0% (n=") for t in texts) == len(zero)
    marks = [line for line in ax.get_lines() if line.get_gid() == plots.ZERO_MARK]
    assert sum(len(line.get_xdata()) for line in marks) == len(zero)
    assert_readable_in_a_page(captured[0])
    pyplot().close(captured[0])


def assert_readable_in_a_page(fig) -> None:
    """Shown about 800 px wide (8.3 in at 96 dpi) in the report and viewer pages, the figure's
    text stays at 9 pt or more: the drawing is at most 8.3 in wide and no text is under 9 pt."""
    from matplotlib.text import Text

    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert texts and min(t.get_fontsize() for t in texts) >= 9, sorted({t.get_fontsize() for t in texts})
    drawn = fig.get_tightbbox(fig.canvas.get_renderer())
    assert drawn.width <= 8.3, drawn.width  # inches


def test_the_template_grid_of_many_models_is_split_into_panels_readable_in_a_page(report, monkeypatch):
    import pandas as pd

    from c3po_plugin.report import plots
    from sceval_plugin.report.plots import pyplot

    accuracy = pd.DataFrame(report[2]["accuracy"])
    one = accuracy[accuracy["model"] == BETA_M]
    many = pd.concat([accuracy, *(one.assign(model=f"m{k:02d}") for k in range(12))])
    captured = []
    monkeypatch.setattr(plots, "save", lambda fig, path: captured.append(fig) or [])
    plots.template_accuracy(many, Path("unused"))
    panels = [ax for ax in captured[0].axes if ax.images]
    shown = [label.get_text() for ax in panels for label in ax.get_xticklabels()]
    assert len(panels) == 3 and sorted(shown) == sorted(many["model"].unique())  # 15 models, 5 a panel
    assert_readable_in_a_page(captured[0])
    pyplot().close(captured[0])


def test_many_models_get_a_template_grid_instead_of_bars(report, monkeypatch):
    """Past four models a bar per model and template would not fit: a templates x models grid,
    a cell without answers saying so."""
    import pandas as pd

    from c3po_plugin.report import plots

    accuracy = pd.DataFrame(report[2]["accuracy"])
    one = accuracy[accuracy["model"] == BETA_M]
    more = pd.concat([accuracy, *(one.assign(model=f"m{k}") for k in range(plots.MAX_BAR_MODELS))])
    captured = []
    monkeypatch.setattr(plots, "save", lambda fig, path: captured.append(fig) or [])
    plots.template_accuracy(more, Path("unused"))
    panels = [ax for ax in captured[0].axes if ax.images]
    templates = more[more["level"] == "template"]
    shapes = [ax.images[0].get_array().shape for ax in panels]
    assert not any(ax.patches for ax in panels) and {rows for rows, _ in shapes} == {templates["group"].nunique()}
    assert sum(columns for _, columns in shapes) == templates["model"].nunique()
    missing = templates["group"].nunique() * templates["model"].nunique() - len(templates)
    assert missing and sum(t.get_text() == "no data" for ax in panels for t in ax.texts) == missing


def test_a_folder_without_c3po_logs_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportError, match="no C3PO per-sample logs"):
        build_report([tmp_path / "empty"], tmp_path / "r", b=50)


def test_a_group_without_human_answers_gets_no_bar_and_a_note(report):
    """Missing data is not zero: Human has answers in IC T1, CC T1, CC T2 only."""
    import pandas as pd

    from c3po_plugin.report import plots
    from sceval_plugin.report.plots import pyplot

    accuracy = pd.DataFrame(report[2]["accuracy"])
    cells = accuracy[accuracy["level"] == "cell"]
    groups = ["IC T1", "IC T2", "CC T1", "CC T2"]
    fig, ax = pyplot().subplots()
    notes = plots._grouped_bars(ax, cells, groups, [ALPHA, BETA_M, "Human"])
    bars = {
        c.get_label(): [round(p.get_height(), 6) for p in c.patches] for c in ax.containers if hasattr(c, "patches")
    }
    pyplot().close(fig)
    assert bars["Human"] == [100.0, 0.0, 100.0]  # IC T1, CC T1 (a real 0), CC T2; nothing for IC T2
    assert len(bars[ALPHA]) == len(bars[BETA_M]) == 4
    assert notes == ["Human: no human answers for IC T2 (no bar drawn)"]


def test_one_dataset_found_in_two_folders_is_one_dataset():
    """Issue 24: the check compares the items' content fingerprint, not the folder in the spec."""
    import pandas as pd

    from c3po_plugin.report.reader import check_fingerprints

    trials = pd.DataFrame(
        {
            "model": ["m", "m"],
            "prompt_id": ["p", "p"],
            "folder": ["a", "b"],
            "dataset": ["/mnt/a/c3po#c1-0123456789abcdef", "/home/b/c3po#c1-0123456789abcdef"],
        }
    )
    check_fingerprints(trials)
    trials.loc[1, "dataset"] = "/home/b/c3po#c1-fedcba9876543210"
    with pytest.raises(ReportError, match="mix fingerprint values"):
        check_fingerprints(trials)
