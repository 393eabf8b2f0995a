"""Which models a ``c3po build`` asks and how: the auditor and audio typer are configured apart
from the generator (App. C), an ``lmms:`` model decodes at the stage's settings, a ``gemini:``
stage does not import lmms-eval, and ``--per-template`` takes the README's ``MIN:MAX``. All
through the real ``c3po`` command line against the local fake Gemini / OpenAI servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from build_fakes import Scripted, write_candidates
from fake_gemini import FakeGemini
from fake_openai import FakeOpenAI
from test_c3po_build_llm import KEY, spec_of

from c3po_plugin.construction.ledger import Ledger
from faultline_app.c3po_cli import main


@pytest.fixture
def gemini_key(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("C3PO_BUILD_AUDITOR", raising=False)
    monkeypatch.delenv("C3PO_BUILD_CLASSIFIER", raising=False)


def synthesized(build_dir, n: int) -> None:
    """What ``synthesize`` leaves for the first ``n`` AttributeComposition samples: real speech-like audio."""
    from c3po_plugin.data.make_demo import tone, write_audio

    for i in range(n):
        sample = f"D_T1_002_{i:03d}"
        write_audio(build_dir / "media" / "items" / sample / "audio.wav", tone(True))
        Ledger(build_dir, "synthesize").record(
            sample,
            "ok",
            data={
                "audio": f"media/items/{sample}/audio.wav",
                "audio_kind": "tts",
                "audio_duration_s": 2.0,
                "image": None,
                "backends": {"speech": "test", "sfx": "test", "image": "none"},
            },
        )


def build_and_export(build_dir, server, capsys) -> tuple[str, str, list[str]]:
    """generate, audit and export two items through the CLI: (audit's stdout, the card, audit's models)."""
    write_candidates(build_dir, "IC01", 2)
    synthesized(build_dir, 2)
    assert main(["build", "generate", str(build_dir), "--generator", spec_of(server), "--templates", "IC01"]) == 0
    before = len(server.requests)
    capsys.readouterr()
    assert main(["build", "audit", str(build_dir), "--templates", "IC01"]) == 0
    audited = capsys.readouterr().out
    models = [r["model"] for r in server.requests[before:]]
    assert main(["build", "export", str(build_dir)]) == 0
    return audited, (build_dir / "export" / "README.md").read_text(), models


def test_the_auditor_is_configured_apart_from_the_generator_and_a_shared_one_is_warned_about(
    tmp_path, monkeypatch, capsys, gemini_key
):
    """App. C audits with another model than the generator "to avoid propagating the biases from
    the generator model". $C3PO_BUILD_AUDITOR configures it (pinned in settings.json); when
    nothing does, the generator's model audits and the summary and the dataset card say so."""
    with FakeGemini(script=Scripted({})) as server:
        auditor = f"gemini:gemini-auditor,base_url={server.url},max_retries=1,initial_backoff=0.01,timeout=10"
        monkeypatch.setenv("C3PO_BUILD_AUDITOR", auditor)
        out, card, models = build_and_export(tmp_path / "configured", server, capsys)
        assert models == ["gemini-auditor"] * 2
        assert json.loads((tmp_path / "configured" / "settings.json").read_text())["auditor"] == auditor
        assert "WARNING" not in out and "WARNING" not in card
        assert "auditor `gemini:gemini-auditor`" in card and "generator `gemini:gemini-test`" in card
        assert server.url not in card  # connection details stay out of a published card

        monkeypatch.delenv("C3PO_BUILD_AUDITOR")
        out, card, models = build_and_export(tmp_path / "unconfigured", server, capsys)
    assert models == ["gemini-test"] * 2
    warning = next(line for line in out.splitlines() if line.startswith("WARNING"))
    assert "the auditor is the generator's model (gemini:gemini-test)" in warning
    assert "Qwen3-Omni-30B-A3B-Thinking" in warning and "C3PO_BUILD_AUDITOR" in warning
    assert f"**{warning}**" in card


def test_per_template_takes_min_colon_max_as_the_readme_writes_it(tmp_path, capsys):
    build = tmp_path / "build"
    assert main(["build", "select", str(build), "--pool", "demo", "--templates", "IC01", "--per-template", "1:2"]) == 0
    assert Ledger(build, "select").counts()["ok"] == 2
    with pytest.raises(SystemExit) as stopped:
        main(["build", "select", str(build), "--pool", "demo", "--per-template", "5:2"])
    assert stopped.value.code == 2 and "'5:2': need 1 <= MIN <= MAX" in capsys.readouterr().err


def test_an_lmms_generator_decodes_at_the_stages_temperature_and_token_budget(tmp_path, gemini_key):
    """``lmms:sceval_gemini`` and ``lmms:sceval_openai`` used to send temperature 0 and their own
    1,024 tokens whatever the stage asked (the generator's App. I temperature is 1.0)."""
    build = tmp_path / "build"
    write_candidates(build, "IC01", 1)
    (build / "settings.json").write_text(json.dumps({"max_output_tokens": 777}))
    with FakeGemini(script=Scripted({})) as gemini, FakeOpenAI() as openai:
        generator = f"lmms:sceval_gemini,model_version=gemini-test,base_url={gemini.url},store=none,max_retries=1"
        assert main(["build", "generate", str(build), "--generator", generator, "--templates", "IC01"]) == 0
        classifier = f"lmms:sceval_openai,base_url={openai.url},store=none,audio_canary=off,max_retries=1"
        assert main(["build", "classify", str(build), "--classifier", classifier, "--templates", "IC01"]) == 0
        [generated] = gemini.requests
        typed = openai.requests
    assert Ledger(build, "generate").counts()["ok"] == 1
    config = generated["body"]["generationConfig"]
    assert config["temperature"] == 1.0 and config["maxOutputTokens"] == 777
    assert typed and all(r["body"]["temperature"] == 0 and r["body"]["max_tokens"] == 777 for r in typed)


@pytest.mark.slow
def test_a_gemini_stage_does_not_import_lmms_eval(tmp_path):
    """generate, classify and audit with ``gemini:`` specs in a fresh process (about 10 s):
    lmms-eval (seconds to import) is never loaded."""
    build = tmp_path / "build"
    write_candidates(build, "IC01", 1)
    synthesized(build, 1)
    script = (
        "import json, sys\nfrom faultline_app.c3po_cli import main\nfor stage in ('generate', 'classify', 'audit'):\n"
        f"    assert main(['build', stage, {str(build)!r}, '--templates', 'IC01'] + sys.argv[1:]) == 0\n"
        "    sys.argv = sys.argv[:1]\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'lmms_eval')))"
    )
    with FakeGemini(script=Scripted({})) as server:
        done = subprocess.run(
            [sys.executable, "-c", script, "--generator", spec_of(server)],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
            env={**os.environ, "GEMINI_API_KEY": KEY, "SCEVAL_CACHE": str(tmp_path / "cache")},
        )
        roles = list(server.requests)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
    assert len(roles) == 3 and Ledger(build, "audit").counts()["ok"] == 1
