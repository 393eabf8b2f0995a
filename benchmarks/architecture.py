"""The architecture numbers of issues 26 and 37, for the checkout this file sits in.

    python benchmarks/architecture.py            # a table
    python benchmarks/architecture.py --json     # the same numbers as JSON
    python benchmarks/architecture.py --json PATH   # its figures with their provenance (benchmarks/provenance.py)
    python benchmarks/architecture.py --baseline [REF]   # also the commit issue 37 started from (or REF)
    python benchmarks/architecture.py --write-docs   # record the figures and state them in docs/architecture.md
    python benchmarks/architecture.py --lint-imports [ARGS...]   # a plain lint-imports at the repository root

What is measured (product code only: ``sceval_plugin/``, ``c3po_plugin/``, ``faultline_eval/``, ``faultline_app/``
and the repository folders ``tasks/`` and ``model_wrappers/``, imported as ``faultline_eval.tasks`` and
``faultline_eval.model_wrappers``; never ``tests/``, ``benchmarks/`` or ``.venv``):

- **issue 37**: imports rising between top-level folders (:data:`FOLDER_FLOORS`; goal 0), module copies (a file
  loaded as two modules, or a folder importable under a second name; goal 0), imports by string outside the
  plugin hosts that are not declared under ``if TYPE_CHECKING:`` (goal 0), functions above complexity C per
  layer, file names several modules share, and the start-up time of ``sceval --help`` and
  ``faultline-eval --help`` (median of 5, interleaved with the ``--baseline`` checkout's);

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

``--lint-imports``: a plain ``lint-imports`` at the repository root. Since issue 37 the checkout links
``faultline_eval/tasks`` and ``faultline_eval/model_wrappers`` to their folders, so grimp, which follows links,
sees every module under its one import path; no staged copy is needed any more.
"""

from __future__ import annotations

import argparse
import ast
import configparser
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import provenance  # benchmarks/: the script's folder, on the path of whoever imports this module

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
            # their places before issue 37 (now deprecated paths, see SHIM_LAYER)
            "sceval_plugin.cli",
            "c3po_plugin.cli",
            "faultline_eval.cli",
            "faultline_eval.commands",
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
            "faultline_eval.viewer",  # before issue 37
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
    (5, "5 CLIs", ["faultline_app"]),  # the top floor's package itself (a docstring)
]
UNASSIGNED = "? unassigned"
# A deprecated old path of a moved module (its body: ``__getattr__, __dir__, __all__ = moved_module(...)``, see
# faultline_eval/core/moved_modules.py) forwards to the module's new home and names the plugin API, so it stands
# above every layer wherever its folder puts it, and nothing of ours imports it (before phase A the same names
# were ordinary library modules).
MOVED_MODULE_SHIM = re.compile(r"^__getattr__, __dir__, __all__ = moved_module\(", re.MULTILINE)
SHIM_LAYER = (6, "6 deprecated paths")
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
    exceptions = declared_exceptions(root)
    for statement in statements:
        for target in statement.targets:
            if target == statement.importer or (statement.importer, target) in exceptions:
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


def declared_exceptions(root: Path) -> set[tuple[str, str]]:
    """The imports ``.importlinter`` lets through (its contracts' ``ignore_imports``), as (importer, imported)."""
    config = configparser.ConfigParser()
    if not config.read(root / IMPORT_LINTER_CONFIG):
        return set()
    found = set()
    for section in config.sections():
        for line in config[section].get("ignore_imports", "").splitlines():
            importer, arrow, imported = line.partition("->")
            if arrow:
                found.add((importer.strip(), imported.strip()))
    return found


# --- issue 37: folders that are floors, one import path per module, imports by string ----------------------------

