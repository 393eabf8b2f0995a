"""Every fenced block of README.md and docs/ (not docs/design/) is a test item (issue 29).

A fence is preceded by exactly one marker comment (a blank line between is allowed), invisible on
GitHub and on the site; a fence without one fails, so a new example cannot dodge the suite:

    <!-- example: run -->                 bash: ``bash -euo pipefail``; python: a fresh interpreter;
                                          in a fresh temp dir, this venv's bin first on PATH, offline
    <!-- example: run demo_out -->        the same, in a temp dir holding ``demo_out/`` (the main job's
                                          output: results + report/ + c3po-report/), a symlink
    <!-- example: run slow -->            / ``run demo_out slow``: up to 300 s instead of 90, marked slow
    <!-- example: parse -->               nothing runs; each command of ours is parsed by its real parser
    <!-- example: skip REASON -->         not run (GPU, weights, key, server, network); still parsed
    <!-- example: skip output -->         / ``skip config``: output samples, trees, configs: shown only

The README's ``<!-- main-job -->`` / ``<!-- test-command -->`` blocks are run by ``.ci/run`` itself,
so here they are only parsed. "Parsed" means: each shell command (backslash continuations joined,
comments and ``VAR=x`` prefixes dropped, split at ``&&``, ``||``, ``|``, ``;``) whose first word is
``sceval``/``c3po``/``faultline``/``faultline-eval``/``lmms-eval`` (a path such as ``.venv/bin/sceval``
counts) goes through that command's argparse parser from ``docs/_ext/cli_walk.py`` — the parsers
the CLI reference page is generated from — so an unknown flag or a bad choice fails, naming the
file and line.

Loaded by ``tests/conftest.py``; ``pytest`` with no arguments collects README.md and docs/ too
(``testpaths``). One page on its own: ``pytest -p no:xdist tests/doc_examples.py docs/how-to/resume.md``
(naming this file loads ``tests/conftest.py``, which registers the collector).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from faultline_eval.core.offline import OFFLINE_DEFAULTS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))  # cli_walk is the docs build's module, not a package of ours

from cli_walk import parsers  # noqa: E402

#: The marker before a fence, e.g. ``<!-- example: run demo_out slow -->``.
MARKER = re.compile(r"<!--\s*example:\s*(.*?)\s*-->")
#: The README blocks ``.ci/run`` reads and runs itself.
CI_MARKER = re.compile(r"<!--\s*(main-job|test-command)\s*-->")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
SYNTAX = "<!-- example: run | run demo_out | run slow | run demo_out slow | parse | skip REASON -->"
SHELL = {"", "bash", "sh", "shell", "console"}
PYTHON = {"python", "py", "python3"}
#: The commands whose lines are parsed, by the first word.
OURS = ("sceval", "c3po", "faultline", "faultline-eval", "lmms-eval")
#: Words before the command word (``env A=1 sceval ...``, ``time sceval ...``, ``do sceval ...``).
PREFIXES = {"env", "time", "nohup", "exec", "do", "then", "else", "if", "while", "until", "!", "{"}
SEPARATORS = {"&&", "||", "|", ";", "&", "(", ")"}
TIMEOUT_S = {
    False: 90,
    True: 300,
}  # (slow) a run example's limit: an lmms-eval run of --limit 2 takes ~30 s on 2 busy cores
#: The commands' offline defaults, and what CI sets besides (.ci/run; one OpenMP thread: tests/conftest.py).
OFFLINE_ENV = {**OFFLINE_DEFAULTS, "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
#: The main job (README, ``<!-- main-job -->``): its tasks, and the reduced copy's size.
DEMO_TASKS = "sceval_panel,sceval_single,c3po_all"
DEMO_LIMIT = 2
#: A results file holds these (task-name prefixes) when the main job ran all of DEMO_TASKS.
DEMO_TASK_PREFIXES = ("sceval_clean", "sceval_single_", "sceval_bi_", "sceval_tri_", "c3po_all")
DEMO_REPORTS = ("report/report.json", "c3po-report/report.json")


@dataclass(frozen=True)
class Fence:
    """One fenced block: where, its language, its text, and its marker's words (None: no marker)."""

    line: int  # 1-based line of the opening fence
    lang: str
    body: str
    marker: tuple[str, ...] | None
    ci_block: str | None = None  # "main-job" / "test-command": run by .ci/run
    markers: int = 1  # how many marker comments stood before it (one is right)


