"""The LLM build stages (generate, classify, audit), their specs and CLI, through the real
google-genai client against the local fake Gemini server, and through a tiny lmms-eval model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from build_fakes import Scripted, write_candidates
from fake_gemini import FakeGemini

from c3po_plugin.construction import specs
from c3po_plugin.construction.audit import run_audit
from c3po_plugin.construction.classify import run_classify
from c3po_plugin.construction.generate import SCHEMA, run_generate
from c3po_plugin.construction.ledger import Ledger

KEY = "test-key-build-never-logged"


@pytest.fixture
def gemini_key(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)


def spec_of(server: FakeGemini) -> str:
    return f"gemini:gemini-test,base_url={server.url},max_retries=1,initial_backoff=0.01,timeout=10"


def inline_kinds(request: dict) -> list[str]:
    parts = request["body"]["contents"][0]["parts"]
    inline = [p.get("inlineData") or p.get("inline_data") for p in parts]
    return [(i.get("mimeType") or i.get("mime_type")) if i else "text" for i in inline]


# --- specs ---------------------------------------------------------------------------------------


def test_every_template_has_a_spec_with_machine_filters_and_the_paper_ids_resolve():
    from c3po_plugin.templates import registry

    all_specs = specs.all_specs()
    assert {s.template_id for s in all_specs} == {t.id for t in registry()}
    assert len({s.paper_id for s in all_specs}) == 25
    for spec in all_specs:
        template = registry().get(spec.template_id)
        assert spec.base_modality == template.base_modality and spec.template_name == template.name
        base = spec.generation_spec[spec.base_modality]
        assert base["selection_filter"]["requirement"] and base["selection_filter"]["match"]
        assert base["actions"] and spec.generation_spec["text"]["query_skeleton"]
        assert registry().get(spec.paper_id) is template  # the paper's id is an alias everywhere
    gap = specs.spec_for("D_T1_001")
    assert gap.template_name == "InstructionalGapDetection" and gap.category == "DISPERSAL (Tier 1)"
    assert gap.generation_spec["video"]["processing"] == "Mute original audio."
    assert "mute" in gap.generation_spec["video"]["actions"]
    shown = gap.prompt_json()  # what the generator sees: App. G's fields, not our machine keys
    assert shown["template_id"] == "D_T1_001" and "actions" not in shown["generation_spec"]["video"]
    assert shown["generation_spec"]["video"]["selection_filter"] == {
        "requirement": "Clip containing a distinct multi-step procedural sequence."
    }
    assert specs.spec_for("C_T2_004").template_name == "AcousticSceneMismatch"
    with pytest.raises(KeyError, match="unknown C3PO template"):
        specs.spec_for("D_T9_999")


def test_a_template_without_a_spec_is_named_and_skipped(monkeypatch):
    registry = specs.SpecRegistry()
    for spec in specs.builtin_specs():
        if spec.template_id != "CC05":
            registry.add(spec)
    monkeypatch.setattr(specs, "registry", lambda: registry)
    found, skipped = specs.resolve(["IC01", "QuantitativeFabrication"])
    assert [s.template_id for s in found] == ["IC01"] and skipped == ["CC05"]
    with pytest.raises(KeyError, match="CC05.*no generation spec|QuantitativeFabrication.*no generation spec"):
        specs.spec_for("QuantitativeFabrication")


def test_a_bad_spec_names_the_template_and_field():
    with pytest.raises(ValueError, match="IC99.*unknown selection_filter.match key"):
        specs.GenerationSpec(
            "IC99",
            "Mine",
            "DISPERSAL (Tier 1)",
            "image",
            "x",
            "y",
            {
                "image": {"selection_filter": {"requirement": "r", "match": {"colour": "red"}}},
                "text": {"query_skeleton": "q"},
            },
        )


# --- generate, classify, audit against the fake server --------------------------------------------

SCENARIOS = {
    1: "malformed",
    2: "malformed-then-good",
    3: "banned-word",
    4: "does-not-fit",
    5: "low-fit",
    6: "long-query",
    7: "500",
    8: "missing-field",
    9: "self-audit-failed",
    10: "sfx",
}


def test_generate_enforces_the_papers_rules_and_records_every_reason(tmp_path, gemini_key):
    write_candidates(tmp_path, "IC01", 12)
    script = Scripted(SCENARIOS)
    with FakeGemini(script=script) as server:
        counts = run_generate(tmp_path, generator=spec_of(server), concurrency=3, templates=["AttributeComposition"])
        first = list(server.requests)
        again = run_generate(tmp_path, templates=["IC01"])  # the generator spec comes from settings.json
        resent = server.requests[len(first) :]
    ledger = Ledger(tmp_path, "generate")
    entry = {i: ledger.get(f"D_T1_002_{i:03d}") for i in range(12)}
    assert {i for i, e in entry.items() if e["status"] == "ok"} == {0, 2, 10, 11}
    reasons = {i: e["reason"] for i, e in entry.items()}
    assert reasons[1].startswith("malformed reply") and "after 2 attempts" in reasons[1]
    assert reasons[3] == "query uses banned word 'narrator'"
    assert reasons[4] == "does not fit"
    assert reasons[5] == "fit score 2 below threshold 3"
    assert reasons[6] == "query has 15 words (at most 12)"
    assert entry[7]["status"] == "failed" and "HTTP 500" in reasons[7] and "after 1 retries" in reasons[7]
    assert reasons[8] == "missing field ground_truth"
    assert reasons[9] == "self-audit failed: blind_test_passed"
    assert counts == {"ok": 4, "rejected": 7, "failed": 1, "skipped": 0}
    ok = entry[0]["data"]
    assert ok["sample_id"] == "D_T1_002_000" and ok["template_id"] == "IC01" and ok["fit_score"] == 4
    assert ok["candidate_id"] == "IC01__b00" and ok["generated_components"]["text"]["content"] == "Which one is it?"
    # one request per candidate, a second for the two malformed first replies, two for the 500 (one retry)
    assert len(first) == 12 + 2 + 1
    config = first[0]["body"]["generationConfig"]
    assert config["temperature"] == 1.0 and config["responseMimeType"] == "application/json"
    assert set(config["responseJsonSchema"]["required"]) == set(SCHEMA["required"])
    assert first[0]["headers"]["x-goog-api-key"] == KEY
    assert inline_kinds(first[0]) == ["text", "image/png", "text"]  # the base picture, labelled, then the prompt
    assert "AttributeComposition" in first[0]["texts"][-1] and "THE BYPASS TEST" in json.dumps(first[0]["body"])
    # the resumed run re-asks only the failed candidate
    assert again["skipped"] == 11 and len(resent) == 2 and all("D_T1_002_007" in r["texts"][-1] for r in resent)
    usage = json.loads((tmp_path / "replies" / "generate.usage.json").read_text())
    # calls over both runs (14, then the failed one again), each 500 call retried once, tokens of the 13 answered
    assert usage["sent"] == 15 and usage["retries"] == 2 and usage["failures"] == {"api_failure": 2}
    assert usage["input_tokens"] == 10 * 13 and usage["output_tokens"] == 5 * 13 and usage["mean_latency_s"] > 0


def test_classify_types_audio_through_the_model_and_the_rules_fallback(tmp_path, gemini_key):
    write_candidates(tmp_path, "IC01", 11)
    with FakeGemini(script=Scripted(SCENARIOS)) as server:
        run_generate(tmp_path, generator=spec_of(server), templates=["IC01"])
        before = len(server.requests)
        counts = run_classify(tmp_path, templates=["IC01"])
        asked = server.requests[before:]
    assert counts["ok"] == 3 and counts["rejected"] == 0 and len(asked) == 3  # items 0, 2 and 10
    got = Ledger(tmp_path, "classify").ok()
    assert got["D_T1_002_000"] == {
        "kind": "tts",
        "transcript": "Grab the blue one, please.",
        "voice_style_prompt": "calm adult voice",
        "sfx_prompt": None,
        "duration_s": None,
    }
    assert got["D_T1_002_010"]["kind"] == "sfx" and got["D_T1_002_010"]["duration_s"] == 10.0  # 14 s clamped
    assert got["D_T1_002_010"]["sfx_prompt"] == "glass shattering" and got["D_T1_002_010"]["transcript"] is None
    assert asked[0]["body"]["generationConfig"]["temperature"] == 0
    from c3po_plugin.construction.pipeline import summary

    table = summary(tmp_path).splitlines()
    assert table[0].split()[:3] == ["template", "paper", "id"]
    row = next(line.split() for line in table if line.startswith("IC01"))
    assert row[:5] == ["IC01", "D_T1_002", "11", "3/7/1", "3/0/0"]  # candidates, generate, classify ok/rej/fail
    assert any(line.startswith("generate") and "gemini:gemini-test" in line for line in table)

    rules = tmp_path / "rules"
    write_candidates(rules, "IC01", 11)
    for name in ("select", "generate"):
        (rules / "ledger" / f"{name}.jsonl").write_text((tmp_path / "ledger" / f"{name}.jsonl").read_text())
    run_classify(rules, classifier="rules", templates=["IC01"])
    by_rules = Ledger(rules, "classify").ok()
    assert by_rules["D_T1_002_000"]["kind"] == "tts"
    assert by_rules["D_T1_002_010"] == {
        "kind": "sfx",
        "transcript": None,
        "voice_style_prompt": "a glass shattering on tiles",
        "sfx_prompt": "a glass shattering on tiles",
        "duration_s": 5.0,
    }


def test_audit_sees_the_real_media_and_records_accept_reject_and_difficulty(tmp_path, gemini_key):
    from c3po_plugin.data.make_demo import tone, write_audio

    write_candidates(tmp_path, "IC01", 12)
    synth = Ledger(tmp_path, "synthesize")
    for i in (0, 2, 10):  # 11 was not synthesized yet: not audited
        write_audio(tmp_path / "media" / "items" / f"D_T1_002_{i:03d}" / "audio.wav", tone(True))
        synth.record(
            f"D_T1_002_{i:03d}",
            "ok",
            data={
                "audio": f"media/items/D_T1_002_{i:03d}/audio.wav",
                "audio_kind": "tts",
                "audio_duration_s": 2.0,
                "image": None,
                "backends": {"speech": "test", "sfx": "test", "image": "none"},
            },
        )
    script = Scripted(SCENARIOS, {2: "reject", 10: "accept-unusable-media"})
    with FakeGemini(script=script) as server:
        run_generate(tmp_path, generator=spec_of(server), templates=["IC01"])
        before = len(server.requests)
        counts = run_audit(tmp_path, templates=["IC01"])
        asked = server.requests[before:]
    assert counts == {"ok": 1, "rejected": 2, "failed": 0, "skipped": 0, "waiting": 1}
    audit = Ledger(tmp_path, "audit")
    assert audit.get("D_T1_002_000")["data"] == {
        "decision": "ACCEPT",
        "failing_pillar": None,
        "rationale": "scripted",
        "fit_score": 4,
        "difficulty": 6,
    }
    rejected = audit.get("D_T1_002_002")
    assert rejected["status"] == "rejected" and rejected["reason"] == "Query Sanitization: scripted"
    assert rejected["data"]["decision"] == "REJECT" and rejected["data"]["difficulty"] == -1
    unusable = audit.get("D_T1_002_010")
    assert unusable["data"]["failing_pillar"] == "Media Verifiability" and unusable["data"]["difficulty"] == -1
    assert audit.get("D_T1_002_011") is None
    assert len(asked) == 3
    for request in asked:
        assert inline_kinds(request) == ["text", "image/png", "text", "audio/wav", "text"]
        assert "**Generation Confidence Score:** 4 / 5" in request["texts"][-1]
        assert "MAXIMUM SCRUTINY" in json.dumps(request["body"]["systemInstruction"])


def test_an_unusable_audit_reply_is_asked_again_then_rejected(tmp_path, gemini_key):
    write_candidates(tmp_path, "CC05", 1)  # QuantitativeFabrication: image base, TTS audio
    with FakeGemini(script=Scripted({}, {0: "bad-decision"})) as server:
        run_generate(tmp_path, generator=spec_of(server), templates=["CC05"])
        Ledger(tmp_path, "synthesize").record("C_T1_005_000", "ok", data={"audio": None, "image": None})
        run_audit(tmp_path, templates=["C_T1_005"])
        audits = [r for r in server.requests if "Benchmark Auditor" in json.dumps(r["body"])]
    entry = Ledger(tmp_path, "audit").get("C_T1_005_000")
    assert len(audits) == 2 and entry["status"] == "rejected"
    assert entry["reason"].startswith("malformed reply: decision must be ACCEPT or REJECT")


def test_a_missing_base_file_is_failed_with_its_reason_never_an_item(tmp_path, gemini_key):
    write_candidates(tmp_path, "IC01", 2)
    (tmp_path / "media" / "base" / "shared" / "media" / "photo.png").unlink()
    with FakeGemini(script=Scripted({})) as server:
        counts = run_generate(tmp_path, generator=spec_of(server), templates=["IC01"])
        assert not server.requests
    entry = Ledger(tmp_path, "generate").get("D_T1_002_000")
    assert counts["failed"] == 2 and entry["status"] == "failed" and entry["reason"].startswith("media_unavailable")
    assert "photo.png" in entry["reason"]


def test_sample_ids_stay_put_when_a_failed_candidate_is_selected_later(tmp_path, gemini_key):
    candidates = write_candidates(tmp_path, "IC01", 3)
    select = Ledger(tmp_path, "select")
    select.record("IC01/b01", "failed", reason="probe failed")
    with FakeGemini(script=Scripted({})) as server:
        run_generate(tmp_path, generator=spec_of(server), templates=["IC01"])
        first = {k: v["candidate_id"] for k, v in Ledger(tmp_path, "generate").ok().items()}
        select.record("IC01/b01", "ok", data=candidates[1])  # a resumed select succeeds
        run_generate(tmp_path, templates=["IC01"])
        assert len(server.requests) == 3
    assert first == {"D_T1_002_000": "IC01__b00", "D_T1_002_002": "IC01__b02"}
    assert {k: v["candidate_id"] for k, v in Ledger(tmp_path, "generate").ok().items()} == {
        **first,
        "D_T1_002_001": "IC01__b01",
    }


def test_a_video_base_goes_as_labelled_frames_and_model_specs_parse(tmp_path, gemini_key):
    from c3po_plugin.construction.client import parse_spec

    write_candidates(tmp_path, "IC02", 1)  # InstructionalGapDetection: a muted video base
    with FakeGemini(script=Scripted({})) as server:
        run_generate(tmp_path, generator=spec_of(server), templates=["D_T1_001"])
        [request] = server.requests
    kinds = inline_kinds(request)
    assert kinds[0] == "text" and kinds[-1] == "text" and set(kinds[1:-1]) == {"image/png"}
    assert 1 <= len(kinds) - 2 <= 8  # 1 fps, at most 8 frames
    assert request["texts"][0].startswith("Video (") and '"template_id": "D_T1_001"' in request["texts"][-1]
    assert Ledger(tmp_path, "generate").get("D_T1_001_000")["data"]["template_id"] == "IC02"
    assert parse_spec("lmms:faultline_qwen3_omni,pretrained=Qwen/X,device=cpu") == (
        "lmms",
        "faultline_qwen3_omni",
        "pretrained=Qwen/X,device=cpu",
    )
    assert parse_spec("lmms:qwen3_omni:pretrained=a") == ("lmms", "qwen3_omni", "pretrained=a")
    assert parse_spec("gemini:gemini-2.5-flash") == ("gemini", "gemini-2.5-flash", "")
    with pytest.raises(ValueError, match="use gemini:<model>"):
        parse_spec("openai:gpt")


def test_a_misspelt_gemini_spec_argument_names_the_close_match(tmp_path, gemini_key):
    """Issue 24: a misspelt argument is refused with the close match, as every model's is."""
    from c3po_plugin.construction.client import make_client

    with pytest.raises(ValueError) as refused:
        make_client("gemini:gemini-test,base_ur=http://127.0.0.1:9,max_retrys=1", tmp_path, "generate", temperature=0.0)
    assert "'base_ur' (did you mean 'base_url'?)" in str(refused.value)
    assert "'max_retrys' (did you mean 'max_retries'?)" in str(refused.value)


