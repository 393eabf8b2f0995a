"""Annotation rounds, agreement and manifest (sceval build annotate / agreement / manifest) on a
three-item demo pool, and one real lmms-eval run with the manifest they produce."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import copy_demo

from faultline_app.sceval_cli import main
from faultline_eval.core.agreement import fleiss_kappa, label_kappa
from sceval_plugin.construction import annotate, simulate
from sceval_plugin.construction import annotator_agreement as agreement
from sceval_plugin.construction.sheets import (
    SheetError,
    xlsx_available,
)

BIN = Path(sys.executable).parent


def _fill(path: Path, edit) -> None:
    """Fill a CSV sheet the way an annotator would: ``edit(row)`` sets each row's answers."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        columns, rows = reader.fieldnames, list(reader)
    for row in rows:
        edit(row)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    """A full pass by two annotators on three items, filled with known labels, plus adjudication:
    A fine; B broken media; C text leakage. Cells of A: noise@70 variant 0 interpretable but not
    gold-preserving (stress-only), variant 1 uninterpretable; the annotators disagree on
    occlusion@70 variant 0, which the adjudicator settles as uninterpretable."""
    root = tmp_path_factory.mktemp("build")
    pool = copy_demo(root / "pool", 3)
    ids = [json.loads(line)["sample_id"] for line in (pool / "items.jsonl").read_text().splitlines()]
    (pool / "funnel.json").write_text(
        json.dumps(
            {
                "seed": 0,
                "budget": 3,
                "sources": {"sceval-demo": {"examples": 10, "converted": 9, "eligible": 5, "pooled": 3}},
                "excluded": [
                    {
                        "source_ref": "demo/raw-7",
                        "source": "sceval-demo",
                        "stage": "convert",
                        "reason": "no audio track",
                    }
                ],
            }
        )
    )
    annotate.export(root, "full", ["ann1", "ann2"], per_item=2)

    def items(row):
        good = row["sample_id"] == ids[0]
        row.update(
            valid="no" if row["sample_id"] == ids[1] else "yes",
            answerable="yes",
            availability="text leakage" if row["sample_id"] == ids[2] else "ok",
            failure_reason="" if good else "broken media" if row["sample_id"] == ids[1] else "text leakage",
        )

    for annotator in ("ann1", "ann2"):
        _fill(root / "annotation/full" / annotator / "items.csv", items)

        def cells(row, annotator=annotator):
            cell = (row["sample_id"], row["operator"], row["severity"], row["variant"])
            row.update(interpretable="yes", gold_preserved="yes", stress_test="no")
            if cell == (ids[0], "noise", "70", "0"):
                row.update(gold_preserved="no", stress_test="yes")
            if cell == (ids[0], "noise", "70", "1") or (
                cell == (ids[0], "occlusion", "70", "0") and annotator == "ann2"
            ):
                row.update(interpretable="no", gold_preserved="", stress_test="")

        _fill(root / "annotation/full" / annotator / "cells.csv", cells)
    annotate.import_pass(root, "full")
    annotate.export(root, "adjudication", ["senior"])
    _fill(
        root / "annotation/adjudication/senior/cells.csv",
        lambda row: row.update(interpretable="no", note="patches hide the disc"),
    )
    annotate.import_pass(root, "adjudication")
    return root


def test_export_fill_import_round_trip(build, tmp_path):
    labels = annotate.read_labels(build, "full")
    assert len(labels) == 2 * 3 * (1 + 72)  # 2 annotators x 3 items x (item row + 44 vision + 28 audio cells)
    first = {(l["annotator"], l["sample_id"]): l for l in labels if l["sheet"] == "items"}
    assert {l["valid"] for l in first.values()} == {"yes", "no"}
    adjudicated = annotate.read_labels(build, "adjudication")
    assert [(l["operator"], l["severity"], l["variant"], l["interpretable"], l["note"]) for l in adjudicated] == [
        ("occlusion", 70, 0, "no", "patches hide the disc")
    ]
    if xlsx_available():  # filled in the spreadsheet instead: the same labels come back
        from openpyxl import load_workbook

        for path in (build / "annotation/full").glob("*/*.xlsx"):
            book = load_workbook(path)
            sheet = book.active
            header = [c.value for c in sheet[1]]
            with path.with_suffix(".csv").open(newline="", encoding="utf-8") as handle:
                for row, values in zip(sheet.iter_rows(min_row=2), csv.DictReader(handle)):
                    for cell, name in zip(row, header):
                        cell.value = values[name] or None
            book.save(path)
        shutil.copytree(build / "pool", tmp_path / "pool")
        shutil.copytree(build / "annotation/full", tmp_path / "annotation/full")
        (tmp_path / "annotation/full/labels.jsonl").unlink()
        annotate.import_pass(tmp_path, "full", fmt="xlsx")
        assert annotate.read_labels(tmp_path, "full") == labels


