"""The mechanism probes (Table 17, G.9-G.11): what each shows, the donor hook, the schema's key
frame, and how the offline reference model reacts to them through the real task functions."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from c3po_fixtures import write_mp4
from fixtures import copy_demo

from faultline_eval.core.media import SAMPLE_RATE
from faultline_eval.model_wrappers.reference import answer_messages
from faultline_eval.tasks import sceval_task as task
from faultline_eval.tasks.sceval_configs import tags
from sceval_plugin import probe_conditions as probes
from sceval_plugin.conditions import Condition, ConditionRegistry, catalogue
from sceval_plugin.data.records import RecordError, check_media, item_from_row
from sceval_plugin.data.sources import load_source
from sceval_plugin.plugins import PluginError
from sceval_plugin.render import render

ITEMS = load_source("demo").items
BY_ID = {it.sample_id: it for it in ITEMS}
PICKER = probes.DonorPicker(ITEMS)


def cond(cid):
    return catalogue().get(cid)


def shown(cid, sample_id="demo-count-03"):
    return render(BY_ID[sample_id], cond(cid), 0, donors=PICKER)


# --- the catalogue ----------------------------------------------------------------------------


def test_every_table_17_condition_is_in_the_catalogue_with_its_tags():
    ids = {c.id for c in catalogue() if c.block == "probe" and "probe_option" not in c.suites}
    expected = {f"probe_{probes.ProbeCall(n, p).id}" for n, ps in probes.PARAMETERS.items() for p in ps}
    assert ids == expected and len(ids) == 35
    # the other readings are conditions too, run by name or by their own tag, never in sceval_probes
    options = {c.id: tags(c) for c in catalogue() if "probe_option" in c.suites}
    assert set(options) == {
        "probe_temporal_middle_drop_1",
        "probe_distractor_appended_audio",
        "probe_distractor_appended_frame",
        "probe_distractor_appended_text",
    }
    assert all(t == ["sceval_probe_options", "sceval_all"] for t in options.values())
    assert "probe_desync_minus0p5s" in ids and "probe_frame_budget_default" in ids
    c = cond("probe_mismatch_vision_answer")
    assert c.plugin.startswith("'sceval_plugin.probe_conditions'") and "sceval_probes_mismatch" in tags(c)
    assert {t for c in catalogue() if c.block == "probe" for t in tags(c) if t.startswith("sceval_probes_")} == {
        f"sceval_probes_{f}" for f in probes.PROBE_FAMILIES
    }


def test_a_probe_condition_must_name_a_registered_probe_and_a_valid_parameter():
    registry = ConditionRegistry()
    registry.add(probes.probe_condition("desync", 0.25))  # a value outside the defaults is allowed
    with pytest.raises(PluginError, match="unknown probe"):
        registry.add(Condition("probe_x", "probe", probe=probes.ProbeCall("no_such_probe", 1)))
    with pytest.raises(PluginError, match="frame budget"):
        registry.add(Condition("probe_y", "probe", probe=probes.ProbeCall("frame_budget", 0)))
    with pytest.raises(PluginError, match="block 'probe'"):
        registry.add(Condition("probe_z", "clean", probe=probes.ProbeCall("desync", 1.0)))


# --- what each probe shows ----------------------------------------------------------------------


def test_desync_shifts_the_audio_with_silence_and_keeps_its_length():
    clean = BY_ID["demo-count-03"].waveform()
    late, early = shown("probe_desync_plus1s").audio, shown("probe_desync_minus0p5s").audio
    assert late.shape == early.shape == clean.shape
    assert not late[:SAMPLE_RATE].any() and np.array_equal(late[SAMPLE_RATE:], clean[:-SAMPLE_RATE])
    half = SAMPLE_RATE // 2
    assert np.array_equal(early[:-half], clean[half:]) and not early[-half:].any()
    assert np.array_equal(shown("probe_desync_plus1s").frames, BY_ID["demo-count-03"].frames())


def test_temporal_probes_reorder_or_drop_frames_and_shuffle_audio_segments():
    item = BY_ID["demo-count-03"]
    frames = item.frames()
    shuffled = shown("probe_temporal_frame_shuffle").frames
    assert not np.array_equal(shuffled, frames)
    assert sorted(f.tobytes() for f in shuffled) == sorted(f.tobytes() for f in frames)
    assert np.array_equal(shown("probe_temporal_frame_reverse").frames, frames[::-1])
    # "drop middle frames" (G.10): the middle third, centred (5 frames: 2 dropped), first and last kept;
    # middle_drop_1 is the single middle frame
    assert np.array_equal(shown("probe_temporal_middle_drop").frames, frames[[0, 3, 4]])
    assert np.array_equal(shown("probe_temporal_middle_drop_1").frames, frames[[0, 1, 3, 4]])
    # audio: the same 1 s segments in another order (a two-tone item, whose segments differ)
    audio, wave = shown("probe_temporal_audio_shuffle", "demo-order-02").audio, BY_ID["demo-order-02"].waveform()
    segments = lambda w: sorted(w[i : i + SAMPLE_RATE].tobytes() for i in range(0, len(w), SAMPLE_RATE))  # noqa: E731
    assert not np.array_equal(audio, wave) and segments(audio) == segments(wave)
    # the same trial in another process would draw the same order: a pure function of the sample id
    assert np.array_equal(shown("probe_temporal_frame_shuffle").frames, shuffled)


def test_audio_gaps_insert_silence_at_seeded_points_and_keep_every_sample_in_order():
    wave = BY_ID["demo-order-02"].waveform()
    gapped = shown("probe_temporal_audio_gaps", "demo-order-02").audio
    count, seconds = probes.AUDIO_GAPS
    gap = int(seconds * SAMPLE_RATE)
    assert len(gapped) == len(wave) + count * gap
    # the clip's own sounds, in order, once the silences are taken out
    assert np.array_equal(gapped[gapped != 0], wave[wave != 0]) and not np.array_equal(gapped[: len(wave)], wave)
    assert np.array_equal(shown("probe_temporal_audio_gaps", "demo-order-02").audio, gapped)  # deterministic
    other = render(BY_ID["demo-order-02"], probes.probe_condition("temporal", "audio_gaps_2x1s"), 0).audio
    assert len(other) == len(wave) + 2 * SAMPLE_RATE
    with pytest.raises(ValueError, match="audio_gaps_<count>x<seconds>s"):
        probes.probe_condition("temporal", "audio_gaps_2x0s")


def test_probes_that_need_frames_do_not_apply_to_a_single_image_and_say_why():
    for cid, reason in (
        ("probe_temporal_frame_shuffle", "single_frame"),
        ("probe_temporal_middle_drop", "too_few_frames"),
        ("probe_frame_budget_1", "single_frame"),
        ("probe_key_frame_first", "single_frame"),
    ):
        t = shown(cid, "demo-size-00")
        assert t.not_applicable == reason and t.frames.shape[0] == 1
    assert shown("probe_desync_plus1s", "demo-size-00").not_applicable is None


def test_key_frame_is_moved_and_the_frame_set_is_kept():
    item = BY_ID["demo-count-03"]
    k, frames = item.key_frame_index, item.frames()
    assert k == item.hidden["beeps"] - 1
    for position, index in (("first", 0), ("middle", 2), ("last", 4)):
        out = shown(f"probe_key_frame_{position}").frames
        assert np.array_equal(out[index], frames[k])
        assert np.array_equal(np.delete(out, index, axis=0), np.delete(frames, k, axis=0))


def test_frame_budget_samples_a_frame_list_and_redecodes_a_video(tmp_path):
    frames = BY_ID["demo-count-03"].frames()
    assert np.array_equal(shown("probe_frame_budget_1").frames, frames[[0]])
    assert np.array_equal(shown("probe_frame_budget_4").frames, frames[[0, 1, 2, 3]])
    for cid in ("probe_frame_budget_8", "probe_frame_budget_16", "probe_frame_budget_default"):
        assert np.array_equal(shown(cid).frames, frames)  # frames cannot be invented
    write_mp4(tmp_path / "media" / "clip.mp4", frames=12, fps=2)  # 6 s: F.2 takes 6 frames at 1 fps
    (tmp_path / "media" / "a.wav").write_bytes(b"")
    row = {
        "sample_id": "v1",
        "question": "q?",
        "options": ["a", "b"],
        "gold_key": "A",
        "visual": "media/clip.mp4",
        "audio": "media/a.wav",
    }
    video = item_from_row(row, tmp_path)
    assert len(video.frames()) == 6
    budget = video.frames_at_budget(4)
    assert len(budget.frames) == 4 and budget.times == pytest.approx([0, 1.5, 3, 4.5], abs=0.01)
    assert len(video.frames_at_budget(16).frames) == 12  # every decoded frame once the budget exceeds them


def test_distractors_go_into_items_otherwise_sufficient_without_them(tmp_path):
    """G.11: unrelated audio into text-visual items, unrelated frames into text-audio items,
    misleading text into visual-audio items. The demo's items need audio and visual."""
    item = BY_ID["demo-count-03"]
    assert shown("probe_distractor_audio").not_applicable == "needs_audio"
    assert shown("probe_distractor_image").not_applicable == "needs_visual"
    text = shown("probe_distractor_text")
    wrong = {t for k, t in item.options if k != item.gold_key}
    assert text.not_applicable is None and text.donor_id is None and text.question == item.question
    assert any(f"“{t}”" in text.context for t in wrong)
    assert f"“{dict(item.options)[item.gold_key]}”" not in text.context
    # an item whose evidence is text and visual takes an unrelated item's audio in place of its own,
    # one that needs text and audio takes the donor's frames (all of them)
    hidden = {**item.hidden, "evidence_modality": "text+visual"}
    tv = dataclasses.replace(item, hidden=hidden)
    picker = probes.DonorPicker([tv, *[it for it in ITEMS if it.sample_id != tv.sample_id]])
    audio = render(tv, cond("probe_distractor_audio"), 0, donors=picker)
    donor = BY_ID[audio.donor_id]
    assert (donor.source, donor.category) != (item.source, item.category)  # "unrelated"
    assert np.array_equal(audio.audio, donor.waveform()) and np.array_equal(audio.frames, item.frames())
    assert render(tv, cond("probe_distractor_image"), 0, donors=picker).not_applicable == "needs_visual"
    assert render(tv, cond("probe_distractor_text"), 0, donors=picker).not_applicable == "needs_text"
    ta = dataclasses.replace(item, hidden={**item.hidden, "evidence_modality": "text+audio"})
    image = render(ta, cond("probe_distractor_image"), 0, donors=probes.DonorPicker([ta, *ITEMS[1:]]))
    assert np.array_equal(image.frames, BY_ID[image.donor_id].frames()) and np.array_equal(image.audio, item.waveform())