#: The floor of each top-level folder (issue 37): an import from a folder to a folder on a higher floor rises.
#: ``sceval_plugin/`` and ``c3po_plugin/`` hold their benchmark's outputs (report, construction, probes) too; their
#: floor is that of their library part, so an output of theirs that uses a harness binding is counted as rising.
FOLDER_FLOORS = {
    "faultline_eval": 1,
    "sceval_plugin": 2,
    "c3po_plugin": 2,
    "tasks": 3,
    "model_wrappers": 3,
    "faultline_app": 5,
}
#: The plugin host imports plugins by name (entry points and each benchmark's built-in plugins): the one place
#: where an import by string is the design.
PLUGIN_HOSTS = ("faultline_eval.core.plugin_host", "sceval_plugin.plugins", "c3po_plugin.plugins")
#: Strings that look like a module path but name no import (importer, string): logger names.
NOT_IMPORTS = {
    ("faultline_app.viewer.wrapped", "faultline_eval.tasks"),
    ("faultline_eval.viewer.wrapped", "faultline_eval.tasks"),
}
STRING_IMPORT_CALLS = {"import_module", "__import__"}
_MODULE_PATH = re.compile(r"^[A-Za-z_]\w*(\.\w+)+(:\w+)?$")


def measure_folders(root: Path, files: list[str]) -> dict:
    """Imports (any kind: module level, in a function, under ``TYPE_CHECKING``) from a top-level folder to one on a
    higher floor (:data:`FOLDER_FLOORS`), as importer -> imported pairs of modules. A deprecated path (a
    ``moved_module`` shim) forwards to its module's new home wherever that is, so it is counted apart."""
    modules = {module_name(path): path for path in files}
    exceptions = declared_exceptions(root)
    rising, declared, forwarding = set(), set(), set()
    for path in files:
        text = (root / path).read_text(encoding="utf-8")
        for statement in project_imports(module_name(path), path.endswith("__init__.py"), text, set(modules)):
            for target in statement.targets:
                here, there = path.split("/")[0], modules[target].split("/")[0]
                if FOLDER_FLOORS.get(there, 0) > FOLDER_FLOORS.get(here, 0):
                    pair = (statement.importer, target)
                    kind = forwarding if MOVED_MODULE_SHIM.search(text) else declared if pair in exceptions else rising
                    kind.add(pair)
    return {
        "folder_floors": FOLDER_FLOORS,
        "rising_imports": len(rising),
        "rising_imports_list": [f"{a} -> {b}" for a, b in sorted(rising)],
        "rising_imports_declared": len(declared),
        "rising_imports_declared_list": [f"{a} -> {b}" for a, b in sorted(declared)],
        "deprecated_paths_forwarding_up": len(forwarding),
    }


#: What the module-copies check imports: the console scripts' modules (from setup.cfg), the plugin hosts and
#: lmms-eval's entry point; then it lists the module objects whose file another one already has, and the names
#: under which a top-level folder imports a second time (``faultline_eval.sceval_plugin``, ``tasks``...).
_COPIES_PROBE = r"""
import configparser, importlib, importlib.util, json, os, sys
root = sys.argv[1]
config = configparser.ConfigParser(); config.read(os.path.join(root, "setup.cfg"))
entry = config["options.entry_points"]
modules = [line.split("=")[1].strip().split(":")[0] for line in entry["console_scripts"].strip().splitlines()]
modules += [line.split("=")[1].strip().split(":")[0] for line in entry["lmms_eval.models"].strip().splitlines()]
modules += ["sceval_plugin.plugins", "c3po_plugin.plugins"]
for name in modules:
    importlib.import_module(name)
# the product's folders only: a checkout may hold its virtualenv (.venv/, as CI's does)
product = tuple(os.path.join(os.path.realpath(root), folder) + os.sep for folder in (
    "sceval_plugin", "c3po_plugin", "faultline_eval", "faultline_app", "tasks", "model_wrappers"))
by_file = {}
for name, module in list(sys.modules.items()):
    path = getattr(module, "__file__", None)
    if path and os.path.realpath(path).startswith(product):
        by_file.setdefault(os.path.realpath(path), []).append(name)
copies = {path: sorted(names) for path, names in by_file.items() if len(names) > 1}
loaded = sum(len(names) for names in by_file.values())
folders = json.loads(sys.argv[2])
packages = ("sceval_plugin", "c3po_plugin", "faultline_eval", "faultline_app")
declared = {"faultline_eval.tasks", "faultline_eval.model_wrappers"}
second_names = []
for candidate in [f"{p}.{f}" for p in packages for f in folders if f != p] + ["tasks", "model_wrappers"]:
    if candidate in declared:
        continue
    try:
        found = importlib.util.find_spec(candidate) is not None and importlib.import_module(candidate) is not None
    except ImportError:
        found = False
    if found:
        second_names.append(candidate)
print(json.dumps({"copies": copies, "second_names": second_names, "loaded": loaded}))
"""


