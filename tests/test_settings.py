"""The settings registry (``faultline_eval.core.settings``, each benchmark declaring its own) and the code agree: every environment
variable of ours that the code names is declared once, with its default and meaning, every declared
one is read, and the defaults in the table are the ones the code uses. The settings reference page
is generated from the same table, so a variable that passes here is documented there."""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

import pytest

from c3po_plugin.c3po_environment import C3PO_ON_BAD_INPUT
from c3po_plugin.data import sources as c3po_sources
from faultline_eval.core import decode_cache, intake, media, offline, paths, settings, store
from faultline_eval.core.settings import GROUPS, SETTINGS, THIRD_PARTY, Setting
from faultline_eval.judges import make_judge, open_cache
from faultline_eval.model_wrappers import openai_client
from faultline_eval.tasks import wrapped_media
from faultline_eval.tasks.c3po_settings import TaskSettings
from sceval_plugin import no_option_control
from sceval_plugin.data import manifest
from sceval_plugin.data import sources as sceval_sources
from sceval_plugin.operators import SEED_SCHEMES, seed_scheme
from sceval_plugin.sceval_environment import SCEVAL_ON_BAD_INPUT, SCEVAL_SEED_SCHEME, SCEVAL_STRESS_ONLY

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sceval_plugin", "c3po_plugin", "faultline_eval", "tasks", "model_wrappers")
#: The modules that declare settings (the core's table, each benchmark's): reading happens elsewhere.
DECLARING_FILES = {
    Path(sys.modules[module].__file__).resolve() for module in {SETTINGS.module_of(s.name) for s in SETTINGS}
}
#: A variable of ours: the three prefixes the project's settings carry.
OURS = re.compile(r"\b(?:SCEVAL|C3PO|FAULTLINE)_[A-Z0-9_]+\b")


def _sources() -> dict[Path, ast.Module]:
    return {
        path: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


SOURCES = _sources()


def _strings(tree: ast.Module) -> list[str]:
    """Every string literal of a module (docstrings, messages, help texts), but not the fixed parts
    of an f-string, which are fragments of a text, not names."""
    fragments = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in fragments
    ]