def test_appended_distractors_add_a_donor_clip_frame_or_sentence_next_to_the_real_evidence():
    item = BY_ID["demo-count-03"]
    audio = shown("probe_distractor_appended_audio")
    donor = BY_ID[audio.donor_id]
    assert (donor.source, donor.category) != (item.source, item.category)  # "unrelated"
    n = len(item.waveform())
    assert np.array_equal(audio.audio[:n], item.waveform()) and len(audio.audio) > n
    image = shown("probe_distractor_appended_frame")
    assert np.array_equal(image.frames[:-1], item.frames()) and len(image.frames) == len(item.frames()) + 1
    text = shown("probe_distractor_appended_text")
    assert text.question == item.question and BY_ID[text.donor_id].question.strip() in text.context


def test_mismatch_replaces_one_modality_with_the_donors():
    item = BY_ID["demo-order-02"]
    v = shown("probe_mismatch_vision_category", item.sample_id)
    donor = BY_ID[v.donor_id]
    assert donor.category == item.category and donor.sample_id != item.sample_id
    assert np.array_equal(v.frames, donor.frames()) and np.array_equal(v.audio, item.waveform())
    a = shown("probe_mismatch_audio_random", item.sample_id)
    assert np.array_equal(a.audio, BY_ID[a.donor_id].waveform()) and np.array_equal(a.frames, item.frames())
    t = shown("probe_mismatch_text_answer", item.sample_id)
    assert t.question == BY_ID[t.donor_id].question and t.options == item.options


