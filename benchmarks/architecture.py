"""The architecture numbers of issue 26 ("Measure and report"), for the checkout this file sits in.

    python benchmarks/architecture.py            # a table
    python benchmarks/architecture.py --json     # the same numbers as JSON
    python benchmarks/architecture.py --json PATH   # its figures with their provenance (benchmarks/provenance.py)
    python benchmarks/architecture.py --lint-imports [ARGS...]   # lint-imports on the real module tree

What is measured (product code only: ``sceval_plugin/``, ``c3po_plugin/``, ``faultline_eval/``, and the
repository folders ``tasks/`` and ``model_wrappers/``, which install as ``faultline_eval.tasks`` and
``faultline_eval.model_wrappers``; never ``tests/``, ``benchmarks/`` or ``.venv``):

- **lines per layer**: physical lines of the modules in each layer of the target layout
  (/work/helpers/LAYOUT26.md, ``docs/architecture.md`` once written). A module counts in the layer of the place it
  is *now*: before the redesign ``sceval_plugin/store.py`` is library (layer 2), after it
  ``faultline_eval/core/store.py`` is core (layer 1); both the old names (``build/``) and the new ones
  (``construction/``) are recognised.
- **import cycles**: strongly connected components (more than one module) of the graph of the project's own
  imports, once with module-level imports only and once with function-level imports added. Imports under
  ``if TYPE_CHECKING:`` never run, so they are left out of both.
- **function-level imports**: ``import``/``from`` statements inside a ``def`` that import a project module
  (``if TYPE_CHECKING:`` blocks excluded), and how many of them carry a justification comment
  (``# heavy: <why>`` or ``# optional: <why>`` on the statement or on the comment line right above it).
- **largest function**: the longest function (lines) and the most complex one (radon's cyclomatic complexity, as
  ``radon cc`` lists functions and methods), over the product and over the core; and how many functions rank
  above C (complexity > 20).
- **duplicate pairs**: what the ``duplicates`` command counts over a copy of the product files alone.
- **mypy errors on the core**: ``mypy --strict --follow-imports=silent`` on ``faultline_eval/core``; before the
  core exists, on the modules phase A moves there (marked ``pre-move``).
- **layer violations**: project imports (any place, ``TYPE_CHECKING`` included, as import-linter sees them) that
  go up a layer, or across ``sceval_plugin`` <-> ``c3po_plugin``.
- **ruff**: findings of ``ruff check`` and files ``ruff format --check`` would change (pyproject.toml's settings,
  whole checkout).
- **lint-imports**: the contracts in ``.importlinter``, kept and broken.

``--lint-imports``: grimp (under import-linter) finds a package's modules by walking its folder, so it never sees
``tasks/`` and ``model_wrappers/`` as ``faultline_eval.tasks``/``faultline_eval.model_wrappers``. This mode
copies the product sources into a temporary tree laid out as installed and runs ``lint-imports`` there with the
repository's ``.importlinter``; use it (not a bare ``lint-imports``) in CI.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sceval_plugin", "c3po_plugin", "faultline_eval", "faultline_app")
# Repository folders that install under another name (setup.cfg's package_dir).
FOLDER_PACKAGES = {"tasks": "faultline_eval.tasks", "model_wrappers": "faultline_eval.model_wrappers"}
SOURCE_SUFFIXES = (".py", ".js", ".css", ".html")  # what `duplicates` reads of the product
IMPORT_LINTER_CONFIG = ".importlinter"

# Layers of LAYOUT26, highest first: (rank, name, module prefixes). A module takes the layer of its longest
# matching prefix; old names (before phase A) and new names are both listed.
LAYERS = [
    (
        5,
        "5 CLIs",
        [
            "faultline_app.sceval_cli",
            "faultline_app.c3po_cli",
            "faultline_app.eval_cli",
            "faultline_app.faultline_cli",
            "sceval_plugin.construction.cli",
            "c3po_plugin.construction.cli",
            "c3po_plugin.mechanistic.cli",
            "sceval_plugin.build.cli",
            "c3po_plugin.build.cli",
        ],
    ),
    (
        4,
        "4 outputs",
        [
            "sceval_plugin.report",
            "c3po_plugin.report",
            "faultline_app.viewer",
            "sceval_plugin.construction",
            "c3po_plugin.construction",
            "c3po_plugin.mechanistic",
            "sceval_plugin.build",
            "c3po_plugin.build",
            # the plugin API re-exports construction's plugin-facing names; nothing of ours imports it
            "sceval_plugin.api",
            "c3po_plugin.api",
        ],
    ),
    (3, "3 harness", ["faultline_eval.tasks", "faultline_eval.model_wrappers"]),
    (2, "2 library", ["sceval_plugin", "c3po_plugin"]),
    (1.5, "1b judges", ["faultline_eval.judges"]),
    (1, "1 core", ["faultline_eval.core"]),
    # The namespace package itself: importable by all, imports nothing of the project.
    (0, "0 faultline_eval/__init__", ["faultline_eval"]),
]
UNASSIGNED = "? unassigned"
# A deprecated old path of a moved module (its body: ``__getattr__, __dir__, __all__ = moved_module(...)``, see
# faultline_eval/core/moved_modules.py) forwards to the module's new home and names the plugin API, so it stands
# in the outputs layer wherever its folder puts it (before phase A the same names were ordinary library modules).
MOVED_MODULE_SHIM = re.compile(r"^__getattr__, __dir__, __all__ = moved_module\(", re.MULTILINE)
SHIM_LAYER = (4, "4 outputs")
RANK_C_MAX = 20  # radon: A 1-5, B 6-10, C 11-20, D 21-30, E 31-40, F 41+
# The modules LAYOUT26 moves into faultline_eval/core unchanged: the "core" of a checkout from before phase A.
PRE_MOVE_CORE = [
    "sceval_plugin/store.py",
    "sceval_plugin/media.py",
    "sceval_plugin/telemetry.py",
    "sceval_plugin/run_status.py",
    "sceval_plugin/metrics/stats.py",
    "sceval_plugin/data/decode_cache.py",
    "sceval_plugin/data/identity.py",
    "sceval_plugin/data/intake.py",
    "c3po_plugin/judges/agreement.py",
]
# Packages the contracts name that a checkout from before phase A lacks (see stage_installed_tree).
PLACEHOLDER_PACKAGES = ("faultline_eval.core", "faultline_eval.judges")
JUSTIFICATION = re.compile(r"#\s*(heavy|optional):\s*\S")


def layer_of(module: str) -> tuple[float | None, str]:
    best: tuple[int, float | None, str] = (-1, None, UNASSIGNED)
    for rank, name, prefixes in LAYERS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[0]:
                best = (len(prefix), rank, name)
    if best[2] == "0 faultline_eval/__init__" and module != "faultline_eval":
        return None, UNASSIGNED  # a faultline_eval module LAYOUT26 gives no layer
    return best[1], best[2]


def family(module: str) -> str | None:
    """Which benchmark plugin a module belongs to (they must not import each other)."""
    top = module.split(".")[0]
    return top if top in ("sceval_plugin", "c3po_plugin") else None


# --- the product's files and modules -------------------------------------------------------------------------------


def product_files(root: Path, suffixes: tuple[str, ...] = (".py",)) -> list[str]:
    """Repository-relative paths of the product's source files: what git tracks or would track (not ignored)."""
    tops = set(PACKAGES) | set(FOLDER_PACKAGES)
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        listed = [path for path in listed if (root / path).is_file()]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout
        listed = [str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()]
    return sorted(
        path for path in listed if path.split("/")[0] in tops and path.endswith(suffixes) and "__pycache__" not in path
    )


