"""Records, the four sources (demo, local, the authors' release, lmms-eval's omni_bench), the
annotation manifest."""

from __future__ import annotations

import json
import re

import av
import numpy as np
import pytest
from fixtures import copy_demo, demo_rows, omni_bench_fixture, release_fixture

from faultline_eval.core import media
from sceval_plugin import operators
from sceval_plugin.conditions import catalogue
from sceval_plugin.data.manifest import ManifestError, parse_manifest
from sceval_plugin.data.records import RecordError, check_media, item_from_row
from sceval_plugin.data.sources import DEMO_DIR, SourceError, load_source
from sceval_plugin.render import render


def test_demo_is_small_tri_modal_and_complete():
    source = load_source("demo")
    assert len(source.items) == 30
    assert {i.hidden["family"] for i in source.items} == {"count", "order", "size"}
    total = sum(p.stat().st_size for p in DEMO_DIR.rglob("*") if p.is_file())
    assert total < 5_000_000
    for item in source.items:
        check_media(item)
        assert 1 <= item.frames().shape[0] <= 8 and item.frames().shape[-1] == 3
        assert item.waveform().dtype == np.float32 and item.waveform().size > 16_000
        assert item.hidden["license"] == "CC0-1.0"


def test_demo_generator_reproduces_the_committed_set(tmp_path):
    from sceval_plugin.data.make_demo import generate

    generate(tmp_path)
    assert (tmp_path / "items.jsonl").read_text() == (DEMO_DIR / "items.jsonl").read_text()
    committed = sorted(p.relative_to(DEMO_DIR) for p in (DEMO_DIR / "media").rglob("*.png"))
    for rel in committed:
        assert (tmp_path / rel).read_bytes() == (DEMO_DIR / rel).read_bytes(), rel


def test_local_folder_jsonl_and_parquet(tmp_path):
    import datasets

    folder = copy_demo(tmp_path / "local", 6)
    a = load_source(str(folder))
    assert [i.sample_id for i in a.items] == [r["sample_id"] for r in demo_rows(6)]
    table = datasets.load_dataset("json", data_files=str(folder / "items.jsonl"), split="train")
    table.to_parquet(str(folder / "items.parquet"))
    (folder / "items.jsonl").unlink()
    b = load_source(str(folder / "items.parquet"))
    assert [i.question for i in b.items] == [i.question for i in a.items]
    assert np.array_equal(a.items[0].frames(), b.items[0].frames())