def source_folders(root: Path) -> list[str]:
    """The checkout's top-level folders that git tracks: not ``build/`` (setuptools writes it during ``pip
    install .``), ``.venv/`` or other artefacts, which would otherwise count as second names."""
    listed = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True)
    if listed.returncode != 0:  # not a git checkout (an unpacked sdist): every visible folder
        return sorted(entry.name for entry in os.scandir(root) if entry.is_dir() and not entry.name.startswith("."))
    return sorted({line.split("/")[0] for line in listed.stdout.splitlines() if "/" in line})


def measure_module_copies(root: Path) -> dict:
    """One import path per module (issue 37), checked the way the project runs: ``root`` first on the path (the
    helpers' PYTHONPATH, ``python -m lmms_eval`` from a checkout)."""
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1", "NO_ALBUMENTATIONS_UPDATE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _COPIES_PROBE, str(root), json.dumps(source_folders(root))],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return {"module_copies": None, "module_copies_note": done.stderr.strip()[-1500:]}
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "module_copies": len(found["copies"]) + len(found["second_names"]),
        "module_copies_loaded": found["loaded"],
        "module_copies_loaded_twice": found["copies"],
        "module_copies_second_names": found["second_names"],
    }


def _module_path_strings(tree: ast.Module) -> list[tuple[int, str]]:
    """The string constants (and f-strings of module-level string constants) of a module that look like a
    dotted module path, with their lines; docstrings left out."""
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                if isinstance(value, ast.Constant):
                    parts.append(str(value.value))
                elif isinstance(value.value, ast.Name) and value.value.id in constants:
                    parts.append(constants[value.value.id])
                else:
                    parts.append("{?}")
            text = "".join(parts)
        if text and _MODULE_PATH.match(text.split("{?}")[0].rstrip(".") or "-"):
            found.append((node.lineno, text))
    return found


