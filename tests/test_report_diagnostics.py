"""`sceval report` writes the Appendix-C diagnostics from lmms-eval-shaped logs of two models."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_report import SCEVAL, write_logs
from test_viewer import report_links, selected

from faultline_app.viewer import write_site
from faultline_app.viewer.budget import Budget
from faultline_eval.model_wrappers.reference import answer_messages
from faultline_eval.tasks import sceval_task as task
from sceval_plugin.metrics.reliability import CONFIDENCE_VALUES

CONDITIONS = [
    "clean",
    "single_drop_words_t30",
    "single_noise_v30",
    "single_noise_v70",
    "single_mute_a30",
    "bi_tv_drop_words_noise_t30_v30",
    "bi_tv_drop_words_noise_t30_v70",
    "tri_drop_words_noise_mute_t30_v70_a30",
    "prompt_cot_clean",
]


def _hash(text: str) -> int:
    return int(hashlib.blake2b(text.encode(), digest_size=4).hexdigest(), 16)


def two_sources(doc: dict) -> None:
    """The demo has one source; label half its items as a second one."""
    doc["source"] = "demo-b" if _hash(doc["sample_id"]) % 2 else "demo-a"


def reference(doc: dict) -> str:
    two_sources(doc)
    return answer_messages(task.doc_to_messages(doc))


def confident_guesser(doc: dict) -> str:
    """Guesses with a stated confidence; every 5th reply unparseable."""
    two_sources(doc)
    h = _hash(doc["row_id"])
    if h % 5 == 0:
        return "no idea"
    return json.dumps({"answer": "ABCD"[h % 4], "confidence": ("low", "medium", "high")[h % 3]})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("diag-runs")
    ref = write_logs(root / "reference", "sceval_reference", reference, CONDITIONS)
    guess = write_logs(root / "guesser", "guesser", confident_guesser, CONDITIONS)
    families = root / "families.csv"
    families.write_text("model,family\nsceval_reference,oracle\nguesser,chance\n")
    humans = root / "humans.csv"
    items = sorted({r["sample_id"] for r in ref})
    with humans.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["sample_id", "condition_id", "annotator", "correct"])
        for k, sid in enumerate(items):
            writer.writerow([sid, "clean", "ann1", 1])
            writer.writerow([sid, "single_noise_v70", "ann1", int(k % 10 != 0)])  # humans miss 3 of 30
    return root, ref, guess


def report(root: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            SCEVAL,
            "report",
            str(root / "reference"),
            str(root / "guesser"),
            "-o",
            str(out),
            "--bootstrap",
            "200",
            "--quiet",
            "--no-model-pairs",
            *extra,
        ],
        capture_output=True,
        text=True,
    )


@pytest.mark.slow
def test_report_writes_every_diagnostic(runs, tmp_path):
    root, ref, guess = runs
    done = report(
        root,
        tmp_path / "r",
        "--families",
        str(root / "families.csv"),
        "--humans",
        str(root / "humans.csv"),
        "--by-source",
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path / "r"
    for name in (
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
    ):
        for ext in ("md", "csv", "tex"):
            assert (out / f"{name}.{ext}").stat().st_size > 0, (name, ext)
    assert (out / "accuracy_by_source.csv").is_file()
    diag = json.loads((out / "report.json").read_text())["appendix_c"]

    # calibration of the guesser on clean, recomputed from its own records
    rated = [r for r in guess if r["condition_id"] == "clean" and r["correct"] is not None]
    ece = 0.0
    for level, value in CONFIDENCE_VALUES.items():
        cell = [r["correct"] for r in rated if r["confidence"] == level]
        ece += len(cell) * abs(sum(cell) / len(cell) - value) if cell else 0
    wrong = [r for r in rated if not r["correct"]]
    row = next(r for r in diag["calibration"]["rows"] if r["model"] == "guesser" and r["condition_id"] == "clean")
    assert row["ece"] == pytest.approx(ece / len(rated))
    assert row["rho_oc"] == pytest.approx(sum(r["confidence"] == "high" for r in wrong) / len(wrong))

    # per-source accuracy from the records
    clean_b = [r for r in ref if r["condition_id"] == "clean" and _hash(r["sample_id"]) % 2]
    row = next(
        r
        for r in diag["accuracy_by_source"]["rows"]
        if r["model"] == "sceval_reference" and r["condition_id"] == "clean" and r["source"] == "demo-b"
    )
    assert row["n"] == len(clean_b) and row["accuracy"] == pytest.approx(1.0)
    assert {r["source"] for r in diag["source_breakdown"]["rows"]} == {"demo-a", "demo-b"}

    # sub-additivity on the two canonical T+V cells both models ran with their singles
    tv = {r["model"]: r for r in diag["sub_additivity"]["rows"] if r["block"] == "tv"}
    assert tv["sceval_reference"]["n_cells"] == 2 and 0 <= tv["guesser"]["p_bootstrap"] <= 1
    families = {r["family"]: r for r in diag["families"]["rows"]}
    assert families["oracle"]["n"] == 1 and families["oracle"]["clean"] == 1.0
    assert families["gap (oracle − chance)"]["clean"] > 0.3
    invalid = {(r["model"], r["group"]): r for r in diag["invalid_items"]["rows"]}
    assert invalid[("guesser", "bimodal")]["items_parse_failure"] > 0
    bimodal = invalid[("sceval_reference", "bimodal")]
    assert bimodal["valid_items"] == bimodal["items"] - bimodal["items_any_invalid"]
    shift = {r["model"]: r for r in diag["prompt_shift"]["rows"]}
    assert shift["guesser"]["bases"] == 1 and shift["guesser"]["coverage_json"] < 1
    overlap = {r["condition_id"]: r for r in diag["failure_overlap"]["rows"]}
    assert overlap["clean"]["models"] == 2 and overlap["clean"]["union"] >= overlap["clean"]["idiosyncratic"]
    excess = {r["model"]: r for r in diag["human_excess_drop"]["rows"]}
    assert excess["sceval_reference"]["human_drop"] == pytest.approx(0.1)
    assert 0 < excess["guesser"]["n"] <= 30  # items the guesser answered validly under both
    audit = {r["condition_id"]: r for r in diag["human_audit"]["rows"]}
    assert audit["single_noise_v70"]["human_accuracy"] == pytest.approx(0.9)
    assert "human drop" in (out / "human_excess_drop.md").read_text()
    assert "\\begin{tabular}" in (out / "sub_additivity.tex").read_text()

    # --by-source: the whole report once per source, matching the split accuracies
    for source in ("demo-a", "demo-b"):
        part = json.loads((out / "by_source" / source / "report.json").read_text())
        clean = next(c for c in part["conditions"] if c["model"] == "guesser" and c["condition_id"] == "clean")
        split = next(
            r
            for r in diag["accuracy_by_source"]["rows"]
            if r["model"] == "guesser" and r["condition_id"] == "clean" and r["source"] == source
        )
        assert clean["accuracy"] == pytest.approx(split["accuracy"]) and clean["n_samples"] == split["n"]
        assert (out / "by_source" / source / "joint.md").is_file()
        assert (out / "by_source" / source / "seed_stability.csv").is_file()

    # the viewer of this report: Table 11's and Table 10's numbers open the trials they were computed from
    write_site(
        [root / "reference", root / "guesser"],
        tmp_path / "site",
        benchmarks=("sceval",),
        sceval_report=out,
        budget=Budget(per_cell=0),
    )
    tables = report_links(tmp_path / "site" / "sceval" / "index.html")
    (clean, href), *_ = tables["Per-source breakdown (Table 11)"]["guesser"]  # its last row: source demo-b
    trials = selected(href)
    assert {(t["model"], t["source"]) for t in trials} == {("guesser", "demo-b")} and "/clean-" in href
    assert len(trials) == sum(r["condition_id"] == "clean" and _hash(r["sample_id"]) % 2 for r in guess)
    assert clean == f"{100 * _accuracy(trials):.1f}"
    (cot, href), *_ = [(t, h) for t, h in tables["Prompt robustness (Table 10)"]["guesser"] if "prompt_cot_clean" in h]
    trials = selected(href)
    assert {t["model"] for t in trials} == {"guesser"} and cot == f"{100 * _accuracy(trials):.1f}"
    assert cot == f"{100 * shift['guesser']['accuracy_cot']:.1f}"
    # Table 20: a family's mean clean averages its models' clean trials; a gap row opens both families'
    family_rows = tables["Model families (Table 20)"]
    (clean, href), *_ = family_rows["chance"]
    trials = selected(href)
    assert {t["model"] for t in trials} == {"guesser"} and clean == f"{100 * _accuracy(trials):.1f}"
    assert {t["model"] for t in selected(family_rows["gap (oracle − chance)"][0][1])} == {"guesser", "sceval_reference"}


def _accuracy(trials: list[dict]) -> float:
    """Eq. 3 from the viewer's trials: per sample the mean over its valid variants, then the mean."""
    scores: dict[str, list[bool]] = {}
    for t in trials:
        if t["verdict"] in ("correct", "wrong"):
            scores.setdefault(t["sample_id"], []).append(t["verdict"] == "correct")
    return sum(sum(v) / len(v) for v in scores.values()) / len(scores)


