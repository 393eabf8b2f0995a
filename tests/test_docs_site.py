"""The documentation site (issue 29): ``mkdocs build --strict`` passes, and the reference pages
generated from the code (``docs/_ext``) list every command, hook, setting, trial field and public
module there is.

The build runs the real ``mkdocs`` CLI in a subprocess: about 11 s of CPU (lmms-eval's import for its
flags, mkdocstrings reading the packages), 22-38 s wall on two busy shared cores, 1.1 GB RSS; marked
slow. The lmms-eval parser test costs lmms-eval's import (8-16 s there). Needs the ``docs`` extra
(``pip install -e ".[test,docs]"``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import cli_walk  # noqa: E402
import reference_pages  # noqa: E402
import sphinx_roles  # noqa: E402

import faultline_app.faultline_cli  # noqa: E402
from faultline_eval.core.offline import OFFLINE_DEFAULTS  # noqa: E402

#: The build's environment: offline, and without mkdocs-material 9.8's banner (end of life in May
#: 2027, mkdocs 2), which is known: the docs extra pins material <10 and mkdocs 1.6.
BUILD_ENV = {**OFFLINE_DEFAULTS, "NO_MKDOCS_2_WARNING": "1"}


def help_text(root: argparse.ArgumentParser, words: list[str]) -> str:
    """What ``root WORDS --help`` prints (the real command line, not the walk)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        root.parse_args([*words, "--help"])
    assert exited.value.code == 0
    return out.getvalue()


def test_cli_walk_reaches_every_subcommand():
    """Each command of the walk is a real command line (``ROOT WORDS --help`` shows its usage), and
    every sub-command a usage line lists (``{a,b,c}``) is in the walk."""
    parsers = cli_walk.parsers(lmms_eval=False)
    for command in parsers:
        root, *words = command.split()
        usage = help_text(cli_walk.ROOTS[root](), words).split("\n\n")[0]
        assert usage.startswith(f"usage: {command} "), usage
        for listed in re.findall(r"\{([\w,-]+)\}\s*\.\.\.", usage):  # {a,b,c} ...: the sub-commands
            assert {f"{command} {name}" for name in listed.split(",")} <= set(parsers), command
    # faultline's sub-commands show as COMMAND: the modules faultline_app.faultline_cli names, and its own
    faultline = {f"faultline {name}" for name in [*faultline_app.faultline_cli.COMMANDS, "wrap", "audit", "tiny-model"]}
    assert faultline <= set(parsers)
    assert {"sceval report", "c3po build generate", "faultline probe e1", "sceval build annotate export"} <= set(
        parsers
    )


def test_every_option_and_subcommand_of_ours_is_documented():
    """The CLI reference (``reference_pages.py``) shows each option's help and each sub-command's
    one-line summary: an option or positional without help, or a sub-command without a summary in
    its parent's listing, is undocumented there. lmms-eval's own flags are not ours to document."""
    missing = []
    for command, parser in cli_walk.parsers(lmms_eval=False).items():
        for action in cli_walk.visible_actions(parser):
            if not (action.help or "").strip():
                missing.append(f"{command} {'/'.join(action.option_strings) or action.dest}")
        for name, summary in cli_walk.subcommands(parser).items():
            if not summary.strip():
                missing.append(f"{command} {name} (no summary)")
    assert not missing, "undocumented in the CLI reference:\n" + "\n".join(missing)


def test_flags_leave_out_the_hidden_old_spellings():
    parsers = cli_walk.parsers(lmms_eval=False)
    smoke = parsers["sceval smoke"]
    assert "--model-args" in cli_walk.flags(smoke)
    assert "--model_args" not in cli_walk.flags(smoke)
    assert "--model_args" in cli_walk.hidden_flags(smoke)
    probe = parsers["faultline probe e1"]
    assert {"--mid_layers", "--lens_video", "--max_failure_rate"} <= cli_walk.hidden_flags(probe)
    assert not cli_walk.hidden_flags(probe) & cli_walk.flags(probe)
    # a hidden spelling is still accepted, as the same option
    with contextlib.redirect_stderr(io.StringIO()) as note:
        args = probe.parse_args(["--model", "m", "--tasks", "t", "--output-path", "o", "--max_failure_rate", "0.2"])
    assert args.max_failure_rate == 0.2
    assert "--max_failure_rate is deprecated" in note.getvalue()
    # and help=SUPPRESS options count as hidden too
    parser = argparse.ArgumentParser()
    parser.add_argument("--shown")
    parser.add_argument("--secret", help=argparse.SUPPRESS)
    assert cli_walk.flags(parser) == {"-h", "--help", "--shown"}
    assert cli_walk.hidden_flags(parser) == {"--secret"}


def test_lmms_eval_parsers_are_built_without_side_effects():
    environ, argv = dict(os.environ), list(sys.argv)
    parsers = cli_walk.parsers()
    assert dict(os.environ) == environ and sys.argv == argv
    lmms, ours = parsers["lmms-eval"], parsers["faultline-eval"]
    assert parsers["faultline eval"] is ours
    assert {"--model", "--tasks", "--model_args", "--output_path", "--log_samples"} <= cli_walk.flags(lmms)
    own = {"--max-failure-rate", "--budget", "--precision", "--round-size", "--order-seed", "--complete"}
    assert cli_walk.flags(ours) == cli_walk.flags(lmms) | own
    assert cli_walk.hidden_flags(ours) == {"--max_failure_rate"}
    args = ours.parse_args(["--model", "sceval_reference", "--tasks", "sceval_panel", "--max-failure-rate", "0.5"])
    assert (args.model, args.max_failure_rate) == ("sceval_reference", 0.5)
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
        lmms.parse_args(["--max-failure-rate", "0.5"])  # ours, not lmms-eval's