def measure_string_imports(root: Path, files: list[str]) -> dict:
    """Imports by string outside the plugin host (issue 37): every project module a module names in a string
    (an ``importlib.import_module`` argument, a table of class paths that lmms-eval or a registry loads), and every
    ``import_module``/``__import__`` call whose argument names no module we can read. A named module is declared
    when the module imports it under ``if TYPE_CHECKING:`` (so lint-imports and the layer count check it)."""
    modules = {module_name(path): path for path in files}
    named, undeclared, calls, forwarded = set(), {}, 0, 0
    for path in files:
        importer = module_name(path)
        if importer in PLUGIN_HOSTS:
            continue
        source = (root / path).read_text(encoding="utf-8")
        tree = ast.parse(source)
        declared = {
            target
            for statement in project_imports(importer, path.endswith("__init__.py"), source, set(modules))
            if statement.type_checking
            for target in statement.targets
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Attribute) and node.func.attr in STRING_IMPORT_CALLS)
                or (isinstance(node.func, ast.Name) and node.func.id in STRING_IMPORT_CALLS)
            ):
                calls += 1
                argument = node.args[0] if node.args else None
                if isinstance(argument, ast.JoinedStr) and any(
                    isinstance(v, ast.Constant) and str(v.value).split(".")[0] in PACKAGES for v in argument.values
                ):
                    undeclared[(importer, ast.unparse(argument))] = (
                        f"{path}:{node.lineno} {ast.unparse(argument)} (built at run time)"
                    )
        # a deprecated name's new home (``moved_names``, until 0.4) is forwarded to on first use, as a
        # moved_module shim forwards: counted apart, like those
        forwarding = {
            (constant.lineno, constant.value)
            for call in ast.walk(tree)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "moved_names"
            for constant in ast.walk(call)
            if isinstance(constant, ast.Constant) and isinstance(constant.value, str)
        }
        forwarded += sum(1 for _, text in forwarding if _MODULE_PATH.match(text))
        for line, text in _module_path_strings(tree):
            if (line, text) in forwarding:
                continue
            name = text.split(":")[0].split("{?}")[0].rstrip(".")
            if name.split(".")[0] not in PACKAGES:
                continue
            target = name
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if not target or importer == target or importer.startswith(target + ".") or (importer, text) in NOT_IMPORTS:
                continue  # its own package (a prefix constant), not a module it loads
            named.add((importer, target))
            if target not in declared:
                undeclared.setdefault((importer, target), f"{path}:{line} {text!r} names {target}, not declared")
    return {
        "string_import_calls": calls,
        "string_imports_named": len(named),
        "string_imports_undeclared": len(undeclared),
        "string_imports_undeclared_list": list(undeclared.values()),
        "string_imports_forwarding_deprecated_names": forwarded,
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
        seen = set()
        while pending:
            block = pending.pop()
            if hasattr(block, "methods"):  # a class: its methods (and nested classes) are what radon lists
                pending += list(block.methods) + list(getattr(block, "inner_classes", []))
                continue
            if (block.lineno, block.fullname) in seen:  # radon lists a method both alone and in its class
                continue
            seen.add((block.lineno, block.fullname))
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
    by_layer: Counter = Counter()
    for item in functions:
        if item["complexity"] > RANK_C_MAX:
            by_layer[layer_of(module_name(item["where"].rsplit(":", 1)[0]))[1]] += 1
    return {
        "above_C_by_layer": dict(sorted(by_layer.items(), reverse=True)),
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


def lint_imports(root: Path, arguments: list[str]) -> subprocess.CompletedProcess:
    """A plain ``lint-imports`` with ``root``'s ``.importlinter``, run at ``root`` (issue 37: every module has one
    import path there, so grimp sees the tree as it is installed)."""
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
    return subprocess.run(
        [*command, "--config", str(root / IMPORT_LINTER_CONFIG), "--no-cache", *arguments],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "250"},  # no wrapped lines in the report
    )


def measure_contracts(root: Path) -> dict:
    if not (root / IMPORT_LINTER_CONFIG).is_file():
        return {"contracts": None}
    result = lint_imports(root, [])
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
        "contracts_error": "" if summary else (result.stdout + result.stderr).strip()[-1500:],
    }


#: The checkout issue 37's changes start from: ``--baseline`` measures it (a ``git archive`` of it) beside this one.
BASELINE = "5e628c3"
STARTUP_COMMANDS = ("sceval", "faultline-eval")
STARTUP_RUNS = 5


def console_scripts(root: Path) -> dict[str, str]:
    """``name -> module:function`` of ``root``'s console scripts (setup.cfg)."""
    config = configparser.ConfigParser()
    config.read(root / "setup.cfg")
    lines = config["options.entry_points"]["console_scripts"].strip().splitlines()
    return {name.strip(): target.strip() for name, _, target in (line.partition("=") for line in lines)}


def startup_seconds(roots: dict[str, Path], runs: int = STARTUP_RUNS) -> dict[str, dict[str, float]]:
    """Median wall time of ``COMMAND --help`` (:data:`STARTUP_COMMANDS`) for each checkout in ``roots``: the console
    script's own two lines (``from module import function; sys.exit(function())``) with the checkout first on the
    path, the checkouts' runs interleaved so that a change in the machine's load hits each alike."""
    times: dict[str, dict[str, list[float]]] = {label: defaultdict(list) for label in roots}
    for _ in range(runs):
        for label, root in roots.items():
            scripts = console_scripts(root)
            for command in STARTUP_COMMANDS:
                module, _, function = scripts[command].partition(":")
                code = f"import sys; sys.argv[0] = {command!r}; from {module} import {function}; sys.exit({function}())"
                env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1", "NO_ALBUMENTATIONS_UPDATE": "1"}
                start = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-c", code, "--help"], env=env, capture_output=True, cwd=tempfile.gettempdir()
                )
                times[label][command].append(time.perf_counter() - start)
    return {
        label: {command: statistics.median(values) for command, values in by.items()} for label, by in times.items()
    }