# --- the command line, killed and resumed -------------------------------------------------------------


@pytest.mark.slow
def test_a_killed_build_resumes_without_resending_finished_calls(tmp_path):
    write_candidates(tmp_path, "IC01", 8)
    ledger = tmp_path / "ledger" / "generate.jsonl"
    with FakeGemini(script=Scripted({}), latency=0.4) as server:
        command = [
            str(Path(sys.executable).with_name("c3po")),
            "build",
            "generate",
            str(tmp_path),
            "--generator",
            spec_of(server),
            "--concurrency",
            "1",
            "--templates",
            "D_T1_002",
        ]
        env = {**os.environ, "GEMINI_API_KEY": KEY, "SCEVAL_CACHE": str(tmp_path / "cache")}
        first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline and (not ledger.exists() or len(ledger.read_text().splitlines()) < 3):
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait()
        finished = len(ledger.read_text().splitlines())
        assert 3 <= finished < 8, "the build must be killed part-way"
        sent_before = len(server.requests)
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        sent_after = len(server.requests) - sent_before
    assert sent_after <= 8 - finished, "finished calls must not be sent again"
    assert Ledger(tmp_path, "generate").counts() == {"ok": 8, "rejected": 0, "failed": 0}
    assert f"skipped {finished}" in done.stdout and "D_T1_002" in done.stdout  # counts, then the summary table
    assert KEY not in done.stdout + done.stderr + ledger.read_text()


