"""The docs name only what exists, and document what there is (issue 29, decision D5).

Static and fast: README.md and the hand-written pages under docs/ (not docs/design/; the reference
pages generated from the code exist only in memory, in the MkDocs build) against the code:

(a) every ``--flag`` given with its command — in a code span (```sceval report --cohort x```) or a
    fence line — is a flag of that (sub-)command's real parser (``docs/_ext/cli_walk.py``); a flag in
    a span without a command (```--limit 2```) is one of any command of ours. Old snake_case
    spellings still parse but are hidden: only CHANGELOG.md may name them. Another tool's flags are
    recognised by its command word (:data:`EXTERNAL_COMMANDS`) and not checked.
(b) every ``SCEVAL_*``/``C3PO_*``/``FAULTLINE_*`` variable named is declared in
    ``faultline_eval.core.settings.SETTINGS``, and every declared setting is named on some
    hand-written page (the one that explains it), not only in the generated table.
(c) every hook of ``sceval_plugin.hookspecs``/``c3po_plugin.hookspecs`` is named in the plugin
    tutorial, and every ``sceval_register_*``/``c3po_register_*`` named anywhere is a hook.
(d) every ``--tasks`` value of ours (comma lists, groups, tags, wildcards) is a task, group or tag
    our task folders define, and every ``--model`` value is in lmms-eval's model registry (ours
    come in through the ``lmms_eval.models`` entry point).

Each failure names file:line, the unknown name and the close matches.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_walk import flags, hidden_flags
from doc_examples import (
    ROOT,
    SHELL,
    all_parsers,
    command_name,
    command_parser,
    documented_markdown,
    fences,
    shell_commands,
)
from reference_pages import HOOKSPECS, hooks

from faultline_app.eval_cli import option_values
from faultline_eval.core.registry import close_matches
from faultline_eval.model_wrappers.lmms_plugin import NAMESPACES, our_task_names

PAGES = documented_markdown(ROOT)
#: The page that teaches every hook (DOCS29 site map).
PLUGIN_TUTORIAL = ROOT / "docs" / "tutorials" / "write-a-plugin.md"
#: Other tools: a span or fence line starting with one of these is not checked against our parsers.
EXTERNAL_COMMANDS = frozenset(
    "vllm accelerate torchrun pytest pip pip3 uv mkdocs python python3 ruff mypy lint-imports duplicates "
    "git bash sh curl wget docker apt-get apt sudo huggingface-cli hf nvidia-smi chromium playwright "
    "cd ls du cat diff cp mv rm mkdir head tail grep sed jq find export source tar unzip nohup timeout "
    "make".split()
)
#: Other tools' flags a page may name in prose without their command, by tool.
EXTERNAL_FLAGS = {
    "vllm serve (0.32)": "--trust-request-mm-kwargs --media-io-kwargs --api-key --limit-mm-per-prompt "
    "--tensor-parallel-size --pipeline-parallel-size --distributed-executor-backend --data-parallel-size "
    "--data-parallel-size-local --data-parallel-address --data-parallel-rpc-port --data-parallel-start-rank "
    "--data-parallel-backend --headless --max-model-len --gpu-memory-utilization --port --host --served-model-name "
    "--chat-template --allowed-local-media-path --dtype",
    "accelerate launch": "--num_processes --num-processes --multi_gpu --main_process_port",
    "pytest / pytest-xdist": "--dist --maxprocesses --collect-only --durations",
    "mypy / ruff": "--strict --check --fix",
    "pip": "--index-url --extra-index-url --no-deps --upgrade --target --editable",
}
EXTERNAL_FLAG_NAMES = frozenset(flag for names in EXTERNAL_FLAGS.values() for flag in names.split())
#: The flags of each ``benchmarks/*.py`` script (they build their parsers inline: read, not imported).
BENCHMARK_FLAGS = {
    f"benchmarks/{path.name}": set(re.findall(r"add_argument\(\s*[\"'](-[\w-]+)", path.read_text(encoding="utf-8")))
    | {"-h", "--help"}
    for path in sorted((ROOT / "benchmarks").glob("*.py"))
}
#: Task-like names the docs give on purpose that are not (yet) tasks, and why.
NOT_TASKS = {
    "sceval_t30_v7O": "the misspelt name of the unknown-task example",
    "c3po_echo_location": "the template a plugin of the tutorial would add",
    "sceval_bi_tv_typo_ocr_defocus_blur_t50_v50": "the cell the plugin tutorial's condition plugin adds",
}
#: Task names made on request (not in the task folders until a command writes them).
MADE_ON_REQUEST = ("sceval_prompt_subset_",)
#: lmms-eval's evaluation: the commands whose --tasks and --model values are checked.
EVAL_COMMANDS = ("faultline-eval", "faultline eval", "lmms-eval")
FLAG = re.compile(r"--?[A-Za-z][\w-]*")
CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
SETTING = re.compile(r"\b(?:SCEVAL|C3PO|FAULTLINE)_[A-Z0-9_]*[A-Z0-9]\b")
HOOK = re.compile(r"\b(?:sceval|c3po)_register_\w+")
PLACEHOLDER = re.compile(r"[<>${}\[\]]|\.\.\.")  # <task>, $MODEL, {a,b}, [x], ...


@dataclass(frozen=True)
class Command:
    """A command line named in the docs: where, its words, and whether it stood in a fence."""

    where: str
    words: tuple[str, ...]
    in_fence: bool


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of the text outside fenced blocks."""
    inside = ""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if inside:
            if stripped.startswith(inside):
                inside = ""
        elif m := re.match(r"(`{3,}|~{3,})", stripped):
            inside = m.group(1)
        else:
            yield number, line