def test_a_long_clip_is_sampled_uniformly_from_start_to_end(tmp_path, monkeypatch):
    folder = tmp_path / "video"
    rows = demo_rows(1)
    (folder / "clips").mkdir(parents=True)
    with av.open(str(folder / "clips" / "c.mp4"), "w") as container:
        stream = container.add_stream("mpeg4", rate=4)
        stream.width, stream.height, stream.pix_fmt = 160, 120, "yuv420p"
        for i in range(40):  # 10 s at 4 fps
            frame = np.full((120, 160, 3), 20 * (i // 4), np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    copy_demo(folder, 1, mutate=lambda r: r.update(visual="clips/c.mp4"))
    item = load_source(str(folder)).items[0]
    frames = item.frames()
    assert item.visual_kind == "video" and frames.shape == (8, 120, 160, 3)
    # App. F.2: 8 frames spread over the 10 s clip (frame i at i * 10/8 s), not its first 8 s
    assert item.frame_times() == (0.0, 1.25, 2.5, 3.75, 5.0, 6.25, 7.5, 8.75)
    levels = frames.reshape(8, -1).mean(axis=1)
    assert np.allclose(levels, 20 * np.floor(np.array(item.frame_times())), atol=3), "the frames at those times"
    assert rows[0]["sample_id"] == item.sample_id
    # the times are in the record and in what the model is told
    from faultline_eval.tasks import sceval_task as task

    monkeypatch.setenv("SCEVAL_SOURCE", str(folder))
    doc = task.build_rows(catalogue().get("clean"))[0][0]
    assert "taken at 0, 1.25, 2.5, 3.75, 5, 6.25, 7.5, 8.75 s into the clip" in task.doc_to_text(doc)
    assert task.process_results(doc, ["A"])["sceval_record"]["frame_times_s"] == item.frame_times()
    # the head-of-clip policy stays available as a setting
    head = media.read_video_frames(folder / "clips" / "c.mp4", sampling="head")
    assert head.times == (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)
    monkeypatch.setenv("FAULTLINE_FRAME_SAMPLING", "head")
    assert media.read_video_frames(folder / "clips" / "c.mp4").times == head.times


def test_frame_times_follow_the_paper_for_short_and_long_clips():
    assert media.sample_times(0.4) == [0.0]
    assert media.sample_times(5.0) == [0.0, 1.0, 2.0, 3.0, 4.0]  # shorter than 8 s: every 1 fps frame
    assert media.sample_times(5.5) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert media.sample_times(8.0) == [float(i) for i in range(8)]
    assert media.sample_times(80.0) == [10.0 * i for i in range(8)]
    assert media.sample_times(80.0, sampling="head") == [float(i) for i in range(8)]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"visual": "../../etc/passwd.png"}, "escapes the dataset root"),
        ({"audio": "/etc/hostname"}, "escapes the dataset root"),
        ({"gold_key": "E"}, "'gold_key': 'E' is not one of the option keys"),
        ({"question": ""}, "'question': missing or empty"),
        ({"options": ["only one"]}, "expected 2-4 options"),
        ({"options": {"A": "x", "C": "y"}}, "keys must be A, B"),
        ({"audio": None}, "'audio': missing"),
        ({"visual": [f"f{i}.png" for i in range(9)]}, "9 frames; the protocol allows at most 8"),
        ({"sample_id": None}, "without a usable 'sample_id'"),
    ],
)
def test_bad_records_name_the_sample_and_field(tmp_path, change, message):
    row = {**demo_rows(1)[0], **change}
    with pytest.raises(RecordError, match=message):
        item_from_row(row, DEMO_DIR)


def test_broken_media_names_the_sample_and_file(tmp_path):
    folder = copy_demo(tmp_path / "broken", 2)
    first = demo_rows(2)[0]
    (folder / first["audio"]).write_bytes(b"not audio")
    source = load_source(str(folder))
    assert [i.sample_id for i in source.items] == [demo_rows(2)[1]["sample_id"]]
    [problem] = source.problems
    assert problem.sample_id == first["sample_id"] and problem.reason == "media_unreadable"
    assert re.search(
        rf"sample '{first['sample_id']}': field 'audio': .*audio.flac: cannot decode audio", problem.detail
    )
    with pytest.raises(
        RecordError, match=rf"sample '{first['sample_id']}': field 'audio': .*audio.flac: cannot decode audio"
    ):
        check_media(item_from_row(first, folder))


def test_duplicate_ids_and_missing_items_are_refused(tmp_path):
    folder = copy_demo(tmp_path / "dup", 2)
    rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows + rows[:1]))
    source = load_source(str(folder))
    assert len(source.items) == 2
    assert [str(p) for p in source.problems] == [
        f"record: sample {rows[0]['sample_id']!r}: duplicate sample_id (items.jsonl line 3)"
    ]
    with pytest.raises(SourceError, match="does not exist; give 'demo', 'hf:"):
        load_source(str(tmp_path / "nowhere"))


def test_release_in_apply_mode_gives_the_baseline_items(tmp_path):
    folder = release_fixture(tmp_path / "release")
    source = load_source(f"hf:{folder}", "apply")
    assert source.released is None and len(source.items) == 3
    demo = {r["sample_id"]: r for r in demo_rows(3)}
    for item in source.items:
        assert item.question == demo[item.sample_id]["question"]
        assert dict(item.options) == demo[item.sample_id]["options"]
        assert np.array_equal(
            item.frames(),
            load_source("demo").items[[i.sample_id for i in load_source("demo").items].index(item.sample_id)].frames(),
        )


