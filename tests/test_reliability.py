"""Bad input and broken plugins, as a new user meets them (issue 12), through the real commands.

Each case: a plugin that fails or registers something invalid disables only itself; every
bad record of a source is listed by ``sceval check``/``c3po check`` and by the task builder in
the same words; a failed run exits non-zero through ``faultline-eval``; oversized media are
downscaled or refused before any operator runs; symlinks inside the dataset are followed;
undecodable text names its file, line and column.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from c3po_fixtures import item as c3po_item
from c3po_fixtures import write_items, write_media
from fixtures import copy_demo, demo_rows
from PIL import Image
from test_plugins import install

from faultline_eval.core import media
from faultline_eval.tasks import sceval_task as task
from sceval_plugin.conditions import catalogue
from sceval_plugin.data.sources import SourceError, load_source
from sceval_plugin.operators import SeverityTable

BIN = Path(sys.executable).parent

STRING_IN_TABLE = """
from sceval_plugin import hookimpl
from sceval_plugin.operators import SeverityTable, operator

GAIN = SeverityTable("gain", {10: 1.0, 30: "strong", 50: 2.0, 70: 3.0}, identity=1.0)
"""

NAN_IN_TABLE = """
from sceval_plugin.operators import SeverityTable

GAIN = SeverityTable("gain", {10: 1.0, 30: float("nan"), 50: 2.0, 70: 3.0}, identity=1.0)
"""

# registers a good operator, then an invalid spec: the good one must be undone with it
HALF_VALID = """
import dataclasses
from sceval_plugin import hookimpl
from sceval_plugin.operators import SeverityTable, operator

@operator("fine_op", modality="vision", table=SeverityTable("x", {10: 1, 30: 2, 50: 3, 70: 4}, identity=0),
          stochastic=False)
def fine_op(frames, parameter, rng):
    return frames.copy()

@hookimpl
def sceval_register_operators(registry):
    registry.add(fine_op)
    registry.add(dataclasses.replace(fine_op.sceval_operator, name="no_variants", stochastic=True, variants=0))