# --- an lmms-eval model as generator and auditor ----------------------------------------------------


@pytest.mark.slow
def test_a_tiny_lmms_eval_model_as_generator_and_auditor(tmp_path, monkeypatch):
    """The tiny random Qwen2.5-Omni (our adapter) through the judge's loader: it is shown the base
    picture (the adapter's media-token log counts it) and its noise is rejected as a malformed
    reply after the re-ask, never an item."""
    from faultline_eval.model_wrappers.tiny_checkpoints import build_qwen2_5_omni as build

    log = tmp_path / "media.jsonl"
    monkeypatch.setenv("FAULTLINE_MEDIA_TOKEN_LOG", str(log))
    folder = build(tmp_path / "tiny")
    model = f"lmms:faultline_qwen2_5_omni,pretrained={folder},device=cpu,store=none"
    build_dir = tmp_path / "build"
    write_candidates(build_dir, "IC01", 2)
    counts = run_generate(build_dir, generator=model, templates=["IC01"], max_output_tokens=8)
    assert counts == {"ok": 0, "rejected": 2, "failed": 0, "skipped": 0}
    for entry in Ledger(build_dir, "generate").entries():
        assert entry["reason"].startswith("malformed reply") and "after 2 attempts" in entry["reason"]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(lines) == 4 and all(line["n_images"] == 1 and line["failure"] is None for line in lines)

    # the auditor: one item written as generate would have
    from build_fakes import item_reply

    item = {
        **json.loads(item_reply("D_T1_002_000")),
        "template_id": "IC01",
        "candidate_id": "IC01__b00",
        "fit_score": 4,
    }
    Ledger(build_dir, "generate").record("D_T1_002_000", "ok", data=item)
    Ledger(build_dir, "synthesize").record("D_T1_002_000", "ok", data={"audio": "media/base/shared/media/tone.wav"})
    counts = run_audit(build_dir, auditor=model, templates=["IC01"])
    assert counts["rejected"] == 1 and Ledger(build_dir, "audit").get("D_T1_002_000")["reason"].startswith("malformed")
    audits = [json.loads(line) for line in log.read_text().splitlines()][4:]
    assert len(audits) == 2 and all(a["n_images"] == 1 and a["n_audios"] == 1 for a in audits)
