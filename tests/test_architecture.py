"""The architecture of issue 26, kept: layers (import-linter), lint and format (ruff), types on the core (mypy),
and the rule on imports inside functions.

The rule: a function imports one of the project's own modules only for an optional or heavy dependency that
module pulls in, never to dodge an import cycle, and says so on the statement (or on the comment line right above
it) with ``# heavy: <why>`` or ``# optional: <why>``; at most 20 such imports in the product.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import architecture  # noqa: E402  (benchmarks/ is not a package)

MAX_FUNCTION_LEVEL_IMPORTS = 20


def run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True)


# --- the tree ------------------------------------------------------------------------------------------------------


def test_import_contracts_are_kept():
    """Every contract of .importlinter (the layers, the benchmarks' independence, the core's isolation)."""
    result = run(sys.executable, str(ROOT / "benchmarks" / "architecture.py"), "--lint-imports")
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
    numbers = architecture.measure_imports(ROOT, architecture.product_files(ROOT))
    unjustified = numbers["function_level_imports_unjustified_list"]
    assert not unjustified, (
        f"{len(unjustified)} imports of project modules inside functions without a "
        f"'# heavy:' or '# optional:' reason, e.g. {unjustified[:10]}"
    )
    assert numbers["function_level_imports"] <= MAX_FUNCTION_LEVEL_IMPORTS


def test_no_import_cycles_and_no_layer_violations():
    numbers = architecture.measure_imports(ROOT, architecture.product_files(ROOT))
    assert numbers["cycles_with_function_level_list"] == []
    assert numbers["layer_violations_list"] == []


def test_no_function_on_the_core_above_complexity_c():
    pytest.importorskip("radon")
    assert (ROOT / "faultline_eval" / "core").is_dir(), "no faultline_eval/core package yet"
    complexity = architecture.measure_complexity(ROOT, architecture.product_files(ROOT))
    assert complexity["core"]["above_C_list"] == []


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
        ("faultline_eval.somewhere_new", architecture.UNASSIGNED),
    ],
)
def test_modules_take_the_layer_of_where_they_are(module, layer):
    assert architecture.layer_of(module)[1] == layer


def test_lint_imports_sees_the_folders_installed_under_faultline_eval(tmp_path):
    """grimp walks package folders, so tasks/ and model_wrappers/ must be laid out as installed."""
    architecture.stage_installed_tree(ROOT, tmp_path)
    assert (tmp_path / "faultline_eval" / "tasks" / "__init__.py").is_file()
    assert (tmp_path / "faultline_eval" / "model_wrappers" / "__init__.py").is_file()
    assert not (tmp_path / "tasks").exists() and not (tmp_path / "tests").exists()


@pytest.mark.skipif(
    shutil.which("lint-imports", path=str(Path(sys.executable).parent)) is None
    and shutil.which("lint-imports") is None,
    reason="import-linter is not installed",
)
def test_lint_imports_runs_every_contract():
    """The contracts parse and run on this tree (placeholders stand in for packages phase A has not made)."""
    numbers = architecture.measure_contracts(ROOT)
    assert numbers["contracts_error"] == ""
    assert numbers["contracts_kept"] + numbers["contracts_broken"] == len(numbers["contracts"]) >= 8