def commands_in(path: Path) -> Iterator[Command]:
    """Every command line of ``path``: each simple command of a shell fence, and each code span."""
    text = path.read_text(encoding="utf-8")
    for fence in fences(text):
        if fence.lang not in SHELL:
            continue
        number = fence.line + 1
        for logical in fence.body.replace("\\\n", "\\\x00").split("\n"):  # one per continued line
            for words in shell_commands(logical.replace("\\\x00", " ")):
                yield Command(f"{rel(path)}:{number}", tuple(words), True)
            number += logical.count("\x00") + 1
    for number, line in prose_lines(text):
        for span in CODE_SPAN.findall(line):
            for words in shell_commands(span):
                yield Command(f"{rel(path)}:{number}", tuple(words), False)


ALL_COMMANDS = {rel(path): list(commands_in(path)) for path in PAGES}


def given_flags(args: list[str] | tuple[str, ...]) -> list[str]:
    """The option names among ``args`` (``--x=1`` gives ``--x``)."""
    return [arg.split("=", 1)[0] for arg in args if FLAG.fullmatch(arg.split("=", 1)[0])]


def benchmark_script(words: tuple[str, ...]) -> str | None:
    """``benchmarks/x.py`` for ``python benchmarks/x.py ...`` (any python), else None."""
    if len(words) > 1 and Path(words[0]).name.startswith("python") and words[1].startswith("benchmarks/"):
        return words[1]
    return None


def hint(name: str, known: set[str]) -> str:
    close = close_matches(name, known)
    return f" (did you mean {', '.join(close)}?)" if close else ""


@pytest.fixture(scope="module")
def our_flags() -> tuple[set[str], dict[str, str]]:
    """Every visible flag of every command of ours, and each hidden old spelling with its command."""
    visible: set[str] = set()
    hidden: dict[str, str] = {}
    for name, parser in all_parsers().items():
        visible |= flags(parser)
        hidden.update(dict.fromkeys(hidden_flags(parser), name))
    return visible, {flag: name for flag, name in hidden.items() if flag not in visible}


