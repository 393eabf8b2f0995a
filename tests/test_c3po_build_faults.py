"""``c3po build`` under faults: the same bytes whatever the order, the process or the kills; a
rejection stays a rejection downstream; the exit status and summary say what failed.

The builds run the demo pool through the real command line (or the real stage functions) with the
generator, audio typer and auditor behind the local fake Gemini (tests/build_fakes.py), real eSpeak
speech, procedural sound effects and caption cards; outputs are compared with
``benchmarks/faults.py``'s :func:`c3po_build_digests` (every file but the run logs, plus each
ledger's content).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from build_fakes import Scripted, write_candidates
from fake_gemini import FakeGemini
from faultkit import differing_files

from c3po_plugin.construction.ledger import Ledger
from faultline_eval.core.store import encode_record

ROOT = Path(__file__).resolve().parents[1]
C3PO = str(Path(sys.executable).with_name("c3po"))
KEY = "test-key-faults"


def faults_module():
    spec = importlib.util.spec_from_file_location("faults_benchmark", ROOT / "benchmarks" / "faults.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def spec_of(server: FakeGemini, retries: int = 1) -> str:
    return f"gemini:gemini-test,base_url={server.url},max_retries={retries},initial_backoff=0.01,timeout=10"


def c3po(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GEMINI_API_KEY": KEY, "SCEVAL_CACHE": str(cwd / "cache"), "TQDM_DISABLE": "1"}
    return subprocess.run([C3PO, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


# --- speech ---------------------------------------------------------------------------------------

SPEAK = """
import hashlib, sys
from c3po_plugin.construction.speech import EspeakSpeech
wave, _ = EspeakSpeech().speak(sys.argv[1], sys.argv[2], key="other")
print(hashlib.sha256(wave.tobytes()).hexdigest())
"""


def test_the_same_text_gives_the_same_speech_bytes_in_any_order_and_process():
    from c3po_plugin.construction.speech import EspeakSpeech

    speech = EspeakSpeech()
    lines = [
        ("Next, put it down.", "calm"),
        ("Hello there, quickly now!", "fast female whisper"),
        ("Whisper this softly to me.", "whispering old british"),
    ]  # whisper: eSpeak's noise generator

    def digest(text: str, style: str) -> str:
        return hashlib.sha256(speech.speak(text, style, key="k")[0].tobytes()).hexdigest()

    first = [digest(*line) for line in lines]
    again = [digest(*line) for line in reversed(lines)][::-1]
    assert first == again and digest(*lines[0]) == first[0]  # once stateful: every repeat differed
    assert len(set(first)) == 3
    other = subprocess.run([sys.executable, "-c", SPEAK, *lines[1]], capture_output=True, text=True, timeout=120)
    assert other.returncode == 0, other.stderr[-2000:]
    assert other.stdout.strip() == first[1]  # another process, another clock second, nothing spoken before


# --- order, process and resume independence --------------------------------------------------------

GENERATOR = {1: "malformed", 2: "banned-word", 3: "does-not-fit", 4: "malformed-then-good", 5: "sfx"}
AUDITOR = {0: "reject", 6: "accept-unusable-media"}
TEMPLATES = ["IC01", "IC02"]  # an image base (speech, sfx) and a video base
MIDDLE = ("generate", "classify", "synthesize", "audit", "export")


def shuffle_ledgers(build: Path, rng: random.Random) -> None:
    """Rewrite every per-sample ledger as its content in a shuffled line order: what a different
    reply completion order, concurrency or resume leaves. (``select``'s order numbers the samples,
    by design, and stays.)"""
    for stage in MIDDLE:
        path = build / "ledger" / f"{stage}.jsonl"
        if path.is_file():
            lines = Ledger(build, stage).snapshot().splitlines()
            rng.shuffle(lines)
            path.write_bytes(b"".join(encode_record(json.loads(line)) for line in lines))


@pytest.mark.slow
def test_a_build_is_the_same_bytes_in_any_stage_order_ledger_order_and_process(tmp_path, monkeypatch):
    """Build A: ``c3po build all`` in a subprocess. Build B, in this process: ``select``, then three
    rounds of the other stages in seeded shuffled orders at concurrency 1 (a stage meeting unsettled
    upstream work waits), the ledgers' lines shuffled between stages, then ``sample`` and ``export``.
    Every output (media, ledger content, parquet, card, funnel, sheets, figures) must be the same
    bytes. Then a sample whose generate entry is lost (the torn-line accident) is named as
    unsettled by the export instead of vanishing, and the next run restores the same bytes. ~12-45 s
    (idle to loaded 2 cores)."""
    from c3po_plugin.construction import pipeline

    faults = faults_module()
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    rng = random.Random(24)
    with FakeGemini(script=Scripted(GENERATOR, AUDITOR)) as server:
        done = c3po(
            "build",
            "all",
            str(tmp_path / "a"),
            "--pool",
            "demo",
            "--generator",
            spec_of(server),
            "--templates",
            ",".join(TEMPLATES),
            "--per-template",
            "1-7",
            "--annotators",
            "1",
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

        b = tmp_path / "b"
        pipeline.stage_function("select")(b, pool="demo", templates=TEMPLATES, per_template=(1, 7))
        options = {"generate": {"generator": spec_of(server), "concurrency": 1}, "export": {}}
        for _ in range(3):
            for stage in rng.sample(MIDDLE, len(MIDDLE)):
                pipeline.stage_function(stage)(b, **options.get(stage, {"templates": TEMPLATES}))
                shuffle_ledgers(b, rng)
        pipeline.stage_function("sample")(b, annotators=1)
        pipeline.stage_function("export")(b)
        a_digests, b_digests = faults.c3po_build_digests(tmp_path / "a"), faults.c3po_build_digests(b)
        assert any(name.endswith(".wav") for name in a_digests) and "export/items.parquet" in a_digests
        assert "export/README.md" in a_digests and "ledger/synthesize.jsonl#content" in a_digests
        assert differing_files(a_digests, b_digests) == []

        # a lost ledger line: the sample is named, not dropped; the next run brings the same bytes back
        exported = sorted(
            json.loads(line)["key"]
            for line in Ledger(b, "export").snapshot().splitlines()
            if json.loads(line)["status"] == "ok"
        )
        lost = exported[0]
        kept = [json.loads(line) for line in Ledger(b, "generate").snapshot().splitlines()]
        (b / "ledger" / "generate.jsonl").write_bytes(b"".join(encode_record(e) for e in kept if e["key"] != lost))
        counts = pipeline.stage_function("export")(b)
        assert counts["unsettled"] == 1 and f"{lost}: no generate entry yet" in counts["note"]
        funnel = json.loads((b / "export" / "funnel.json").read_text())
        assert funnel["total"]["unsettled"] == 1 and funnel["total"]["exported"] == len(exported) - 1
        sent = len(server.requests)
        pipeline.run_all(b, templates=TEMPLATES, generator=spec_of(server), annotators=1)
        assert len(server.requests) == sent  # restored from the reply store, nothing re-paid
    assert differing_files(a_digests, faults.c3po_build_digests(b)) == []


# --- the status machine ----------------------------------------------------------------------------


class BadSfxTyping(Scripted):
    """The generator as scripted; the audio typer answers non-JSON for a sound effect (an empty
    transcript), so that sample's typing is rejected after the re-ask."""

    def __call__(self, request: dict):
        system = " ".join(p.get("text", "") for p in request["body"].get("systemInstruction", {}).get("parts", []))
        if "audio processing director" in system and not json.loads(request["texts"][-1])["transcript"]:
            self.roles.append("classify")
            return "I think it is a sound effect."
        return super().__call__(request)


