"""``c3po_build_reference``, the offline generator / audio typer / auditor: the README's demo build
through the real ``c3po build all`` command line, and the auditor's checks on hand-made media."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from build_fakes import item_reply
from PIL import Image

from c3po_plugin.construction.audit import prompt_parts
from c3po_plugin.construction.ledger import Ledger
from c3po_plugin.construction.specs import spec_for
from faultline_eval.model_wrappers.reference_c3po_build import reply

C3PO = str(Path(sys.executable).with_name("c3po"))
#: a sound-effect template, an audio base with a generated picture, a video base with both generated
TEMPLATES = ("IC03", "IC06", "CC12")
#: 2 per attached modality + the reasoning steps (the model's documented rule)
DIFFICULTY = {"IC03": 2 * 2 + 3, "IC06": 2 * 2 + 2, "CC12": 2 * 3 + 3}


@pytest.mark.slow
def test_the_readme_demo_build_runs_offline_and_exports_loadable_items(tmp_path):
    from c3po_plugin.data.sources import checked_items

    env = {**os.environ, "SCEVAL_CACHE": str(tmp_path / "cache")}
    command = [
        C3PO,
        "build",
        "all",
        "demo_build",
        "--pool",
        "demo",
        "--generator",
        "lmms:c3po_build_reference",
        "--templates",
        ",".join(TEMPLATES),
        "--annotators",
        "1",
    ]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    build = tmp_path / "demo_build"

    for entry in Ledger(build, "generate").entries():  # every reply obeys the rules, or does not fit
        assert entry["status"] == "ok" or entry["reason"] == "does not fit", entry
    accepted = Ledger(build, "audit").ok()
    assert set(accepted) == set(Ledger(build, "generate").ok())  # real media, clean queries: all pass
    for sample_id, verdict in accepted.items():
        template = Ledger(build, "generate").get(sample_id)["data"]["template_id"]
        assert verdict["difficulty"] == DIFFICULTY[template], (sample_id, verdict)
    kinds = {
        Ledger(build, "generate").get(k)["data"]["template_id"]: v["audio_kind"]
        for k, v in Ledger(build, "synthesize").ok().items()
    }
    assert kinds == {"IC03": "sfx", "IC06": None, "CC12": "tts"}

    _, items, problems = checked_items(str(build / "export"))  # the C3PO tasks' own loader, media decoded
    assert problems == [] and {it.sample_id for it in items} == set(accepted)
    assert {it.template_id for it in items} == set(TEMPLATES)
    counting = [it for it in items if it.template_id == "IC06"]
    assert counting and all(it.answer.isdigit() and it.image for it in counting)

    again = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    usage = json.loads((build / "replies" / "generate.usage.json").read_text())
    assert usage["sent"] == len(list(Ledger(build, "generate").entries())), "a second run re-asks nothing"


def _audit(item: dict, picture: np.ndarray, wave: np.ndarray | None) -> dict:
    system, text = prompt_parts(spec_for("IC01"), item)
    media = [{"type": "text", "text": "Image:"}, {"type": "image", "url": Image.fromarray(picture)}]
    if wave is not None:
        media += [
            {"type": "text", "text": "Audio:"},
            {"type": "audio", "url": {"array": wave, "sampling_rate": 16_000}},
        ]
    return json.loads(
        reply(
            [
                {"role": "system", "content": [{"type": "text", "text": system}]},
                {"role": "user", "content": media + [{"type": "text", "text": text}]},
            ]
        )
    )


def test_the_reference_auditor_checks_the_media_and_the_query():
    picture = np.full((96, 128, 3), 255, np.uint8)
    picture[30:60, 40:70] = (220, 30, 30)
    speech = (0.3 * np.sin(np.linspace(0, 2000, 16_000))).astype(np.float32)
    item = {**json.loads(item_reply("D_T1_002_000")), "template_id": "D_T1_002", "fit_score": 4}

    good = _audit(item, picture, speech)
    assert good["decision"] == "ACCEPT" and good["difficulty_score"] == 2 * 2 + 3  # image+audio, 3 steps
    silent = _audit(item, picture, np.zeros(16_000, np.float32))
    assert (silent["decision"], silent["failure_pillar"]) == ("REJECT", "Media Verifiability")
    assert _audit(item, np.full_like(picture, 255), speech)["failure_pillar"] == "Media Verifiability"  # blank
    assert _audit(item, picture, None)["rationale"] == "the generated audio is not attached"
    banned = json.loads(item_reply("D_T1_002_000", query="What does the narrator pick?"))
    verdict = _audit({**banned, "template_id": "D_T1_002"}, picture, speech)
    assert (verdict["failure_pillar"], verdict["difficulty_score"]) == ("Query Sanitization", -1)


def test_an_lmms_build_stage_resumes_from_its_reply_store_without_asking_the_model(tmp_path, monkeypatch):
    """The stage's reply store is the request lifecycle's: a second client over the same build
    answers finished asks from it (restored, counted as such) and never reaches the model. ~14 s on
    a busy machine (lmms-eval's model registry loads)."""
    from c3po_plugin.construction.client import Ask, make_client
    from c3po_plugin.construction.stage_prompts import AUDIO_TYPING

    asks = [
        Ask(f"IC03_00{i}", "IC03", AUDIO_TYPING, json.dumps({"transcript": said, "voice_style_prompt": "calm voice"}))
        for i, said in enumerate(["[chime]", "I mean the red one."])
    ]
    first = make_client("lmms:c3po_build_reference", tmp_path, "classify", temperature=0)
    answered = {ask.key: answer for ask, answer in first.ask_many(asks)}
    assert [json.loads(answered[a.key].text)["audio_type"] for a in asks] == ["SFX", "TTS"]
    assert first.usage.summary()["sent"] == 2 and len(first.store) == 2

    model = first.model  # the same model class, now unable to answer: a request that reaches it fails
    monkeypatch.setattr(model, "generate_until", lambda requests: pytest.fail("a stored ask reached the model"))
    resumed = make_client("lmms:c3po_build_reference", tmp_path, "classify", temperature=0, model_instance=model)
    again = {ask.key: answer for ask, answer in resumed.ask_many(asks)}
    assert all(again[k].restored and again[k].text == answered[k].text for k in answered)
    assert resumed.usage.summary()["restored"] == 2 and resumed.usage.summary()["sent"] == 0
    assert len(resumed.store) == 2  # nothing written twice