def test_readme_is_read():
    """The checks below are not vacuous: the README names commands, flags, settings and tasks."""
    readme = ALL_COMMANDS["README.md"]
    assert sum(1 for c in readme if command_name(c.words[0])) > 5, "no command of ours found in README.md"
    assert sum(len(given_flags(c.words)) for c in readme) > 5
    assert SETTING.search((ROOT / "README.md").read_text())
    assert any(option_values(c.words, "--tasks") for c in readme)


def test_flags_exist_for_their_command(our_flags):
    visible, hidden = our_flags
    problems, checked = [], 0
    for commands in ALL_COMMANDS.values():
        for command in commands:
            first = command.words[0]
            if command_name(first):
                found = command_parser(list(command.words))
                if found is None:
                    continue
                parser, args = found
                known, old = flags(parser), hidden_flags(parser)
                if args[:1] == ["..."]:  # `faultline probe ... --prompt task`: any sub-command of it
                    below = [p for name, p in all_parsers().items() if name.startswith(f"{parser.prog} ")]
                    known = known.union(*map(flags, below))
                    old = old.union(*map(hidden_flags, below)) - known
                for flag in given_flags(args):
                    checked += 1
                    if flag in old:
                        problems.append(
                            f"{command.where}: {flag} is a deprecated spelling of {parser.prog}; "
                            "only CHANGELOG.md names it"
                        )
                    elif flag not in known:
                        problems.append(f"{command.where}: {parser.prog} has no {flag}{hint(flag, known)}")
            elif (script := benchmark_script(command.words)) is not None:
                known = BENCHMARK_FLAGS.get(script, set())
                for flag in given_flags(command.words[2:]):
                    checked += 1
                    if flag not in known:
                        problems.append(f"{command.where}: {script} has no {flag}{hint(flag, known)}")
            elif first.startswith("--") and not command.in_fence:  # a flag in prose, without its command
                flag = first.split("=", 1)[0]
                checked += 1
                if flag in hidden:
                    problems.append(
                        f"{command.where}: {flag} is a deprecated spelling ({hidden[flag]}); only CHANGELOG.md names it"
                    )
                elif flag not in visible | EXTERNAL_FLAG_NAMES | set().union(*BENCHMARK_FLAGS.values()):
                    problems.append(
                        f"{command.where}: {flag} is no flag of ours{hint(flag, visible)}; another tool's flag "
                        "goes with its command (`vllm serve --tensor-parallel-size 2`) or into EXTERNAL_FLAGS "
                        "in tests/test_docs_match_code.py"
                    )
            elif (
                not command.in_fence
                and given_flags(command.words[1:])
                and Path(first).name not in EXTERNAL_COMMANDS
                and not first.endswith((".py", ".sh"))
                and "/" not in first
                and not PLACEHOLDER.search(first)
            ):
                problems.append(
                    f"{command.where}: `{shlex.join(command.words)}`: {first!r} is no command of ours"
                    f"{hint(first, {'sceval', 'c3po', 'faultline', 'faultline-eval', 'lmms-eval'})}; "
                    "another tool's goes into EXTERNAL_COMMANDS in tests/test_docs_match_code.py"
                )
    assert checked, "no flag found in the docs"
    assert not problems, "flags the docs name that the code does not have:\n" + "\n".join(problems)


@pytest.fixture(scope="module")
def settings_module():
    return pytest.importorskip(
        "faultline_eval.core.settings", reason="the settings registry (issue 29, D4) is not in this tree"
    )