def module_name(path: str) -> str:
    parts = path[: -len(".py")].split("/")
    if parts[0] in FOLDER_PACKAGES:
        parts[:1] = FOLDER_PACKAGES[parts[0]].split(".")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass
class ImportStatement:
    importer: str
    targets: list[str]  # project modules it imports
    line: int
    in_function: bool
    type_checking: bool
    justified: bool


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def project_imports(module: str, is_package: bool, source: str, modules: set[str]) -> list[ImportStatement]:
    """Every import statement of ``module`` that names a project module, resolved to the modules it loads
    (``from a import b`` loads ``a.b`` where that is a module, else ``a``), as grimp resolves them."""
    lines = source.splitlines()
    found: list[ImportStatement] = []
    package = module if is_package else module.rpartition(".")[0]

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    def justified(node: ast.stmt) -> bool:
        span = lines[node.lineno - 1 : node.end_lineno]
        above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
        return any(JUSTIFICATION.search(line) for line in span) or (
            above.startswith("#") and JUSTIFICATION.search(above) is not None
        )

    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                targets: list[str] = []
                if isinstance(child, ast.Import):
                    names = [alias.name for alias in child.names]
                else:
                    base = child.module or ""
                    if child.level:
                        anchor = package.split(".")
                        anchor = anchor[: len(anchor) - (child.level - 1)]
                        base = ".".join(anchor + ([base] if base else []))
                    names = [
                        f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in child.names
                    ]
                for name in names:
                    if name.split(".")[0] in PACKAGES and (target := resolve(name)) and target not in targets:
                        targets.append(target)
                if targets:
                    found.append(
                        ImportStatement(module, targets, child.lineno, in_function, type_checking, justified(child))
                    )
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    visit(ast.Module(body=[statement], type_ignores=[]), in_function, True)
                for statement in child.orelse:
                    visit(ast.Module(body=[statement], type_ignores=[]), in_function, type_checking)
            else:
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)), type_checking)

    visit(ast.parse(source), False, False)
    return found


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one node, each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    nodes = sorted(set(edges) | {target for targets in edges.values() for target in targets})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return sorted(components, key=lambda component: (-len(component), component))