def measure_issue37(root: Path, files: list[str]) -> dict:
    """The figures of issue 37's benchmark that need no tool but Python: floors, copies, imports by string, and
    the file names that several modules share."""
    names = Counter(
        Path(path).name
        for path in files
        if not path.endswith("__init__.py") and not MOVED_MODULE_SHIM.search((root / path).read_text(encoding="utf-8"))
    )  # a deprecated path keeps its old name by design
    repeated = sorted(name for name, count in names.items() if count > 1)
    return (
        measure_folders(root, files)
        | measure_module_copies(root)
        | measure_string_imports(root, files)
        | {"repeated_module_names": len(repeated), "repeated_module_names_list": repeated}
    )


def baseline_tree(ref: str, into: Path) -> Path:
    """The product of commit ``ref`` of this repository, unpacked into ``into`` (``git archive``)."""
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def measure(root: Path = ROOT, slow: bool = True, baseline: str | None = None) -> dict:
    """Every figure; ``slow``: also mypy, the contracts and the start-up times; ``baseline``: also the figures of
    issue 37 (and the start-up times) of that commit, as ``before`` (its duplicates too)."""
    files = product_files(root)
    numbers = {"checkout": str(root), "commit": _commit(root)}
    numbers |= measure_lines(root, files)
    numbers |= measure_imports(root, files)
    numbers |= measure_issue37(root, files)
    numbers["complexity"] = measure_complexity(root, files)
    numbers |= measure_duplicates(root)
    numbers |= measure_ruff(root)
    if slow:
        numbers |= measure_mypy(root, files)
        numbers |= measure_contracts(root)
    with tempfile.TemporaryDirectory(prefix="architecture-baseline-") as folder:
        roots = {"now": root}
        if baseline:
            before = baseline_tree(baseline, Path(folder))
            before_files = product_files(before)
            numbers["before"] = {"commit": baseline} | measure_issue37(before, before_files)
            numbers["before"]["above_C_by_layer"] = measure_complexity(before, before_files)["above_C_by_layer"]
            numbers["before"] |= measure_duplicates(before)
            roots["before"] = before
        if slow:
            startup = startup_seconds(roots)
            numbers["startup_s"] = startup["now"]
            if baseline:
                numbers["before"]["startup_s"] = startup["before"]
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
    before = numbers.get("before", {})

    def compared(key: str, value: object) -> str:
        was = before.get(key)
        return f"{value}" if was is None else f"{value}  (before, {before['commit']}: {was})"

    rows += [
        (
            "imports rising between top-level folders (goal 0)",
            compared("rising_imports", numbers["rising_imports"])
            + f"; declared exceptions {numbers['rising_imports_declared']}, "
            f"deprecated paths forwarding up {numbers['deprecated_paths_forwarding_up']}",
        ),
        ("module copies (goal 0)", compared("module_copies", numbers["module_copies"])),
        (
            "imports by string outside the plugin hosts, undeclared (goal 0)",
            compared("string_imports_undeclared", numbers["string_imports_undeclared"])
            + f"; {numbers['string_imports_named']} named, {numbers['string_import_calls']} import_module calls",
        ),
        ("functions above C by layer", compared("above_C_by_layer", numbers["complexity"]["above_C_by_layer"])),
        ("file names several modules share", str(numbers["repeated_module_names"])),
    ]
    for command, seconds in numbers.get("startup_s", {}).items():
        was = before.get("startup_s", {}).get(command)
        rows.append(
            (f"start-up: {command} --help (median)", f"{seconds:.2f} s" + (f"  (before: {was:.2f} s)" if was else ""))
        )
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
    rows.append(("duplicate pairs (product)", compared("duplicate_pairs", numbers.get("duplicate_pairs"))))
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
    listing("imports rising between top-level folders", numbers["rising_imports_list"])
    listing("imports by string, undeclared", numbers["string_imports_undeclared_list"])
    listing(
        "module copies",
        [*numbers.get("module_copies_second_names", []), *numbers.get("module_copies_loaded_twice", {})],
    )
    if numbers["unassigned_files"]:
        listing("files with no layer", numbers["unassigned_files"])
    return "\n".join(out)