# --- the donor hook -----------------------------------------------------------------------------


def test_donors_are_a_pure_function_of_sample_probe_and_seed_and_fit_their_tier():
    call = probes.ProbeCall("mismatch_vision", "answer")
    picks = {it.sample_id: PICKER(it.sample_id, call, 0) for it in ITEMS}
    reordered = probes.DonorPicker(list(reversed(ITEMS)))  # the dataset's order does not matter
    assert all(
        reordered(s, call, 0) is not None and reordered(s, call, 0).sample_id == (d and d.sample_id)
        for s, d in picks.items()
        if d
    )
    for sample_id, donor in picks.items():
        if donor is None:
            continue
        item = BY_ID[sample_id]
        assert donor.sample_id != sample_id and donor.visual_kind == item.visual_kind
        assert probes.gold_text(donor) != probes.gold_text(item)
        assert probes.option_key_of(item, probes.gold_text(donor)) is not None
    assert len({PICKER("demo-count-03", call, seed).sample_id for seed in range(6)}) > 1
    # an item with no donor of its tier is recorded as not applicable, not dropped
    lonely = [s for s, d in picks.items() if d is None]
    assert all(
        render(BY_ID[s], cond("probe_mismatch_vision_answer"), donors=PICKER).not_applicable == "no_donor"
        for s in lonely
    )
    with pytest.raises(ValueError, match="needs a donor"):
        render(ITEMS[0], cond("probe_mismatch_vision_answer"))