@pytest.mark.slow
def test_old_logs_and_bad_inputs_are_reported_not_fatal(runs, tmp_path):
    root, *_ = runs
    old = tmp_path / "old"
    shutil.copytree(root, old)
    for log in old.rglob("*.jsonl"):  # logs from before the trial entry carried confidence and source
        text = re.sub(r', "confidence": (?:null|"[a-z]+"), "source": "[^"]*"\}', "}", log.read_text())
        log.write_text(text)
    done = report(old, tmp_path / "r", "--humans", str(root / "reference"))  # a log folder as the humans
    assert done.returncode == 0, done.stderr
    assert "calibration: the logs carry no stated confidence" in done.stderr
    assert "source_breakdown: the logs carry no item source" in done.stderr
    assert (tmp_path / "r" / "sub_additivity.md").is_file()
    assert not (tmp_path / "r" / "calibration.md").exists()
    audit = json.loads((tmp_path / "r" / "report.json").read_text())["appendix_c"]["human_audit"]["rows"]
    assert {r["condition_id"]: r["human_accuracy"] for r in audit}["clean"] == 1.0  # the reference model's logs

    bad = tmp_path / "families.csv"
    bad.write_text("name,group\nx,y\n")
    done = report(root, tmp_path / "x", "--families", str(bad))
    assert done.returncode == 2 and "columns model,family" in done.stderr
    humans = tmp_path / "humans.csv"
    humans.write_text("sample_id,condition_id,correct\ndemo-count-00,clean,maybe\n")
    done = report(root, tmp_path / "x", "--humans", str(humans))
    assert done.returncode == 2 and f"{humans}:2" in done.stderr and "maybe" in done.stderr
