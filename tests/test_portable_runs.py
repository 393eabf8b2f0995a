"""Runs that travel (issue 24): a run made in one place, copied with its data and logs to
another (the first place deleted), resumes with nothing re-sent, reports, and is viewed with its
media regenerated. The real lmms-eval CLI, the real OpenAI client against the local fake server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from fixtures import copy_demo

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


def _env(place: Path) -> dict:
    return {
        **os.environ,
        "SCEVAL_SOURCE": str(place / "data"),
        "SCEVAL_CACHE": str(place / "cache"),
        "C3PO_SOURCE": str(place / "c3po"),
        "OPENAI_API_KEY": "k",
        "GEMINI_API_KEY": "k",
    }


def _run(command: list, place: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=place, env=_env(place), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_a_run_copied_with_its_data_resumes_reports_and_views_elsewhere(tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    copy_demo(here / "data", 4)
    with FakeOpenAI() as server:
        command = [
            str(BIN / "lmms-eval"),
            "eval",
            "--model",
            "sceval_openai",
            "--model_args",
            f"base_url={server.url},audio_canary=off,max_concurrency=1",
            "--tasks",
            "sceval_clean",
            "--log_samples",
            "--output_path",
            "out/",
        ]
        _run(command, here)
        sent = len(server.requests)
        assert sent == 4
        shutil.copytree(here, there)
        shutil.rmtree(here)  # nothing can come from the first place any more
        _run(command, there)
        assert len(server.requests) == sent, "the copied run resumes from its reply store: nothing re-sent"
    logs = sorted(there.rglob("*_samples_sceval_clean.jsonl"))
    assert len(logs) == 2 and str(here) in logs[0].read_text() and str(there) in logs[1].read_text()
    _run([str(BIN / "sceval"), "report", "out/", "-o", "report/"], there)  # one dataset, two folders: comparable
    _run([str(BIN / "faultline"), "view", "out/", "-o", "site/"], there)
    pages = "".join(p.read_text() for p in (there / "site").rglob("*.html"))
    assert "not regenerated" not in pages and "<img" in pages


def test_a_c3po_run_copied_elsewhere_reports_regrades_with_media_and_views(tmp_path):
    """The C3PO side: the report's one-dataset check, the judge's reloading of media and the viewer
    find the items by content in the copy (C3PO_SOURCE), the first place deleted."""
    from fake_gemini import FakeGemini
    from test_c3po_judges import fake_judge_reply
    from test_c3po_lmms import _inline_parts
    from test_c3po_lmms import copy_demo as copy_c3po_demo
    from test_c3po_lmms import demo_rows as c3po_rows

    here, there = tmp_path / "here", tmp_path / "there"
    rows = c3po_rows()[:4]
    for row in rows:  # answers the reference never gives exactly: every trial goes to the judge
        row["answer"] = "something the reference never says"
        row.pop("human_answer", None)
    copy_c3po_demo(here / "c3po", rows)
    run = [
        str(BIN / "lmms-eval"),
        "eval",
        "--model",
        "sceval_reference",
        "--tasks",
        "c3po_all",
        "--log_samples",
        "--output_path",
        "out/",
    ]
    subprocess.run(
        run, cwd=here, env={**_env(here), "C3PO_JUDGE": "exact"}, check=True, capture_output=True, timeout=300
    )
    shutil.copytree(here, there)
    shutil.rmtree(here)
    _run([str(BIN / "c3po"), "report", "out/", "-o", "report/"], there)
    with FakeGemini(reply_text=fake_judge_reply) as server:
        _run(
            [
                str(BIN / "c3po"),
                "judge",
                "out/",
                "--judge",
                f"gemini:gemini-judge,base_url={server.url},max_retries=0",
                "-o",
                "regraded.jsonl",
            ],
            there,
        )
        asked = list(server.requests)
    assert asked and all(_inline_parts(r) for r in asked), "the judge was shown the items' media"
    verdicts = [json.loads(line) for line in (there / "regraded.jsonl").read_text().splitlines()]
    assert verdicts and not any((v["error"] or "").startswith("media_unavailable") for v in verdicts)
    _run([str(BIN / "faultline"), "view", "out/", "-o", "site/"], there)
    pages = "".join(p.read_text() for p in (there / "site").rglob("*.html"))
    assert "not regenerated" not in pages and "<img" in pages
