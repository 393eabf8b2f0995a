"""The whole ``c3po build`` in one go: the real command line over the demo pool, the generator,
audio typer and auditor behind the local fake Gemini server (scripted good and bad replies), real
eSpeak speech and procedural sound effects, and the export graded by the real ``lmms-eval``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from build_fakes import Scripted
from fake_gemini import FakeGemini
from test_lmms_cli import lmms_eval, results

from c3po_plugin.construction.ledger import Ledger
from c3po_plugin.construction.specs import spec_for

C3PO = str(Path(sys.executable).with_name("c3po"))
TEMPLATES = ("IC01", "IC02")  # an image base and a video base
#: generator scenario by sample index (every other index: a good reply); the rejected ones with
#: the start of the reason the generate ledger must keep
GENERATOR = {1: "malformed", 2: "banned-word", 3: "does-not-fit", 4: "malformed-then-good", 5: "sfx"}
GENERATE_REASONS = {
    "malformed": "malformed reply",
    "banned-word": "query uses banned word",
    "does-not-fit": "does not fit",
}
AUDITOR = {0: "reject", 6: "accept-unusable-media"}
AUDIT_REASONS = {"reject": "Query Sanitization: scripted", "accept-unusable-media": "Media Verifiability"}


def build_all(build_dir: Path, server: FakeGemini, cwd: Path) -> subprocess.CompletedProcess:
    spec = f"gemini:gemini-test,base_url={server.url},max_retries=1,initial_backoff=0.01,timeout=10"
    env = {**os.environ, "GEMINI_API_KEY": "test-key-pipeline", "SCEVAL_CACHE": str(cwd / "cache")}
    done = subprocess.run(
        [
            C3PO,
            "build",
            "all",
            str(build_dir),
            "--pool",
            "demo",
            "--generator",
            spec,
            "--templates",
            ",".join(TEMPLATES),
            "--per-template",
            "1-250",
            "--annotators",
            "1",
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def expected_funnel(indices: list[int]) -> dict:
    """What the scripts above must leave of a template's candidates ``indices``."""
    generated = [i for i in indices if GENERATOR.get(i) not in GENERATE_REASONS]
    accepted = [i for i in generated if i not in AUDITOR]
    return {
        "candidates": len(indices),
        "rule_rejected": len(indices) - len(generated),
        "audited": len(generated),
        "accepted": len(accepted),
        "exported": len(accepted),
    }


@pytest.mark.slow
def test_c3po_build_all_then_lmms_eval_grades_the_export(tmp_path):
    build = tmp_path / "build"
    with FakeGemini(script=Scripted(GENERATOR, AUDITOR)) as server:
        first = build_all(build, server, tmp_path)
        sent = len(server.requests)
        second = build_all(build, server, tmp_path)
        assert len(server.requests) == sent, "a finished build must re-send nothing"
    assert "skipped" in second.stdout or "D_T1_002" in second.stdout

    generate, synthesize, audit = (Ledger(build, s) for s in ("generate", "synthesize", "audit"))
    exported = {e["key"] for e in Ledger(build, "export").entries("ok")}
    funnel = json.loads((build / "export" / "funnel.json").read_text())
    expected_exported = set()
    for template in TEMPLATES:
        paper_id = spec_for(template).paper_id
        mine = [e for e in Ledger(build, "select").entries() if e["key"].startswith(f"{template}/")]
        indices = [i for i, e in enumerate(mine) if e["status"] == "ok"]  # the sample ids' idx
        assert len(indices) >= 6, f"the demo pool must give {template} every scripted scenario"
        for column, n in expected_funnel(indices).items():
            assert funnel[template][column] == n, (template, column, funnel[template])
        for i in indices:
            sid = f"{paper_id}_{i:03d}"
            scenario = GENERATOR.get(i)
            if scenario in GENERATE_REASONS:
                assert generate.get(sid)["status"] == "rejected"
                assert generate.get(sid)["reason"].startswith(GENERATE_REASONS[scenario]), generate.get(sid)
                assert sid not in exported and audit.get(sid) is None
                continue
            assert synthesize.get(sid)["status"] == "ok"
            wav = build / synthesize.get(sid)["data"]["audio"]
            assert wav.stat().st_size > 16_000  # a real half second or more at 16 kHz
            assert synthesize.get(sid)["data"]["audio_kind"] == ("sfx" if scenario == "sfx" else "tts")
            if i in AUDITOR:
                assert audit.get(sid)["status"] == "rejected"
                assert audit.get(sid)["reason"].startswith(AUDIT_REASONS[AUDITOR[i]]), audit.get(sid)
                assert sid not in exported
            else:
                assert audit.get(sid)["status"] == "ok" and sid in exported
                expected_exported.add(sid)
    assert exported == expected_exported
    assert generate.get(f"{spec_for('IC01').paper_id}_004")["status"] == "ok"  # re-asked after the bad reply
    assert first.stdout.count("D_T1_002") >= 1  # the summary table

    lmms_eval(
        "--model",
        "sceval_reference",
        "--tasks",
        "c3po_all",
        "--log_samples",
        "--output_path",
        "run/",
        cwd=tmp_path,
        env={"C3PO_SOURCE": str(build / "export"), "SCEVAL_CACHE": str(tmp_path / "cache")},
    )
    summary, samples = results(tmp_path / "run")
    records = [line["c3po_record"] for line in samples["c3po_all"]]
    assert sorted(r["sample_id"] for r in records) == sorted(exported)
    metrics = summary["results"]["c3po_all"]
    assert metrics["c3po_coverage,none"] == 1.0, metrics  # every exported item graded
    assert 0.0 <= metrics["c3po_accuracy,none"] <= 1.0