# --- the measures --------------------------------------------------------------------------------------------------


def measure_imports(root: Path, files: list[str]) -> dict:
    modules = {module_name(path): path for path in files}
    statements: list[ImportStatement] = []
    shims = set()
    for path in files:
        text = (root / path).read_text(encoding="utf-8")
        statements += project_imports(module_name(path), path.endswith("__init__.py"), text, set(modules))
        if MOVED_MODULE_SHIM.search(text):
            shims.add(module_name(path))
    module_level: dict[str, set[str]] = defaultdict(set)
    every_level: dict[str, set[str]] = defaultdict(set)
    violations: dict[tuple[str, str], dict] = {}
    for statement in statements:
        for target in statement.targets:
            if target == statement.importer:
                continue
            if not statement.type_checking:
                every_level[statement.importer].add(target)
                if not statement.in_function:
                    module_level[statement.importer].add(target)
            (importer_rank, importer_layer), (target_rank, target_layer) = (
                SHIM_LAYER if statement.importer in shims else layer_of(statement.importer),
                SHIM_LAYER if target in shims else layer_of(target),
            )
            kinds = []
            if importer_rank is not None and target_rank is not None and target_rank > importer_rank:
                kinds.append("up")
            if family(statement.importer) and family(target) and family(statement.importer) != family(target):
                kinds.append("across")
            if kinds:
                entry = violations.setdefault(
                    (statement.importer, target),
                    {
                        "importer": statement.importer,
                        "imported": target,
                        "kinds": kinds,
                        "layers": f"{importer_layer} -> {target_layer}",
                        "lines": [],
                    },
                )
                entry["lines"].append(f"{modules[statement.importer]}:{statement.line}")
    in_functions = [statement for statement in statements if statement.in_function and not statement.type_checking]
    cycles_module_level = strongly_connected(module_level)
    cycles_all = strongly_connected(every_level)
    ordered = sorted(violations.values(), key=lambda entry: (entry["layers"], entry["importer"], entry["imported"]))
    return {
        "modules": len(modules),
        "cycles_module_level": len(cycles_module_level),
        "cycles_module_level_list": cycles_module_level,
        "cycles_with_function_level": len(cycles_all),
        "cycles_with_function_level_list": cycles_all,
        "function_level_imports": len(in_functions),
        "function_level_import_pairs": len({(s.importer, target) for s in in_functions for target in s.targets}),
        "function_level_imports_justified": sum(statement.justified for statement in in_functions),
        "function_level_imports_unjustified_list": [
            f"{modules[s.importer]}:{s.line} {', '.join(s.targets)}" for s in in_functions if not s.justified
        ],
        "layer_violations": len(ordered),
        "layer_violations_up": sum("up" in entry["kinds"] for entry in ordered),
        "layer_violations_across": sum("across" in entry["kinds"] for entry in ordered),
        "layer_violations_list": ordered,
    }


