"""The offline reference model: near-perfect on clean demo items, worse as severity rises."""

from __future__ import annotations

import json

import pytest

from faultline_eval.model_wrappers.reference import answer_messages, answer_visuals
from faultline_eval.model_wrappers.reference_perception import colour_name, find_tones
from faultline_eval.tasks import sceval_task as task
from sceval_plugin.conditions import catalogue


def accuracy(condition_id: str, *, simple: bool = False) -> float:
    rows, _ = task.build_rows(catalogue().get(condition_id))
    correct = 0
    for doc in rows:
        if simple:
            reply = answer_visuals(task.doc_to_text(doc), task.doc_to_visual(doc))
        else:
            reply = answer_messages(task.doc_to_messages(doc))
        correct += task.process_results(doc, [reply])["sceval_record"]["correct"] == 1
    return correct / len(rows)


def test_clean_demo_is_answered_by_both_interfaces():
    assert accuracy("clean") >= 0.95
    assert accuracy("clean", simple=True) >= 0.95


@pytest.mark.parametrize("operator, letter", [("noise", "v"), ("occlusion", "v"), ("mute", "a"), ("drop_words", "t")])
def test_accuracy_falls_as_severity_rises(operator, letter):
    curve = [accuracy(f"single_{operator}_{letter}{s}") for s in (10, 70)]
    assert curve[1] < curve[0] - 0.1 and curve[1] < 0.9


def test_perception_helpers():
    assert [colour_name(c) for c in [(215, 45, 45), (45, 70, 215), (45, 165, 65), (225, 195, 35)]] == [
        "red",
        "blue",
        "green",
        "yellow",
    ]
    import numpy as np

    t = np.arange(32000) / 16000
    wave = np.where((t > 0.5) & (t < 0.9), 0.4 * np.sin(2 * np.pi * 1320 * t), 0).astype(np.float32)
    tones = find_tones(wave)
    assert len(tones) == 1 and abs(tones[0].pitch_hz - 1320) < 5 and abs(tones[0].start_s - 0.5) < 0.02


def test_replies_are_protocol_json():
    doc = task.build_rows(catalogue().get("clean"))[0][0]
    reply = json.loads(answer_messages(task.doc_to_messages(doc)))
    assert set(reply) == {"answer", "confidence", "reasoning"} and reply["answer"] in "ABCD"