# --- the figures docs/architecture.md states ------------------------------------------------------------------------

RESULTS_FILE = ROOT / "benchmarks" / "results" / "architecture.json"
DOCS_PAGE = ROOT / "docs" / "architecture.md"
DOCS_BEGIN = "<!-- measured by benchmarks/architecture.py --write-docs: do not edit by hand -->"
DOCS_END = "<!-- end of measured -->"
#: The figures recorded and stated: (name, unit, what, deterministic). A deterministic figure follows from the
#: tree alone, so tests/test_architecture.py measures it again and fails when the recorded one differs.
FIGURES = [
    ("rising_imports", "", "imports rising between top-level folders (importer -> imported; goal 0)", True),
    ("rising_imports_declared", "", "of them declared in .importlinter (imports by name against the layers)", True),
    ("deprecated_paths_forwarding_up", "", "deprecated 0.2 paths forwarding to faultline_app (until 0.4)", True),
    ("module_copies", "", "modules with a second import path or loaded twice (goal 0)", True),
    ("string_imports_undeclared", "", "imports by string outside the plugin hosts, undeclared (goal 0)", True),
    ("string_imports_named", "", "modules named by string outside the plugin hosts (importer -> imported)", True),
    ("function_level_imports", "", "imports of the project's own modules inside functions", True),
    ("contracts", "", "import-linter contracts (tests/test_architecture.py: all kept)", True),
    ("repeated_module_names", "", "file names that more than one module has (deprecated paths aside)", True),
    ("above_C", "", "functions above complexity C, product", True),
    ("duplicate_pairs", "", "duplicated blocks in the product (`duplicates`)", False),
    ("startup.sceval", "s", "`sceval --help`, median of 5 runs", False),
    ("startup.faultline-eval", "s", "`faultline-eval --help`, median of 5 runs", False),
]


def figures(numbers: dict) -> dict[str, float | int]:
    """The stated figures of one measurement (``numbers`` of :func:`measure`, or its ``before``)."""
    values = {name: numbers[name] for name, *_ in FIGURES if name in numbers}
    above = numbers.get("above_C_by_layer", numbers.get("complexity", {}).get("above_C_by_layer", {}))
    values["above_C"] = sum(above.values())
    for layer, count in above.items():
        values[f"above_C.{layer}"] = count
    for command, seconds in numbers.get("startup_s", {}).items():
        values[f"startup.{command}"] = seconds
    if "contracts" in numbers and isinstance(numbers["contracts"], dict):
        values["contracts"] = len(numbers["contracts"])
    return values


def deterministic_numbers(root: Path = ROOT) -> dict:
    """Every measure that follows from the tree alone (no tool but Python and radon), measured now."""
    files = product_files(root)
    numbers = measure_issue37(root, files) | measure_imports(root, files) | measure_lines(root, files)
    numbers["complexity"] = measure_complexity(root, files)
    numbers["contracts"] = dict.fromkeys(contract_names(root))
    return numbers


def deterministic_figures(numbers: dict) -> dict[str, float | int]:
    """The stated figures among ``numbers`` (of :func:`deterministic_numbers`): what the docs test compares."""
    keep = {name for name, *_, deterministic in FIGURES if deterministic}
    return {name: value for name, value in figures(numbers).items() if name.split(".")[0] in keep}


def contract_names(root: Path) -> list[str]:
    config = configparser.ConfigParser()
    config.read(root / IMPORT_LINTER_CONFIG)
    return [section for section in config.sections() if section.startswith("importlinter:contract:")]


