"""The typed trial record (faultline_eval/core/trial.py, each benchmark's trial type registered with it):
schema 2 written, schema 1 still read.

``tests/data/schema1_run`` holds per-sample lines written by the code before schema 2 (tag
pre26, the ``--limit 10`` job; lmms-eval's ``input`` prompt left out, paths cut): their trial
entries have schema 1's single-letter keys. Every test here takes well under a second.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from c3po_plugin.c3po_trial import C3POTrial
from c3po_plugin.report.reader import read_runs as read_c3po_runs
from faultline_eval.core import run_logs
from faultline_eval.core import trial as core_trial
from faultline_eval.core.trial import (
    SCHEMA_FILE,
    SCHEMA_VERSION,
    TRIAL_KINDS,
    TrialEntryError,
    json_schema,
    kind_of_line,
    schema_text,
)
from faultline_eval.tasks import c3po_task, sceval_task
from sceval_plugin.report.reader import read_runs as read_sceval_runs
from sceval_plugin.sceval_trial import STRESS_ONLY, SCEvalTrial, WrappedTrial

SCHEMA_1_RUN = Path(__file__).parent / "data" / "schema1_run"
ENTRY_KEYS = (
    "sceval_accuracy",
    "sceval_worst_variant_accuracy",
    "sceval_coverage",
    "sceval_valid_trials",
    "sceval_stress_only_trials",
    *c3po_task.TRIAL_METRICS,
)


def _lines(folder: Path) -> dict[str, list[dict]]:
    return {
        p.name: [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
        for p in sorted(folder.glob("*_samples_*.jsonl"))
    }


def _rewrite(folder: Path, out: Path, change) -> Path:
    """A copy of a run folder with each per-sample line passed through ``change``."""
    shutil.copytree(folder, out)
    for name, lines in _lines(folder).items():
        (out / name).write_text("".join(json.dumps(change(line)) + "\n" for line in lines))
    return out


def _as_schema_2(line: dict) -> dict:
    kind = kind_of_line(line).trial
    return {k: kind.from_json(v).to_json() if k in ENTRY_KEYS else v for k, v in line.items()}


BUILT_IN_KINDS = [TRIAL_KINDS.get(name) for name in ("sceval", "wrapped", "c3po")]


def test_the_committed_json_schema_is_the_codes():
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(BUILT_IN_KINDS), (
        "trial_schema.json is stale: run python -m faultline_eval.core.trial sceval_plugin c3po_plugin"
    )
    assert json_schema()["$defs"]["SCEvalTrial"]["properties"]["schema_version"] == {"const": SCHEMA_VERSION}


def test_schema_2_entries_match_their_json_schema_and_round_trip():
    """What the task writes has every required field, no other, each of its declared type."""
    types = {"string": str, "integer": int, "boolean": bool, "null": type(None)}
    defs = json_schema()["$defs"]
    for trial in [
        SCEvalTrial(
            "s1",
            2,
            None,
            "refusal",
            None,
            4,
            None,
            "demo",
            not_applicable="no_text_evidence",
            cohort=STRESS_ONLY,
            donor="s9",
            follows_donor_key="B",
            donor_key_map="B-AC",
        ),
        SCEvalTrial("s1", 0, 1, None, "A", 3, "high", None),
        C3POTrial("c1", 1, None, None, "IC01", 0, True, True, None, None, False),
    ]:
        entry = trial.to_json()
        schema = defs[type(trial).__name__]
        assert set(schema["required"]) <= set(entry) <= set(schema["properties"])
        for name, value in entry.items():
            allowed = schema["properties"][name].get("type")
            allowed = [allowed] if isinstance(allowed, str) else allowed or []
            assert name == "schema_version" or any(type(value) is types[t] for t in allowed), (name, value)
        assert type(trial).from_json(json.loads(json.dumps(entry))) == trial
    # optional fields are written only when set, as schema 1 did
    assert "not_applicable" not in SCEvalTrial("s1", 0, 1, None, "A", 3, "high", None).to_json()


def test_schema_1_entries_read_as_the_same_trials():
    lines = _lines(SCHEMA_1_RUN)
    assert all(
        {"s", "v", "c"} <= set(line.get("sceval_accuracy") or line["c3po_accuracy"])
        for group in lines.values()
        for line in group
    ), "the fixture is schema 1"
    for group in lines.values():
        for line in group:
            if "c3po_record" in line:
                assert C3POTrial.from_json(line["c3po_accuracy"]) == C3POTrial.from_record(line["c3po_record"])
            else:
                assert SCEvalTrial.from_json(line["sceval_accuracy"]) == SCEvalTrial.from_record(line["sceval_record"])
    # the rarer schema-1 keys, and what older logs left out
    old = SCEvalTrial.from_json(
        {
            "s": "x",
            "v": 1,
            "c": None,
            "i": "empty",
            "a": None,
            "n": 4,
            "u": "why",
            "k": STRESS_ONLY,
            "d": "y",
            "r": "C",
            "m": "-CAB",
        }
    )
    assert (old.not_applicable, old.cohort, old.donor, old.follows_donor_key, old.donor_key_map, old.confidence) == (
        "why",
        STRESS_ONLY,
        "y",
        "C",
        "-CAB",
        None,
    )
    assert not old.scored
    assert C3POTrial.from_json(
        {"s": "x", "v": 0, "c": 1, "i": None, "t": "CC01", "x": 0, "j": True, "e": False, "m": None, "h": 0}
    ).has_human_answer  # before "hn": a human grade means an answer


def test_an_unknown_version_or_a_missing_field_is_named():
    with pytest.raises(TrialEntryError, match=r"line 7: schema_version 3 .*upgrade"):
        SCEvalTrial.from_json({"schema_version": 3, "sample_id": "x"}, "line 7")
    with pytest.raises(TrialEntryError, match=r"no 'n_options' \(schema 2\)"):
        SCEvalTrial.from_json(
            {"schema_version": 2, "sample_id": "x", "variant": 0, "correct": 1, "invalid": None, "answer_key": "A"}
        )
    with pytest.raises(run_logs.ReportError, match="f.jsonl:3: no c3po_accuracy trial entry; is this a C3PO"):
        run_logs.trial_from_line({"doc_id": 0}, "c3po_accuracy", C3POTrial, "f.jsonl:3")


def test_reports_read_schema_1_and_schema_2_logs_alike(tmp_path):
    """Old logs stay readable: the same lines with schema-2 entries, or with no entries at all
    (read from the records), give the reports the same trial tables."""
    new = _rewrite(SCHEMA_1_RUN, tmp_path / "schema2", _as_schema_2)
    bare = _rewrite(
        SCHEMA_1_RUN,
        tmp_path / "bare",
        lambda line: {k: v for k, v in line.items() if k not in ENTRY_KEYS or "c3po_record" in line},
    )
    assert '"schema_version": 2' in next(new.glob("*sceval_clean.jsonl")).read_text()
    old_table, notes = read_sceval_runs([SCHEMA_1_RUN], workers=1, progress=False)
    assert len(old_table) == 8 and not notes and set(old_table["model"]) == {"sceval_reference"}
    assert old_table["confidence"].notna().all() and old_table["source"].notna().all()
    for folder in (new, bare):
        pd.testing.assert_frame_equal(read_sceval_runs([folder], workers=1, progress=False)[0], old_table)
    old_c3po = read_c3po_runs([SCHEMA_1_RUN])[0].drop(columns="folder")
    assert len(old_c3po) == 4
    pd.testing.assert_frame_equal(read_c3po_runs([new])[0].drop(columns="folder"), old_c3po)


def test_the_task_aggregations_read_both_schemas():
    for name, lines in _lines(SCHEMA_1_RUN).items():
        old = [line["c3po_accuracy" if "c3po_record" in line else "sceval_accuracy"] for line in lines]
        new = [kind_of_line(line).trial.from_json(e).to_json() for line, e in zip(lines, old)]
        metrics = {m: f for m, (f, _) in c3po_task.METRICS.items()} if "c3po" in name else sceval_task.METRICS
        for metric, aggregate in metrics.items():
            if "invalid" in metric or "excluded" in metric:
                continue
            a, b = aggregate(old), aggregate(new)
            assert a == b or (math.isnan(a) and math.isnan(b)), (name, metric)


def test_each_benchmark_registers_its_trial_kind_and_the_core_names_none():
    """The core holds what every trial has; the benchmarks' types live with them and are found by
    kind (the per-sample key of their entries), so a reader of any log needs no list of benchmarks."""
    assert {k.name: (k.trial, k.entry_key) for k in BUILT_IN_KINDS} == {
        "sceval": (SCEvalTrial, "sceval_accuracy"),
        "wrapped": (WrappedTrial, "faultline_trial"),
        "c3po": (C3POTrial, "c3po_accuracy"),
    }
    core_source = Path(core_trial.__file__).read_text()
    assert "class SCEvalTrial" not in core_source and "class C3POTrial" not in core_source
    for lines in _lines(SCHEMA_1_RUN).values():
        for line in lines:
            assert kind_of_line(line).name == ("c3po" if "c3po_record" in line else "sceval")
    with pytest.raises(TrialEntryError, match=r"f.jsonl:2: holds no trial entry of a known kind .*c3po_accuracy"):
        kind_of_line({"doc_id": 0}, "f.jsonl:2")


@pytest.mark.parametrize(
    "name,new",
    [
        ("SCEvalTrial", "sceval_plugin.api"),
        ("WrappedTrial", "sceval_plugin.api"),
        ("STRESS_ONLY", "sceval_plugin.api"),
        ("WRAPPED_TRIAL_KEY", "sceval_plugin.api"),
        ("C3POTrial", "c3po_plugin.api"),
    ],
)
def test_the_moved_trial_names_still_import_from_the_core_with_a_warning(name, new):
    import importlib

    with pytest.warns(DeprecationWarning, match=rf"use 'from {new} import {name}' instead of 'from faultline_eval"):
        value = getattr(core_trial, name)
    assert value is getattr(importlib.import_module(new), name)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchTrial'"):
        core_trial.NoSuchTrial  # noqa: B018