def test_release_in_released_mode_maps_variants_to_our_conditions(tmp_path):
    folder = release_fixture(tmp_path / "release")
    source = load_source(f"hf:{folder}", "released")
    by_condition = {}
    for row in source.released:
        by_condition.setdefault(row.condition_id, []).append(row)
    assert set(by_condition) == {"single_noise_v70", "bi_ta_drop_words_mute_t70_a50"}
    assert all(c in catalogue() for c in by_condition)
    for row in by_condition["single_noise_v70"]:
        clean = next(i for i in source.items if i.sample_id == row.item.sample_id)
        ours = operators.apply("noise", clean.frames(), severity=70, variant=row.variant, key=row.item.sample_id)
        assert np.array_equal(row.item.frames(), ours), "released media are used as they are"
        assert dict(row.item.options) == dict(clean.options), "'A. text' options are unprefixed"


def test_omni_bench_adapter_turns_docs_into_records(tmp_path, monkeypatch):
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    folder = omni_bench_fixture(tmp_path / "omni")
    source = load_source(f"lmms:omni_bench@{folder}")
    demo = demo_rows(3)
    assert [i.source for i in source.items] == ["omni_bench"] * 3
    for item, row in zip(source.items, demo):
        assert item.question == row["question"] and item.gold_key == row["gold_key"]
        assert item.frames().shape[0] == 1 and item.waveform().size > 0
        trial = render(item, catalogue().get("bi_tv_drop_words_noise_t30_v70"), 1)
        assert trial.frames.shape == item.frames().shape and trial.question != item.question
    with pytest.raises(SourceError, match="no adapter for lmms-eval task 'mmmu'"):
        load_source("lmms:mmmu")


def test_manifest_excludes_and_names_reasons(tmp_path):
    path = tmp_path / "manifest.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(e)
            for e in [
                {"sample_id": "s1", "valid": False},
                {"sample_id": "s2", "answerable": False},
                {"sample_id": "s3", "operator": "noise", "severity": 70, "variant": 2, "interpretable": False},
                {"sample_id": "s3", "operator": "mute", "severity": 50, "variant": 0, "gold_preserved": False},
            ]
        )
    )
    manifest = parse_manifest(path)
    noise70 = catalogue().get("single_noise_v70")
    joint = catalogue().get("bi_va_noise_mute_v70_a50")
    assert manifest.exclusion_reason("s1", noise70, 0) == "sample_invalid"
    assert manifest.exclusion_reason("s2", catalogue().get("clean"), 0) == "sample_unanswerable"
    assert manifest.exclusion_reason("s3", noise70, 2) == "cell_uninterpretable:noise@70"
    assert manifest.exclusion_reason("s3", noise70, 1) is None
    assert manifest.exclusion_reason("s3", joint, 0) == "cell_gold_not_preserved:mute@50"
    bad = tmp_path / "bad.json"
    bad.write_text('{"cells": [{"sample_id": "s"}]}')
    with pytest.raises(ManifestError, match=r"cells\[0\] needs sample_id, operator, severity"):
        parse_manifest(bad)


def test_a_task_build_hashes_its_items_once_however_many_trials(monkeypatch):
    """The dataset fingerprint hashes every item: taken per trial it made a task build
    O(items x trials), the throughput loss at scale of issue 15."""
    from faultline_eval.tasks import sceval_task as task
    from sceval_plugin.data.sources import Source

    computed = []
    fingerprint = Source.fingerprint.fget
    monkeypatch.setattr(Source, "fingerprint", property(lambda self: computed.append(1) or fingerprint(self)))
    rows, _ = task.build_rows(catalogue().get("bi_tv_drop_words_noise_t30_v70"))
    source = load_source()
    assert len(rows) == 3 * len(source.items) and len(computed) == 1
    assert {row["dataset"] for row in rows} == {f"{source.spec}#{fingerprint(source)}"}
