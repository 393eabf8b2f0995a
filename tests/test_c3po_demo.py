"""The embedded C3PO demo (reproducible, valid, covering every template) and the reference
model's C3PO answers on it (perceived, never read from the doc; real failure modes)."""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from c3po_plugin import eval_prompt as prompts
from c3po_plugin.data.make_demo import generate
from c3po_plugin.data.records import C3POItem, check_media
from c3po_plugin.data.sources import DEMO_DIR, load_source
from c3po_plugin.templates import BUILTIN, registry
from faultline_eval.judges.matching import exact_match
from faultline_eval.model_wrappers.reference import answer_messages, answer_visuals


@functools.lru_cache(maxsize=1)
def demo_items() -> tuple[C3POItem, ...]:
    source = load_source("demo")
    assert source.problems == []
    return tuple(source.items)


# --- the demo set --------------------------------------------------------------------------------


def test_committed_demo_equals_a_fresh_generation_byte_for_byte(tmp_path):
    generate(tmp_path)
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(DEMO_DIR) for p in DEMO_DIR.rglob("*") if p.is_file() and p.name != "README.md")
    assert fresh == committed
    assert Path("items.jsonl") in fresh and len(fresh) > 60
    for rel in fresh:
        assert (tmp_path / rel).read_bytes() == (DEMO_DIR / rel).read_bytes(), rel


def test_demo_is_small_and_documented():
    total = sum(p.stat().st_size for p in DEMO_DIR.rglob("*") if p.is_file())
    assert total < 2.5 * 1024 * 1024
    assert "CC0" in (DEMO_DIR / "README.md").read_text()


def test_every_demo_item_loads_and_decodes():
    items = demo_items()
    assert 25 <= len(items) <= 40
    rows = [json.loads(line) for line in (DEMO_DIR / "items.jsonl").read_text().splitlines()]
    assert len(rows) == len(items)
    for item in items:
        check_media(item)
        template = item.template
        assert set(item.relative_media()) == set(template.media)
        if item.video:
            frames = item.frames()
            assert frames.ndim == 4 and 4 <= len(frames) <= 8 and frames.shape[-1] == 3
        if item.image:
            assert item.picture().ndim == 3
        if item.audio:
            wave = item.waveform()
            assert wave.dtype == np.float32 and 2 * 16000 <= wave.size <= 4 * 16000
        assert item.difficulty is not None and item.answer


def test_every_template_tier_and_category_is_covered():
    items = demo_items()
    have = {it.template_id for it in items}
    assert {t.id for t in BUILTIN} <= have
    cells = {(it.template.category, it.template.tier) for it in items}
    assert (
        cells
        == set(registry().cells())
        >= {("ic", 1), ("ic", 2), ("ic", 3), ("cc", 1), ("cc", 2), ("cc", 3), ("cc", 4)}
    )
    assert any(it.context for it in items if it.template.tier == 4)
    with_human = [it for it in items if it.human_answer]
    assert len(items) / 5 <= len(with_human) <= len(items) / 2
    assert any(not exact_match(it.human_answer, it.answer) for it in with_human)
    assert sum(bool(it.distractors) for it in items) >= len(items) * 3 // 4
    for item in items:  # a distractor is a wrong answer, never the gold one
        assert not any(exact_match(v, item.answer) for v in item.distractors.values()), item.sample_id


# --- the reference model on C3PO ------------------------------------------------------------------


def messages(item: C3POItem, *, wave: np.ndarray | None = None) -> list[dict]:
    """The chat turn the C3PO task hands a model (tasks/c3po_task.py's contract)."""
    parts: list[dict] = []
    if item.video:
        frames = item.frames()
        parts.append({"type": "text", "text": prompts.video_label(item.frame_times())})
        parts += [{"type": "image", "url": Image.fromarray(f)} for f in frames]
    if item.image:
        parts += [
            {"type": "text", "text": prompts.IMAGE_LABEL},
            {"type": "image", "url": Image.fromarray(item.picture())},
        ]
    if item.audio:
        audio = item.waveform() if wave is None else wave
        parts += [
            {"type": "text", "text": prompts.AUDIO_LABEL},
            {"type": "audio", "url": {"array": audio, "sampling_rate": 16000}},
        ]
    parts.append({"type": "text", "text": prompts.build(item.question, item.context).user})
    return [
        {"role": "system", "content": [{"type": "text", "text": prompts.SYSTEM}]},
        {"role": "user", "content": parts},
    ]