def measure_lines(root: Path, files: list[str]) -> dict:
    lines: Counter = Counter()
    counts: Counter = Counter()
    members: dict[str, list[str]] = defaultdict(list)
    for path in files:
        layer = layer_of(module_name(path))[1]
        lines[layer] += len((root / path).read_text(encoding="utf-8").splitlines())
        counts[layer] += 1
        if layer == UNASSIGNED:
            members[layer].append(path)
    order = [name for _, name, _ in LAYERS] + [UNASSIGNED]
    return {
        "lines_per_layer": {name: {"files": counts[name], "lines": lines[name]} for name in order if counts[name]},
        "product_lines": sum(lines.values()),
        "unassigned_files": members[UNASSIGNED],
    }


def core_files(files: list[str]) -> tuple[list[str], bool]:
    """The core's files, and whether they are the pre-move stand-ins (no faultline_eval/core yet)."""
    core = [path for path in files if layer_of(module_name(path))[1] == "1 core"]
    if core:
        return core, False
    return [path for path in PRE_MOVE_CORE if path in files], True


def measure_complexity(root: Path, files: list[str]) -> dict:
    from radon.complexity import cc_visit  # optional: radon is a tool of this script only

    functions = []
    for path in files:
        pending = list(cc_visit((root / path).read_text(encoding="utf-8")))
        while pending:
            block = pending.pop()
            if hasattr(block, "methods"):  # a class: its methods (and nested classes) are what radon lists
                pending += list(block.methods) + list(getattr(block, "inner_classes", []))
                continue
            functions.append(
                {
                    "where": f"{path}:{block.lineno}",
                    "name": block.fullname,
                    "lines": block.endline - block.lineno + 1,
                    "complexity": block.complexity,
                    "rank": _rank(block.complexity),
                }
            )

    def summary(selected: list[dict]) -> dict:
        if not selected:
            return {"functions": 0}
        longest = max(selected, key=lambda item: (item["lines"], item["complexity"]))
        most_complex = max(selected, key=lambda item: (item["complexity"], item["lines"]))
        above_c = sorted(
            (item for item in selected if item["complexity"] > RANK_C_MAX), key=lambda item: -item["complexity"]
        )
        return {
            "functions": len(selected),
            "longest": longest,
            "most_complex": most_complex,
            "above_C": len(above_c),
            "above_C_list": [f"{i['rank']}{i['complexity']} {i['where']} {i['name']}" for i in above_c],
        }

    core, pre_move = core_files(files)
    return {
        "product": summary(functions),
        "core": summary([item for item in functions if item["where"].rsplit(":", 1)[0] in core]),
        "core_is_pre_move": pre_move,
    }


def _rank(complexity: int) -> str:
    for limit, rank in ((5, "A"), (10, "B"), (20, "C"), (30, "D"), (40, "E")):
        if complexity <= limit:
            return rank
    return "F"