def fences(text: str) -> Iterator[Fence]:
    """Every fenced block of a Markdown text, with the marker comment right before it."""
    lines = text.splitlines()
    marker: tuple[str, ...] | None = None
    ci_block: str | None = None
    count, i = 0, 0
    while i < len(lines):
        stripped = lines[i].strip()
        if m := MARKER.fullmatch(stripped):
            if ci_block is None:  # a block .ci/run runs stays one, whatever marker sits beside it
                marker, count = tuple(m.group(1).split()), count + 1
        elif m := CI_MARKER.fullmatch(stripped):
            marker, ci_block, count = ("skip", "run", "by", ".ci/run"), m.group(1), 1
        elif m := FENCE.match(lines[i]):
            indent, ticks, lang = m.groups()
            end = next(
                (j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(ticks[0] * len(ticks))),
                len(lines),
            )
            body = "\n".join(line[len(indent) :] if line.startswith(indent) else line for line in lines[i + 1 : end])
            yield Fence(i + 1, lang.lower(), body, marker, ci_block, count)
            marker, ci_block, count, i = None, None, 0, end
        elif stripped:
            marker, ci_block, count = None, None, 0  # a marker belongs to the fence right after it
        i += 1


#: ``<model>``, ``<local copy>``: a placeholder, not a redirection.
PLACEHOLDER = re.compile(r"<([A-Za-z][^<>\n]*?)>")
#: ``> out.txt``, ``2>&1``, ``2>/dev/null``, ``< in``: a redirection and its target, no arguments.
REDIRECTION = re.compile(r"(?<!\S)\d*(?:>>?|<|&>)(?:&\d+|\s*[^\s;&|()]+)")


def shell_commands(body: str) -> Iterator[list[str]]:
    """The simple commands of a shell text: continuations joined, comments, ``VAR=x`` prefixes and
    redirections dropped, split at ``&&``, ``||``, ``|``, ``;``; each as its words."""
    for line in body.replace("\\\n", " ").splitlines():
        line = PLACEHOLDER.sub(lambda m: "\x00" + m.group(1).replace(" ", "\x03") + "\x01", line)
        lexer = shlex.shlex(REDIRECTION.sub(" ", line), posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split, lexer.commenters = True, "#"
        try:
            tokens = [t.replace("\x00", "<").replace("\x01", ">").replace("\x03", " ") for t in lexer]
        except ValueError:  # an unclosed quote: a heredoc's text or prose, not a command line
            continue
        words: list[str] = []
        for token in [*tokens, ";"]:
            if token not in SEPARATORS:
                words.append(token)
                continue
            while words and (re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]) or words[0] in PREFIXES):
                words.pop(0)
            if words:
                yield words
            words = []


def command_name(word: str) -> str | None:
    """``sceval`` for ``sceval`` or ``.venv/bin/sceval``; None for a command not of ours."""
    name = word.rsplit("/", 1)[-1]
    return name if name in OURS else None


_PARSERS: dict[str, argparse.ArgumentParser] = {}


def all_parsers() -> dict[str, argparse.ArgumentParser]:
    """``cli_walk.parsers()``, built once per process (lmms-eval's import takes seconds)."""
    if not _PARSERS:
        _PARSERS.update(parsers())
    return _PARSERS


def command_parser(words: list[str]) -> tuple[argparse.ArgumentParser, list[str]] | None:
    """The parser of the (sub-)command ``words`` names and the arguments it gets; None for a
    command of lmms-eval's other than evaluation (``lmms-eval tasks list``: lmms-eval's business)."""
    known = all_parsers()
    key, args = command_name(words[0]), words[1:]
    if key in ("faultline-eval", "lmms-eval") and args[:1] == ["eval"]:
        args = args[1:]  # `faultline-eval eval ...` is `faultline-eval ...`, as is lmms-eval's dispatch
    if key == "lmms-eval" and args[:1] and not args[0].startswith("-"):
        return None
    while args and f"{key} {args[0]}" in known:
        key, args = f"{key} {args[0]}", args[1:]
    return known[key], args