@dataclass(frozen=True)
class FakeSetting:
    name: str
    default: str | None
    doc: str
    choices: tuple[str, ...] = ()
    group: str = ""


def test_settings_page_has_a_row_per_setting_under_its_group():
    page = reference_pages.settings_page(
        [
            FakeSetting("SCEVAL_ZETA", None, "Unset | off, ``a|b``.", group="Data"),
            FakeSetting(
                "FAULTLINE_ALPHA", "batch", "How (:mod:`faultline_eval.core.store`).", ("batch", "never"), "Runs"
            ),
            FakeSetting("SCEVAL_BETA", "1", "One.", group="Data"),
        ],
        [FakeSetting("RANK", "0", "accelerate's rank.")],
    )
    lines = page.splitlines()
    rows = [line for line in lines if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == ["SCEVAL_ZETA", "SCEVAL_BETA", "FAULTLINE_ALPHA", "RANK"]
    assert rows[0] == "| `SCEVAL_ZETA` {#SCEVAL_ZETA} | unset |  | Unset \\| off, ``a|b``. |"
    assert rows[2].startswith("| `FAULTLINE_ALPHA` {#FAULTLINE_ALPHA} | `batch` | `batch`, `never` |")
    assert 'identifier="faultline_eval.core.store" optional' in rows[2]
    assert lines.index("## Data") < lines.index("## Runs") < lines.index("## Read, not ours")


def test_sphinx_roles_link_ours_and_fail_on_a_typo():
    resolve = sphinx_roles.module_resolver("sceval_plugin.sceval_trial")
    text = sphinx_roles.rewrite(
        ":class:`SCEvalTrial`, :func:`numpy.asarray`, :exc:`ValueError`, :mod:`faultline_eval.core.nope`", resolve
    )
    assert text.split(", ") == [
        '<autoref identifier="sceval_plugin.sceval_trial.SCEvalTrial" optional><code>SCEvalTrial</code></autoref>',
        "`numpy.asarray`",
        "`ValueError`",
        "[`faultline_eval.core.nope`][faultline_eval.core.nope]",  # required: --strict fails on it
    ]


def test_the_nav_lists_one_api_page_per_public_module():
    modules = reference_pages.public_modules()
    assert {"sceval_plugin.operators", "faultline_eval.core.trial", "faultline_eval.tasks.wrap_configs"} <= set(modules)
    nav = reference_pages.api_nav(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    (reference,) = [item["Reference"] for item in nav if "Reference" in item]
    (api,) = [item["Python API"] for item in reference if "Python API" in item]
    assert api == [{module: f"reference/api/{module}.md"} for module in modules]
    assert set(reference_pages.pages()) >= {f"reference/api/{module}.md" for module in modules}


def text_of(site: Path, page: str) -> str:
    path = site / page / "index.html"
    assert path.is_file(), f"{page} is not in the site"
    return path.read_text()


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path):
    assert importlib.util.find_spec("mkdocs"), 'the docs extra is not installed: pip install -e ".[test,docs]"'
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
        cwd=ROOT,
        env={**os.environ, **BUILD_ENV},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]

    cli = text_of(site, "reference/cli")
    for command in cli_walk.parsers(lmms_eval=False):
        if command != "faultline eval":  # documented with faultline-eval (the same anchor)
            assert f'id="{reference_pages.anchor(command)}"' in cli, command
    assert 'id="faultline-eval"' in cli and 'id="lmms-eval"' in cli and "--max-failure-rate" in cli

    hooks = text_of(site, "reference/hooks")
    for module in reference_pages.HOOKSPECS:
        for name, _ in reference_pages.hooks(module):
            assert f'id="{name}"' in hooks, name
    assert len(reference_pages.hooks(reference_pages.HOOKSPECS[0])) >= 5

    settings = text_of(site, "reference/settings")
    settings_, third_party = reference_pages.declared_settings()
    for setting in [*settings_, *third_party]:
        assert f'id="{setting.name}"' in settings, setting.name

    schema = text_of(site, "reference/trial-schema")
    for kind, spec in json.loads(reference_pages.TRIAL_SCHEMA.read_text())["$defs"].items():
        assert f'id="{kind}"' in schema
        assert all(f"<code>{field}</code>" in schema for field in spec["properties"]), kind

    for module in reference_pages.public_modules():
        page = text_of(site, f"reference/api/{module}")
        assert f'id="{module}"' in page, module
        assert not re.search(r":(func|class|mod|data|meth|attr|exc):`?\w", page), f"a raw Sphinx role in {module}"
        exported = getattr(importlib.import_module(module), "__all__", ())
        missing = [name for name in exported if f'id="{module}.{name}"' not in page]
        assert not missing, f"{module}: exported but not on its API page: {missing}"
    trial = text_of(site, "reference/api/faultline_eval.core.trial")
    assert 'id="faultline_eval.core.trial.TrialKind"' in trial

    # docs/_ext/measured.py ran: the figures are filled in, and the Benchmarks page names each run
    assert "{{ measured" not in text_of(site, "getting-started/install")
    benchmarks = text_of(site, "explanations/benchmarks")
    assert "<!-- results" not in benchmarks and benchmarks.count("<table>") >= len(
        list(ROOT.glob("benchmarks/results/*.json"))
    )