def test_a_rejected_audio_typing_is_carried_as_rejected_and_never_retried(tmp_path, monkeypatch):
    from c3po_plugin.construction.audit import run_audit
    from c3po_plugin.construction.classify import run_classify
    from c3po_plugin.construction.export import run_export
    from c3po_plugin.construction.generate import run_generate
    from c3po_plugin.construction.pipeline import stage_reports
    from c3po_plugin.construction.synthesize import run_synthesize

    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    write_candidates(tmp_path, "IC01", 3)
    script = BadSfxTyping({1: "sfx"})
    with FakeGemini(script=script) as server:
        run_generate(tmp_path, generator=spec_of(server), templates=["IC01"])
        assert run_classify(tmp_path, templates=["IC01"])["rejected"] == 1
        assert run_classify(tmp_path, templates=["IC01"])["skipped"] == 3  # settled: rerunning changes nothing
        first = run_synthesize(tmp_path, templates=["IC01"])
        entry = Ledger(tmp_path, "synthesize").get("D_T1_002_001")
        assert first["rejected"] == 1 and first["failed"] == 0
        assert entry["status"] == "rejected" and entry["origin"] == "classify"
        assert entry["reason"].startswith("audio typing rejected at classify: malformed reply")
        assert "run `c3po build classify`" not in entry["reason"]
        lines = (tmp_path / "ledger" / "synthesize.jsonl").read_text()
        again = run_synthesize(tmp_path, templates=["IC01"])
        assert again["skipped"] == 3 and again["rejected"] == again["failed"] == 0  # not retried
        assert (tmp_path / "ledger" / "synthesize.jsonl").read_text() == lines
        before = len(server.requests)
        run_audit(tmp_path, templates=["IC01"])
        audited = server.requests[before:]
    assert len(audited) == 2 and not any("D_T1_002_001" in r["texts"][-1] for r in audited)  # never sent
    carried = Ledger(tmp_path, "audit").get("D_T1_002_001")
    assert carried["status"] == "rejected" and carried["reason"] == entry["reason"] and carried["origin"] == "classify"
    counts = run_export(tmp_path)
    funnel = json.loads((tmp_path / "export" / "funnel.json").read_text())["IC01"]
    assert funnel["classify_rejected"] == 1 and funnel["synthesis_rejected"] == 0 and funnel["unsettled"] == 0
    assert funnel["audited"] == 2 and counts["ok"] == 2 and "unsettled" not in counts
    reports = {r.stage: r for r in stage_reports(tmp_path, templates=["IC01"])}
    assert reports["synthesize"].rejected == {"audio typing rejected at classify": 1}
    assert reports["synthesize"].n_failed == reports["audit"].n_failed == 0


