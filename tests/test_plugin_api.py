"""The plugin API (``sceval_plugin.api``, ``c3po_plugin.api``) and the 0.1 paths that still lead to it.

- Plugins written exactly as the 0.1 documentation said (``tests/data/plugins_0_1``), installed with pip
  and found through their entry points as a user's would be, load, register and work on today's code;
  the same plugins written against the API (``tests/data/plugins_api``) do the same, meeting no
  deprecation, and type-check under ``mypy --strict``.
- Every deprecated module path (a ``moved_module`` shim) resolves each name to the very object of its
  new home, warns naming the import to use, and is listed in the changelog.
- Every Python example of README.md and docs/ imports what a plugin uses from the API only.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import typing
import warnings
from pathlib import Path

import pytest

import c3po_plugin.api
import c3po_plugin.hookspecs
import sceval_plugin.api
import sceval_plugin.hookspecs
from faultline_eval.core.moved_modules import REMOVED_IN

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
APIS = (sceval_plugin.api, c3po_plugin.api)
SHIM = re.compile(r"^__getattr__, __dir__, __all__ = moved_module\(__name__, (\w+)", re.MULTILINE)


# --- the API modules ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS, ids=lambda api: api.__name__)
def test_the_api_exports_what_its_docstring_lists_and_nothing_private(api):
    assert api.__all__ and len(set(api.__all__)) == len(api.__all__)
    assert all(hasattr(api, name) and not name.startswith("_") for name in api.__all__)
    listed = set(re.findall(r":\w+:`(\w+)`", api.__doc__))
    assert set(api.__all__) <= listed, f"exported but not in the docstring: {set(api.__all__) - listed}"


@pytest.mark.parametrize(
    "hookspecs,api", [(sceval_plugin.hookspecs, sceval_plugin.api), (c3po_plugin.hookspecs, c3po_plugin.api)]
)
def test_every_hook_argument_is_typed_by_a_type_the_api_exports(hookspecs, api):
    """As pytest types its hooks: each hook's ``registry`` annotation resolves, and the registry the
    host passes a plugin is an instance of it (or meets the protocol)."""
    hooks = [getattr(hookspecs, name) for name in dir(hookspecs) if name.startswith(f"{hookspecs.PROJECT}_register_")]
    assert len(hooks) == {"sceval": 5, "c3po": 3}[hookspecs.PROJECT]
    exported = {getattr(api, name) for name in api.__all__ if isinstance(getattr(api, name), type)}
    for hook in hooks:
        annotation = typing.get_type_hints(hook, localns=vars(api))["registry"]
        assert typing.get_origin(annotation) in exported or annotation in exported, (hook.__name__, annotation)


def test_the_registries_the_api_returns_are_of_the_hooks_types():
    sceval, c3po = sceval_plugin.api, c3po_plugin.api
    assert isinstance(sceval.operator_registry(), sceval.OperatorRegistry)
    assert isinstance(sceval.condition_registry(), sceval.ConditionRegistry)
    assert isinstance(sceval.probe_registry(), sceval.ProbeRegistry)
    assert isinstance(sceval.converter_registry(), sceval.ConverterRegistry)
    assert isinstance(sceval.adapter_registry(), sceval.TaskAdapterRegistry)
    assert isinstance(c3po.template_registry(), c3po.TemplateRegistry)
    assert isinstance(c3po.spec_registry(), c3po.SpecRegistry)
    assert isinstance(c3po.synthesis_registry(), c3po.SynthesisRegistry)
    assert c3po.plugin_manager() is c3po_plugin.plugins.HOST.manager


# --- the deprecated paths -----------------------------------------------------------------------------------------


def shims() -> dict[str, str]:
    """Old module -> new module, for every ``moved_module`` shim in the benchmark packages and the ground
    floor: the new one is the module the shim names in ``moved_module(__name__, <it>``."""
    found = {}
    for package in ("sceval_plugin", "c3po_plugin", "faultline_eval"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if match := SHIM.search(path.read_text()):
                old = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                found[old] = vars(importlib.import_module(old))[match.group(1)].__name__
    return found


SHIMS = shims()


def test_the_0_1_paths_of_the_issue_import_again():
    """The two paths issue 37 names, whose 0.2 breakage skipped plugins: they are among the shims."""
    assert SHIMS["sceval_plugin.probes"] == "sceval_plugin.probe_conditions"
    assert SHIMS["c3po_plugin.build.specs"] == "c3po_plugin.construction.specs"


@pytest.mark.parametrize("old", sorted(SHIMS))
def test_a_moved_module_resolves_every_name_to_its_new_object_and_warns_naming_the_new_import(old):
    shim, new = importlib.import_module(old), importlib.import_module(SHIMS[old])
    # the ground floor's shims (the command lines and the viewer, moved to faultline_app) name no plugin API
    api = importlib.import_module(f"{old.split('.')[0]}.api") if old.split(".")[0] != "faultline_eval" else None
    names = dir(shim)
    assert names and set(names) >= {n for n in dir(new) if not n.startswith("_")}
    for name in names:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = getattr(shim, name)
        [warning] = caught
        assert warning.category is DeprecationWarning and warning.filename == __file__  # the reader's line
        message = str(warning.message)
        assert f"{old} is deprecated" in message and f"goes in {REMOVED_IN}" in message
        exported = api.__all__ if api is not None else []
        via_api = [n for n in exported if getattr(api, n) is value and not isinstance(value, (str, int, float, tuple))]
        if name in exported and getattr(api, name) is value:
            assert f"'from {api.__name__} import {name}'" in message
        elif via_api:
            assert f"'from {api.__name__} import {via_api[0]}'" in message
        else:
            home = importlib.import_module(message.split("'from ")[1].split(" import ")[0])
            assert getattr(home, name) is value
        if hasattr(new, name):
            assert value is getattr(new, name)
    with pytest.raises(AttributeError, match=f"moved to {SHIMS[old]}"):
        shim.no_such_name  # noqa: B018


@pytest.mark.parametrize("old", ["sceval_plugin.probes", "c3po_plugin.build.specs"])
def test_a_star_import_of_a_moved_module_gets_the_new_modules_names(old):
    namespace: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(f"from {old} import *", namespace)
    new = importlib.import_module(SHIMS[old])
    public = [n for n in vars(new) if not n.startswith("_")]
    assert public and all(namespace[n] is getattr(new, n) for n in public)
    assert "moved_module" not in namespace  # the shim's own imports stay out
    assert len(caught) >= len(public) and all(w.category is DeprecationWarning for w in caught)


def test_the_changelog_lists_every_moved_module_under_unreleased():
    unreleased = (ROOT / "CHANGELOG.md").read_text().split("\n## [Unreleased]", 1)[1].split("\n## [", 1)[0]
    listed = dict(re.findall(r"`([\w.]+)` → `([\w.]+)`", unreleased))
    missing = {old: new for old, new in SHIMS.items() if listed.get(old) != new}
    assert not missing, f"CHANGELOG.md's Unreleased section does not list (old → new): {missing}"


def test_the_deprecated_paths_go_in_the_release_they_announce():
    """A reminder with teeth: from version 0.4 on, the shims must be gone (and this test with them)."""
    version = re.search(r"^version = (\d+)\.(\d+)", (ROOT / "setup.cfg").read_text(), re.MULTILINE)
    assert (int(version.group(1)), int(version.group(2))) < tuple(map(int, REMOVED_IN.split(".")))


# --- the docs' examples import from the API -----------------------------------------------------------------------


def _api_sources() -> set[str]:
    """The modules the API re-exports from: a doc importing from one of them bypasses the API."""
    return {
        node.module
        for api in APIS
        for node in ast.walk(ast.parse(Path(api.__file__).read_text()))
        if isinstance(node, ast.ImportFrom) and node.module
    } | {"sceval_plugin", "c3po_plugin"}


API_OBJECTS = {id(getattr(api, n)): f"{api.__name__}.{n}" for api in APIS for n in api.__all__}
HEREDOC = re.compile(r"<<-?\s*'?(\w+)'?\n(.*?)\n\1\n", re.DOTALL)


def _api_import(api_name: str | None) -> str:
    if api_name is None:
        return "the plugin API (sceval_plugin.api, c3po_plugin.api)"
    module, _, name = api_name.rpartition(".")
    return f"'from {module} import {name}'"


def python_examples() -> list[tuple[str, int, str]]:
    """(file, line, code) of every Python example: ``python`` fences and Python heredocs of shell fences."""
    sys.path.insert(0, str(Path(__file__).parent))
    from doc_examples import PYTHON, SHELL, fences

    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for fence in fences(page.read_text()):
            where = str(page.relative_to(ROOT))
            if fence.lang in PYTHON:
                found.append((where, fence.line, fence.body))
            elif fence.lang in SHELL:
                for match in HEREDOC.finditer(fence.body + "\n"):
                    if match.group(1) in ("PY", "PYTHON", "EOF") and re.search(
                        r"^\s*(from|import) ", match.group(2), re.M
                    ):
                        found.append((where, fence.line + fence.body[: match.start()].count("\n") + 1, match.group(2)))
    return found


def test_doc_examples_import_plugin_names_only_from_the_api():
    sources, problems = _api_sources(), []
    examples = python_examples()
    assert any("write-a-plugin.md" in where for where, _, _ in examples)
    for where, line, code in examples:
        try:
            tree = ast.parse(code)
        except SyntaxError:  # an excerpt with ``...`` placeholders; doc_examples checks what must parse
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not node.module or node.module.endswith(".api"):
                continue
            if node.module.split(".")[0] not in ("sceval_plugin", "c3po_plugin", "faultline_eval"):
                continue
            module = importlib.import_module(node.module)
            for alias in node.names:
                value = getattr(module, alias.name, None)
                api_name = API_OBJECTS.get(id(value)) if not isinstance(value, (str, int, float, tuple)) else None
                if api_name or (node.module in sources and node.module not in ("sceval_plugin", "c3po_plugin")):
                    problems.append(
                        f"{where}:{line + node.lineno}: 'from {node.module} import {alias.name}': "
                        f"use {_api_import(api_name)}"
                    )
    assert not problems, "doc examples import plugin names from outside the API:\n" + "\n".join(problems)


# --- the plugins, installed -----------------------------------------------------------------------------------------

#: Loads every plugin of one distribution through its entry points (strict: a plugin that fails is an
#: error, not a skipped warning), uses each, and prints what it saw and the deprecations it met.
CHECK = r"""
import hashlib, json, shutil, sys, warnings
from pathlib import Path

import numpy as np

from sceval_plugin.construction.convert import convert_source
from sceval_plugin.data.sources import DEMO_DIR

warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from c3po_plugin.api import spec_registry, synthesis_registry, template_registry
    from sceval_plugin.api import (BareItem, Evidence, ProbeCall, apply_operator, apply_probe, condition_registry,
                                   converter_registry, operator_registry, probe_registry)
    operators, conditions, probes = operator_registry(), condition_registry(), probe_registry()
    converters, templates, specs, backends = converter_registry(), template_registry(), spec_registry(), synthesis_registry()
dist = sys.argv[1]
frames = np.full((2, 32, 32, 3), 128, np.uint8)
flipped = apply_operator("salt_pepper", frames, severity=70, variant=1, key="sample-1")
shown = Evidence(BareItem("sample-1", "video frames"), "Which colour?", "", frames, None, None, "video frames")
after, _, not_applicable = apply_probe(ProbeCall("black_frame", "start"), shown)
ours = [c for c in conditions if dist in c.plugin]

copy = Path(sys.argv[2])
(copy / "clips").mkdir(parents=True)
rows = [json.loads(line) for line in (DEMO_DIR / "items.jsonl").read_text().splitlines()[:2]]
with open(copy / "qa.jsonl", "w") as qa:
    for n, item in enumerate(rows):
        shutil.copytree(DEMO_DIR / "media" / item["sample_id"], copy / "clips" / item["sample_id"])
        answer = "ABCD".index(item["gold_key"]) if n == 0 else 7
        qa.write(json.dumps({"id": item["sample_id"], "question": item["question"],
                             "choices": list(item["options"].values()), "answer": answer}) + "\n")
summary = convert_source("mine", copy, Path(sys.argv[3]))
picture = backends.make("image", "flat-colour:32").draw("a red kettle", key="sample-1")

print(json.dumps({
    "operator": [operators.get("salt_pepper").variants, dist in operators.get("salt_pepper").plugin,
                 hashlib.sha256(flipped.tobytes()).hexdigest()],
    "probe": [dist in probes.get("black_frame").plugin, list(after.frames.shape), int(after.frames[0].max()),
              not_applicable],
    "conditions": sorted(c.task_name for c in ours),
    "converter": [dist in converters.get("mine").plugin, summary["examples"], summary["converted"], summary["rejected"]],
    "template": [templates.get("MY01").task_name, dist in templates.get("MY01").plugin],
    "spec": [specs.get("X_T2_001").prompt_json()["template_id"], dist in specs.get("X_T2_001").plugin],
    "backend": ["flat-colour" in backends.names("image"), list(picture.shape), hashlib.sha256(picture.tobytes()).hexdigest()],
    "deprecations": sorted({str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)
                            and "is deprecated since" in str(w.message)}),
}))
"""


def install(tmp_path: Path, project: str) -> Path:
    """pip-install a plugin distribution of tests/data into tmp_path/site, as a user would."""
    source = tmp_path / "src" / project
    shutil.copytree(DATA / project, source)  # setuptools writes build/ and *.egg-info beside the sources
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--no-build-isolation"]
        + ["--target", str(site), str(source)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return site


def plugin_env(site: Path, tmp_path: Path) -> dict[str, str]:
    """The environment of a user who installed the plugins: site first, strict plugin loading."""
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {
        **os.environ,
        "PYTHONPATH": path,
        "SCEVAL_STRICT_PLUGINS": "1",
        "C3PO_STRICT_PLUGINS": "1",
        "SCEVAL_CACHE": str(tmp_path / "cache"),
    }


def run_check(tmp_path: Path, project: str, dist: str) -> dict:
    site = install(tmp_path, project)
    done = subprocess.run(
        [sys.executable, "-c", CHECK, dist, str(tmp_path / "copy"), str(tmp_path / "build")],
        env=plugin_env(site, tmp_path),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> dict[str, dict]:
    return {
        project: run_check(tmp_path_factory.mktemp(project), project, dist)
        for project, dist in (("plugins_0_1", "faultline-plugins-0-1"), ("plugins_api", "faultline-plugins-api"))
    }


@pytest.mark.slow
def test_plugins_written_for_0_1_load_register_and_work(checked):
    got = checked["plugins_0_1"]
    assert got["operator"][:2] == [3, True]
    assert got["probe"] == [True, [3, 32, 32, 3], 0, None]
    assert got["conditions"] == [
        "sceval_probe_black_frame_end",
        "sceval_probe_black_frame_start",
        "sceval_probe_desync_plus0p25s",
    ]
    assert got["converter"] == [True, 2, 1, 1]
    assert got["template"] == ["c3po_echo_location", True]
    assert got["spec"] == ["X_T2_001", True]
    assert got["backend"][:2] == [True, [32, 32, 3]]
    # each old path a 0.1 plugin uses warns, naming the API's import
    deprecations = "\n".join(got["deprecations"])
    for old, new in [
        ("from sceval_plugin.build.convert import Converter", "from sceval_plugin.api import Converter"),
        ("from sceval_plugin.probes import probe_condition", "from sceval_plugin.api import probe_condition"),
        ("from sceval_plugin.probes import probe", "from sceval_plugin.api import probe"),
        ("from c3po_plugin.build.specs import GenerationSpec", "from c3po_plugin.api import GenerationSpec"),
    ]:
        assert f"use '{new}' instead of '{old}'" in deprecations


@pytest.mark.slow
def test_the_same_plugins_through_the_api_work_alike_and_meet_no_deprecation(checked):
    old, new = checked["plugins_0_1"], checked["plugins_api"]
    assert new["deprecations"] == []
    assert {k: v for k, v in new.items() if k != "deprecations"} == {
        k: v for k, v in old.items() if k != "deprecations"
    }


@pytest.mark.slow
def test_the_api_plugins_type_check_strictly():
    """The API is typed enough for a plugin author's ``mypy --strict`` (hooks, decorators, registries)."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental"]
        + [str(DATA / "plugins_api" / "faultline_plugins_api")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:]