def simple_request(item: C3POItem) -> tuple[str, list]:
    """The text and visuals a simple model gets (doc_to_text, doc_to_visual)."""
    frames = [Image.fromarray(f) for f in item.frames()] if item.video else []
    visuals: list = list(frames)
    if item.image:
        visuals.append(Image.fromarray(item.picture()))
    if item.audio:
        visuals.append({"array": item.waveform(), "sampling_rate": 16000})
    prompt = prompts.build(item.question, item.context)
    text = f"{prompt.system}\n\n{prompt.legend(item.frame_times() or (), bool(item.image), bool(item.audio))}\n{prompt.user}"
    return text, visuals


@functools.lru_cache(maxsize=1)
def chat_answers() -> dict[str, str]:
    return {it.sample_id: answer_messages(messages(it)) for it in demo_items()}


def test_reference_accuracy_and_failure_modes():
    items, answers = demo_items(), chat_answers()
    correct = [it for it in items if exact_match(answers[it.sample_id], it.answer)]
    assert 0.6 <= len(correct) / len(items) <= 0.8
    wrong = [it for it in items if it not in correct]
    dominated = [it for it in wrong if any(exact_match(answers[it.sample_id], v) for v in it.distractors.values())]
    assert len(dominated) >= 3
    assert {k for it in dominated for k, v in it.distractors.items() if exact_match(answers[it.sample_id], v)} >= {
        "audio",
        "image",
    }
    assert len(wrong) - len(dominated) >= 1  # failures no distractor explains
    assert all(a and len(a.split()) <= 4 for a in answers.values())  # short free-form answers
    assert "unknown" not in answers.values()  # every demo question is in its grammar


def test_reference_never_reads_the_gold_answer():
    for item in demo_items():
        altered = dataclasses.replace(item, answer="zebra", distractors={"audio": "zebra"}, human_answer="zebra")
        assert answer_messages(messages(altered)) == chat_answers()[item.sample_id]


def test_chat_and_simple_interfaces_agree():
    for item in demo_items():
        assert answer_visuals(*simple_request(item)) == chat_answers()[item.sample_id], item.sample_id


def test_silence_changes_answers():
    changed = [
        it.sample_id
        for it in demo_items()
        if it.audio and answer_messages(messages(it, wave=np.zeros_like(it.waveform()))) != chat_answers()[it.sample_id]
    ]
    assert len(changed) >= 5


def test_sceval_prompts_still_get_a_choice():
    reply = json.loads(answer_visuals("Question: What colour?\nOptions:\nA. red\nB. blue\nC. green\nD. cyan", []))
    assert reply["answer"] in "ABCD"


@pytest.mark.parametrize("name", ["c3po-demo-18-fabricated-squares", "c3po-demo-27-disclaimed"])
def test_documented_dominance_failures(name):
    """Counts come from the ears (audio dominance); colours from the still picture (image dominance)."""
    item = next(it for it in demo_items() if it.sample_id == name)
    kind = "audio" if "fabricated" in name else "image"
    assert exact_match(chat_answers()[name], item.distractors[kind])


def test_the_task_hands_the_reference_the_same_evidence():
    """tasks/c3po_task.py's doc_to_messages/doc_to_visual follow the contract the helpers above copy."""
    task = pytest.importorskip("faultline_eval.tasks.c3po_task")
    rows, _ = task.build_rows("all")
    by_id = {it.sample_id: it for it in demo_items()}
    for doc in rows:
        expected = chat_answers()[doc["sample_id"]]
        assert answer_messages(task.doc_to_messages(doc)) == expected
        assert answer_visuals(task.doc_to_text(doc), task.doc_to_visual(doc)) == expected
        assert task.doc_to_target(doc) == by_id[doc["sample_id"]].answer