def test_sheet_errors_name_file_row_and_column(build, tmp_path):
    root = tmp_path / "b"
    shutil.copytree(build / "pool", root / "pool")
    annotate.export(root, "full", ["ann1", "ann2"], per_item=2)
    simulate.simulate(root, "full", seed=1)
    sheet = root / "annotation/full/ann1/items.csv"
    rows = list(csv.DictReader(sheet.open()))
    rows[0]["valid"] = "maybe"  # unknown label (row 2)
    rows[1]["answerable"] = ""  # missing field (row 3)
    rows.append(dict(rows[2]))  # duplicate of row 4 (row 5)
    rows.append({**rows[2], "sample_id": "demo-nope"})  # unknown id (row 6)
    with sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    shutil.rmtree(root / "annotation/full/ann2")  # a missing annotator
    with pytest.raises(SheetError) as caught:
        annotate.import_pass(root, "full")
    text = str(caught.value)
    assert f"{sheet}:" in text
    assert "row 2, column 'valid': 'maybe' is not one of" in text
    assert "row 3, column 'answerable': empty" in text
    # the two sheet-level checks run once the labels themselves are valid
    rows[0]["valid"], rows[1]["answerable"] = "yes", "yes"
    rows[0]["failure_reason"] = rows[1]["failure_reason"] = ""
    with sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(SheetError) as caught:
        annotate.import_pass(root, "full")
    text = str(caught.value)
    assert "row 5: duplicate of row 4" in text
    assert "row 6, column 'sample_id': unknown sample id 'demo-nope'" in text
    assert "missing sheet of annotator 'ann2'" in text

    with pytest.raises(annotate.AnnotationError, match="exported already"):  # filled sheets are never overwritten
        annotate.export(root, "full", ["ann1", "ann2"], per_item=2)
    annotate.export(root, "blind", ["b1", "b2"], per_item=1)  # two annotators: two versions per sample
    blind = root / "annotation/blind/b1/blind.csv"
    other = next(csv.DictReader((root / "annotation/blind/b2/blind.csv").open()))
    rows = list(csv.DictReader(blind.open()))
    assert "gold" not in rows[0]  # answer first: no gold on the blind sheet
    rows.append(other)  # b2's version of the same base example, given to b1 as well
    for row in rows:
        row.update(answerable="yes", answer="A")
    with blind.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(SheetError, match="was not assigned to this annotator"):
        annotate.import_pass(root, "blind")


def test_report_cohorts_split_stress_only_trials():
    import pandas as pd

    from sceval_plugin.report import ReportError, select_cohort

    trials = pd.DataFrame(
        {
            "condition_id": ["clean", "single_noise_v70", "single_noise_v70"],
            "cohort": pd.Categorical([None, "stress_only", None]),
        }
    )
    notes: list[str] = []
    kept = select_cohort(trials, "gold_preserved", notes)
    assert len(kept) == 2 and not (kept["cohort"] == "stress_only").any()
    assert "1 stress-only trial(s)" in notes[0]
    stress = select_cohort(trials, "stress", [])
    assert list(stress["cohort"].astype(object).fillna("-")) == ["-", "stress_only"]  # clean stays the baseline
    assert len(select_cohort(trials, "all", [])) == 3
    with pytest.raises(ReportError, match="no stress-only trials"):
        select_cohort(trials.iloc[[0, 2]], "stress", [])


def test_kappas_match_textbook_values():
    # Cohen's kappa: 50 items, yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> p_o 0.7, p_e 0.5, kappa 0.4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert label_kappa(a, b) == pytest.approx(0.4)
    # Fleiss (1971) as tabulated on Wikipedia: 10 items, 14 raters, 5 categories -> 0.210
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa([[k for k, c in enumerate(row) for _ in range(c)] for row in table]) == pytest.approx(
        0.2099, abs=5e-4
    )
    row = agreement.field_agreement([["yes", "yes"], ["no", "yes"], ["no", "no"], ["no", "no"]])
    assert row["full_agree_pct"] == 75.0 and row["adjudicated_pct"] == 25.0 and row["fleiss_kappa"] is None
    assert row["cohen_kappa"] == pytest.approx(0.5)