def test_task_rows_carry_the_donor_and_records_what_following_it_means():
    rows, _ = task.build_rows(cond("probe_mismatch_audio_answer"))
    doc = next(r for r in rows if r["donor"])
    donor, item = task._item(doc["donor"]), task._item(doc["item"])
    assert donor.sample_id == PICKER(item.sample_id, cond("probe_mismatch_audio_answer").probe, 0).sample_id
    follow = probes.option_key_of(item, probes.gold_text(donor))
    out = task.process_results(doc, [json.dumps({"answer": follow, "confidence": "high"})])
    probe = out["sceval_record"]["probe"]
    assert probe["family"] == "mismatch" and probe["parameter"] == "answer" and probe["donor"] == donor.sample_id
    assert probe["follows_donor_key"] == follow != item.gold_key
    entry = out["sceval_accuracy"]
    assert (entry["donor"], entry["follows_donor_key"], entry["answer_key"], entry["correct"]) == (
        donor.sample_id,
        follow,
        follow,
        0,
    )
    assert len(entry["donor_key_map"]) == len(donor.options)


def test_an_item_whose_media_do_not_decode_is_never_a_donor(tmp_path, monkeypatch):
    folder = copy_demo(tmp_path / "broken", 6)
    rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    audio = folder / rows[0]["audio"]
    audio.write_bytes(audio.read_bytes()[:2000])  # its header reads, its samples do not
    monkeypatch.setenv("SCEVAL_SOURCE", str(folder))
    monkeypatch.setenv("SCEVAL_ON_BAD_INPUT", "exclude")
    broken = rows[0]["sample_id"]  # demo-count-00; the other count item is demo-count-05
    rows, excluded = task.build_rows(cond("probe_mismatch_audio_category"))
    assert excluded["media_unreadable"] == 1 and len(rows) == 5
    donors = {r["sample_id"]: r["donor"] and task._item(r["donor"]).sample_id for r in rows}
    assert broken not in donors.values() and donors["demo-count-05"] == ""  # its only category-mate is broken
    for doc in rows:
        task.doc_to_messages(doc)  # every trial renders


