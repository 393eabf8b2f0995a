"""Checks before the first request in ``sceval``, ``c3po`` and ``faultline`` (issue 35): every
path-like argument is declared with what it must be (``faultline_eval.core.preflight.PathRule``),
and the real command lines refuse a bad one before any work, naming the argument and the fix,
with exit status 2 and nothing written."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli_flags import parsers

from faultline_app.c3po_cli import build_parser as c3po_parser
from faultline_app.c3po_cli import main as c3po_main
from faultline_app.faultline_cli import build_parser as faultline_parser
from faultline_app.faultline_cli import main as faultline_main
from faultline_app.sceval_cli import build_parser as sceval_parser
from faultline_app.sceval_cli import main as sceval_main
from faultline_eval.core.preflight import (
    PathRule,
    PreflightError,
    check_path,
    check_path_arguments,
    path_rules,
)

MAINS = {"sceval": sceval_main, "c3po": c3po_main, "faultline": faultline_main}

#: Argument names (dests) that hold a path, a folder or a source in this project's commands.
PATH_DESTS = {
    "input",
    "source",
    "output",
    "folder",
    "runs",
    "families",
    "humans",
    "build_dir",
    "build",
    "out",
    "pool",
    "sheet",
    "a",
    "b",
    "verdicts",
    "references",
    "output_path",
    "sceval_report",
    "c3po_report",
    "sceval_source",
    "c3po_source",
}
#: Path arguments given as NAME=PATH (a name may stand for a known copy: ``items=demo``), checked
#: by the command itself before any work (tests below).
CHECKED_BY_THE_COMMAND = {("sceval build convert", "sources"), ("faultline wrap", "data")}


def test_every_path_argument_of_every_subcommand_declares_its_check():
    declared, missing = 0, []
    for build in (sceval_parser, c3po_parser, faultline_parser):
        for parser in parsers(build()):
            for action in parser._actions:
                rules = getattr(action, "preflight_path_rules", ())
                declared += bool(rules)
                own = (parser.prog, action.dest) in CHECKED_BY_THE_COMMAND
                if action.dest in PATH_DESTS and not rules and not own:
                    missing.append(f"{parser.prog} {action.dest}")
    assert missing == []
    assert declared >= 60  # the whole surface, not a sample (70 today)


@pytest.fixture
def place(tmp_path, monkeypatch):
    """A working folder with a run (one per-sample log), a report and a verdict file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "20260101_000000_samples_sceval_clean.jsonl").write_text("{}\n")
    (tmp_path / "run" / "report").mkdir()
    (tmp_path / "run" / "report" / "report.json").write_text("{}\n")
    (tmp_path / "verdicts.jsonl").write_text("{}\n")
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "a_file").write_text("not a folder\n")
    return tmp_path


REFUSED = [
    # (command line, the argument the refusal names, a part of the fix, a path that must not appear)
    (
        "faultline view run -o site --sceval-report run/reprot/",
        "--sceval-report",
        "did you mean run/report?",
        "site",
    ),
    ("faultline view run -o site --c3po-report run", "--c3po-report", "holds no report", "site"),
    ("faultline view run -o a_file/site", "--output", "a_file is a file, not a folder", None),
    ("faultline view rnu -o site", "RUNS", "did you mean run?", "site"),
    ("faultline view run -o site --verdicts verdicst.jsonl", "--verdicts", "did you mean verdicts.jsonl", "site"),
    ("faultline audit run/report -o audit", "RUNS", "holds no lmms-eval per-sample logs", "audit"),
    ("faultline probe report nowhere -o probes", "RUNS", "give an existing folder holding the probe records", "probes"),
    (
        "faultline probe e3 --model m --tasks c3po_all --output-path a_file/p",
        "--output-path",
        "is a file, not a folder",
        None,
    ),
    ("faultline tiny-model qwen2_5_omni a_file/tiny", "OUT", "is a file, not a folder", None),
    ("sceval report run -o a_file/report", "--output", "give a folder you can write to", None),
    ("sceval report run -o rep --families families.csv", "--families", "give an existing file", "rep"),
    ("sceval report run -o rep --html --sceval-source nowhere", "--sceval-source", "'demo', 'hf:...'", "rep"),
    ("sceval check nowhere", "SOURCE", "items.jsonl or items.parquet", None),
    ("sceval tasks nowhere", "FOLDER", "give an existing folder", None),
    ("sceval corrupt photo.png --op noise --severity 70", "INPUT", "give an existing file", None),
    ("sceval build pool b", "BUILD_DIR", "run `sceval build convert` first", None),
    ("sceval build manifest run", "BUILD", "run `sceval build annotate import` first", None),
    ("c3po report run -o rep --verdicts empty.jsonl", "--verdicts", "is empty", "rep"),
    ("c3po judge run --judge exact -o run", "--output", "is a folder; give a file name", None),
    ("c3po judge-agreement verdicts.jsonl nowhere.jsonl", "B", "give an existing file", None),
    ("c3po build generate b", "BUILD_DIR", "run `c3po build select` first", "b"),
    ("c3po build all b --pool pol", "--pool", "annotations.jsonl or annotations.csv", "b"),
    ("c3po build status nowhere", "BUILD_DIR", "give an existing folder", None),
]


