"""A resumed ``c3po build all BUILD`` (no ``--pool``) retries ``select``'s failed items with the pool
``settings.json`` kept, as its advice says; the summary counts failures by a category that keeps
file names whole and prints each category's first error whole (issue 35)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from c3po_plugin.construction.ledger import Ledger, StageReport, format_reports, reason_category
from faultline_app.c3po_cli import main as c3po_main

C3PO = str(Path(sys.executable).with_name("c3po"))


def write_pool(folder: Path, n: int = 4, junk: int = 2) -> None:
    """``n`` labelled-sign PNGs (CC01 takes them) listed in annotations.jsonl; picture ``junk`` is not a PNG."""
    folder.mkdir(parents=True)
    rows = []
    for i in range(n):
        pixels = (np.random.default_rng(i).random((64, 64, 3)) * 255).astype("uint8")
        Image.fromarray(pixels).save(folder / f"img{i}.png")
        rows.append({"id": f"img{i}", "path": f"img{i}.png", "tags": ["sign"]})
    (folder / f"img{junk}.png").write_bytes(b"junk")
    (folder / "annotations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def c3po(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCEVAL_CACHE": str(cwd / "cache"), "TQDM_DISABLE": "1"}
    return subprocess.run([C3PO, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_resumed_build_without_pool_retries_the_failed_selection_once_the_file_is_fixed(tmp_path):
    """The issue's reproduction, end to end through the installed command (~30 s)."""
    write_pool(tmp_path / "p")
    first = c3po(
        "build",
        "all",
        "B",
        "--pool",
        "p",
        "--templates",
        "CC01",
        "--generator",
        "lmms:c3po_build_reference",
        cwd=tmp_path,
    )
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-3000:]
    assert "FAILED      1  cannot decode image\n" in first.stdout  # was `p/imgN.png`
    assert "first: CC01/img2: p/img2.png: cannot decode image: UnidentifiedImageError" in first.stdout
    assert "rerun the same command to retry the failed items" in first.stdout
    settings = json.loads((tmp_path / "B" / "settings.json").read_text())
    assert settings["pool"] == "p" and settings["pool_path"] == str((tmp_path / "p").resolve())

    pixels = (np.random.default_rng(2).random((64, 64, 3)) * 255).astype("uint8")
    Image.fromarray(pixels).save(tmp_path / "p" / "img2.png")  # the fix
    elsewhere = tmp_path / "elsewhere"  # a resume from another folder still finds the pool
    elsewhere.mkdir()
    again = c3po("build", "all", str(tmp_path / "B"), "--templates", "CC01", cwd=elsewhere)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    entry = Ledger(tmp_path / "B", "select").get("CC01/img2")
    assert entry["status"] == "ok" and entry["data"]["source"] == {"pool": "p", "path": "img2.png"}
    assert Ledger(tmp_path / "B", "export").counts()["ok"] == 4  # the retried item went all the way


def test_a_resume_whose_kept_pool_is_gone_is_refused_before_any_stage(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    build = tmp_path / "B"
    Ledger(build, "select").record("CC01/img0", "failed", {"template_id": "CC01"}, reason="p/img0.png: cannot decode")
    (build / "settings.json").write_text(json.dumps({"pool": "p", "pool_path": str(tmp_path / "p")}))
    status = c3po_main(["build", "all", "B", "--templates", "CC01"])
    err = capsys.readouterr().err
    assert status == 2
    assert f"--pool (kept in B/settings.json) '{tmp_path / 'p'}' does not exist" in err
    assert "pass --pool with where the pool is now" in err
    assert sorted(p.name for p in (build / "ledger").iterdir()) == ["select.jsonl"]  # no stage ran


def test_a_fresh_build_without_pool_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert c3po_main(["build", "all", "B"]) == 2
    assert "--pool: B has no select ledger yet; pass the base media pool with --pool" in capsys.readouterr().err


@pytest.mark.parametrize(
    "reason,category",
    [
        ("clips/broken.mp4: cannot decode video: InvalidDataError: x", "cannot decode video"),
        ("base file a/b2.png: [Errno 2] No such file or directory: 'a/b2.png'", "[Errno N] No such file or directory"),
        ("fit score 2 below threshold 3", "fit score N below threshold N"),
        ("audio typing rejected at classify: malformed reply (after 2 attempts)", "audio typing rejected at classify"),
        ("api_failure: HTTP 500 from http://gpu1:8000/v1", "api_failure"),
        ("candidate 'CC01__img2' is not in the select ledger", "candidate '…' is not in the select ledger"),
        ("Qwen2 timed out on a 3.5 s clip", "Qwen2 timed out on a N s clip"),
        ("could not write out/v3/item7.wav now", "could not write <path> now"),
    ],
)
def test_a_failure_category_drops_the_particulars_and_mangles_no_name(reason, category):
    assert reason_category(reason) == category


def test_the_first_error_of_a_category_is_printed_whole():
    long = (
        "CC01/x: /data/pools/" + "deep/" * 30 + "broken.mp4: cannot decode video: InvalidDataError: moov atom not found"
    )
    report = StageReport("select", ok=1, failed={"cannot decode video": 1}, first_error={"cannot decode video": long})
    text = format_reports([report])
    assert "    FAILED      1  cannot decode video\n" in text
    assert f"             first: {long}" in text and "broken.mp4" in text