def measure_duplicates(root: Path) -> dict:
    if shutil.which("duplicates") is None:
        return {"duplicate_pairs": None, "duplicates_note": "the `duplicates` command is not on PATH"}
    with tempfile.TemporaryDirectory(prefix="architecture-dups-") as copy:
        for path in product_files(root, SOURCE_SUFFIXES):
            (Path(copy) / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / path, Path(copy) / path)
        output = subprocess.run(
            ["duplicates", "--repo", copy, "--most", "200", "--seconds", "120"],
            capture_output=True,
            text=True,
            cwd=copy,
        ).stdout
    first = output.splitlines()[0] if output else ""
    pairs = re.match(r"(\d+) pairs?", first)
    rows = [line for line in output.splitlines() if re.match(r"D\d+ ", line)]
    notes = [line for line in output.splitlines() if line.startswith(("incomplete:", "left out:"))]
    return {
        "duplicate_pairs": int(pairs.group(1)) if pairs else 0 if "no duplicates" in first else None,
        "duplicates_summary": first,
        "duplicates_list": rows,
        "duplicates_notes": notes,
    }


def measure_mypy(root: Path, files: list[str]) -> dict:
    core, pre_move = core_files(files)
    if not core:
        return {"mypy_core_errors": None, "mypy_note": "no core modules"}
    targets = [str(root / "faultline_eval" / "core")] if not pre_move else [str(root / path) for path in core]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary", *targets],
        capture_output=True,
        text=True,
        cwd=root,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    by_code = Counter(
        re.search(r"\[([\w-]+)\]$", line).group(1) if re.search(r"\[([\w-]+)\]$", line) else "?" for line in errors
    )
    return {
        "mypy_core_errors": len(errors),
        "mypy_core_files": len(core),
        "mypy_core_is_pre_move": pre_move,
        "mypy_core_errors_by_code": dict(by_code.most_common()),
        "mypy_note": result.stderr.strip()[-500:] if result.returncode not in (0, 1) else "",
    }


def measure_ruff(root: Path) -> dict:
    """Findings of ``ruff check`` and files ``ruff format`` would change, with pyproject.toml's settings, over the
    whole checkout (product, tests and benchmarks: all of it is linted)."""
    check = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--statistics", "--output-format", "concise", "--exit-zero", "."],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if check.returncode != 0:
        return {"ruff_findings": None, "ruff_note": (check.stdout + check.stderr).strip()[-300:]}
    by_rule = {match[1]: int(match[0]) for match in re.findall(r"^\s*(\d+)\s+(\S+)", check.stdout, re.MULTILINE)}
    formatting = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "."], cwd=root, capture_output=True, text=True
    )
    reformat = re.search(r"(\d+) files? would be reformatted", formatting.stdout)
    return {
        "ruff_findings": sum(by_rule.values()),
        "ruff_findings_by_rule": by_rule,
        "ruff_format_files_changed": int(reformat.group(1)) if reformat else 0,
    }


def stage_installed_tree(root: Path, into: Path, placeholders: bool = False) -> list[str]:
    """Copy the product's Python files into ``into`` laid out as installed (``tasks/`` as
    ``faultline_eval/tasks/``), so that grimp, which walks package folders, sees every module.

    ``placeholders``: add an empty package for each layer package the checkout does not have yet
    (``faultline_eval.core``, ``faultline_eval.judges`` before phase A), so that the contracts, which name them,
    run and count violations instead of stopping at "Module ... does not exist". Returns the ones added."""
    for path in product_files(root):
        installed = module_name(path).replace(".", "/") + ("/__init__.py" if path.endswith("__init__.py") else ".py")
        (into / installed).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / path, into / installed)
    added = []
    for package in PLACEHOLDER_PACKAGES if placeholders else ():
        folder = into / package.replace(".", "/")
        if not folder.exists():
            folder.mkdir(parents=True)
            (folder / "__init__.py").write_text("")
            added.append(package)
    return added