# --- the schema ---------------------------------------------------------------------------------


def test_the_demo_names_every_items_key_frame_and_category():
    for it in ITEMS:
        assert it.category == it.hidden["family"] and 0 <= it.key_frame_index < len(it.frames())


def test_key_frame_index_accepts_what_parquet_writes(tmp_path):
    row = dict(json.loads((copy_demo(tmp_path, 1) / "items.jsonl").read_text()))
    for value, expected in ((np.int64(3), 3), (3.0, 3), (float("nan"), None), (None, None)):
        assert item_from_row({**row, "key_frame_index": value}, tmp_path).key_frame_index == expected


@pytest.mark.parametrize(
    "value, problem",
    [
        (-1, "expected a frame index"),
        (True, "expected a frame index"),
        ("2", "expected a frame index"),
        (2.5, "expected a frame index"),
        (5, "past the last"),
    ],
)
def test_key_frame_index_is_validated_naming_sample_and_field(value, problem, tmp_path):
    row = dict(json.loads((copy_demo(tmp_path, 1) / "items.jsonl").read_text()))  # a 5-frame count item
    row["key_frame_index"] = value
    with pytest.raises(RecordError, match=f"{row['sample_id']}.*'key_frame_index'.*{problem}"):
        item_from_row(row, tmp_path)


def test_a_video_key_frame_is_checked_against_the_decoded_frames(tmp_path):
    write_mp4(tmp_path / "clip.mp4", frames=6, fps=2)  # 3 s: 3 frames
    from faultline_eval.core import media

    media.write_audio(tmp_path / "a.wav", np.zeros(SAMPLE_RATE, np.float32))
    row = {
        "sample_id": "v2",
        "question": "q?",
        "options": ["a", "b"],
        "gold_key": "A",
        "visual": "clip.mp4",
        "audio": "a.wav",
        "key_frame_index": 5,
    }
    with pytest.raises(RecordError, match="'v2'.*'key_frame_index'.*3 frames decoded"):
        check_media(item_from_row(row, tmp_path))
    from faultline_eval.core.intake import decode_problem
    from sceval_plugin.data.sources import media_paths

    assert decode_problem(item_from_row(row, tmp_path), check_media, media_paths).reason == "record"


def test_items_without_a_key_frame_are_not_applicable_not_dropped(tmp_path, monkeypatch):
    folder = copy_demo(tmp_path / "nokey", 6, mutate=lambda r: r.pop("key_frame_index"))
    monkeypatch.setenv("SCEVAL_SOURCE", str(folder))
    rows, excluded = task.build_rows(cond("probe_key_frame_last"))
    assert len(rows) == 6 and not excluded
    entries = [task.process_results(r, ['{"answer": "A"}'])["sceval_accuracy"] for r in rows]
    assert {e.get("not_applicable") for e in entries} <= {"no_key_frame", "single_frame"} and len(entries) == 6
    assert all("not_applicable" in e for e in entries)


# --- the reference model reacts as its design implies --------------------------------------------


def reference_accuracy(cid: str, family: str | None = None) -> float:
    """The offline reference model's accuracy on ``cid`` over the applicable demo trials (of one
    item family), through the task's own messages."""
    rows, _ = task.build_rows(cond(cid))
    scores = []
    for doc in rows:
        if family and not doc["sample_id"].startswith(f"demo-{family}"):
            continue
        entry = task.process_results(doc, [answer_messages(task.doc_to_messages(doc))])["sceval_accuracy"]
        if "not_applicable" not in entry:
            scores.append(entry["correct"])
    return sum(scores) / len(scores)


