"""SCEval's mechanism probes on wrapped lmms-eval tasks (issue 27: "probes that need one item").

temporal, desync and frame_budget act on a doc's own decoded media through the probe's own
function (``probe_conditions.apply``); the probes that need a donor or an SCEval record field are
refused with their reason. Media come from the session's local copy of worldsense
(``tests/wrap_datasets.py``: 2 s clips, 8 frames at 4 fps, a tone track), read back from the MP4s
the wrapper writes. About 5 s in all.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from test_wrap_report import listener, worldsense_doc, write_run
from test_wrap_tasks import _build
from wrap_datasets import CLIP_FRAMES

from faultline_eval.core import media
from faultline_eval.core.record_fields import decode_track
from faultline_eval.tasks import wrap_configs, wrapped_task
from faultline_eval.tasks.wrapped_media import FrameGrid, corrupt_media
from sceval_plugin import probe_conditions as probes
from sceval_plugin.conditions import catalogue
from sceval_plugin.operators import variant_rng
from sceval_plugin.report import build_report
from sceval_plugin.report.task_metric_section import metric_rows
from sceval_plugin.report.wrapped_reader import read_wrapped_runs

KEY = "0"  # the doc key the corruption is seeded with (worldsense: its index)


@pytest.fixture
def wrap_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def clip(wrap_copies) -> str:
    copy = wrap_copies.copies["worldsense"]
    return str(copy.hf_home / "WorldSense" / "videos" / "ws_000.mp4")


def wrapped_file(condition: str, source: str) -> str:
    task = wrapped_task.wrapped(f"worldsense__{condition}__var0")
    (path,) = corrupt_media([source], wrapped_task.media_corruption(task, KEY), where=task.name)
    return path


def read_back(path: str) -> tuple[np.ndarray, np.ndarray]:
    """The frames (all of them) and the audio track of a written MP4, decoded afresh."""
    frames = media.read_video_frames(path, fps=1000, max_frames=1000).frames
    return frames, decode_track(path).array


def test_desync_shifts_the_written_audio_track_by_the_shift_in_samples(clip, wrap_cache):
    clean_frames, clean_audio = read_back(wrapped_file("clean", clip))
    k = round(0.5 * media.SAMPLE_RATE)
    for condition, shifted in (("probe_desync_plus0p5s", 1), ("probe_desync_minus0p5s", -1)):
        frames, audio = read_back(wrapped_file(condition, clip))
        assert audio.shape == clean_audio.shape and np.array_equal(frames, clean_frames)
        if shifted > 0:  # later: silence first, the clean track's head after it
            assert np.array_equal(audio[k:], clean_audio[:-k]) and not audio[:k].any()
        else:  # earlier: the head cut, silence at the end
            assert np.array_equal(audio[:-k], clean_audio[k:]) and not audio[-k:].any()
    assert np.abs(clean_audio).max() > 0.1  # a real tone, so the comparison could fail


def test_temporal_reverse_reverses_the_frames_and_keeps_the_audio(clip, wrap_cache):
    clean_frames, clean_audio = read_back(wrapped_file("clean", clip))
    frames, audio = read_back(wrapped_file("probe_temporal_frame_reverse", clip))
    assert len(clean_frames) >= 2 and not np.array_equal(clean_frames[0], clean_frames[-1])
    assert np.array_equal(frames, clean_frames[::-1]) and np.array_equal(audio, clean_audio)


def test_frame_budget_gives_exactly_n_frames_by_g10s_rule_over_the_duration(clip, wrap_cache):
    budget = 4
    frames, _ = read_back(wrapped_file(f"probe_frame_budget_{budget}", clip))
    expected = media.read_video_frames(clip, exactly=budget)  # what an SCEval item's budget decodes
    assert len(frames) == budget and np.array_equal(frames, expected.frames)
    written = wrapped_file(f"probe_frame_budget_{budget}", clip)
    assert media.read_video_frames(written, fps=1000, max_frames=1000).times[1] == pytest.approx(
        expected.times[1], abs=1e-3
    )  # the clip keeps its duration: frame i at i * duration / N
    # "default" is the task's grid: the same frames as clean
    default, _ = read_back(wrapped_file("probe_frame_budget_default", clip))
    assert np.array_equal(default, read_back(wrapped_file("clean", clip))[0])


def test_frame_lists_take_the_probes_own_list_rule_and_images_are_left_alone():
    task = wrapped_task.wrapped("worldsense__probe_frame_budget_4__var0")
    frames = [Image.new("RGB", (8, 6), (20 * i, 0, 0)) for i in range(10)]
    (out,) = corrupt_media([frames], wrapped_task.media_corruption(task, KEY), where=task.name)
    assert [f.getpixel((0, 0))[0] for f in out] == [20 * (i * 10 // 4) for i in range(4)]
    reverse = wrapped_task.wrapped("worldsense__probe_temporal_frame_reverse__var0")
    (out,) = corrupt_media([frames], wrapped_task.media_corruption(reverse, KEY), where=reverse.name)
    assert [f.getpixel((0, 0))[0] for f in out] == [20 * i for i in range(10)][::-1]
    image = Image.new("RGB", (8, 6), (1, 2, 3))
    (same,) = corrupt_media([image], wrapped_task.media_corruption(reverse, KEY), where=reverse.name)
    assert np.array_equal(np.asarray(same), np.asarray(image))  # one frame: not applicable, unchanged


def test_a_reused_file_still_says_why_the_probe_did_not_apply(clip, wrap_cache):
    """The 2 s clip on SCEval's grid (``frames=sceval_grid``) has 2 frames: too few to drop middle ones."""
    told = []
    task = wrapped_task.wrapped("worldsense__probe_temporal_middle_drop__var0")
    corruption = wrapped_task.media_corruption(task, KEY)
    corruption = replace(corruption, not_applied=told.append)
    first = corrupt_media([clip], corruption, where=task.name, grid=FrameGrid())
    again = corrupt_media([clip], corruption, where=task.name, grid=FrameGrid())  # reused from the file cache
    assert first == again and told == ["too_few_frames", "too_few_frames"]
    clean = wrapped_task.wrapped("worldsense__clean__var0")
    on_grid = corrupt_media([clip], wrapped_task.media_corruption(clean, KEY), where=clean.name, grid=FrameGrid())
    assert np.array_equal(read_back(first[0])[0], read_back(on_grid[0])[0])
    assert (
        len(read_back(wrapped_file("probe_temporal_middle_drop", clip))[0]) < CLIP_FRAMES
    )  # every source frame: applies