def lint_imports(root: Path, arguments: list[str], placeholders: bool = False) -> subprocess.CompletedProcess:
    executable = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if executable is None:
        # import-linter's console script lives beside the interpreter that has it installed
        command = [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())",
        ]
    else:
        command = [executable]
    with tempfile.TemporaryDirectory(prefix="architecture-lint-") as staged:
        added = stage_installed_tree(root, Path(staged), placeholders)
        result = subprocess.run(
            [*command, str(root / IMPORT_LINTER_CONFIG), "--no-cache", *arguments],
            cwd=staged,
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "250"},
        )  # no wrapped lines in the report
        result.placeholders = added  # type: ignore[attr-defined]
        return result


def measure_contracts(root: Path) -> dict:
    if not (root / IMPORT_LINTER_CONFIG).is_file():
        return {"contracts": None}
    result = lint_imports(root, [], placeholders=True)
    verdicts = re.findall(r"^(.+?) (KEPT|BROKEN)(?: \(\d+ ignored imports?\))?$", result.stdout, re.MULTILINE)
    summary = re.search(r"Contracts: (\d+) kept, (\d+) broken", result.stdout)
    # The report of the broken ones: a title underlined with dashes, then one "- importer -> imported" a line.
    broken_part = result.stdout.partition("Broken contracts\n")[2]
    broken_counts: dict[str, int] = {}
    title = None
    for line in broken_part.splitlines():
        if title is not None and re.fullmatch(r"-+", line) and len(line) == len(title):
            broken_counts[title] = 0
        elif line.startswith("- ") and broken_counts:
            broken_counts[list(broken_counts)[-1]] += 1
        title = line
    return {
        "contracts": dict(verdicts),
        "contracts_kept": int(summary.group(1)) if summary else None,
        "contracts_broken": int(summary.group(2)) if summary else None,
        "contract_violations": broken_counts,
        "contracts_placeholders": result.placeholders,
        "contracts_error": "" if summary else (result.stdout + result.stderr).strip()[-1500:],
    }


def measure(root: Path = ROOT, slow: bool = True) -> dict:
    files = product_files(root)
    numbers = {"checkout": str(root), "commit": _commit(root)}
    numbers |= measure_lines(root, files)
    numbers |= measure_imports(root, files)
    numbers["complexity"] = measure_complexity(root, files)
    numbers |= measure_duplicates(root)
    numbers |= measure_ruff(root)
    if slow:
        numbers |= measure_mypy(root, files)
        numbers |= measure_contracts(root)
    return numbers


def _commit(root: Path) -> str:
    try:
        return subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


# --- the table -----------------------------------------------------------------------------------------------------