def parse_command(words: list[str]) -> str | None:
    """Parse one command of ours with its real parser: None if it parses, else argparse's message."""
    if (found := command_parser(words)) is None:
        return None
    parser, args = found
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            parser.parse_args(args)
    except SystemExit as exc:  # argparse's error (2), or --help/--version (0)
        if exc.code:
            lines = err.getvalue().strip().splitlines()
            return lines[-1] if lines else f"exit status {exc.code}"
    return None


def parse_failures(body: str) -> list[str]:
    """``argparse``'s message for each command of ours in ``body`` that its parser rejects."""
    failures = []
    for words in shell_commands(body):
        if command_name(words[0]) and (message := parse_command(words)):
            failures.append(f"`{shlex.join(words)}`: {message}")
    return failures


def demo_complete(folder: Path) -> str | None:
    """None if ``folder`` holds a finished main job (results of every DEMO_TASKS kind and both
    reports), else what is missing."""
    if not folder.is_dir():
        return f"{folder} does not exist"
    tasks: set[str] = set()
    for results in folder.glob("*_results.json"):
        with contextlib.suppress(ValueError, OSError):
            tasks.update(json.loads(results.read_text()).get("results", {}))
    missing = [p for p in DEMO_TASK_PREFIXES if not any(t.startswith(p) for t in tasks)]
    missing += [r for r in DEMO_REPORTS if not (folder / r).is_file()]
    return f"{folder} lacks {', '.join(missing)}" if missing else None


def demo_commands(out: str) -> list[list[str]]:
    """The main job on DEMO_LIMIT samples per task, and both reports, into ``out``."""
    return [
        ["faultline-eval", "eval", "--model", "sceval_reference", "--tasks", DEMO_TASKS, "--limit", str(DEMO_LIMIT)]
        + ["--log_samples", "--output_path", f"{out}/"],
        ["sceval", "report", f"{out}/", "-o", f"{out}/report/"],
        ["c3po", "report", f"{out}/", "-o", f"{out}/c3po-report/"],
    ]


def example_env() -> dict[str, str]:
    """The environment an example runs in: this venv's bin first on PATH, offline."""
    env = {**os.environ, **OFFLINE_ENV}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


DEMO_KEY = pytest.StashKey[Path]()


def demo_out(config: pytest.Config) -> Path:
    """The main job's output: the checkout's ``demo_out/`` when complete (CI runs the main job
    first, in the same checkout), else a reduced one (``--limit 2``, ~30 s on 2 cores) built once
    per run and shared by the xdist workers (a file lock; the run's shared temp folder)."""
    if DEMO_KEY in config.stash:
        return config.stash[DEMO_KEY]
    checkout = config.rootpath / "demo_out"
    if demo_complete(checkout) is None:
        config.stash[DEMO_KEY] = checkout
        return checkout
    factory = config._tmp_path_factory  # type: ignore[attr-defined]  # the items are no fixtures
    base = factory.getbasetemp()
    shared = base.parent if hasattr(config, "workerinput") else base  # xdist: .../pytest-N/popen-gwK
    built = shared / "doc-examples-demo_out"
    with FileLock(str(shared / "doc-examples-demo_out.lock")):
        if demo_complete(built) is not None:
            started = time.monotonic()
            for argv in demo_commands(str(built)):
                done = subprocess.run(argv, env=example_env(), capture_output=True, text=True, timeout=600)
                if done.returncode:
                    raise RuntimeError(f"building the demo output failed: {shlex.join(argv)}\n{done.stderr[-3000:]}")
            (shared / "doc-examples-demo_out.seconds").write_text(f"{time.monotonic() - started:.1f}\n")
    config.stash[DEMO_KEY] = built
    return built


class ExampleFailed(AssertionError):
    """An example that failed: the message says where and why, no traceback of the collector."""


class MarkdownFile(pytest.File):
    def collect(self):
        for fence in fences(self.path.read_text(encoding="utf-8")):
            yield MarkdownExample.from_parent(self, name=f"line{fence.line}", fence=fence)