"""


def run(*command: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / command[0]), *command[1:]],
        env={**os.environ, **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_invalid_plugins_are_named_in_one_line_each_and_the_rest_works(tmp_path):
    install(tmp_path, "sceval-string-table", "sceval_string_table", STRING_IN_TABLE)
    install(tmp_path, "sceval-nan-table", "sceval_nan_table", NAN_IN_TABLE)
    site = install(tmp_path, "sceval-half-valid", "sceval_half_valid", HALF_VALID)
    env = {"PYTHONPATH": str(site)}
    listing = run("sceval", "operators", env=env)
    assert listing.returncode == 0 and "Traceback" not in listing.stderr
    assert len(listing.stdout.strip().splitlines()) == 1 + 14 and "fine_op" not in listing.stdout
    warnings = sorted(listing.stderr.strip().splitlines())
    assert len(warnings) == 3 and all(w.startswith("warning: sceval plugin ") for w in warnings)
    half, nan, string = warnings
    assert "'sceval_half_valid' (distribution sceval-half-valid 0.1) skipped: " in half
    assert "operator 'no_variants': variants must be a positive int, got 0" in half
    assert "'sceval_nan_table' (distribution sceval-nan-table 0.1) skipped: failed to import" in nan
    assert "the value at severity 30 is nan, not a finite number" in nan
    assert "the value at severity 30 is 'strong' (str), not a number" in string
    conditions = run("sceval", "conditions", "--block", "single", env=env)
    assert conditions.returncode == 0 and "single_noise_v70" in conditions.stdout
    strict = run("sceval", "operators", env={**env, "SCEVAL_STRICT_PLUGINS": "1"})
    assert strict.returncode == 2 and "Traceback" not in strict.stderr
    assert strict.stderr.strip().splitlines()[-1].startswith("sceval: error: sceval plugin ")


def test_severity_tables_are_checked_when_built():
    with pytest.raises(ValueError, match=r"'gain': the value at identity \(severity 0\) is None"):
        SeverityTable("gain", {10: 1, 30: 2, 50: 3, 70: 4}, identity=None)
    with pytest.raises(ValueError, match="the value at severity 50 is 2.5, but the table is declared dtype=int"):
        SeverityTable("kernel", {10: 1, 30: 2, 50: 2.5, 70: 4}, identity=0, dtype=int)
    with pytest.raises(ValueError, match="is inf, not a finite number"):
        SeverityTable("gain", {10: 1, 30: 2, 50: float("inf"), 70: 4}, identity=0)
    assert SeverityTable("kernel", {10: 1, 30: 3, 50: 5, 70: 7}, identity=1, dtype=int)[50] == 5


def bad_sceval_source(folder: Path) -> tuple[Path, list[dict]]:
    """Five demo items, four of them broken in a different way, plus two lines that are not records."""
    folder = copy_demo(folder, 5)
    rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    rows[1]["gold_key"] = "Z"
    rows[2]["audio"] = "../elsewhere.flac"
    (folder / rows[3]["audio"]).write_bytes(b"not audio")
    (folder / "clip.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 truncated")
    rows[4]["visual"] = "clip.mp4"
    lines = [json.dumps(r).encode() for r in rows]
    lines[1:1] = [b'{"sample_id": "caf\xe9", "question": "?"}', b'{"sample_id": "cut']
    (folder / "items.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return folder, rows


def test_sceval_check_lists_every_problem_and_the_task_builder_says_the_same(tmp_path, monkeypatch):
    folder, rows = bad_sceval_source(tmp_path / "bad")
    check = run("sceval", "check", str(folder))
    assert check.returncode == 1 and "Traceback" not in check.stderr
    *problems, summary = check.stdout.strip().splitlines()
    assert summary == f"{folder}: 1 usable item(s), 6 problem(s)"
    expected = [
        f"record: {folder}/items.jsonl:2:19: not UTF-8 text (invalid continuation byte: byte 0xe9)",
        f"record: {folder}/items.jsonl:3:15: invalid JSON: Unterminated string starting at",
        f"record: sample {rows[1]['sample_id']!r}: field 'gold_key': 'Z' is not one of the option keys",
        f"record: sample {rows[2]['sample_id']!r}: field 'audio': path '../elsewhere.flac' escapes the dataset root",
        f"media_unreadable: sample {rows[3]['sample_id']!r}: field 'audio': {folder / rows[3]['audio']}: cannot decode",
        f"media_unreadable: sample {rows[4]['sample_id']!r}: field 'visual': {folder}/clip.mp4: cannot decode video",
    ]
    assert len(problems) == len(expected)
    for start in expected:
        assert any(line.startswith(start) for line in problems), start
    assert not any("manifest" in line for line in problems)

    monkeypatch.setenv("SCEVAL_SOURCE", str(folder))
    with pytest.raises(SourceError) as refused:
        task.build_rows(catalogue().get("clean"))
    listed = str(refused.value).splitlines()
    assert listed[0].endswith(
        "6 bad record(s), found before any model call (set SCEVAL_ON_BAD_INPUT=exclude to run the rest):"
    )
    assert [line.strip() for line in listed[1:]] == problems, "the builder words them as `sceval check` does"


def test_c3po_check_names_the_file_line_and_column_of_undecodable_text(tmp_path):
    paths = write_media(tmp_path)
    write_items(tmp_path, [c3po_item("good", "CC08", paths)])
    with open(tmp_path / "items.jsonl", "ab") as out:
        out.write(b'{"sample_id": "bad", "question": "caf\xe9?"}\n')
    check = run("c3po", "check", str(tmp_path))
    assert check.returncode == 1
    assert (
        f"record: {tmp_path}/items.jsonl:2:38: not UTF-8 text (invalid continuation byte: byte 0xe9)"
        in check.stdout.splitlines()
    )
    assert check.stdout.strip().endswith("1 usable item(s), 1 problem(s)")


@pytest.mark.slow
def test_a_run_that_cannot_build_its_task_fails_through_faultline_eval(tmp_path):
    folder, rows = bad_sceval_source(tmp_path / "bad")
    done = run(
        "faultline-eval",
        "--model",
        "sceval_reference",
        "--tasks",
        "sceval_clean",
        "--output_path",
        "out/",
        env={"SCEVAL_SOURCE": str(folder)},
        cwd=tmp_path,
    )
    assert done.returncode == 1 and not (tmp_path / "out").exists()
    assert "Traceback" not in done.stdout + done.stderr
    error = done.stderr.strip().splitlines()
    start = next(i for i, line in enumerate(error) if line.startswith("faultline-eval: error: the run failed"))
    assert "SourceError" in error[start] and "6 bad record(s)" in error[start] and len(error) - start == 7


def write_png(path: Path, size: tuple[int, int], mode: str = "RGB") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new(mode, size).save(path)
    return path


def test_oversized_media_are_downscaled_or_refused_before_decoding(tmp_path, monkeypatch):
    huge = write_png(tmp_path / "huge.png", (8000, 8000), mode="1")  # 64 MP, a few kB on disk
    with pytest.raises(
        media.MediaTooLarge,
        match=r"8000x8000 \(64.0 MP\), over the 50 MP limit "
        r"\(FAULTLINE_MAX_MEGAPIXELS\)",
    ):
        media.probe(huge)
    wide = write_png(tmp_path / "wide.png", (3000, 200))
    image, notes = media.read_image(wide)
    assert image.shape == (128, 1920, 3)
    assert notes == ["wide.png: downscaled 3000x200 to 1920x128 (FAULTLINE_MAX_FRAME_SIDE=1920)"]
    monkeypatch.setenv("FAULTLINE_MAX_FRAME_SIDE", "600")
    assert media.read_image(wide)[0].shape == (40, 600, 3)
    monkeypatch.setenv("FAULTLINE_MAX_AUDIO_SECONDS", "0.5")
    clip = tmp_path / "long.wav"
    media.write_audio(clip, np.zeros(16_000, np.float32))
    with pytest.raises(media.MediaTooLarge, match=r"audio is 1.0 s, over the 0.5 s limit"):
        media.probe(clip)
    monkeypatch.setenv("FAULTLINE_MAX_FRAME_SIDE", "big")
    with pytest.raises(ValueError, match="FAULTLINE_MAX_FRAME_SIDE='big': expected a positive number"):
        media.limits()


@pytest.mark.slow
def test_excluded_and_downscaled_media_show_in_the_run(tmp_path):
    folder = copy_demo(tmp_path / "data", 3)
    rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    write_png(folder / "huge.png", (8000, 8000), mode="1")
    rows[0]["visual"] = "huge.png"
    big = np.asarray(Image.open(folder / rows[1]["visual"][0]).convert("RGB").resize((2400, 1800)))
    media.write_image(folder / "big.png", big)
    rows[1]["visual"] = "big.png"
    for row in rows[:2]:
        row.pop("key_frame_index")  # one picture now: the demo's key frame is gone
    (folder / rows[2]["audio"]).write_bytes(b"not audio")
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = run(
        "faultline-eval",
        "--model",
        "sceval_reference",
        "--tasks",
        "sceval_clean",
        "--log_samples",
        "--output_path",
        "out/",
        env={"SCEVAL_SOURCE": str(folder), "SCEVAL_ON_BAD_INPUT": "exclude"},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(next((tmp_path / "out").rglob("*_results.json")).read_text())
    assert summary["results"]["sceval_clean"]["sceval_excluded_trials,none"] == 2
    assert summary["results"]["sceval_clean"]["sceval_valid_trials,none"] == 1
    [sample] = [json.loads(line) for line in next((tmp_path / "out").rglob("*sceval_clean.jsonl")).open()]
    assert sample["sceval_record"]["media_notes"] == [
        "big.png: downscaled 2400x1800 to 1920x1440 (FAULTLINE_MAX_FRAME_SIDE=1920)"
    ]
    log = done.stdout + done.stderr
    assert f"media_too_large: sample {rows[0]['sample_id']!r}" in log and "over the 50 MP limit" in log
    assert f"media_unreadable: sample {rows[2]['sample_id']!r}" in log
    assert "manifest" not in log


def test_symlinks_inside_the_dataset_are_followed_and_an_escape_names_path_target_and_root(tmp_path):
    store = tmp_path / "ds" / "store"
    folder = copy_demo(tmp_path / "ds", 2)
    (folder / "media").rename(store)
    (folder / "media").symlink_to(store, target_is_directory=True)  # a symlinked media folder, inside
    check = run("sceval", "check", str(folder))
    assert check.returncode == 0 and check.stdout.strip().endswith("2 usable item(s), 0 problem(s)")
    outside = tmp_path / "outside"
    store.rename(outside)
    (folder / "media").unlink()
    (folder / "media").symlink_to(outside, target_is_directory=True)
    check = run("sceval", "check", str(folder))
    first = demo_rows(2)[0]
    visual = first["visual"][0] if isinstance(first["visual"], list) else first["visual"]
    assert check.returncode == 1
    assert (
        f"record: sample {first['sample_id']!r}: field 'visual': path {visual!r} (which resolves to "
        f"{outside / visual.split('/', 1)[1]}) escapes the dataset root {folder}"
    ) in check.stdout.splitlines()
    assert load_source(str(folder)).items == []
