"""Prototype (issue 29): run the Markdown examples as pytest items.

Load with ``pytest -p docs.design.prototype.md_examples README.md docs/``. A fence is preceded by
one marker comment, invisible on GitHub and on the site:

    <!-- example: run -->                 run it (bash: `bash -euo pipefail`; python: a fresh interpreter)
    <!-- example: run demo_out slow -->   ... in a folder holding the main job's demo_out/ (a fixture)
    <!-- example: parse -->               every `sceval|c3po|faultline ...` line is parsed by the real
                                          argparse parser (flags must exist), nothing runs
    <!-- example: skip needs a GPU -->    shown only; the reason is required
A fence with no marker is an error, so a new example cannot dodge the test.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import c3po_plugin.cli
import faultline_eval.commands
import sceval_plugin.cli

MARKER = re.compile(r"<!--\s*example:\s*(\w+)\s*(.*?)\s*-->")
#: The README blocks `.ci/run` reads: run by CI itself, not again here.
CI_MARKER = re.compile(r"<!--\s*(main-job|test-command)\s*-->")
FENCE = re.compile(r"^```(\w*)")
PARSERS = {
    "sceval": sceval_plugin.cli.build_parser,
    "c3po": c3po_plugin.cli.build_parser,
    "faultline": faultline_eval.commands.build_parser,
}


def fences(text: str):
    """(line, language, body, marker or None) for every fenced block."""
    lines, marker, i = text.splitlines(), None, 0
    while i < len(lines):
        if m := MARKER.fullmatch(lines[i].strip()):
            marker = (m.group(1), m.group(2).split())
        elif m := CI_MARKER.fullmatch(lines[i].strip()):
            marker = ("skip", ["run", "by", ".ci/run", f"({m.group(1)})"])
        elif m := FENCE.match(lines[i]):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            yield i + 1, m.group(1), "\n".join(lines[i + 1 : end]), marker
            marker, i = None, end
        elif lines[i].strip() and not lines[i].startswith("<!--"):
            marker = None  # a marker belongs to the fence right after it (a blank line allowed)
        i += 1


def commands(body: str):
    """Shell lines joined over backslash continuations, comments and `VAR=x` prefixes dropped."""
    for line in body.replace("\\\n", " ").splitlines():
        words = shlex.split(line.split("  #")[0], comments=True)
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
            words.pop(0)
        if words:
            yield words


class MarkdownFile(pytest.File):
    def collect(self):
        for line, lang, body, marker in fences(self.path.read_text()):
            yield MarkdownExample.from_parent(self, name=f"line{line}", lang=lang, body=body, marker=marker)


class MarkdownExample(pytest.Item):
    def __init__(self, *, lang, body, marker, **kwargs):
        super().__init__(**kwargs)
        self.lang, self.body, self.marker = lang, body, marker
        if marker and "slow" in marker[1]:
            self.add_marker(pytest.mark.slow)

    def runtest(self):
        if self.marker is None:
            raise AssertionError("fence without an <!-- example: run|parse|skip REASON --> marker")
        kind, args = self.marker
        if kind in ("parse", "skip") and self.lang in ("", "bash", "sh"):
            for words in commands(self.body):
                if words[0] in PARSERS:
                    PARSERS[words[0]]().parse_args(words[1:])  # SystemExit(2) on an unknown flag
        if kind == "skip":
            assert args, "<!-- example: skip --> needs a reason"
            pytest.skip(" ".join(args))
        elif kind == "run":
            cwd = self.config.rootpath  # prototype: the real collector chdirs into a tmp copy / demo_out fixture
            argv = (
                ["bash", "-euo", "pipefail", "-c", self.body]
                if self.lang in ("", "bash", "sh")
                else [sys.executable, "-c", self.body]
            )
            done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-2000:]
        elif kind != "parse":
            raise AssertionError(f"unknown example kind {kind!r}")

    def reportinfo(self):
        return self.path, None, self.name


def pytest_collect_file(parent, file_path: Path):
    if file_path.suffix == ".md":
        return MarkdownFile.from_parent(parent, path=file_path)