def test_audio_probes_are_seeded_like_apply_and_give_the_same_bytes_twice(clip, wrap_cache):
    task = wrapped_task.wrapped("worldsense__probe_temporal_audio_shuffle__var0")
    wave = np.sin(np.arange(4 * media.SAMPLE_RATE, dtype=np.float32) / 7).astype(np.float32)
    item = {"array": wave, "sampling_rate": media.SAMPLE_RATE}
    (out,) = corrupt_media([item], wrapped_task.media_corruption(task, KEY), where=task.name)
    rng = variant_rng(f"worldsense/{KEY}", "probe:temporal_audio_shuffle", 0, 0)  # apply's seeding
    evidence = probes.Evidence(probes.BareItem(f"worldsense/{KEY}", None), "", "", None, wave, None, None)
    assert np.array_equal(out["array"], probes.temporal(evidence, "audio_shuffle", rng, None).audio)
    assert not np.array_equal(out["array"], wave)
    # a written file: the same bytes when written again from scratch
    first = Path(wrapped_file("probe_temporal_audio_gaps", clip))
    digest = hashlib.sha256(first.read_bytes()).hexdigest()
    first.unlink()
    again = Path(wrapped_file("probe_temporal_audio_gaps", clip))
    assert again == first and hashlib.sha256(again.read_bytes()).hexdigest() == digest
    assert len(read_back(str(again))[1]) == len(read_back(wrapped_file("clean", clip))[1]) + 3 * 8000


