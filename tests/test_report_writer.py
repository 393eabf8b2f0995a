"""The one report writer of both benchmarks (faultline_eval.core.report_writer, .tables, .figures):
report sections are values, and the writer turns a list of them into the report's files."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pandas as pd
import pytest

from faultline_eval.core.figures import Figure, pyplot, save
from faultline_eval.core.report_writer import Report, Section, write_report
from faultline_eval.core.tables import Table, json_records, trial_links, trials_in


def test_report_json_is_the_head_then_every_note_then_each_sections_entries():
    report = Report(
        {"settings": {"seed": 1}, "counts": {"trials": 3}},
        [
            Section(notes=["read: one log skipped"]),
            Section(numbers={"conditions": [1, 2]}, notes=["table x not written"]),
            Section(numbers={"settings": {"families": None}, "probes": {}}, notes=["probes: no confidence"]),
        ],
    )
    everything = report.json()
    assert list(everything) == ["settings", "counts", "notes", "conditions", "probes"]
    assert everything["settings"] == {"seed": 1, "families": None}  # a later section adds to the head's settings
    assert (
        everything["notes"] == report.notes == ["read: one log skipped", "table x not written", "probes: no confidence"]
    )


def test_two_sections_may_not_both_write_one_entry():
    report = Report({}, [Section(numbers={"panel": [1]}), Section(numbers={"panel": [2]})])
    with pytest.raises(ValueError, match="'panel'"):
        report.json()


def test_tables_trial_links_and_subreports_are_written(tmp_path):
    raw = pd.DataFrame(
        {"model": ["m", "n"], "condition_id": ["clean", "single_noise_v70"], "accuracy": [0.5, float("nan")]}
    )
    shown = pd.DataFrame({"model": ["m", "n"], "accuracy": ["50.0", "–"]})
    linked = pd.DataFrame({"model": ["m"], "clean": ["50.0"]})
    report = Report(
        {"counts": {"trials": 2}},
        [
            Section(
                tables=[
                    Table(
                        "linked",
                        "By hand",
                        linked,
                        raw.head(1),
                        trial_links(linked, [{"clean": trials_in(["clean"], "m")}]),
                    ),
                    Table("by_row", "One (model, condition) a row", shown, raw),
                    Table("csv_only", "", None, raw),
                    Table("unlinked", "Nothing to open", shown, raw[["accuracy"]]),
                ],
                numbers={"rows": json_records(raw)},
            ),
            Section(subreports={"by_source/a": Report({"counts": {"trials": 1}}, [Section(notes=["source a only"])])}),
        ],
    )
    written = write_report(tmp_path, report)
    names = sorted(str(p.relative_to(tmp_path)) for p in written)
    assert all(p.is_file() for p in written)
    assert names == sorted(
        [
            "linked.md",
            "linked.csv",
            "linked.tex",
            "linked.trials.json",
            "by_row.md",
            "by_row.csv",
            "by_row.tex",
            "by_row.trials.json",
            "csv_only.csv",
            "unlinked.md",
            "unlinked.csv",
            "unlinked.tex",
            "by_source/a/report.json",
            "by_source/a/index.md",
            "index.md",
            "report.json",
        ]
    )
    # the index lists every file, under its section's title, and links the sub-report's index
    index = (tmp_path / "index.md").read_text()
    assert "| [linked.md](linked.md) ([csv](linked.csv), [tex](linked.tex), [trials.json](linked.trials.json)) |" in (
        index
    )
    assert "| [csv_only.csv](csv_only.csv) | (no description) |" in index
    assert "[by_source/a/index.md](by_source/a/index.md)" in index
    assert json.loads((tmp_path / "linked.trials.json").read_text()) == {
        "columns": ["model", "clean"],
        "rows": [[None, {"cells": ["clean"], "model": "=m"}]],
    }
    # without links of its own, a table whose raw rows are (model, condition) links each row's numbers
    assert json.loads((tmp_path / "by_row.trials.json").read_text())["rows"] == [
        [None, {"cells": ["clean"], "model": "=m"}],
        [None, {"cells": ["single_noise_v70"], "model": "=n"}],
    ]
    assert (tmp_path / "by_row.md").read_text() == (
        "**One (model, condition) a row**\n\n| model | accuracy |\n|---|---|\n| m | 50.0 |\n| n | – |\n"
    )
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["rows"][1]["accuracy"] is None  # NaN as null
    assert json.loads((tmp_path / "by_source/a/report.json").read_text()) == {
        "counts": {"trials": 1},
        "notes": ["source a only"],
    }


def test_trial_links_need_one_row_per_shown_row():
    shown = pd.DataFrame({"model": ["m", "n"]})
    with pytest.raises(ValueError, match="1 rows of trial links for a table of 2 rows"):
        trial_links(shown, [{}])


def _bars(heights: list[float], stem: Path) -> list[Path]:
    fig, ax = pyplot().subplots(figsize=(2, 2))
    ax.bar(range(len(heights)), heights)
    return save(fig, stem)


def test_figures_drawn_in_other_processes_are_the_same_files(tmp_path):
    """A few seconds: matplotlib in two worker processes."""
    report = Report(
        {},
        [
            Section(
                figures=[
                    Figure("bars", functools.partial(_bars, [1.0, 3.0])),
                    Figure("more_bars", functools.partial(_bars, [2.0, 0.5, 1.0])),
                ]
            )
        ],
    )
    inline = write_report(tmp_path / "inline", report)
    parallel = write_report(tmp_path / "parallel", report, figure_workers=2)
    assert (
        sorted(p.name for p in inline)
        == sorted(p.name for p in parallel)
        == ["bars.pdf", "bars.png", "index.md", "more_bars.pdf", "more_bars.png", "report.json"]
    )
    for path in inline:
        assert path.read_bytes() == (tmp_path / "parallel" / path.name).read_bytes()
