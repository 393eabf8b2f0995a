"""The architecture of issue 26, kept: layers (import-linter), lint and format (ruff), types on the core (mypy),
and the rule on imports inside functions.

The rule: a function imports one of the project's own modules only for an optional or heavy dependency that
module pulls in, never to dodge an import cycle, and says so on the statement (or on the comment line right above
it) with ``# heavy: <why>`` or ``# optional: <why>``; at most 20 such imports in the product.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import architecture  # noqa: E402  (benchmarks/ is not a package)

MAX_FUNCTION_LEVEL_IMPORTS = 20


@functools.cache
def tree() -> dict:
    """This tree's measures, once for the whole module (about 15 s of parsing, radon and one import probe)."""
    return architecture.deterministic_numbers(ROOT)


def run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True)


# --- the tree ------------------------------------------------------------------------------------------------------


def test_import_contracts_are_kept():
    """Every contract of .importlinter (the floors, the layers, the benchmarks' independence, the core's
    isolation), by a plain ``lint-imports`` at the repository root (issue 37)."""
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    result = run(lint_imports, "--no-cache")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " 0 broken." in result.stdout


def test_ruff_check_passes():
    result = run(sys.executable, "-m", "ruff", "check", "--output-format", "concise", ".")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_ruff_format_changes_nothing():
    result = run(sys.executable, "-m", "ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


@pytest.mark.slow  # about a minute: mypy reads numpy's and torch's types
def test_mypy_strict_on_the_core():
    """pyproject.toml: `mypy` checks faultline_eval/core with every per-module flag of --strict."""
    assert (ROOT / "faultline_eval" / "core").is_dir(), "no faultline_eval/core package yet"
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_function_level_imports_of_own_modules_are_justified_and_few():
    numbers = tree()
    unjustified = numbers["function_level_imports_unjustified_list"]
    assert not unjustified, (
        f"{len(unjustified)} imports of project modules inside functions without a "
        f"'# heavy:' or '# optional:' reason, e.g. {unjustified[:10]}"
    )
    assert numbers["function_level_imports"] <= MAX_FUNCTION_LEVEL_IMPORTS


def test_no_import_cycles_and_no_layer_violations():
    numbers = tree()
    assert numbers["cycles_with_function_level_list"] == []
    assert numbers["layer_violations_list"] == []


# The imports that still rise from a benchmark folder to the harness folders (docs/architecture.md, "Folders are
# floors"): the benchmarks' outputs that use a harness binding. A new one fails the test below; one that goes
# away is taken off this list.
RISING_IMPORTS_LEFT = [
    "c3po_plugin.construction.client -> faultline_eval.model_wrappers.gemini_client",
    "c3po_plugin.construction.client -> faultline_eval.model_wrappers.lmms_judge",
    "c3po_plugin.construction.client -> faultline_eval.tasks.c3po_task",
]


def test_nothing_rises_between_folders_but_the_known_outputs():
    numbers = tree()
    assert numbers["rising_imports_list"] == RISING_IMPORTS_LEFT
    # the ground floor's only import of a higher floor: the lmms-eval judge backend, declared in .importlinter
    assert numbers["rising_imports_declared_list"] == [
        "faultline_eval.judges -> faultline_eval.model_wrappers.lmms_judge"
    ]


def test_every_module_has_one_import_path():
    """With the checkout first on the path (the helpers' PYTHONPATH, `python -m lmms_eval` at its root), import
    the console scripts, the lmms-eval entry point and both plugin hosts: no file is loaded as two modules, and
    no folder imports under a second name (faultline_eval.sceval_plugin, faultline_eval.tests, tasks, ...)."""
    numbers = tree()
    assert numbers.get("module_copies_note") is None, numbers.get("module_copies_note")
    assert numbers["module_copies_loaded"] > 100  # the CLIs, the plugins and what they import were loaded
    assert numbers["module_copies_loaded_twice"] == {}
    assert numbers["module_copies_second_names"] == []
    assert numbers["module_copies"] == 0


def test_the_harness_folders_are_linked_into_the_ground_floor_package():
    for folder in ("tasks", "model_wrappers"):
        link = ROOT / "faultline_eval" / folder
        assert link.is_symlink() and link.resolve() == (ROOT / folder).resolve()


def test_imports_by_string_outside_the_plugin_hosts_are_declared():
    numbers = tree()
    assert numbers["string_imports_undeclared_list"] == []
    assert numbers["string_imports_named"] >= 20  # the scanner sees the tables of module paths


def test_an_import_by_string_counts_until_declared_under_type_checking(tmp_path):
    package = tmp_path / "sceval_plugin"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "heavy.py").write_text("")
    loader = package / "loader.py"
    loader.write_text(
        'import importlib\nHEAVY = "sceval_plugin.heavy"\ndef load():\n    return importlib.import_module(HEAVY)\n'
    )
    files = ["sceval_plugin/__init__.py", "sceval_plugin/heavy.py", "sceval_plugin/loader.py"]
    [found] = architecture.measure_string_imports(tmp_path, files)["string_imports_undeclared_list"]
    assert found.startswith("sceval_plugin/loader.py:2 'sceval_plugin.heavy' names sceval_plugin.heavy")
    loader.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sceval_plugin import heavy\n"
        + loader.read_text()
    )
    assert architecture.measure_string_imports(tmp_path, files)["string_imports_undeclared"] == 0
    (package / "built.py").write_text(
        'import importlib\ndef load(name):\n    return importlib.import_module(f"sceval_plugin.{name}")\n'
    )
    numbers = architecture.measure_string_imports(tmp_path, [*files, "sceval_plugin/built.py"])
    assert numbers["string_imports_undeclared_list"] == [
        "sceval_plugin/built.py:3 f'sceval_plugin.{name}' (built at run time)"
    ]


