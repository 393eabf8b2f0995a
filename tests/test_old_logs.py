"""Old logs degrade, they do not block (issue 42): ``sceval report`` over logs written by earlier
versions of this project (``tests/data/old_logs``: real runs of 0.1.0, 0.2.0 and of the commit
before probe records carried ``probe_readings``; see its README) writes every table it can,
leaves out the trials it cannot pool with today's meaning, and names them; ``--strict`` refuses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from fixtures import write_logs

from faultline_app.viewer.compare import sceval_tests
from faultline_eval.model_wrappers.reference import answer_messages
from faultline_eval.tasks import sceval_task as task
from sceval_plugin.metrics.protocol import TRIAL_COLUMNS, catalogue_info, leave_out_incomparable
from sceval_plugin.probe_conditions import REREAD_IN_2
from sceval_plugin.report.reader import read_runs

BIN = Path(sys.executable).parent
OLD = Path(__file__).parent / "data" / "old_logs"
#: The conditions every fixture ran (two plain cells and clean, two temporal probes, three distractors).
RUN = [
    "clean",
    "single_noise_v30",
    "single_mute_a30",
    "probe_temporal_frame_reverse",
    "probe_temporal_middle_drop",
    "probe_distractor_audio",
    "probe_distractor_image",
    "probe_distractor_text",
]


def sceval_report(tmp_path: Path, runs: list[Path], name: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "sceval"), "report", *map(str, runs), "-o", str(tmp_path / name), "--bootstrap", "50"]
        + ["--quiet", "--no-figures", *flags],
        capture_output=True,
        text=True,
        env={**os.environ, "SCEVAL_CACHE": str(tmp_path / "cache")},
        timeout=300,
    )


def records(folder: Path) -> pd.DataFrame:
    """The fixture's SCEval records, read straight from its lines (not through the report's reader)."""
    rows = []
    for path in sorted(folder.glob("*_samples_sceval_*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)["sceval_record"]
            rows.append(
                {
                    "condition_id": r["condition_id"],
                    "correct": r["correct"],
                    "scored": (r.get("probe") or {}).get("not_applicable") is None,
                    "probe_readings": r.get("probe_readings"),
                }
            )
    return pd.DataFrame(rows)


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.1.0", "0.2.0"])
def test_logs_of_a_release_report_whole(tmp_path, version):
    """~5 s each: the logs of 0.1.0 (trial entries of schema 1) and of 0.2.0 (schema 2) were made
    under today's probe readings: every trial is used and each condition's accuracy is the mean of
    its records' ``correct``."""
    done = sceval_report(tmp_path, [OLD / version], "report")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["left_out"] == [] and not (tmp_path / "report" / "left_out.csv").exists()
    expected = records(OLD / version)
    assert (expected["probe_readings"].dropna() == 2).all()
    assert report["counts"] == {"trials": len(expected), "models": [f"sceval_reference:release-{version}"]} | {
        "conditions": len(RUN)
    }
    found = pd.read_csv(tmp_path / "report" / "conditions.csv").set_index("condition_id")["accuracy"]
    scored = expected[expected["scored"]].groupby("condition_id")["correct"].mean()
    assert set(scored.index) <= set(RUN) and len(scored) >= 6
    for cid, accuracy in scored.items():
        assert found[cid] == pytest.approx(accuracy), cid
    temporal = pd.read_csv(tmp_path / "report" / "probes_temporal.csv")["condition_id"]
    assert set(temporal) == {"probe_temporal_frame_reverse", "probe_temporal_middle_drop"}


def reference(doc: dict) -> str:
    return answer_messages(task.doc_to_messages(doc))


