"""Wrapping any lmms-eval task with SCEval conditions (issue 27; docs/design/wrap-any-task.md).

Base-task access (``tasks/base_task.py``), the wrapped trial (``core.trial.WrappedTrial``), the
task adapters, the generated names/YAMLs/manifest, and the wrapped callables on the local copies
of ``tests/wrap_datasets.py``. Each test takes seconds; the lmms-eval CLI one is marked slow.
"""

from __future__ import annotations

import json

import pytest

from faultline_eval.core.trial import SCHEMA_VERSION, Trial, WrappedTrial, json_schema
from faultline_eval.tasks import base_task

# --- base task access (Contract B) ---------------------------------------------------------------


def test_base_yaml_path_finds_the_installed_yaml_and_names_a_typo():
    path = base_task.base_yaml_path("librispeech_test_clean")  # spelt `task : "..."` in its YAML
    assert path.name == "librispeech_test_clean.yaml" and path.parent.name == "librispeech"
    assert base_task.base_yaml_path("mme").parent == base_task.lmms_eval_tasks_dir() / "mme"
    with pytest.raises(base_task.BaseTaskError, match=r"'worldsens'.*did you mean 'worldsense'"):
        base_task.base_yaml_path("worldsens")


def test_no_builtin_lmms_eval_task_name_holds_the_wrap_separator():
    names = base_task.builtin_task_names()
    assert len(names) > 1000 and "worldsense" in names
    assert not [n for n in names if "__" in n]


def test_metric_specs_and_aggregate_call_the_base_tasks_own_aggregations():
    specs = base_task.metric_specs("mme")
    assert [(s.name, s.higher_is_better, s.takes_args) for s in specs] == [
        ("mme_perception_score", True, False),
        ("mme_cognition_score", True, False),
    ]
    # clotho_aqa names its aggregation by string ("mean"): resolved through lmms-eval's registry
    assert base_task.aggregate("clotho_aqa_test", "exact_match", [1.0, 0.0, 0.0, 1.0]) == 0.5
    # MME's own aggregation: acc + acc+ over the image pairs (one pair right, one pair half right)
    items = [
        {"question_id": "a.png", "category": "color", "score": 1.0},
        {"question_id": "a.png", "category": "color", "score": 1.0},
        {"question_id": "b.png", "category": "color", "score": 1.0},
        {"question_id": "b.png", "category": "color", "score": 0.0},
    ]
    assert base_task.aggregate("mme", "mme_perception_score", items) == pytest.approx(75.0 + 50.0)
    with pytest.raises(base_task.BaseTaskError, match="no metric 'accuracy'"):
        base_task.aggregate("mme", "accuracy", items)


# --- the wrapped trial (Contract C) --------------------------------------------------------------


def test_wrapped_trial_round_trips_and_is_in_the_json_schema():
    trial = WrappedTrial(
        sample_id="1234",
        variant=1,
        correct=WrappedTrial.correct_of(1.0),
        invalid=None,
        base_task="worldsense",
        condition_id="single_noise_v50",
        doc_id=3,
        unit="1234",
        score=1.0,
        adapter="worldsense@1",
        seed_scheme="sceval-seed-v3",
    )
    entry = json.loads(json.dumps(trial.to_json()))
    assert entry["schema_version"] == SCHEMA_VERSION and entry["correct"] == 1
    assert WrappedTrial.from_json(entry) == trial
    assert set(json_schema()["$defs"]["WrappedTrial"]["required"]) == {"schema_version", *entry}
    assert isinstance(trial, Trial)
    assert [WrappedTrial.correct_of(s) for s in (0, 1.0, 0.5, None, 37.5)] == [0, 1, None, None, None]