def test_manifest_funnel_and_retention(build, capsys):
    assert main(["build", "manifest", str(build)]) == 0
    assert "funnel 10 -> 9 -> 5 -> 3 -> 2 -> 1 -> 1" in capsys.readouterr().out
    data = json.loads((build / "manifest.json").read_text())
    assert data["schema"] == "sceval-manifest/2" and data["simulated"] == [] and data["audit"] is None
    kept = [s for s in data["samples"] if s["valid"] and s["answerable"]]
    assert len(kept) == 1
    rejected = {r["sample_id"]: r for r in csv.DictReader((build / "rejected.csv").open())}
    assert {r["failure_reason"] for r in rejected.values()} == {"broken media", "text leakage", "no audio track"}
    assert "demo/raw-7" in rejected
    cells = {(c["sample_id"], c["operator"], c["severity"], c["variant"]): c for c in data["cells"]}
    first = kept[0]["sample_id"]
    assert cells[(first, "noise", 70, 0)]["stress_only"] and not cells[(first, "noise", 70, 0)]["gold_preserved"]
    assert not cells[(first, "noise", 70, 1)]["interpretable"]
    assert not cells[(first, "occlusion", 70, 0)]["interpretable"]  # the adjudicator's decision
    retention = {r["operator"]: r for r in csv.DictReader((build / "retention.csv").open())}
    # retention counts the cells of the items past the clean filters: A only (B, C are rejected earlier)
    assert retention["noise"]["annotated"] == "12" and retention["noise"]["retained"] == "11"
    assert retention["total"]["annotated"] == "72" and retention["total"]["retained"] == "70"
    rows = agreement.agreement_rows(build)
    interpretable = next(r for r in rows if r["field"] == "corrupted-input interpretability" and r["source"] == "all")
    assert interpretable["n_items"] == 216 and interpretable["adjudicated_pct"] == pytest.approx(100 / 216, abs=0.05)


@pytest.mark.slow
def test_lmms_eval_records_stress_only_trials_outside_the_headline(build, tmp_path):
    assert main(["build", "manifest", str(build)]) == 0
    env = {**os.environ, "SCEVAL_SOURCE": str(build / "pool"), "SCEVAL_MANIFEST": str(build / "manifest.json")}
    done = subprocess.run(
        [
            str(BIN / "lmms-eval"),
            "--model",
            "sceval_reference",
            "--tasks",
            "sceval_single_noise_v70",
            "--log_samples",
            "--output_path",
            "out/",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(next((tmp_path / "out").rglob("*_results.json")).read_text())["results"]
    metrics = result["sceval_single_noise_v70"]
    # 3 items x 3 variants: B and C rejected (6), A's variant 1 uninterpretable (1), variant 0 stress-only
    assert metrics["sceval_excluded_trials,none"] == 7
    assert metrics["sceval_stress_only_trials,none"] == 1
    assert metrics["sceval_valid_trials,none"] == 1
    lines = [json.loads(l) for path in (tmp_path / "out").rglob("*_samples_*.jsonl") for l in path.open()]
    cohorts = {l["sceval_record"]["variant"]: l["sceval_record"]["cohort"] for l in lines}
    assert cohorts == {0: "stress_only", 2: "gold_preserved"}
    headline = next(l for l in lines if l["sceval_record"]["variant"] == 2)["sceval_record"]["correct"]
    assert metrics["sceval_accuracy,none"] == headline  # the stress-only trial's answer does not count


def test_stress_only_trials_are_run_unless_excluded(build, monkeypatch):
    from faultline_eval.tasks import sceval_task as task
    from sceval_plugin.conditions import catalogue
    from sceval_plugin.data.manifest import ManifestError

    assert main(["build", "manifest", str(build)]) == 0
    monkeypatch.setenv("SCEVAL_SOURCE", str(build / "pool"))
    monkeypatch.setenv("SCEVAL_MANIFEST", str(build / "manifest.json"))
    noise = catalogue().get("single_noise_v70")
    rows, excluded = task.build_rows(noise)
    assert [(r["variant"], r["cohort"]) for r in rows] == [(0, "stress_only"), (2, "gold_preserved")]
    monkeypatch.setenv("SCEVAL_STRESS_ONLY", "exclude")  # the other reading: dropped before any model call
    rows, excluded = task.build_rows(noise)
    assert [r["variant"] for r in rows] == [2] and excluded["cell_gold_not_preserved:noise@70"] == 1
    monkeypatch.setenv("SCEVAL_STRESS_ONLY", "sometimes")
    with pytest.raises(ManifestError, match="SCEVAL_STRESS_ONLY"):
        task.build_rows(noise)


SCEVAL = BIN / "sceval"


def _sceval(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SCEVAL), *map(str, args)], capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})}
    )