def names_in_pages(pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    """(file:line, name) for every match of ``pattern`` in README.md and the docs pages."""
    return [
        (f"{rel(path)}:{number}", name)
        for path in PAGES
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for name in pattern.findall(line)
    ]


def test_named_settings_are_declared(settings_module):
    declared = {setting.name for setting in settings_module.SETTINGS}
    named = names_in_pages(SETTING)
    problems = [f"{where}: {name} is no setting{hint(name, declared)}" for where, name in named if name not in declared]
    assert named, "no SCEVAL_/C3PO_/FAULTLINE_ variable named in the docs"
    assert not problems, "settings the docs name that faultline_eval.core.settings does not declare:\n" + "\n".join(
        problems
    )


def test_declared_settings_are_explained_by_hand(settings_module):
    """The generated table lists every setting; a page a person wrote must say when to use it."""
    text = "\n".join(path.read_text(encoding="utf-8") for path in PAGES)
    missing = [s.name for s in settings_module.SETTINGS if not re.search(rf"\b{re.escape(s.name)}\b", text)]
    assert not missing, f"settings no hand-written page (README.md, docs/) names: {', '.join(missing)}"


HOOKS = {name for module in HOOKSPECS for name, _ in hooks(module)}  # as the hooks reference page lists them


def test_named_hooks_exist():
    named = names_in_pages(HOOK)
    problems = [f"{where}: {name} is no hook{hint(name, HOOKS)}" for where, name in named if name not in HOOKS]
    assert named, "no hook named in the docs"
    assert not problems, "hooks the docs name that the hookspecs do not define:\n" + "\n".join(problems)


def test_every_hook_is_in_the_plugin_tutorial():
    assert len(HOOKS) >= 8  # five SCEval hooks, three C³PO hooks
    if not (ROOT / "mkdocs.yml").exists():
        pytest.skip("no docs site in this tree (mkdocs.yml), so no plugin tutorial yet")
    text = PLUGIN_TUTORIAL.read_text(encoding="utf-8")
    missing = sorted(hook for hook in HOOKS if not re.search(rf"\b{hook}\b", text))
    assert not missing, f"hooks {rel(PLUGIN_TUTORIAL)} does not teach: {', '.join(missing)}"


def task_problem(name: str, known: set[str]) -> str | None:
    """Why lmms-eval would not find ``name`` among our tasks; None if it would (or it is not ours)."""
    if not name.startswith(NAMESPACES) or "__" in name or name in NOT_TASKS or name.startswith(MADE_ON_REQUEST):
        return None  # lmms-eval's own, a wrapped task (made on request), or named on purpose
    if any(c in name for c in "*?["):
        return None if fnmatch.filter(known, name) else f"{name} matches none of our tasks"
    return None if name in known else f"{name} is no task, group or tag of ours{hint(name, known)}"


def test_task_and_model_names_exist():
    import lmms_eval.models  # heavy: seconds (cli_walk's lmms-eval parser has imported it already)

    models = set(lmms_eval.models.list_available_models(include_aliases=True))
    tasks = our_task_names()
    problems, checked = [], 0
    for commands in ALL_COMMANDS.values():
        for command in commands:
            found = command_parser(list(command.words)) if command_name(command.words[0]) else None
            is_eval = found is not None and found[0].prog in EVAL_COMMANDS
            bare = not command_name(command.words[0]) and command.words[0] in ("--tasks", "--model")
            if not (is_eval or bare or command.words[0].startswith("--tasks=")):
                continue
            for name in option_values(command.words, "--tasks"):
                if name == "list" or PLACEHOLDER.search(name):
                    continue
                checked += 1
                if problem := task_problem(name, tasks):
                    problems.append(f"{command.where}: {problem}")
            given = option_values(command.words, "--model")
            if len(given) > 1:  # split at commas; lmms-eval runs one model
                problems.append(f"{command.where}: --model {','.join(given)} names more than one model")
            for model in given:
                if PLACEHOLDER.search(model):
                    continue
                checked += 1
                if model not in models:
                    problems.append(f"{command.where}: --model {model} is not registered{hint(model, models)}")
    assert checked, "no --tasks or --model value found in the docs"
    assert not problems, "task and model names the docs give that lmms-eval would not find:\n" + "\n".join(problems)