@pytest.mark.slow
def test_a_mix_with_current_logs_leaves_out_only_the_earlier_readings_and_strict_refuses(tmp_path):
    """~25 s: today's logs, 0.1.0's, 0.2.0's and logs of the four re-read probes made before
    ``probe_readings`` existed. The report keeps every other trial: each table is the one a report
    over only the unaffected logs writes, number for number; the left-out trials are named in the
    notes, the summary, report.json and left_out.csv. ``--strict`` refuses as before."""
    write_logs(tmp_path / "current", "sceval_reference", reference, RUN)
    pre = OLD / "pre-readings"
    unaffected = tmp_path / "pre-readings-unaffected"
    unaffected.mkdir()
    for path in pre.iterdir():
        if not any(path.name.endswith(f"_samples_sceval_{cid}.jsonl") for cid in REREAD_IN_2):
            shutil.copy(path, unaffected / path.name)
    releases = [OLD / "0.1.0", OLD / "0.2.0"]

    mixed = sceval_report(tmp_path, [tmp_path / "current", *releases, pre], "mixed")
    assert mixed.returncode == 0, mixed.stderr[-3000:]
    alone = sceval_report(tmp_path, [tmp_path / "current", *releases, unaffected], "alone")
    assert alone.returncode == 0, alone.stderr[-3000:]

    # what is left out, and where it is said
    old = records(pre)
    assert old["probe_readings"].isna().all()  # the field did not exist yet
    counts = old[old["condition_id"].isin(REREAD_IN_2)].groupby("condition_id").size()
    report = json.loads((tmp_path / "mixed" / "report.json").read_text())
    assert report["left_out"] == [
        {"model": "sceval_reference:pre-readings", "condition_id": cid, "reason": "earlier_probe_reading", "trials": n}
        for cid, n in sorted(counts.items())
    ]
    note = next(n for n in report["notes"] if n.startswith("left out of every table"))
    assert all(f"{cid} (sceval_reference:pre-readings: {n} trial(s))" in note for cid, n in counts.items())
    assert f"note: {note}" in mixed.stderr
    assert f"left out {counts.sum()} trial(s) of {', '.join(sorted(REREAD_IN_2))}" in mixed.stdout.splitlines()[-1]
    assert len(pd.read_csv(tmp_path / "mixed" / "left_out.csv")) == 4

    # every other table is the unaffected logs' report, number for number
    written = {p.name for p in (tmp_path / "mixed").iterdir()}
    assert written - {p.name for p in (tmp_path / "alone").iterdir()} == {f"left_out.{x}" for x in ("md", "csv", "tex")}
    tables = sorted(p.name for p in (tmp_path / "alone").glob("*.csv"))
    assert {"conditions.csv", "probes_temporal.csv", "probes_distractor.csv", "comparisons.csv"} <= set(tables)
    for name in tables:
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "mixed" / name), pd.read_csv(tmp_path / "alone" / name))
    temporal = pd.read_csv(tmp_path / "mixed" / "probes_temporal.csv")
    kept = temporal.groupby("model")["condition_id"].apply(set)
    assert kept["sceval_reference:pre-readings"] == {"probe_temporal_frame_reverse"}
    assert kept["sceval_reference:release-0.1.0"] == {"probe_temporal_frame_reverse", "probe_temporal_middle_drop"}
    baseline = json.loads((tmp_path / "alone" / "report.json").read_text())
    for key in set(report) - {"settings", "notes", "left_out"}:
        assert report[key] == baseline[key], key

    # --strict: today's refusal, by condition and model
    strict = sceval_report(tmp_path, [tmp_path / "current", *releases, pre], "strict", "--strict")
    assert strict.returncode == 2  # an error: `sceval: error: ...`
    assert "were made under the earlier reading (probe_distractor_audio: sceval_reference:pre-readings;" in (
        strict.stderr
    )
    assert not (tmp_path / "strict" / "report.json").exists()


@pytest.mark.slow
def test_the_c3po_report_reads_the_releases_logs_beside_todays(tmp_path):
    """~10 s: C³PO's trial entries of schema 1 (0.1.0) and 2 (0.2.0) report together."""
    done = subprocess.run(
        [str(BIN / "c3po"), "report", *(str(OLD / v) for v in ("pre-readings", "0.1.0", "0.2.0"))]
        + ["-o", str(tmp_path / "c3po"), "--bootstrap", "50"],
        capture_output=True,
        text=True,
        env={**os.environ, "SCEVAL_CACHE": str(tmp_path / "cache")},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    overall = pd.read_csv(tmp_path / "c3po" / "overall.csv")
    assert {f"sceval_reference:{v}" for v in ("pre-readings", "release-0.1.0", "release-0.2.0")} <= set(
        overall["model"]
    )


def test_a_condition_the_catalogue_does_not_know_is_left_out_by_name():
    """A plugin's condition whose plugin is not installed: its trials are left out, the rest kept."""
    rows = [
        ("m", cid, f"s{k}", 0, 1.0, None, 4, "p", "d", "A", None)
        for cid in ("clean", "single_noise_v30", "plugin_condition")
        for k in range(3)
    ]
    trials = pd.DataFrame(rows, columns=list(TRIAL_COLUMNS))
    kept, left = leave_out_incomparable(trials, catalogue_info())
    assert sorted(set(kept["condition_id"])) == ["clean", "single_noise_v30"] and len(kept) == 6
    assert left.to_dict("records") == [
        {"model": "m", "condition_id": "plugin_condition", "reason": "unknown_condition", "trials": 3}
    ]


def test_the_viewers_paired_tests_leave_out_what_the_report_leaves_out():
    """`faultline view --compare` of a pre-readings run and 0.1.0's: the paired tests are those of
    the cells both runs share under one meaning (before, the earlier readings made every test fail)."""
    trials, _ = read_runs([OLD / "pre-readings", OLD / "0.1.0"], workers=1, progress=False)
    tests = sceval_tests(trials, "sceval_reference:pre-readings", "sceval_reference:release-0.1.0")
    tested = set(tests.index)
    assert {"clean", "single_noise_v30", "probe_temporal_frame_reverse"} <= tested
    assert not tested & set(REREAD_IN_2)
    assert set(tests["model_a"]) | set(tests["model_b"]) == {
        "sceval_reference:pre-readings",
        "sceval_reference:release-0.1.0",
    }