# --- exit status -----------------------------------------------------------------------------------


def c3po_main(capsys, *args: str) -> tuple[int, str]:
    """The ``c3po`` command line in this process (no re-import per call): exit status and stdout."""
    from faultline_app.c3po_cli import main

    capsys.readouterr()
    status = main(list(args))
    return status, capsys.readouterr().out


@pytest.mark.slow
def test_exit_status_and_summary_follow_the_failure_rate(tmp_path, capsys, monkeypatch):
    """Every generator request fails (HTTP 500): exit 1 (the real process's status) and a summary
    naming the category and the first error; one of four failing: exit 1 above
    ``--max-failure-rate`` 0.05 (the default), 0 under 0.5; the rerun against a healed server exits 0. ~10 s."""
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    write_candidates(tmp_path / "down", "IC01", 2)
    with FakeGemini(script=lambda request: {"status": 500}) as server:
        down = c3po(
            "build",
            "generate",
            str(tmp_path / "down"),
            "--generator",
            spec_of(server, retries=0),
            "--templates",
            "IC01",
            cwd=tmp_path,
        )
    assert down.returncode == 1, down.stdout + down.stderr
    assert "FAILED generate: all 2 items failed" in down.stdout
    assert "FAILED      2  api_failure\n             first: D_T1_002_000: api_failure:" in down.stdout

    build = tmp_path / "partly"
    write_candidates(build, "IC01", 4)
    healed = {"down": True}

    class Flaky(Scripted):
        def __call__(self, request):
            if healed["down"] and "D_T1_002_003" in request["texts"][-1]:
                return {"status": 500}
            return super().__call__(request)

    with FakeGemini(script=Flaky({})) as server:
        generate = ("build", "generate", str(build), "--generator", spec_of(server, retries=0), "--templates", "IC01")
        status, out = c3po_main(capsys, *generate)
        assert status == 1 and "1 of 4 items failed (25% > --max-failure-rate 0.05)" in out
        status, out = c3po_main(capsys, *generate, "--max-failure-rate", "0.5")
        assert status == 0 and "FAILED      1  api_failure" in out  # still in the summary, under the threshold
        healed["down"] = False
        status, out = c3po_main(capsys, *generate)
    assert status == 0 and "FAILED" not in out
    assert Ledger(build, "generate").counts() == {"ok": 4, "rejected": 0, "failed": 0}


# --- kill -9 -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_kill_9_at_20_seeded_points_of_c3po_build_all_loses_and_changes_nothing(tmp_path):
    """``benchmarks/faults.py``'s ``c3po_build`` at CI size: 20 SIGKILLs at seeded delays within the
    uninterrupted build's own duration (IC01 over the demo pool), then a run to the end; 0 samples
    lost, 0 duplicated, every output byte-identical to the uninterrupted build. ~60-90 s on a
    loaded 2-core machine: each restart re-imports the build's libraries."""
    result = faults_module().c3po_build(kill_points=20, seed=0, workdir=tmp_path)
    assert result["killed"] >= 10, result  # most runs really were cut short
    assert result["lost"] == 0 and result["duplicated"] == 0, result
    assert result["differing_files"] == [], result
    assert result["exported"] > 0