@pytest.mark.parametrize("line,argument,fix,not_made", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_bad_path_is_refused_naming_the_argument_and_the_fix(place, capsys, line, argument, fix, not_made):
    command, *argv = line.split()
    status = MAINS[command](argv)
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith(f"{command}: error: {argument} "), err
    assert fix in err
    assert not_made is None or not (place / not_made).exists()  # refused before any output was made


@pytest.mark.parametrize(
    "line,message",
    [
        (
            "sceval build convert b items=demo social_iq2=/no/such/copy",
            "sceval: error: social_iq2=PATH '/no/such/copy' does not exist",
        ),
        (
            "faultline wrap mme --data mme=/no/such/copy",
            "faultline: error: --data mme=PATH '/no/such/copy' does not exist",
        ),
    ],
)
def test_every_name_path_argument_is_checked_before_the_first_is_used(place, capsys, line, message):
    command, *argv = line.split()
    assert MAINS[command](argv) == 2
    assert capsys.readouterr().err.startswith(message)
    assert not (place / "b" / "converted").exists()  # items=demo, which is fine, was not converted first


def test_the_issue_example_is_refused_by_the_installed_command_in_well_under_3_s(place):
    """`faultline view demo_out/ -o s/ --sceval-report demo_out/reprot/` once built a site with no
    figures and exited 0."""
    command = [str(Path(sys.executable).with_name("faultline")), "view", "run/", "-o", "s/"]
    done = subprocess.run(
        [*command, "--sceval-report", "run/reprot/"], capture_output=True, text=True, timeout=60, env=dict(os.environ)
    )
    assert done.returncode == 2
    assert "--sceval-report 'run/reprot/' does not exist; did you mean run/report?" in done.stderr
    assert not (place / "s").exists()


def test_good_paths_pass_and_an_output_folder_is_proven_by_a_real_write(tmp_path):
    parser = argparse.ArgumentParser(prog="x")
    path_rules(parser.add_argument("runs", nargs="+"), PathRule("folder", holds="*.jsonl", what="logs"))
    path_rules(parser.add_argument("-o"), PathRule("folder_to_write"))
    path_rules(parser.add_argument("--tasks-folder"), PathRule("folder_to_write", only_with="write"))
    parser.add_argument("--write", action="store_true")
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "x.jsonl").write_text("{}\n")
    args = parser.parse_args([str(tmp_path / "r"), "-o", str(tmp_path / "new" / "out"), "--tasks-folder", "/proc/t"])
    check_path_arguments(parser, args)  # --tasks-folder only counts with --write
    assert (tmp_path / "new" / "out").is_dir() and list((tmp_path / "new" / "out").iterdir()) == []
    with pytest.raises(PreflightError, match=r"--tasks-folder '/proc/t' cannot be written"):
        check_path_arguments(parser, parser.parse_args([str(tmp_path / "r"), "--tasks-folder", "/proc/t", "--write"]))


def test_a_named_source_passes_to_its_loader_and_a_path_source_must_hold_items(tmp_path):
    rule = PathRule("source", holds="items.*", what="items", names=("demo",), prefixes=("hf:",))
    check_path("demo", "--source", rule)
    check_path("hf:org/name", "--source", rule)
    (tmp_path / "items.jsonl").write_text("{}\n")
    check_path(tmp_path, "--source", rule)
    (tmp_path / "empty").mkdir()
    with pytest.raises(PreflightError, match="--source '.*empty' holds no items"):
        check_path(tmp_path / "empty", "--source", rule)