def test_the_reference_counts_beeps_whatever_their_order_but_reads_frames_by_position():
    assert reference_accuracy("clean", "count") == 1.0
    assert reference_accuracy("probe_temporal_audio_shuffle", "count") == 1.0  # a count ignores order
    assert reference_accuracy("probe_temporal_frame_reverse", "count") <= 0.5  # frame k is another frame
    assert reference_accuracy("probe_temporal_audio_shuffle", "order") <= 0.5  # tones move to other seconds


def test_the_reference_breaks_with_desync_where_it_matches_frame_to_tone():
    assert reference_accuracy("probe_desync_plus0p5s", "order") == 1.0  # still inside the same second
    # a tone now starts under the next (or previous) frame; what is left right is a lucky guess
    assert reference_accuracy("probe_desync_minus1s", "order") <= 0.6
    assert reference_accuracy("probe_desync_plus1s", "order") <= 0.6
    assert reference_accuracy("probe_desync_plus1s", "count") == 1.0  # every beep still inside the clip
    assert reference_accuracy("probe_desync_minus0p5s", "count") <= 0.2  # the first beep is cut off
    assert reference_accuracy("probe_desync_plus1s", "size") == 1.0  # one long tone: pitch, not timing


def test_the_reference_ignores_an_extra_frame_and_text_but_counts_a_distractors_beeps():
    assert reference_accuracy("probe_distractor_appended_frame") == 1.0
    assert reference_accuracy("probe_distractor_appended_text") == 1.0  # it reads the question, not the context
    assert reference_accuracy("probe_distractor_text") == 1.0  # misleading text too
    assert reference_accuracy("probe_distractor_appended_audio", "count") <= 0.5
    assert reference_accuracy("probe_frame_budget_1", "count") <= 0.5
    assert reference_accuracy("probe_frame_budget_16") == 1.0


# --- a third party's probe --------------------------------------------------------------------

ECHO_PROBE = '''
import numpy as np
from dataclasses import replace
from sceval_plugin import hookimpl
from sceval_plugin.probe_conditions import probe, probe_condition

@probe("echo_donor", family="distractor", parameters=(0.5,), check=float, donor="category",
       describe=lambda gain: f"a same-category donor's audio mixed in at gain {gain:g}")
def echo_donor(evidence, gain, rng, donor):
    """Mix a donor's audio into the item's (a third-party distractor)."""
    other = np.resize(donor.waveform(), evidence.audio.shape)
    return replace(evidence, audio=(evidence.audio + gain * other).astype(np.float32))

@hookimpl
def sceval_register_probes(registry):
    registry.add(echo_donor)

@hookimpl
def sceval_register_conditions(registry):
    registry.add(probe_condition("echo_donor", 0.5))
    registry.add(probe_condition("desync", 0.25))
'''


@pytest.mark.slow
def test_a_third_party_probe_gets_its_donor_through_the_hook_and_runs_in_lmms_eval(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from test_plugins import install

    site = install(tmp_path, "sceval-echo-probe", "sceval_echo_probe", ECHO_PROBE)
    env = {**os.environ, "PYTHONPATH": str(site), "SCEVAL_CACHE": str(tmp_path / "cache")}
    tasks = "sceval_probe_echo_donor_0p5,sceval_probe_desync_plus0p25s"
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("lmms-eval")),
            "--model",
            "sceval_reference",
            "--tasks",
            tasks,
            "--limit",
            "4",
            "--log_samples",
            "--output_path",
            "out/",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = next((tmp_path / "out").rglob("*_samples_sceval_probe_echo_donor_0p5.jsonl")).read_text().splitlines()
    records = [json.loads(line)["sceval_record"] for line in lines]
    assert len(records) == 4
    for r in records:
        donor = r["probe"]["donor"]
        assert r["probe"]["family"] == "distractor" and donor and donor != r["sample_id"]
        assert donor.rsplit("-", 1)[0] == r["sample_id"].rsplit("-", 1)[0]  # the category tier: same family