class MarkdownExample(pytest.Item):
    def __init__(self, *, fence: Fence, **kwargs):
        super().__init__(**kwargs)
        self.fence = fence
        if fence.marker and fence.marker[0] == "run" and "slow" in fence.marker[1:]:
            self.add_marker(pytest.mark.slow)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(self.config.rootpath)}:{self.fence.line}"

    def fail(self, message: str) -> None:
        raise ExampleFailed(f"{self.where}: {message}")

    def runtest(self) -> None:
        fence = self.fence
        if fence.marker is None:
            self.fail(f"a fence without a marker; put one of {SYNTAX} on the line before it")
        if fence.markers > 1:
            self.fail(f"{fence.markers} markers before one fence; keep one ({SYNTAX})")
        kind, *args = fence.marker or ("",)
        if kind == "run" and set(args) - {"demo_out", "slow"}:
            self.fail(f"unknown run option(s) {sorted(set(args) - {'demo_out', 'slow'})}; the syntax is {SYNTAX}")
        if kind == "skip" and not args:
            self.fail(f"`skip` needs a reason (e.g. `skip needs a GPU`); the syntax is {SYNTAX}")
        if kind not in ("run", "parse", "skip") or (kind == "parse" and args):
            self.fail(f"unknown marker `example: {' '.join(fence.marker or ())}`; the syntax is {SYNTAX}")
        shown_only = kind == "skip" and args[:1] in (["output"], ["config"])  # no command lines in it
        if fence.lang in SHELL and not shown_only and (failures := parse_failures(fence.body)):
            self.fail("a command its parser rejects:\n" + "\n".join(failures))
        if kind == "skip":
            pytest.skip(
                f"{self.where}: {' '.join(args) if fence.ci_block is None else f'run by .ci/run ({fence.ci_block})'}"
            )
        if kind == "run":
            self.run_example(demo="demo_out" in args, slow="slow" in args)

    def run_example(self, *, demo: bool, slow: bool) -> None:
        lang = self.fence.lang
        if lang not in SHELL | PYTHON:
            self.fail(f"`run` needs a bash or python fence, not ```{lang}")
        with tempfile.TemporaryDirectory(prefix="doc-example-") as tmp:
            if demo:
                (Path(tmp) / "demo_out").symlink_to(demo_out(self.config), target_is_directory=True)
            script = Path(tmp) / ("example.py" if lang in PYTHON else "example.sh")
            script.write_text(self.fence.body + "\n", encoding="utf-8")
            argv = [sys.executable, script.name] if lang in PYTHON else ["bash", "-euo", "pipefail", script.name]
            started = time.monotonic()
            try:
                done = subprocess.run(
                    argv, cwd=tmp, env=example_env(), capture_output=True, text=True, timeout=TIMEOUT_S[slow]
                )
            except subprocess.TimeoutExpired as exc:
                self.fail(f"still running after {TIMEOUT_S[slow]} s{output_tail(exc.stdout, exc.stderr)}")
            if done.returncode:
                seconds = time.monotonic() - started
                self.fail(f"exit status {done.returncode} after {seconds:.1f} s{output_tail(done.stdout, done.stderr)}")

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ExampleFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        kind = " ".join(self.fence.marker) if self.fence.marker else "no marker"
        return self.path, self.fence.line - 1, f"{self.where} [{kind}]"


def output_tail(stdout: str | bytes | None, stderr: str | bytes | None, chars: int = 3000) -> str:
    """The last ``chars`` of an example's stderr and stdout, for its failure message."""
    parts = []
    for name, text in (("stderr", stderr), ("stdout", stdout)):
        if isinstance(text, bytes):
            text = text.decode(errors="replace")
        if text and text.strip():
            parts.append(f"\n--- {name} (last {chars} characters) ---\n{text[-chars:]}")
    return "".join(parts)


def documented_markdown(rootpath: Path) -> list[Path]:
    """README.md and the pages under docs/ (not docs/design/: scouting notes, not the manual)."""
    candidates = [rootpath / "README.md", *sorted((rootpath / "docs").rglob("*.md"))]
    return [path for path in candidates if path.is_file() and is_documentation(path, rootpath)]


def is_documentation(path: Path, rootpath: Path) -> bool:
    """README.md or a page under docs/ outside docs/design/."""
    docs = rootpath / "docs"
    return path.suffix == ".md" and (
        path == rootpath / "README.md" or (docs in path.parents and docs / "design" not in path.parents)
    )


def pytest_collect_file(parent: pytest.Collector, file_path: Path):
    if is_documentation(file_path, parent.config.rootpath):
        return MarkdownFile.from_parent(parent, path=file_path)
    return None
