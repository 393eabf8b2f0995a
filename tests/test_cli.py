"""`sceval` through its installed console script, on real media files made here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest
import soundfile
from PIL import Image

from faultline_eval.core import media
from sceval_plugin import contact_sheet, operators

SCEVAL = str(Path(sys.executable).with_name("sceval"))


def sceval(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([SCEVAL, *args], cwd=cwd, capture_output=True, text=True)


def write_mp4(path: Path, seconds: int = 3, fps: int = 5, size=(96, 64)) -> None:
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=fps)
        stream.width, stream.height, stream.pix_fmt = size[0], size[1], "yuv420p"
        for i in range(seconds * fps):
            frame = np.full((size[1], size[0], 3), 60, np.uint8)  # no black: occluders stand out
            frame[..., 0] = 60 + 30 * (i % 6)  # each frame differs
            frame[10:30, 10 + 3 * i : 30 + 3 * i] = 255
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


@pytest.fixture
def files(tmp_path, rng):
    image = rng.integers(1, 256, size=(60, 80, 3), dtype=np.uint8)
    Image.fromarray(image).save(tmp_path / "photo.png")
    Image.fromarray(image).save(tmp_path / "photo.jpg", quality=95)
    Image.fromarray(np.dstack([image, np.full(image.shape[:2], 200, np.uint8)])).save(tmp_path / "rgba.png")
    write_mp4(tmp_path / "clip.mp4")
    stereo = rng.uniform(-0.5, 0.5, size=(22_050, 2)).astype(np.float32)
    soundfile.write(tmp_path / "stereo44k.wav", stereo, 44_100, subtype="FLOAT")
    soundfile.write(tmp_path / "mono16k.wav", stereo[:16000, 0], 16_000, subtype="FLOAT")
    (tmp_path / "question.txt").write_text("Which shape moves to the right while the tone beeps twice?\n")
    (tmp_path / "broken.png").write_bytes(b"not a png at all")
    (tmp_path / "notes.docx").write_bytes(b"PK\x03\x04 a word document")
    (tmp_path / "broken.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42garbage")
    return tmp_path


@pytest.mark.slow
def test_corrupt_image_matches_the_api(files):
    done = sceval(
        "corrupt", "photo.png", "--op", "noise", "--severity", "70", "--variant", "2", "-o", "out.png", cwd=files
    )
    assert done.returncode == 0, done.stderr
    assert "key=photo.png seed-scheme=2" in done.stdout
    written = np.asarray(Image.open(files / "out.png"))
    clean, _ = media.read_image(files / "photo.png")
    assert np.array_equal(written, operators.apply("noise", clean, severity=70, variant=2, key="photo.png"))


@pytest.mark.slow
def test_corrupt_video_samples_one_frame_per_second(files):
    done = sceval("corrupt", "clip.mp4", "--op", "occlusion", "--severity", "30", "-o", "frames", cwd=files)
    assert done.returncode == 0, done.stderr
    assert "3 frames at 0.00s, 1.00s, 2.00s" in done.stderr
    written = sorted((files / "frames").glob("frame_*.png"))
    assert len(written) == 3
    hidden = [(np.asarray(Image.open(p)) == 0).all(-1) for p in written]
    assert all(np.array_equal(hidden[0], h) for h in hidden) and hidden[0].mean() == pytest.approx(0.3, abs=0.01)


@pytest.mark.slow
def test_corrupt_audio_notes_conversions_and_writes_16k(files):
    done = sceval("corrupt", "stereo44k.wav", "--op", "remove", "--severity", "50", "-o", "out.wav", cwd=files)
    assert done.returncode == 0, done.stderr
    assert "averaged 2 channels to mono" in done.stderr and "resampled 44100 Hz to 16000 Hz" in done.stderr
    wave, rate = soundfile.read(files / "out.wav", dtype="float32")
    assert rate == 16_000 and wave.size == 8000 - 4000


@pytest.mark.slow
def test_corrupt_text_prints_the_result(files):
    done = sceval(
        "corrupt",
        "--text",
        "Which shape moves to the right?",
        "--op",
        "typo_ocr",
        "--severity",
        "30",
        "--key",
        "q1",
        cwd=files,
    )
    assert done.returncode == 0, done.stderr
    expected = operators.apply("typo_ocr", "Which shape moves to the right?", severity=30, key="q1")
    assert done.stdout.strip() == expected
    done = sceval("corrupt", "question.txt", "--op", "drop_words", "--severity", "50", "-o", "q.txt", cwd=files)
    assert done.returncode == 0, done.stderr
    stem = (files / "question.txt").read_text().strip()
    expected = operators.apply("drop_words", stem, severity=50, key="question.txt")
    assert (files / "q.txt").read_text() == expected + "\n"


@pytest.mark.slow
@pytest.mark.parametrize("source, rows", [("clip.mp4", 7), ("photo.jpg", 7), ("mono16k.wav", 3), ("question.txt", 4)])
def test_grid_writes_one_contact_sheet(files, source, rows):
    done = sceval("corrupt", source, "--grid", "-o", "sheet.png", cwd=files)
    assert done.returncode == 0, done.stderr
    sheet = Image.open(files / "sheet.png")
    assert sheet.format == "PNG" and sheet.width > 5 * 80
    assert f"wrote sheet.png ({sheet.width}x{sheet.height})" in done.stdout


def test_contact_sheet_has_a_row_per_operator_and_a_column_per_severity(rng):
    frames = rng.integers(0, 256, size=(2, 30, 40, 3), dtype=np.uint8)
    two = contact_sheet.grid(frames, "vision", names=["noise", "brightness"], progress=False)
    four = contact_sheet.grid(
        frames, "vision", names=["noise", "brightness", "occlusion", "motion_blur"], progress=False
    )
    three_cols = contact_sheet.grid(
        frames, "vision", names=["noise", "brightness"], severities=(0, 30, 70), progress=False
    )
    row = (four.height - two.height) / 2
    assert row >= contact_sheet.FRAME_HEIGHT and two.width == four.width
    assert two.width - three_cols.width == 2 * (two.width - contact_sheet.LABEL_WIDTH) / 5
    # the clean column shows the clean frames, untouched
    cell = np.asarray(two)[
        contact_sheet.HEADER_HEIGHT : contact_sheet.HEADER_HEIGHT + contact_sheet.FRAME_HEIGHT,
        contact_sheet.LABEL_WIDTH : contact_sheet.LABEL_WIDTH + 160,
    ]
    expected = np.asarray(Image.fromarray(frames[0]).resize((160, 120), Image.Resampling.BOX))
    assert np.array_equal(cell, expected)
    with pytest.raises(ValueError, match="is a audio operator, not vision"):
        contact_sheet.grid(frames, "vision", names=["mute"], progress=False)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, message",
    [
        (["corrupt", "broken.png", "--op", "noise", "--severity", "30"], "broken.png: cannot decode image"),
        (["corrupt", "broken.mp4", "--grid"], "broken.mp4: cannot decode video"),
        (["corrupt", "missing.wav", "--grid"], "INPUT 'missing.wav' does not exist"),  # refused before any work
        (["corrupt", "rgba.png", "--op", "nosie", "--severity", "30"], "did you mean 'noise'"),
        (
            ["corrupt", "photo.png", "--op", "mute", "--severity", "30"],
            "'mute' is a audio operator but the input is vision",
        ),
        (["corrupt", "notes.docx", "--grid"], "notes.docx: unsupported file type '.docx'"),
    ],
)
def test_bad_input_gets_a_clear_error(files, args, message):
    done = sceval(*args, cwd=files)
    assert done.returncode != 0
    assert message in done.stderr


@pytest.mark.slow
def test_rgba_input_is_converted_with_a_note(files):
    done = sceval("corrupt", "rgba.png", "--op", "brightness", "--severity", "50", "-o", "dark.png", cwd=files)
    assert done.returncode == 0, done.stderr
    assert "converted RGBA image to RGB" in done.stderr


@pytest.mark.slow
def test_demo_writes_three_contact_sheets(tmp_path):
    done = sceval("demo", "-o", "demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for modality in ("vision", "audio", "text"):
        assert Image.open(tmp_path / "demo" / f"{modality}_grid.png").width > 1000
    assert len(list((tmp_path / "demo" / "clean_frames").glob("*.png"))) == 8


@pytest.mark.slow
def test_operators_lists_every_operator_with_its_table():
    done = subprocess.run([SCEVAL, "operators"], capture_output=True, text=True)
    assert done.returncode == 0
    for name in operators.names():
        spec = operators.get(name)
        line = next(l for l in done.stdout.splitlines() if l.startswith(name + " "))
        assert " / ".join(f"{spec.parameter(s):g}" for s in (0, 10, 30, 50, 70)) in line


@pytest.mark.slow
def test_a_reader_that_goes_away_is_not_an_error():
    import os

    read, write = os.pipe()
    os.close(read)  # `sceval operators | head -0`: every write meets a closed pipe
    try:
        done = subprocess.run([SCEVAL, "operators"], stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    assert done.returncode == 0 and done.stderr == ""
