"""The viewer's media files (faultline_app/viewer/media.py): one file per content, named by it;
a compact file to show and the exact bytes the model was sent one click away; the SCEval
renderer's reuse of media another condition already rendered (sceval_plugin.render.media_identity)."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
import soundfile
from PIL import Image

from faultline_app.viewer.budget import Budget
from faultline_app.viewer.media import INDEX, INLINE_HEIGHT, MediaWriter, Shown, files_of
from faultline_app.viewer.sceval import Renderer
from faultline_eval.tasks import sceval_task as task
from sceval_plugin.conditions import catalogue
from sceval_plugin.data.sources import load_source
from sceval_plugin.render import media_identity, render


def frames(seed: int, height: int = 40) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, 48, 3), dtype=np.uint8)


def clip(seed: int, exact: bool) -> np.ndarray:
    """A float32 clip: every sample ``k / 32768`` (``exact``: as a 16-bit file holds it) or not."""
    wave = np.random.default_rng(seed).uniform(-0.5, 0.5, 16_000).astype(np.float32)
    return (np.rint(wave * 32768) / 32768).astype(np.float32) if exact else wave


def written(writer: MediaWriter, key: str, shown: Shown):
    return writer.write(key, lambda: shown)[1]


def media_files(site: Path) -> list[Path]:
    return sorted(p for p in (site / "media").iterdir() if p.name != INDEX)


def test_identical_media_share_one_file_and_different_media_never_do(tmp_path):
    writer = MediaWriter(tmp_path, max_bytes=1e9)
    # two trials sent the same frame and clip (fresh arrays, equal bytes); a third other ones
    a = written(writer, "a", Shown([("frame 1", frames(0))], clip(0, exact=True)))
    b = written(writer, "b", Shown([("frame 1", frames(0).copy())], clip(0, exact=True).copy()))
    c = written(writer, "c", Shown([("frame 1", frames(1))], clip(1, exact=True)))
    tall = written(writer, "tall", Shown([("frame 1", frames(0, height=INLINE_HEIGHT + 1))], None))
    writer.close()
    assert a == b and files_of(a).isdisjoint(files_of(c))
    # a small frame is shown as its lossless file; a tall one as a JPEG, its PNG a click away
    assert a.images[0][1] == a.images[0][2] and tall.images[0][1].endswith(".jpg") != tall.images[0][2]
    on_disk = media_files(tmp_path)
    assert {f"media/{p.name}" for p in on_disk} == files_of(a) | files_of(c) | files_of(tall)
    contents = [p.read_bytes() for p in on_disk]
    assert len(set(contents)) == len(contents)  # no two files hold the same bytes
    for media, image in ((a, frames(0)), (c, frames(1)), (tall, frames(0, height=INLINE_HEIGHT + 1))):
        assert np.array_equal(np.asarray(Image.open(tmp_path / media.images[0][2])), image)  # lossless
    # a second build into the folder reuses every trial without rendering it, and keeps its files
    again = MediaWriter(tmp_path, max_bytes=1e9)
    assert again.write("a", lambda: pytest.fail("rendered again"))[1] == a and again.reused == 1
    again.close()
    assert {f"media/{p.name}" for p in media_files(tmp_path)} == files_of(a)  # the rest: unused, removed


def test_past_the_budget_only_media_already_written_are_shown(tmp_path):
    writer = MediaWriter(tmp_path, max_bytes=1)
    first = written(writer, "first", Shown([("frame", frames(0))]))
    assert first is not None  # within the budget when it started
    assert written(writer, "new", Shown([("frame", frames(1))])) is None
    assert written(writer, "same", Shown([("frame", frames(0))])) == first  # costs nothing more
    writer.close()


@pytest.mark.parametrize("condition", ["single_noise_v70", "single_distortion_a70", "bi_va_noise_mute_v70_a50"])
def test_the_exact_files_hold_what_the_task_sends_the_model(condition, tmp_path, monkeypatch):
    """The frames' PNG decode to the task's images, the clip's exact file (FLAC where every sample
    is 16-bit, else float WAV) to the task's samples, bit for bit; the played clip within 1/32768."""
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    doc = task.build_rows(catalogue().get(condition))[0][1]
    record = task.process_results(doc, [json.dumps({"answer": "A"})])["sceval_record"]
    writer = MediaWriter(tmp_path / "site", max_bytes=1e9)
    media = written(writer, "trial", Renderer().trial(record))
    writer.close()
    sent = task.doc_to_visual(doc)  # what lmms-eval hands the model: the frames (PIL), then the clip
    pictures, audio = sent[:-1], sent[-1]
    assert len(media.images) == len(pictures) > 0
    for (_, _, exact), picture in zip(media.images, pictures):
        assert exact.endswith(".png")
        assert np.array_equal(np.asarray(Image.open(tmp_path / "site" / exact)), np.asarray(picture))
    exact, _ = soundfile.read(tmp_path / "site" / media.audio_exact, dtype="float32")
    assert exact.dtype == audio["array"].dtype and np.array_equal(exact, audio["array"])
    played, _ = soundfile.read(io.BytesIO((tmp_path / "site" / media.audio).read_bytes()), dtype="float32")
    assert media.audio.endswith(".flac") and np.abs(played - audio["array"]).max() <= 1 / 32768
    # distortion makes float samples: the exact file is then a float WAV beside the FLAC
    assert (media.audio_exact == media.audio) == (condition != "single_distortion_a70")


def test_the_renderer_reuses_media_exactly_when_the_task_would_send_the_same(monkeypatch, tmp_path):
    """For every condition (but probes) and variant, on one demo item: two with the same
    ``media_identity`` render the same frames (clip), and the viewer's renderer, which renders a
    condition's text alone when another already rendered its media, shows what render() makes."""
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    item = load_source("demo").items[0]
    renderer = Renderer()
    template = task.process_results(task.build_rows(catalogue().get("clean"))[0][0], ["A"])["sceval_record"]
    seen: dict[tuple, np.ndarray | None] = {}
    reused = 0
    for cid in catalogue().names():
        condition = catalogue().get(cid)
        for variant in range(condition.variants if condition.probe is None else 0):
            trial = render(item, condition, variant)
            record = {**template, "sample_id": item.sample_id, "condition_id": cid, "variant": variant}
            shown = renderer.trial(record)
            for modality, array, got in (
                ("vision", trial.frames, None if not shown.images else np.stack([f for _, f in shown.images])),
                ("audio", trial.audio, shown.audio),
            ):
                assert (array is None) == (got is None) and (array is None or np.array_equal(array, got)), cid
                identity = media_identity(condition, modality, variant)
                if identity in seen:
                    reused += 1
                    assert (array is None) == (seen[identity] is None), cid
                    assert array is None or np.array_equal(array, seen[identity]), (cid, variant, modality)
                seen[identity] = array
    assert reused > 100  # most conditions leave one modality as clean, or repeat a single one's


def test_the_budget_all_shows_every_trial_uncapped_unless_a_cap_is_given():
    every = Budget.parse("all")
    assert every == Budget(per_cell=10**9, max_mb=math.inf) and "media are not capped" in every.describe()
    assert Budget.parse("max_mb=50,all") == Budget.parse("all,max_mb=50") == Budget(per_cell=10**9, max_mb=50.0)
    assert Budget.parse("all,wrong_only").wrong_only and Budget() == Budget(per_cell=4, max_mb=100.0)
    with pytest.raises(ValueError, match="expected all, or per_cell=N"):
        Budget.parse("all=3")