@pytest.mark.slow
def test_0_1_plugins_tasks_run_in_lmms_eval(tmp_path):
    """The tasks a 0.1 plugin adds (an operator's cell, probe conditions, a template) run as lmms-eval tasks
    (``faultline-eval``: lmms-eval's run with an exit status that says when it failed): in 0.2 the plugins
    were skipped and these tasks did not exist."""
    from c3po_plugin.data.sources import DEMO_DIR as C3PO_DEMO

    site = install(tmp_path, "plugins_0_1")
    rows = [json.loads(line) for line in (C3PO_DEMO / "items.jsonl").read_text().splitlines()]
    [row] = [row for row in rows if row["template"] == "CC07"]  # counterfactual, tier 2, video + audio: as MY01
    items = tmp_path / "c3po_items"
    for kind in ("video", "audio"):
        (items / row[kind]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(C3PO_DEMO / row[kind], items / row[kind])
    (items / "items.jsonl").write_text(json.dumps({**row, "template": "MY01", "sample_id": "echo-0"}) + "\n")
    tasks = (
        "sceval_single_salt_pepper_v50,sceval_probe_black_frame_start,sceval_probe_desync_plus0p25s,c3po_echo_location"
    )
    done = subprocess.run(
        [str(Path(sys.executable).with_name("faultline-eval")), "--model", "sceval_reference", "--tasks", tasks]
        + ["--limit", "1", "--log_samples", "--output_path", "out/"],
        env={**plugin_env(site, tmp_path), "C3PO_JUDGE": "exact", "C3PO_SOURCE": str(items)},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    logged = sorted(path.name for path in (tmp_path / "out").rglob("*_samples_*.jsonl"))
    for task in tasks.split(","):
        assert [name for name in logged if name.endswith(f"_samples_{task}.jsonl")], (task, logged)
    assert "skipped" not in done.stderr