def _identifiers(tree: ast.Module) -> set[str]:
    """The names a module uses in code: variables, attributes and imported names."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name)
    return names


def test_every_variable_of_ours_the_code_names_is_declared():
    """A ``SCEVAL_*``/``C3PO_*``/``FAULTLINE_*`` name in any string of the code (read with
    ``os.environ``, named in an error message, help text or docstring) is a declared setting."""
    declared = {s.name for s in SETTINGS}
    named: dict[str, set[str]] = {}
    for path, tree in SOURCES.items():
        for text in _strings(tree):
            for name in OURS.findall(text):
                named.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    undeclared = {name: sorted(where) for name, where in named.items() if name not in declared}
    assert not undeclared, f"declare these in faultline_eval/core/settings.py or the benchmark's: {undeclared}"
    assert len(named) >= 30  # the scan sees the code (36 names today)


def test_every_declared_setting_is_read_outside_the_registry():
    """Each setting's object (or, for a bare lookup, its exact name) is used by some module other
    than the ones declaring settings: the table declares nothing that no code reads."""
    used: set[str] = set()
    for path, tree in SOURCES.items():
        if path.resolve() not in DECLARING_FILES:
            used |= _identifiers(tree) | set(_strings(tree))
    unread = [s.name for s in SETTINGS if s.name not in used]
    assert not unread, f"declared but read nowhere: {unread}"


def test_third_party_variables_are_ones_the_code_reads_or_names():
    texts = [text for path, tree in SOURCES.items() if path.resolve() not in DECLARING_FILES for text in _strings(tree)]
    used = set().union(*(_identifiers(tree) for path, tree in SOURCES.items() if path.resolve() not in DECLARING_FILES))
    for setting in THIRD_PARTY:
        assert setting.name in used or any(setting.name in text for text in texts), setting.name
        assert not OURS.fullmatch(setting.name), f"{setting.name} is ours: declare it in SETTINGS"


def test_the_table_is_well_formed():
    table = (*SETTINGS, *THIRD_PARTY)
    names = [s.name for s in table]
    assert len(names) == len(set(names)), "a setting is declared twice"
    for setting in table:
        # the declaring module's attribute is the variable's name, so code reads e.g. ``SCEVAL_SOURCE.get()``
        if setting not in THIRD_PARTY:
            assert getattr(sys.modules[SETTINGS.module_of(setting.name)], setting.name) is setting
        assert settings.by_name(setting.name) is setting
        assert setting.doc.strip() and setting.doc.rstrip().endswith((".", ")")), setting.name
        assert setting.default is None or setting.default.strip() == setting.default != "", setting.name
        if setting.choices:
            assert setting.default in setting.choices, f"{setting.name}: default {setting.default!r} not a choice"
            assert len(set(setting.choices)) == len(setting.choices), setting.name
    # grouped as the reference table shows them: each group once, in GROUPS' order
    order = [s.group for s in SETTINGS]
    runs = [group for i, group in enumerate(order) if i == 0 or order[i - 1] != group]
    assert runs == list(GROUPS)
    with pytest.raises(KeyError, match="NO_SUCH"):
        settings.by_name("NO_SUCH")


def test_the_choices_are_the_values_the_code_accepts():
    assert SCEVAL_ON_BAD_INPUT.choices == C3PO_ON_BAD_INPUT.choices == intake.POLICIES
    assert SCEVAL_SEED_SCHEME.choices == tuple(str(n) for n in SEED_SCHEMES)
    assert manifest.STRESS_ONLY_POLICIES == SCEVAL_STRESS_ONLY.choices
    assert store.FSYNC_POLICIES == settings.FAULTLINE_STORE_FSYNC.choices
    assert media.FRAME_SAMPLINGS == settings.FAULTLINE_FRAME_SAMPLING.choices


def test_reading_a_setting_blank_counts_as_unset():
    switch = Setting("X_TEST_SWITCH", None, "a switch.")
    sized = Setting("X_TEST_SIZE", "20", "a size.")
    assert (sized.get({}), sized.get({"X_TEST_SIZE": "  "}), sized.get({"X_TEST_SIZE": " 3 "})) == ("20", "20", "3")
    assert sized.raw({"X_TEST_SIZE": " 3 "}) == " 3 " and sized.raw({}) is None
    assert not sized.is_set({"X_TEST_SIZE": " "}) and sized.is_set({"X_TEST_SIZE": "0"})
    assert [switch.is_on({"X_TEST_SWITCH": v}) for v in ("", " 0 ", "1", "yes")] == [False, False, True, True]
    assert switch.get({}) == switch.default_text == ""


@pytest.fixture
def unset(monkeypatch, tmp_path):
    """No setting of the table in the environment (HOME in a temporary folder)."""
    for setting in (*SETTINGS, *THIRD_PARTY):
        monkeypatch.delenv(setting.name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def _in_use() -> dict[str, object]:
    """What the code uses for each setting when its variable is unset, read from the code's own
    objects (not from the table)."""
    limits = media.limits()
    task = TaskSettings.from_environment()
    return {
        "SCEVAL_CACHE": paths.cache_dir(),
        "SCEVAL_DECODE_CACHE_GB": decode_cache._disk.limit_bytes() / 1e9,
        "SCEVAL_WRAPPED_MEDIA_GB": wrapped_media.files.limit_bytes() / 1e9,
        "FAULTLINE_MAX_FRAME_SIDE": limits.max_side,
        "FAULTLINE_MAX_MEGAPIXELS": limits.max_megapixels,
        "FAULTLINE_MAX_CLIP_SECONDS": limits.max_clip_s,
        "FAULTLINE_MAX_AUDIO_SECONDS": limits.max_audio_s,
        "FAULTLINE_FRAME_SAMPLING": limits.frame_sampling,
        "FAULTLINE_MAX_SOURCE_VIDEO_MB": media._source_video_budget() / 1e6,
        "SCEVAL_SOURCE": sceval_sources.current_spec(),
        "SCEVAL_ON_BAD_INPUT": intake.bad_input_policy(SCEVAL_ON_BAD_INPUT),
        "SCEVAL_STRESS_ONLY": manifest.stress_only_policy(),
        "C3PO_SOURCE": c3po_sources.current_spec(),
        "C3PO_ON_BAD_INPUT": intake.bad_input_policy(C3PO_ON_BAD_INPUT),
        "SCEVAL_SEED_SCHEME": seed_scheme(),
        "C3PO_RUNS": task.runs,
        "C3PO_JUDGE": task.judge,
        "SCEVAL_NO_OPTION_SCORER_1": no_option_control.scorer_specs()[0],
        "SCEVAL_NO_OPTION_SCORER_2": no_option_control.scorer_specs()[1],
        "OPENAI_API_KEY": openai_client.api_key(),
        "FAULTLINE_STORE_FSYNC": store._fsync_policy(None),
        # settings without a default: the behaviour the doc names
        "SCEVAL_MANIFEST": manifest.current_manifest(),
        "C3PO_VERDICT_CACHE": open_cache(make_judge("exact")).path,
    }


def test_the_defaults_in_the_table_are_the_ones_the_code_uses(unset):
    in_use = _in_use()
    for name, value in in_use.items():
        setting = settings.by_name(name)
        if setting.default is None:
            continue
        if isinstance(value, Path):
            expected: object = Path(setting.default).expanduser()
        elif isinstance(value, (int, float)):
            expected = type(value)(setting.default)
        else:
            expected = setting.default
        assert value == expected, f"{name}: the code uses {value!r}, the table says {setting.default!r}"
    assert in_use["SCEVAL_CACHE"] == unset / ".cache" / "sceval"
    assert in_use["SCEVAL_DECODE_CACHE_GB"] == 20 and in_use["SCEVAL_WRAPPED_MEDIA_GB"] == 50
    assert in_use["SCEVAL_MANIFEST"] is None
    assert in_use["C3PO_VERDICT_CACHE"] == unset / ".cache" / "sceval" / "c3po" / "verdicts" / "exact.jsonl"
    # every setting with a default is checked here, but the offline ones (below) and three whose
    # value the code passes on without keeping it where a test can see it
    unchecked = {s.name for s in SETTINGS if s.default is not None and s.group != "Offline defaults"} - set(in_use)
    assert unchecked == {"SCEVAL_DECODE_CACHE_MEMORY_MB", "SCEVAL_HF_MODE", "C3PO_HF_SPLIT"}


def test_a_value_set_in_the_environment_is_the_one_the_code_reads(unset, monkeypatch):
    monkeypatch.setenv("SCEVAL_DECODE_CACHE_GB", " 3 ")
    monkeypatch.setenv("SCEVAL_WRAPPED_MEDIA_GB", "0")
    monkeypatch.setenv("FAULTLINE_MAX_FRAME_SIDE", "640")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fallback")
    assert decode_cache._disk.limit_bytes() == 3e9 and wrapped_media.files.limit_bytes() == 0
    assert media.limits().max_side == 640
    assert openai_client.api_key() == "sk-fallback"
    monkeypatch.setenv("SCEVAL_OPENAI_API_KEY", "sk-ours")
    assert openai_client.api_key() == "sk-ours"
    monkeypatch.setenv("SCEVAL_DECODE_CACHE_GB", "lots")
    with pytest.raises(ValueError, match=r"SCEVAL_DECODE_CACHE_GB='lots': expected a number >= 0 \(The decode cache"):
        decode_cache._disk.limit_bytes()


def test_the_offline_defaults_are_the_tables(unset, monkeypatch):
    group = [s for s in SETTINGS if s.group == "Offline defaults"]
    assert offline.OFFLINE_DEFAULTS == {s.name: s.default for s in group}
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    offline.use_offline_defaults()
    assert os.environ["HF_HUB_OFFLINE"] == "0"  # what the user set stays
    assert all(os.environ[s.name] == s.default for s in group if s.name != "HF_HUB_OFFLINE")


def test_each_benchmark_declares_its_own_settings_and_the_old_names_still_import():
    """The core declares what every layer reads (caches, media, judges, serving); SCEval's and
    C3PO's own settings live in their packages and join the one table when those are imported."""
    modules = {s.name: SETTINGS.module_of(s.name) for s in SETTINGS}
    assert modules["SCEVAL_SOURCE"] == "sceval_plugin.sceval_environment"
    assert modules["C3PO_BUILD_AUDITOR"] == "c3po_plugin.c3po_environment"
    assert modules["SCEVAL_CACHE"] == modules["C3PO_JUDGE"] == "faultline_eval.core.settings"
    core_source = Path(settings.__file__).read_text()
    assert "C3PO_BUILD_CLASSIFIER = Setting(" not in core_source and "SCEVAL_SOURCE = Setting(" not in core_source
    with pytest.warns(DeprecationWarning, match="use 'from c3po_plugin.c3po_environment import C3PO_BUILD_AUDITOR'"):
        old = settings.C3PO_BUILD_AUDITOR
    assert old is settings.by_name("C3PO_BUILD_AUDITOR")
    with pytest.raises(ValueError, match="SCEVAL_SOURCE is declared twice"):
        SETTINGS.declare("elsewhere", Setting("SCEVAL_SOURCE", None, "again.", group="Data sources"))