def test_probes_that_need_a_donor_or_a_record_field_are_refused_with_their_reason(wrap_cache):
    conditions = catalogue()
    with pytest.raises(wrap_configs.WrapNameError, match=r"needs a donor item \(random tier\)"):
        wrap_configs.write("worldsense", [conditions.get("probe_mismatch_vision_random")])
    probes_suite = wrap_configs.suite_conditions("sceval_probes")
    applies, skipped = wrap_configs.plan("worldsense", probes_suite)
    assert {c.probe.name for c in applies} == set(wrap_configs.DOC_PROBES)
    assert "key_frame_index" in skipped["probe_key_frame_first"]
    assert "unrelated tier" in skipped["probe_distractor_audio"]
    assert "evidence_modality" in skipped["probe_distractor_text"]
    parsed = wrap_configs.parse_name("worldsense__sceval_probes")
    assert [c.id for c in wrap_configs.selected_conditions(parsed)] == [c.id for c in applies]
    assert "worldsense__sceval_probes" in wrap_configs.tags("worldsense", conditions.get("probe_desync_plus1s"))
    # audio-only and still-image tasks keep only the probes of what they feed
    assert {c.id for c in wrap_configs.plan("clotho_aqa_test", probes_suite)[0]} == {
        "probe_temporal_audio_shuffle",
        "probe_temporal_audio_gaps",
    }
    applies, skipped = wrap_configs.plan("mme", probes_suite)
    assert applies == [] and "still image" in skipped["probe_frame_budget_4"]


def test_a_doc_the_probe_does_not_apply_to_is_shown_unchanged_and_its_trial_says_why(wrap_copies, wrap_cache):
    """clotho_aqa's clips last 1 s: too short to shuffle 1 s segments, long enough for gaps."""
    copy = wrap_copies.copies["clotho_aqa_test"]
    shuffle, gaps = (catalogue().get(f"probe_temporal_audio_{kind}") for kind in ("shuffle", "gaps"))
    wrap_configs.write(
        "clotho_aqa_test", [shuffle, gaps], wrap_configs.data_override("clotho_aqa_test", copy.dataset_path)
    )
    built, requests = _build(f"clotho_aqa_test__{shuffle.id}__var0")
    arguments, doc = requests[0]
    (audio,) = arguments[2](doc)
    source = np.asarray(doc["audio"]["array"], dtype=np.float32)
    assert np.array_equal(audio["array"], source)
    trial = built.process_results(doc, [doc["answer"]])["faultline_trial"]
    assert trial["not_applicable"] == "audio_too_short" and trial["condition_id"] == shuffle.id
    _, requests = _build(f"clotho_aqa_test__{gaps.id}__var0")
    (audio,) = requests[0][0][2](requests[0][1])
    rate = doc["audio"]["sampling_rate"]  # the copy's 44.1 kHz, kept (issue 36): gaps measured at it
    assert rate == audio["sampling_rate"] != media.SAMPLE_RATE
    assert len(audio["array"]) == len(source) + 3 * round(0.5 * rate)  # 3 gaps of 0.5 s


def test_report_gives_a_row_per_probe_condition_and_notes_what_did_not_apply(tmp_path):
    docs = [worldsense_doc(i) for i in range(8)]
    conditions = {"clean": 1, "probe_desync_plus1s": 1, "probe_temporal_frame_reverse": 1}
    runs = tmp_path / "runs"
    write_run(runs, "listener", "worldsense", docs, listener, conditions, date="20261202_070200")
    log = runs / "listener" / "20261202_070200_samples_worldsense__probe_temporal_frame_reverse__var0.jsonl"
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    for line in lines[:2]:
        line["faultline_trial"]["not_applicable"] = "single_frame"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    build_report([runs], tmp_path / "r", b=100, seed=1, progress=False, figures=False)
    raw = pd.read_csv(tmp_path / "r" / "task_metrics_worldsense.csv")
    assert set(conditions) <= set(raw["condition_id"])
    _, notes = metric_rows(read_wrapped_runs([runs]), b=50, seed=1)
    assert any(
        "probe_temporal_frame_reverse: the probe did not apply to 2 of 8 trials (single_frame (2))" in n for n in notes
    )
