"""`sceval report` end to end on lmms-eval-shaped logs of two models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from fixtures import guesser, write_logs
from PIL import Image

from faultline_eval.model_wrappers.reference import answer_messages
from faultline_eval.tasks import sceval_task as task
from sceval_plugin.metrics import compute, trials_frame

SCEVAL = str(Path(sys.executable).with_name("sceval"))
CONDITIONS = [
    "clean",
    "missing_vision",
    "missing_audio",
    "missing_text",
    "shortcut_text_only",
    *[f"single_noise_v{s}" for s in (10, 30, 50, 70)],
    "single_mute_a70",
    "single_drop_words_t70",
    "bi_tv_drop_words_noise_t30_v70",
    "bi_va_noise_mute_v70_a50",
    "tri_drop_words_noise_mute_t30_v70_a30",
    *[f"order{k}_clean" for k in range(4)],
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    ref = write_logs(
        root / "reference", "sceval_reference", lambda doc: answer_messages(task.doc_to_messages(doc)), CONDITIONS
    )
    guess = write_logs(root / "guesser", "guesser", guesser, CONDITIONS)
    return root, ref, guess


@pytest.mark.slow
def test_report_writes_tables_plots_and_every_number(runs, tmp_path):
    root, ref, guess = runs
    done = subprocess.run(
        [
            SCEVAL,
            "report",
            str(root / "reference"),
            str(root / "guesser"),
            "-o",
            str(tmp_path / "r"),
            "--bootstrap",
            "300",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "reading logs" in done.stderr and "2 model(s)" in done.stdout
    out = tmp_path / "r"
    for name in ("single_modality_s70", "joint", "panel", "controls", "diagnostics"):
        for ext in ("md", "csv", "tex"):
            assert (out / f"{name}.{ext}").stat().st_size > 0, (name, ext)
    for figure in ("severity_curves", "joint_scatter", "drop_heatmap"):
        with Image.open(out / f"{figure}.png") as image:
            assert image.width > 300 and image.height > 200
            assert round(image.info["dpi"][0]) >= 200  # stored as pixels per metre
        assert (out / f"{figure}.pdf").read_bytes().startswith(b"%PDF")
    md = (out / "single_modality_s70.md").read_text()
    assert "sceval_reference" in md and "guesser" in md and "noise" in md
    assert "\\begin{tabular}" in (out / "joint.tex").read_text()

    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["models"] == ["guesser", "sceval_reference"]
    assert report["settings"]["bootstrap_resamples"] == 300 and report["settings"]["seed_scheme"] == 2
    conditions = {(c["model"], c["condition_id"]): c for c in report["conditions"]}
    assert conditions[("sceval_reference", "clean")]["accuracy"] == 1.0
    assert conditions[("guesser", "clean")]["invalid_parse_failure"] > 0
    kinds = {c["kind"] for c in report["comparisons"]}
    assert kinds == {"clean_vs_condition", "single_vs_joint", "model_vs_model"}
    # the same numbers as computing in-process from the records
    numbers = compute(trials_frame(ref + guess), b=300)
    again = numbers.summary.set_index(["model", "condition_id"])
    for key, c in conditions.items():
        assert c["accuracy"] == pytest.approx(again.loc[key, "accuracy"])
        assert c["ci_low"] == pytest.approx(again.loc[key, "ci_low"])
    # The demo's items have no text beyond question and options: the no-text control says so.
    assert ("sceval_reference", "missing_text") not in conditions
    assert {(n["model"], n["items"]) for n in report["not_applicable"]} == {("sceval_reference", 30), ("guesser", 30)}
    assert any("no textual evidence beyond the question and options" in n for n in report["notes"])
    assert "‡" in (out / "controls.md").read_text()
    joint = {(j["model"], j["condition"]): j for j in pd.read_csv(out / "joint.csv").to_dict("records")}
    cell = joint[("sceval_reference", "bi_tv_drop_words_noise_t30_v70")]
    weakest = min(
        c["accuracy"]
        for c in report["conditions"]
        if c["model"] == "sceval_reference"
        and c["condition_id"] in ("single_drop_words_t70", *[f"single_noise_v{s}" for s in (10, 30, 50, 70)])
    )
    assert cell["delta_single"] == pytest.approx(weakest - cell["accuracy"]) and cell["single_grid"] == "partial"
    diag = {d["model"]: d for d in report["diagnostics"]}
    assert diag["sceval_reference"]["S_v"] < 0 and diag["sceval_reference"]["FS_tv"] > 0
    orders = [o for o in report["option_orders"] if o["model"] == "sceval_reference"]
    assert orders and orders[0]["consistency"] == 1.0


@pytest.mark.slow
def test_report_is_reproducible_and_refuses_bad_folders(runs, tmp_path):
    root, *_ = runs
    for name in ("a", "b"):
        done = subprocess.run(
            [SCEVAL, "report", str(root / "reference"), "-o", str(tmp_path / name), "--quiet", "--no-model-pairs"],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "a" / "conditions.csv").read_text() == (tmp_path / "b" / "conditions.csv").read_text()
    (tmp_path / "empty").mkdir()
    done = subprocess.run(
        [SCEVAL, "report", str(tmp_path / "empty"), "-o", str(tmp_path / "x")], capture_output=True, text=True
    )
    assert done.returncode == 2 and f"RUNS '{tmp_path / 'empty'}' holds no lmms-eval per-sample logs" in done.stderr
    assert not (tmp_path / "x").exists()  # refused before the report folder was made
    pd.read_csv(tmp_path / "a" / "comparisons.csv")


@pytest.mark.slow
def test_repeated_runs_keep_the_latest_log(runs, tmp_path):
    root, *_ = runs
    import shutil

    copy = tmp_path / "rerun"
    shutil.copytree(root / "reference", copy)
    newer = copy / "20261130_090000_samples_sceval_clean.jsonl"
    lines = [
        json.loads(line) for line in (copy / "20261129_120000_samples_sceval_clean.jsonl").read_text().splitlines()
    ]
    for line in lines:
        line["sceval_record"]["correct"] = 0
        for metric in ("sceval_accuracy", "sceval_worst_variant_accuracy", "sceval_coverage", "sceval_valid_trials"):
            line[metric]["correct"] = 0  # the trial entry (schema 2; "c" in schema 1)
    newer.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    shutil.copy(copy / "20261129_120000_results.json", copy / "20261130_090000_results.json")
    done = subprocess.run(
        [SCEVAL, "report", str(copy), "-o", str(tmp_path / "r"), "--quiet", "--no-model-pairs"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "30 repeated trial(s)" in done.stderr
    summary = pd.read_csv(tmp_path / "r" / "conditions.csv").set_index("condition_id")
    assert summary.loc["clean", "accuracy"] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize(
    "conditions",
    [["bi_tv_drop_words_noise_t30_v70"], ["clean", "prompt_cot_clean"]],
    ids=["the README's sceval_t30_v70", "clean and a prompt variant"],
)
def test_a_run_of_one_condition_gets_a_report(conditions, tmp_path):
    write_logs(tmp_path / "run", "sceval_reference", lambda doc: answer_messages(task.doc_to_messages(doc)), conditions)
    done = subprocess.run(
        [SCEVAL, "report", str(tmp_path / "run"), "-o", str(tmp_path / "r"), "--quiet", "--bootstrap", "100"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert {c["condition_id"] for c in report["conditions"]} == set(conditions)
    assert "note: one model: no model-vs-model comparisons" in done.stderr
    assert "note: figure severity_curves not drawn: no single-modality cell" in done.stderr
    if conditions == ["clean", "prompt_cot_clean"]:
        assert [c["kind"] for c in report["comparisons"]] == ["clean_vs_condition"]
    else:
        assert "note: no clean condition (sceval_reference)" in done.stderr
        assert (tmp_path / "r" / "joint.md").is_file() and not (tmp_path / "r" / "joint_scatter.png").exists()
