"""What models are shown (controls, option orders, prompts) and what the task records."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fixtures import copy_demo

from faultline_eval.tasks import sceval_task as task
from sceval_plugin.conditions import catalogue
from sceval_plugin.data.sources import SourceError, load_source
from sceval_plugin.eval_prompts import GENERIC_INSTRUCTION
from sceval_plugin.render import render

ITEM = load_source("demo").items[0]  # an 5-frame "count" item


def cond(cid):
    return catalogue().get(cid)


def test_clean_is_the_item_itself():
    t = render(ITEM, cond("clean"))
    assert t.question == ITEM.question and t.options == ITEM.options and t.gold_key == ITEM.gold_key
    assert np.array_equal(t.frames, ITEM.frames()) and np.array_equal(t.audio, ITEM.waveform())
    assert t.visual_kind == "video frames" and t.audio_shown


def test_missing_modality_controls():
    blank = render(ITEM, cond("missing_vision"))
    assert blank.frames.shape == ITEM.frames().shape and (blank.frames == 128).all()
    silent = render(ITEM, cond("missing_audio"))
    assert silent.audio.shape == ITEM.waveform().shape and not silent.audio.any()


def test_no_text_control_removes_the_context_but_keeps_question_and_options(tmp_path, monkeypatch):
    """G.4: "remove or mask the textual evidence beyond the question/options"; media unchanged."""
    from dataclasses import replace

    with_context = replace(ITEM, context="The second frame is the brightest.")
    no_text = render(with_context, cond("missing_text"))
    assert (no_text.question, no_text.options, no_text.context) == (ITEM.question, ITEM.options, "")
    assert np.array_equal(no_text.frames, ITEM.frames()) and np.array_equal(no_text.audio, ITEM.waveform())
    assert no_text.not_applicable is None
    va = render(with_context, cond("shortcut_visual_audio"))
    assert task._prompt(cond("missing_text"), no_text) != task._prompt(cond("shortcut_visual_audio"), va)
    assert "Context:" in task._prompt(cond("clean"), render(with_context, cond("clean")))[1]
    # An item whose only text is the question and options: nothing to remove, and it says so.
    bare = render(ITEM, cond("missing_text"))
    assert bare.not_applicable == "no_text_evidence"
    assert task._prompt(cond("missing_text"), bare) == task._prompt(cond("clean"), render(ITEM, cond("clean")))
    folder = copy_demo(
        tmp_path / "ctx", 2, mutate=lambda r: r.update(context="A hint.") if r["sample_id"].endswith("00") else None
    )
    monkeypatch.setenv("SCEVAL_SOURCE", str(folder))
    # the item without context answered right, the other wrong: scoring both would give 0.5
    records = [
        task.process_results(
            doc,
            [doc["target"] if doc["sample_id"] == "demo-order-05" else next(k for k in "ABCD" if k != doc["target"])],
        )
        for doc in _docs("missing_text")
    ]
    flags = {r["sceval_record"]["sample_id"]: r["sceval_record"]["control_not_applicable"] for r in records}
    assert flags == {"demo-count-00": None, "demo-order-05": "no_text_evidence"}
    assert [
        r["sceval_accuracy"].get("not_applicable") for r in records if r["sceval_record"]["control_not_applicable"]
    ] == ["no_text_evidence"]
    assert all(
        "not_applicable" not in r["sceval_accuracy"]
        for r in records
        if not r["sceval_record"]["control_not_applicable"]
    )
    # lmms-eval's own aggregations score only the item the control applies to
    entries = [r["sceval_accuracy"] for r in records]
    assert task.valid_trials(entries) == 1 and task.coverage(entries) == 1.0
    assert task.mean_variant_accuracy(entries) == 0.0 and task.worst_variant_accuracy(entries) == 0.0
    assert math.isnan(task.mean_variant_accuracy([e for e in entries if "not_applicable" in e]))


def test_shortcut_controls():
    qo = render(ITEM, cond("shortcut_question_options"))
    assert qo.frames is None and qo.audio is None and qo.question == ITEM.question
    assert qo.visual_kind is None and not qo.audio_shown
    oo = render(ITEM, cond("shortcut_options_only"))
    assert oo.question == "" and oo.frames is None and oo.options == ITEM.options
    va = render(ITEM, cond("shortcut_visual_audio"))
    assert va.question == GENERIC_INSTRUCTION and va.frames is not None and va.audio is not None
    system, user = task._prompt(cond("shortcut_options_only"), oo)
    assert "Question:" not in user and "Visual input: none." in user and "Audio input: none." in user


def test_option_orders_are_a_latin_square_with_the_gold_remapped():
    texts = dict(ITEM.options)
    positions = {text: set() for text in texts.values()}
    for k in range(4):
        t = render(ITEM, cond(f"order{k}_clean"))
        assert [key for key, _ in t.options] == ["A", "B", "C", "D"]
        assert dict(t.options)[t.gold_key] == texts[ITEM.gold_key]
        for position, (_, text) in enumerate(t.options):
            positions[text].add(position)
        assert [texts[o] for o in t.option_map] == [text for _, text in t.options]
    assert all(p == {0, 1, 2, 3} for p in positions.values()), "every option takes every position once"


def test_joint_corruption_touches_each_modality_and_text_only_touches_the_stem():
    t = render(ITEM, cond("tri_drop_words_noise_mute_t70_v70_a30"), 2)
    assert t.question != ITEM.question and len(t.question.split()) < len(ITEM.question.split())
    assert t.options == ITEM.options
    assert not np.array_equal(t.frames, ITEM.frames()) and t.frames.shape == ITEM.frames().shape
    assert (t.audio == 0).sum() > (ITEM.waveform() == 0).sum()
    again = render(ITEM, cond("tri_drop_words_noise_mute_t70_v70_a30"), 2)
    assert np.array_equal(again.frames, t.frames) and again.question == t.question


def _docs(condition_id):
    rows, excluded = task.build_rows(cond(condition_id))
    return rows


def test_rows_expand_stochastic_cells_into_variants():
    assert len(_docs("clean")) == 30 and len(_docs("single_noise_v70")) == 90
    assert len(_docs("single_motion_blur_v70")) == 30
    rows = _docs("single_noise_v70")
    assert sorted({r["variant"] for r in rows}) == [0, 1, 2]
    assert len({r["row_id"] for r in rows}) == 90


def test_messages_carry_ordered_frames_audio_and_text_but_no_hidden_metadata(tmp_path, monkeypatch):
    canary = "CANARY-7f3a9"
    folder = copy_demo(tmp_path / "canary", 3, mutate=lambda r: r["hidden"].update(secret=canary))
    monkeypatch.setenv("SCEVAL_SOURCE", str(folder))
    for cid in ("clean", "tri_drop_words_noise_mute_t30_v70_a30", "shortcut_text_only", "prompt_cot_clean"):
        for doc in task.build_rows(cond(cid))[0]:
            messages = task.doc_to_messages(doc)
            texts = [p["text"] for m in messages for p in m["content"] if p["type"] == "text"]
            blob = "\n".join(texts) + task.doc_to_text(doc)
            assert canary not in blob and doc["target"] not in ("",)
            assert "gold" not in blob.lower()
            user = messages[-1]["content"]
            kinds = [p["type"] for p in user]
            if cid == "shortcut_text_only":
                assert kinds == ["text"]
            else:
                item = task._item(doc["item"])
                assert kinds == ["image"] * item.frames().shape[0] + ["audio", "text"]
                assert user[-2]["url"]["sampling_rate"] == 16000
            visuals = task.doc_to_visual(doc)
            assert len(visuals) == (0 if cid == "shortcut_text_only" else len(kinds) - 1)


def test_prompt_lists_plain_option_keys_and_the_json_schema():
    doc = _docs("clean")[0]
    text = task.doc_to_text(doc)
    for key, option in ITEM.options:
        assert f"\n{key}. {option}" in text
    assert '"answer": "<option key>"' in text
    assert '"answer"' not in task.doc_to_text(_docs("prompt_open_clean")[0])


def test_process_results_record_and_invalid_categories():
    doc = _docs("single_noise_v70")[4]
    good = task.process_results(doc, [f'{{"answer": "{doc["target"]}", "confidence": "high"}}'])
    record = good["sceval_record"]
    for field in (
        "model",
        "prompt_id",
        "sample_id",
        "source",
        "condition_id",
        "operators",
        "variant",
        "media",
        "raw_response",
        "parsed_answer",
        "gold_key",
        "correct",
        "latency_s",
        "retries",
        "invalid",
    ):
        assert field in record
    assert record["correct"] == 1 and record["invalid"] is None
    assert record["operators"] == {"vision": {"operator": "noise", "severity": 70}}
    assert record["variant"] == doc["variant"] and record["prompt_id"] == "sceval-json-v1"
    assert record["seed_scheme"] == 2  # the default seed scheme (SCEVAL_SEED_SCHEME unset)
    assert task.process_results(doc, [""])["sceval_record"]["invalid"] == "empty"
    refused = task.process_results(doc, ["I cannot help with that."])["sceval_record"]
    assert refused["invalid"] == "refusal" and refused["correct"] is None
    from faultline_eval.core import telemetry

    telemetry.record(doc["row_id"], telemetry.Call(latency_s=1.5, retries=3, failure="api_failure", detail="HTTP 503"))
    failed = task.process_results(doc, [""])["sceval_record"]
    assert (failed["invalid"], failed["retries"], failed["latency_s"]) == ("api_failure", 3, 1.5)


def trials(*rows):
    return [{"s": s, "v": v, "c": c} for s, v, c, _ in rows], [i for *_, i in rows]


def test_variant_aggregations_by_sample():
    items, invalid = trials(
        ("a", 0, 1, None),
        ("a", 1, 0, None),
        ("a", 2, None, "parse_failure"),
        ("b", 0, 1, None),
        ("b", 1, 1, None),
        ("b", 2, 1, None),
        ("c", 0, None, "refusal"),
        ("c", 1, None, "empty"),
        ("c", 2, None, "api_failure"),
        ("d", 0, 0, None),
        ("d", 1, 1, None),
        ("d", 2, 0, None),
    )
    # eq. 3: a = 1/2, b = 1, d = 1/3 (c has no valid variant and drops out)
    assert task.mean_variant_accuracy(items) == pytest.approx((0.5 + 1 + 1 / 3) / 3)
    # eq. 4: variant 0 -> (1+1+0)/3, variant 1 -> (0+1+1)/3, variant 2 -> (1+0)/2; the lowest
    assert task.worst_variant_accuracy(items) == pytest.approx(0.5)
    assert task.coverage(items) == pytest.approx(8 / 12)
    assert task.valid_trials(items) == 8
    assert [
        task.METRICS[f"sceval_invalid_{c}"](invalid) for c in ("parse_failure", "refusal", "empty", "api_failure")
    ] == [1, 1, 1, 1]
    assert math.isnan(task.mean_variant_accuracy(trials(("z", 0, None, "empty"))[0]))


def test_manifest_exclusions_are_counted(tmp_path, monkeypatch):
    path = tmp_path / "m.json"
    path.write_text(
        '{"samples": [{"sample_id": "demo-count-00", "valid": false}], "cells": ['
        '{"sample_id": "demo-count-01", "operator": "noise", "severity": 70, "variant": 1, "interpretable": false}]}'
    )
    monkeypatch.setenv("SCEVAL_MANIFEST", str(path))
    rows, excluded = task.build_rows(cond("single_noise_v70"))
    assert len(rows) == 90 - 4 and excluded == {"sample_invalid": 3, "cell_uninterpretable:noise@70": 1}
    task.process_docs(None, "single_noise_v70")
    assert task.excluded_trials(["single_noise_v70"] * 86) == 4


def test_unreadable_media_are_excluded_with_their_reason(tmp_path, monkeypatch):
    folder = copy_demo(tmp_path / "broken", 3)
    rows = [__import__("json").loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    (folder / rows[1]["audio"]).write_bytes(b"garbage")
    monkeypatch.setenv("SCEVAL_SOURCE", str(folder))
    with pytest.raises(
        SourceError,
        match=rf"1 bad record\(s\), found before any model call \(set SCEVAL_ON_BAD_INPUT="
        rf"exclude to run the rest\):\n  media_unreadable: sample '{rows[1]['sample_id']}'",
    ):
        task.build_rows(cond("single_mute_a30"))
    monkeypatch.setenv("SCEVAL_ON_BAD_INPUT", "exclude")
    built, excluded = task.build_rows(cond("single_mute_a30"))
    assert len(built) == 6 and excluded == {"media_unreadable": 3}
    assert rows[1]["sample_id"] not in {r["sample_id"] for r in built}


def test_the_standard_prompt_is_replaceable(tmp_path, monkeypatch):
    import json

    custom = {
        "id": "lab-prompt-v2",
        "system": "Be brief.",
        "user": "{media}\n{question}{options}\n{answer_format}",
        "answer_format": 'JSON: {{"answer": "<key>"}}',
    }
    (tmp_path / "p.json").write_text(json.dumps(custom))
    monkeypatch.setenv("SCEVAL_PROMPT_TEMPLATE", str(tmp_path / "p.json"))
    doc = _docs("clean")[0]
    assert task.doc_to_messages(doc)[0]["content"][0]["text"] == "Be brief."
    assert task.process_results(doc, ["A"])["sceval_record"]["prompt_id"] == "lab-prompt-v2"
    assert cond("prompt_cot_clean").prompt_id == "sceval-cot-v1"
    (tmp_path / "bad.json").write_text(json.dumps({**custom, "user": "{nonsense}"}))
    monkeypatch.setenv("SCEVAL_PROMPT_TEMPLATE", str(tmp_path / "bad.json"))
    with pytest.raises(ValueError, match="not a usable prompt template"):
        task.doc_to_text(doc)