def table(numbers: dict) -> str:
    rows: list[tuple[str, str]] = [
        ("checkout", f"{numbers['checkout']} @ {numbers['commit']}"),
        ("product lines (files)", f"{numbers['product_lines']} ({numbers['modules']})"),
    ]
    for layer, count in numbers["lines_per_layer"].items():
        rows.append((f"  lines in layer {layer}", f"{count['lines']} ({count['files']} files)"))
    rows += [
        ("import cycles, module level (SCCs > 1)", str(numbers["cycles_module_level"])),
        ("import cycles, module + function level", str(numbers["cycles_with_function_level"])),
        (
            "function-level imports of own modules (statements)",
            f"{numbers['function_level_imports']} ({numbers['function_level_imports_justified']} justified; "
            f"{numbers['function_level_import_pairs']} importer->imported pairs)",
        ),
        (
            "layer violations (pairs)",
            f"{numbers['layer_violations']} ({numbers['layer_violations_up']} up a layer, "
            f"{numbers['layer_violations_across']} across sceval<->c3po)",
        ),
    ]
    complexity = numbers["complexity"]
    for scope in ("product", "core"):
        summary = complexity[scope]
        label = scope + (
            " (pre-move: modules phase A moves to core)" if scope == "core" and complexity["core_is_pre_move"] else ""
        )
        if not summary["functions"]:
            rows.append((f"{label}: functions", "0"))
            continue
        longest, most = summary["longest"], summary["most_complex"]
        rows += [
            (f"{label}: functions", str(summary["functions"])),
            (
                f"{label}: longest function",
                f"{longest['lines']} lines, {longest['rank']}{longest['complexity']}: {longest['name']} "
                f"({longest['where']})",
            ),
            (
                f"{label}: most complex function",
                f"{most['rank']}{most['complexity']}, {most['lines']} lines: {most['name']} ({most['where']})",
            ),
            (f"{label}: functions above C (cc > {RANK_C_MAX})", str(summary["above_C"])),
        ]
    rows.append(("duplicate pairs (product)", str(numbers.get("duplicate_pairs"))))
    if numbers.get("ruff_findings") is not None:
        top = ", ".join(f"{rule} {count}" for rule, count in list(numbers["ruff_findings_by_rule"].items())[:6])
        rows += [
            ("ruff check findings (whole checkout)", f"{numbers['ruff_findings']} ({top}, ...)"),
            ("files ruff format would change", str(numbers["ruff_format_files_changed"])),
        ]
    if "mypy_core_errors" in numbers:
        pre = " (pre-move core files)" if numbers.get("mypy_core_is_pre_move") else ""
        rows.append((f"mypy --strict errors on the core{pre}", str(numbers["mypy_core_errors"])))
    if numbers.get("contracts") is not None:
        rows.append(
            ("lint-imports contracts", f"{numbers['contracts_kept']} kept, {numbers['contracts_broken']} broken")
        )
        for name, count in numbers["contract_violations"].items():
            rows.append((f"  broken: {name}", f"{count} violations"))
    width = max(len(label) for label, _ in rows)
    out = [f"{label.ljust(width)}  {value}" for label, value in rows]

    def listing(title: str, items: list) -> None:
        out.append("")
        out.append(f"{title} ({len(items)}):")
        out.extend(f"  {item}" for item in items)

    listing("module-level cycles", [" <-> ".join(c) for c in numbers["cycles_module_level_list"]])
    listing("cycles with function-level imports", [" <-> ".join(c) for c in numbers["cycles_with_function_level_list"]])
    listing(
        "layer violations",
        [
            f"{v['importer']} -> {v['imported']}  [{'+'.join(v['kinds'])}: {v['layers']}]  {', '.join(v['lines'])}"
            for v in numbers["layer_violations_list"]
        ],
    )
    listing("functions above C, product", complexity["product"].get("above_C_list", []))
    if numbers["unassigned_files"]:
        listing("files with no layer", numbers["unassigned_files"])
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="PATH",
        help="print the numbers as JSON; with PATH, write the figures with their provenance there instead",
    )
    parser.add_argument("--fast", action="store_true", help="skip mypy and lint-imports (the slow parts)")
    parser.add_argument("--smoke", action="store_true", help="the CI-sized run: the same as --fast")
    parser.add_argument(
        "--lint-imports",
        nargs=argparse.REMAINDER,
        metavar="ARGS",
        help="run lint-imports on the installed layout of this checkout and exit with its status",
    )
    arguments = parser.parse_args(argv)
    if arguments.lint_imports is not None:
        result = lint_imports(ROOT, arguments.lint_imports)
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        return result.returncode
    import provenance  # here: tests import this module with only benchmarks/ on the path, which suffices

    record = provenance.Record(__file__, peer=None, argv=argv)
    numbers = measure(ROOT, slow=not (arguments.fast or arguments.smoke))
    print(json.dumps(numbers, indent=1) if arguments.json == "-" else table(numbers))
    if arguments.json not in (None, "-"):
        for key, value in numbers.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                record.figure(key, value, "", key.replace("_", " "))
        record.write(arguments.json, smoke=arguments.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
