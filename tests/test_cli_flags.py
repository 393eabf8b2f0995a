"""Every flag of the project's commands is kebab-case; an old snake_case spelling still parses,
hidden from --help, with a one-line deprecation note (faultline_eval.core.flag_spellings)."""

from __future__ import annotations

import argparse

import pytest

from faultline_app.c3po_cli import build_parser as c3po_parser
from faultline_app.faultline_cli import build_parser as faultline_parser
from faultline_app.sceval_cli import build_parser as sceval_parser


def parsers(parser: argparse.ArgumentParser):
    """The parser and all its subcommands' parsers, depth first."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from parsers(sub)


@pytest.mark.parametrize("build", [sceval_parser, c3po_parser, faultline_parser], ids=["sceval", "c3po", "faultline"])
def test_every_flag_of_every_command_is_kebab_case(build):
    shown = {f"{p.prog} {s}" for p in parsers(build()) for a in p._actions for s in a.option_strings}
    assert len(shown) > 20
    assert sorted(s for s in shown if "_" in s) == []


def test_an_old_spelling_parses_as_the_new_one_hidden_and_noted(capsys):
    probe = next(p for p in parsers(faultline_parser()) if p.prog == "faultline probe e3")
    old = probe.parse_args(
        [
            "--model",
            "m",
            "--tasks",
            "c3po_all",
            "--output_path",
            "out",
            "--max_new_tokens",
            "7",
            "--lens_video",
            "--max_failure_rate=0.5",
        ]
    )
    assert capsys.readouterr().err.splitlines() == [
        "faultline probe e3: --output_path is deprecated; use --output-path",
        "faultline probe e3: --max_new_tokens is deprecated; use --max-new-tokens",
        "faultline probe e3: --lens_video is deprecated; use --lens-video",
        "faultline probe e3: --max_failure_rate is deprecated; use --max-failure-rate",
    ]
    new = probe.parse_args(
        [
            "--model",
            "m",
            "--tasks",
            "c3po_all",
            "--output-path",
            "out",
            "--max-new-tokens",
            "7",
            "--lens-video",
            "--max-failure-rate=0.5",
        ]
    )
    assert capsys.readouterr().err == ""
    assert vars(old) == vars(new)
    assert (new.output_path, new.max_new_tokens, new.lens_video, new.max_failure_rate) == ("out", 7, True, 0.5)
    help_text = probe.format_help()
    assert "--output-path" in help_text and "_path" not in help_text.replace("OUTPUT_PATH", "")
    with pytest.raises(SystemExit):  # a required flag is still required under either spelling
        probe.parse_args(["--model", "m", "--tasks", "c3po_all"])
    assert "the following arguments are required: --output-path" in capsys.readouterr().err
