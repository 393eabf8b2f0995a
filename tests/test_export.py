"""`faultline export RUN`: the .eval_results file against the format's documented fields, and a
per-trial dataset that `datasets.load_dataset` reads back identical to the run's trial table."""

import datetime as dt

import datasets
import pandas as pd
import pytest
import yaml
from fixtures import guesser, write_logs

from faultline_app.faultline_cli import main
from faultline_app.share import trial_frame
from sceval_plugin.report import build_report

CONDITIONS = ["clean", "single_noise_v70"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export") / "run"
    write_logs(folder, "guesser", guesser, CONDITIONS)
    build_report([folder], folder / "report", b=50, figures=False, progress=False)
    return folder


def test_eval_results_entries_have_the_formats_fields(run):
    assert main(["export", str(run)]) == 0
    entries = yaml.safe_load((run / "export" / ".eval_results" / "sceval.yaml").read_text())
    conditions = pd.read_csv(run / "report" / "conditions.csv")
    assert len(entries) == len(conditions) == len(CONDITIONS)
    for entry in entries:
        # the fields of Hugging Face's .eval_results entries: dataset.id, dataset.task_id, value, date, source.name
        assert set(entry) <= {"dataset", "value", "date", "source", "notes"}
        assert isinstance(entry["dataset"]["id"], str) and entry["dataset"]["task_id"] in CONDITIONS
        assert isinstance(entry["value"], float) and 0 <= entry["value"] <= 100
        dt.date.fromisoformat(entry["date"])
        assert entry["source"]["name"].startswith("faultline-eval")
    clean = next(e for e in entries if e["dataset"]["task_id"] == "clean")
    assert clean["value"] == round(100 * conditions.set_index("condition_id").loc["clean", "accuracy"], 2)


def test_the_dataset_reads_back_identical(run, tmp_path):
    out = tmp_path / "ex"
    assert main(["export", str(run), "-o", str(out)]) == 0
    back = datasets.load_dataset(str(out / "dataset"), split="train").to_pandas()
    expected = trial_frame(run)
    pd.testing.assert_frame_equal(back, expected)
    card = (out / "dataset" / "README.md").read_text()
    assert "guesser" in card and "seed scheme" in card


def test_a_run_without_its_report_is_refused_with_the_fix(tmp_path, capsys):
    folder = tmp_path / "bare"
    folder.mkdir()
    assert main(["export", str(folder)]) != 0
    assert "sceval report" in capsys.readouterr().err