def _what(name: str) -> tuple[str, str]:
    base, _, layer = name.partition(".")
    for figure, unit, what, _ in FIGURES:
        if figure == name or (figure == base and base == "above_C"):
            return unit, what if not layer or base != "above_C" else f"functions above C in layer {layer}"
    raise KeyError(name)


def docs_block(result: dict) -> str:
    """The Markdown docs/architecture.md states between :data:`DOCS_BEGIN` and :data:`DOCS_END`, from the figures of
    ``result`` (benchmarks/results/architecture.json: ``NAME`` now, ``before.NAME`` at :data:`BASELINE`)."""
    by_name = {figure["name"]: figure for figure in result["figures"]}
    names = [name for name in by_name if not name.startswith("before.")]
    names += [n.removeprefix("before.") for n in by_name if n.startswith("before.") and n[7:] not in by_name]
    rows = [
        f"| | before issue 37 (`{result['baseline']}`) | now (`{result['commit'][:7]}`) |",
        "|---|---|---|",
    ]
    order = [figure[0] for figure in FIGURES]
    for name in sorted(names, key=lambda n: (order.index(n if n in order else n.split(".")[0]), n)):
        unit, what = _what(name)
        cells = [
            provenance.format_value(by_name[key]["value"], unit) if key in by_name else "–"
            for key in (f"before.{name}", name)
        ]
        rows.append(f"| {what} | {cells[0]} | {cells[1]} |")
    when = f"{result['date'][:10]}, {result['machine'].get('cpu', '?')}, {result['machine'].get('cores', '?')} cores"
    return "\n".join(
        [
            DOCS_BEGIN,
            "",
            f"`{result['command']}` ({when}; start-up times of both trees interleaved on the same machine):",
            "",
            *rows,
            "",
            DOCS_END,
        ]
    )


def write_docs(numbers: dict, record) -> None:
    """Record the stated figures in :data:`RESULTS_FILE` and state them in :data:`DOCS_PAGE`."""
    for prefix, source in (("", numbers), ("before.", numbers.get("before", {}))):
        for name, value in figures(source).items():
            unit, what = _what(name)
            record.figure(prefix + name, value, unit, what)
    result = record.as_dict(smoke=False) | {"baseline": numbers.get("before", {}).get("commit", "–")}
    RESULTS_FILE.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    page = DOCS_PAGE.read_text(encoding="utf-8")
    head, begin, rest = page.partition(DOCS_BEGIN)
    _, end, tail = rest.partition(DOCS_END)
    if not (begin and end):
        raise SystemExit(f"{DOCS_PAGE}: no {DOCS_BEGIN!r} ... {DOCS_END!r} block to fill")
    DOCS_PAGE.write_text(head + docs_block(result) + tail, encoding="utf-8")
    print(f"figures written to {RESULTS_FILE} and stated in {DOCS_PAGE}")


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
        help="run lint-imports (a plain one, at the repository root) and exit with its status",
    )
    parser.add_argument(
        "--baseline",
        nargs="?",
        const=BASELINE,
        metavar="REF",
        help=f"also measure commit REF (default {BASELINE}, where issue 37 started) as 'before'",
    )
    parser.add_argument(
        "--write-docs",
        action="store_true",
        help="measure everything (with --baseline), record it in benchmarks/results/architecture.json and state it "
        "in docs/architecture.md",
    )
    arguments = parser.parse_args(argv)
    if arguments.lint_imports is not None:
        result = lint_imports(ROOT, arguments.lint_imports)
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        return result.returncode
    record = provenance.Record(__file__, peer=None, argv=argv)
    if arguments.write_docs:
        write_docs(measure(ROOT, slow=True, baseline=arguments.baseline or BASELINE), record)
        return 0
    numbers = measure(ROOT, slow=not (arguments.fast or arguments.smoke), baseline=arguments.baseline)
    print(json.dumps(numbers, indent=1) if arguments.json == "-" else table(numbers))
    if arguments.json not in (None, "-"):
        for key, value in numbers.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                record.figure(key, value, "", key.replace("_", " "))
        record.write(arguments.json, smoke=arguments.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
