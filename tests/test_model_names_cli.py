"""A model is what was run (issue 35), through the real CLIs: ``faultline-eval`` runs of
``modality_oracle`` on ``sceval_clean`` with ``modality=vision`` and ``modality=audio`` into one
output folder are two models in ``sceval report`` and in the viewer, named by the argument that
differs; a ``label=`` is the name; a run differing only in a placement argument (``device=cpu``) is a
rerun of one model. Four lmms-eval starts (~13 s each on 2 idle cores)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
LIMIT = 3
VISION, AUDIO = "modality_oracle (modality=vision)", "modality_oracle (modality=audio)"


def run(*command: str) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=os.environ.copy())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """One folder per run, and ``both``: the vision and audio runs in one folder (as two runs with
    one --output_path leave them: each file named by its run's date)."""
    root = tmp_path_factory.mktemp("oracle_runs")
    for folder, model_args in (
        ("vision", "modality=vision"),
        ("audio", "modality=audio"),
        ("rerun", "modality=audio,device=cpu"),  # placement only: the audio model again
        ("labelled", "modality=vision,label=oracle-vision"),
    ):
        run(
            *[str(BIN / "faultline-eval"), "--model", "modality_oracle", "--model_args", model_args],
            *["--tasks", "sceval_clean", "--limit", str(LIMIT), "--log_samples", "--output_path", str(root / folder)],
        )
    (root / "both").mkdir()
    for path in [*(root / "vision").iterdir(), *(root / "audio").iterdir()]:
        shutil.copy2(path, root / "both" / path.name)
    return {folder.name: folder for folder in root.iterdir()}


def report(out: Path, *folders: Path) -> tuple[pd.DataFrame, str]:
    done = run(str(BIN / "sceval"), "report", *map(str, folders), "-o", str(out))
    return pd.read_csv(out / "conditions.csv"), done.stdout + done.stderr


def test_two_settings_of_one_class_are_two_models(runs, tmp_path):
    assert len({p.name for p in runs["both"].glob("*_results.json")}) == 2
    conditions, printed = report(tmp_path / "report", runs["both"])
    assert sorted(conditions["model"]) == [AUDIO, VISION]
    assert conditions.set_index("model")["trials"].to_dict() == {AUDIO: LIMIT, VISION: LIMIT}
    assert "repeated trial" not in printed and "more than once" not in printed
    notes = json.loads((tmp_path / "report" / "report.json").read_text()).get("notes", [])
    assert not [n for n in notes if "repeated" in str(n)]


def test_a_placement_argument_makes_a_rerun_not_a_model(runs, tmp_path):
    conditions, printed = report(tmp_path / "report", runs["vision"], runs["audio"], runs["rerun"])
    assert sorted(conditions["model"]) == [AUDIO, VISION]  # the rerun is the audio model's
    assert conditions.set_index("model")["trials"].to_dict() == {AUDIO: LIMIT, VISION: LIMIT}
    assert f"{LIMIT} repeated trial(s)" in printed
    alone, _ = report(tmp_path / "alone", runs["rerun"])
    assert list(alone["model"]) == ["modality_oracle"]  # a lone run keeps the name it always had


def test_a_label_is_the_name_and_changes_nothing_sent(runs, tmp_path):
    conditions, _ = report(tmp_path / "report", runs["labelled"], runs["rerun"])
    assert sorted(conditions["model"]) == ["modality_oracle", "oracle-vision"]

    def sent_and_answered(folder: Path) -> list[tuple]:
        [log] = folder.glob("*_samples_sceval_clean.jsonl")
        lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        return [(line["doc_id"], line["input"], line["filtered_resps"]) for line in lines]

    assert sent_and_answered(runs["labelled"]) == sent_and_answered(runs["vision"])


def test_the_viewer_pages_show_the_two_names(runs, tmp_path):
    site = tmp_path / "site"
    run(str(BIN / "faultline"), "view", str(runs["both"]), "-o", str(site))
    index = (site / "sceval" / "index.html").read_text(encoding="utf-8")
    assert VISION in index and AUDIO in index
    for page in (site / "sceval" / "samples").glob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert f"{VISION}: " in text and f"{AUDIO}: " in text  # each model's verdict on the sample
    # the compare view reads each folder alone (both "modality_oracle"), and names them as read together
    compare = tmp_path / "compare"
    run(str(BIN / "faultline"), "view", str(runs["vision"]), str(runs["rerun"]), "-o", str(compare), "--compare")
    shown = (compare / "sceval" / "index.html").read_text(encoding="utf-8")
    assert f"compared: A = {VISION} (vision), B = {AUDIO} (rerun)" in shown
    assert VISION in (compare / "sceval" / "compare.html").read_text(encoding="utf-8")