@pytest.fixture
def filled_full(tmp_path) -> Path:
    """One pool item exported to two annotators, their sheets filled by the simulator."""
    root = tmp_path / "b"
    copy_demo(root / "pool", 1)
    annotate.export(root, "full", ["ann1", "ann2"], per_item=2)
    simulate.simulate(root, "full", seed=1)
    return root


def test_import_checks_the_rows_exported_not_todays_operator_plugins(filled_full, tmp_path):
    """Issue 24: an operator plugin installed between export and import is a note, not 72 missing rows."""
    from test_plugins import SALT_PEPPER

    site = tmp_path / "site"  # an installed distribution as pip lays it out: module, dist-info, entry point
    (site / "sceval_salt_pepper-0.1.dist-info").mkdir(parents=True)
    (site / "sceval_salt_pepper.py").write_text(SALT_PEPPER)
    (site / "sceval_salt_pepper-0.1.dist-info/METADATA").write_text(
        "Metadata-Version: 2.1\nName: sceval-salt-pepper\nVersion: 0.1\n"
    )
    (site / "sceval_salt_pepper-0.1.dist-info/entry_points.txt").write_text(
        "[sceval]\nsceval_salt_pepper = sceval_salt_pepper\n"
    )
    done = _sceval("build", "annotate", "import", filled_full, "--pass", "full", env={"PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stderr
    assert "note: pass 'full': operator plugins differ from the export (installed since: salt_pepper)" in done.stdout
    labels = annotate.read_labels(filled_full, "full")
    assert len(labels) == 2 * (1 + 72) and not any(l["operator"] == "salt_pepper" for l in labels)
    assignment = json.loads((filled_full / "annotation/full/assignment.json").read_text())
    assert {"asked", "asked_digest", "operators", "severities"} <= set(assignment)
    assert "salt_pepper" not in assignment["operators"]

    assignment["asked"]["ann1"]["cells"].pop()  # a hand-edited assignment is refused, not trusted
    (filled_full / "annotation/full/assignment.json").write_text(json.dumps(assignment))
    done = _sceval("build", "annotate", "import", filled_full, "--pass", "full")
    assert done.returncode != 0 and "do not match their digest" in done.stderr

    # the other way round: exported with the plugin, imported and decided without it
    root = tmp_path / "removed"
    copy_demo(root / "pool", 1)
    done = _sceval(
        "build",
        "annotate",
        "export",
        root,
        "--pass",
        "full",
        "--annotators",
        "ann1,ann2",
        env={"PYTHONPATH": str(site)},
    )
    assert done.returncode == 0, done.stderr
    simulate.simulate(root, "full", seed=1, disagreement=0)
    done = _sceval("build", "annotate", "import", root, "--pass", "full")
    assert done.returncode == 0, done.stderr
    assert "operator plugins differ from the export (removed since: salt_pepper)" in done.stdout
    assert main(["build", "manifest", str(root)]) == 0
    retention = {r["operator"]: r for r in csv.DictReader((root / "retention.csv").open())}
    assert retention["salt_pepper"]["annotated"] == "12"  # its judged cells still count, under vision


def test_sheets_that_are_not_utf8_name_file_annotator_and_fix(filled_full):
    """Issue 25: an .xlsx saved as .csv, and a Latin-1 'CSV (Windows)', each named with its
    annotator and the way out; --format xlsx then imports the workbooks."""
    folder = filled_full / "annotation/full"
    shutil.copyfile(folder / "ann1/items.xlsx", folder / "ann1/items.csv")
    text = (folder / "ann2/cells.csv").read_text(encoding="utf-8").replace(",yes,", ",yes,", 1)
    lines = text.splitlines(keepends=True)
    lines[1] = lines[1].rstrip("\r\n") + "café\r\n"  # the note column: a byte 0xe9 in Latin-1
    (folder / "ann2/cells.csv").write_bytes("".join(lines).encode("latin-1"))
    done = _sceval("build", "annotate", "import", filled_full, "--pass", "full")
    assert done.returncode != 0
    assert "utf-8' codec" not in done.stderr
    assert (
        f"annotator 'ann1', {folder / 'ann1/items.csv'}: this is an Excel workbook (.xlsx), not a CSV sheet"
        in done.stderr
        and "--format xlsx" in done.stderr
    )
    assert f"annotator 'ann2', {folder / 'ann2/cells.csv'}: not UTF-8 text" in done.stderr
    assert "Save it again as 'CSV UTF-8 (comma delimited)'" in done.stderr


def test_import_lists_every_problem_of_every_sheet(filled_full):
    """Issue 25: a bad label does not hide the duplicate, the unknown id and the other sheets' problems."""
    folder = filled_full / "annotation/full"
    sheet = folder / "ann1/items.csv"
    rows = list(csv.DictReader(sheet.open()))
    rows[0]["valid"] = "maybe"
    rows.append(dict(rows[0], valid="yes"))  # row 3 duplicates row 2
    rows.append({**rows[0], "sample_id": "demo-nope", "valid": "yes"})
    with sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    _fill(folder / "ann2/cells.csv", lambda row: row.update(interpretable="perhaps"))
    done = _sceval("build", "annotate", "import", filled_full, "--pass", "full")
    assert done.returncode != 0
    for expected in (
        "row 2, column 'valid': 'maybe' is not one of",
        "row 3: duplicate of row 2",
        "row 4, column 'sample_id': unknown sample id 'demo-nope'",
        f"annotator 'ann2', {folder / 'ann2/cells.csv'}: 72 problem(s)",
        "pass 'full': 2 sheet(s) cannot be imported; nothing was written",
    ):
        assert expected in done.stderr, expected
    assert not (folder / "labels.jsonl").exists()


def test_author_audit_lists_items_rejected_at_corruption_interpretability(build, tmp_path):
    """Issue 25 (App. D pass iii): the full list of rejected examples includes those the
    interpretability filter rejected, with the stage and reason."""
    root = tmp_path / "b"
    shutil.copytree(build, root)
    full = root / "annotation/full/labels.jsonl"
    labels = [json.loads(line) for line in full.read_text().splitlines()]
    first = sorted({l["sample_id"] for l in labels})[0]
    for label in labels:  # no interpretable variant of noise for the first item, by both annotators
        if label["sample_id"] == first and label["operator"] == "noise":
            label.update(interpretable="no", gold_preserved="", stress_test="")
    full.write_text("".join(json.dumps(l) + "\n" for l in labels))
    assert (
        main(["build", "annotate", "export", str(root), "--pass", "audit", "--annotators", "author", "--fraction", "0"])
        == 0
    )
    rows = {r["sample_id"]: r for r in csv.DictReader((root / "annotation/audit/author/audit.csv").open())}
    assert rows[first]["decision"] == "reject"
    assert rows[first]["stage"] == "corruption interpretability"
    assert rows[first]["failure_reason"] == "excessive corruption"
    assert len(rows) == 3 and {r["decision"] for r in rows.values()} == {"reject"}


def test_published_card_names_the_rows_licence_and_publishing_twice_gives_the_same_bytes(build, tmp_path):
    """Issue 25: the card names the items' real licence (each row's hidden.license), not a
    placeholder; issue 24: the published folder is a pure function of the build."""
    from faultkit import file_digests

    root = tmp_path / "b"
    shutil.copytree(build, root)
    assert main(["build", "manifest", str(root)]) == 0
    done = _sceval("build", "publish", root)
    assert done.returncode == 0, done.stderr
    card = (root / "published/README.md").read_text()
    assert '  sceval-demo: "CC0-1.0"' in card and "- **sceval-demo**: CC0-1.0" in card
    assert "folder's own" not in card and "check the source's terms" not in card
    first = file_digests(root / "published")
    assert main(["build", "publish", str(root)]) == 0
    assert file_digests(root / "published") == first
    assert not list(root.glob(".published.partial*"))


def test_publish_a_pool_copied_by_hand_as_the_readme_demo_does(tmp_path):
    """The README's demo flow copies the demo into ``BUILD/pool`` (no ``sceval build pool``, so no
    ``funnel.json``): publish counts the pool as given at every earlier stage instead of failing
    with a bare "No such file or directory"."""
    root = tmp_path / "b"
    copy_demo(root / "pool", 3)
    done = _sceval("build", "publish", root)
    assert done.returncode == 0, done.stderr
    funnel = json.loads((root / "published/funnel.json").read_text())
    assert funnel["sources"] == {
        "sceval-demo": {"examples": 3, "converted": 3, "eligible": 3, "pooled": 3, "published": 3}
    }
    assert "| sceval-demo | 3 | 3 | 3 | 3 | 3 |" in (root / "published/README.md").read_text()