def test_the_architecture_page_states_the_recorded_figures_and_they_are_this_trees():
    """docs/architecture.md's measured table is the one benchmarks/results/architecture.json makes, and the
    figures that follow from the tree alone are what the script measures now."""
    recorded = json.loads(architecture.RESULTS_FILE.read_text(encoding="utf-8"))
    page = architecture.DOCS_PAGE.read_text(encoding="utf-8")
    fix = "run `python benchmarks/architecture.py --write-docs` and commit both files"
    assert architecture.docs_block(recorded) in page, (
        f"docs/architecture.md's measured table is not the recorded one: {fix}"
    )
    stated = {
        figure["name"]: figure["value"] for figure in recorded["figures"] if not figure["name"].startswith("before.")
    }
    now = architecture.deterministic_figures(tree())
    assert {name: stated.get(name) for name in now} == now, f"the tree's figures changed: {fix}"


def test_no_function_on_the_core_above_complexity_c():
    pytest.importorskip("radon")
    assert (ROOT / "faultline_eval" / "core").is_dir(), "no faultline_eval/core package yet"
    assert tree()["complexity"]["core"]["above_C_list"] == []


# --- the measuring script ------------------------------------------------------------------------------------------


def test_function_level_imports_are_found_resolved_and_their_reasons_read():
    modules = {
        "sceval_plugin",
        "sceval_plugin.store",
        "sceval_plugin.data",
        "sceval_plugin.data.records",
        "c3po_plugin",
        "c3po_plugin.judges",
    }
    source = """
from typing import TYPE_CHECKING
from sceval_plugin import store
if TYPE_CHECKING:
    from c3po_plugin.judges import Judge

def read():
    import numpy
    from . import records
    # heavy: the judges load sentence-transformers
    from c3po_plugin.judges import (
        Judge,
    )
    if TYPE_CHECKING:
        from sceval_plugin.store import Journal
    return records, Judge

class Reader:
    def close(self):
        from sceval_plugin.store import (  # optional: only when a store exists
            Journal,
        )
"""
    found = architecture.project_imports("sceval_plugin.data.intake", False, source, modules)
    summary = [(s.line, s.targets, s.in_function, s.type_checking, s.justified) for s in found]
    assert summary == [
        (3, ["sceval_plugin.store"], False, False, False),
        (5, ["c3po_plugin.judges"], False, True, False),
        (9, ["sceval_plugin.data.records"], True, False, False),  # the relative import, resolved
        (11, ["c3po_plugin.judges"], True, False, True),  # the reason on the line above
        (15, ["sceval_plugin.store"], True, True, False),
        (20, ["sceval_plugin.store"], True, False, True),  # the reason on the statement's first line
    ]


def test_cycles_are_strongly_connected_components_of_two_or_more():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"f", "a"}}
    assert architecture.strongly_connected(edges) == [["a", "b", "c"], ["d", "e"]]


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("sceval_plugin.store", "2 library"),  # before phase A
        ("faultline_eval.core.store", "1 core"),  # after it
        ("faultline_eval.judges.embedding", "1b judges"),
        ("faultline_eval.tasks.sceval_task", "3 harness"),
        ("sceval_plugin.build.annotate", "4 outputs"),
        ("sceval_plugin.construction.annotate", "4 outputs"),
        ("sceval_plugin.construction.cli", "5 CLIs"),
        ("c3po_plugin.mechanistic.runner", "4 outputs"),
        ("c3po_plugin.mechanistic.cli", "5 CLIs"),
        ("faultline_app.faultline_cli", "5 CLIs"),
        ("faultline_app.sceval_cli", "5 CLIs"),
        ("faultline_app.viewer.site", "4 outputs"),
        ("faultline_eval.somewhere_new", architecture.UNASSIGNED),
    ],
)
def test_modules_take_the_layer_of_where_they_are(module, layer):
    assert architecture.layer_of(module)[1] == layer


@pytest.mark.skipif(
    shutil.which("lint-imports", path=str(Path(sys.executable).parent)) is None
    and shutil.which("lint-imports") is None,
    reason="import-linter is not installed",
)
def test_lint_imports_runs_every_contract():
    """The contracts parse and run on this tree."""
    numbers = architecture.measure_contracts(ROOT)
    assert numbers["contracts_error"] == ""
    assert numbers["contracts_kept"] + numbers["contracts_broken"] == len(numbers["contracts"]) >= 8
