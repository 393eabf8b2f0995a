"""C3PO records and sources: every bad record is reported by sample id before any model call."""

from __future__ import annotations

import json

import pytest
from c3po_fixtures import item, write_items, write_media

from c3po_plugin.data import sources
from c3po_plugin.data.records import item_from_row
from c3po_plugin.templates import registry
from sceval_plugin.data.records import RecordError
from sceval_plugin.data.sources import SourceError


@pytest.fixture(autouse=True)
def fresh_sources(monkeypatch):
    sources._load_source.cache_clear()
    monkeypatch.delenv(sources.BAD_INPUT_ENV, raising=False)
    yield
    sources._load_source.cache_clear()


def test_a_valid_record_for_every_tier_loads_with_its_media(tmp_path):
    paths = write_media(tmp_path)
    rows = [
        item(f"s{t.tier}{t.id}", t.id, paths, distractors={"audio": "blue"}, difficulty=4, human_answer="Red")
        for t in registry()
    ]
    write_items(tmp_path, rows)
    source = sources.load_source(str(tmp_path))
    assert not source.problems and len(source.items) == 25
    it = next(i for i in source.items if i.template.tier == 3)
    assert it.frames().shape[1:] == (48, 64, 3) and it.picture().shape == (32, 32, 3) and it.waveform().size == 16_000
    assert it.distractors == {"audio": "blue"} and it.human_answer == "Red" and it.difficulty == 4


@pytest.mark.parametrize(
    "change, field, words",
    [
        (lambda r: r.pop("audio"), "audio", "missing: template AttributeComposition (tier 1) needs image, audio"),
        (lambda r: r.update(video="media/clip.mp4"), "video", "has no video"),
        (lambda r: r.update(template="NoSuchTemplate"), "template", "unknown template 'NoSuchTemplate'"),
        (lambda r: r.update(tier=2), "tier", "contradicts template AttributeComposition (tier 1)"),
        (lambda r: r.update(category="cc"), "category", "contradicts"),
        (lambda r: r.update(answer=" "), "answer", "missing or empty"),
        (lambda r: r.update(image="../outside.png"), "image", "escapes the dataset root"),
        (lambda r: r.update(image="media/tone.wav"), "image", "is not a image file"),
        (lambda r: r.update(distractors={"smell": "x"}), "distractors", "unknown ['smell']"),
        (lambda r: r.update(difficulty=11), "difficulty", "integer 1-10"),
    ],
)
def test_bad_records_name_the_sample_and_field(tmp_path, change, field, words):
    row = item("bad-1", "AttributeComposition", write_media(tmp_path))
    change(row)
    with pytest.raises(RecordError) as caught:
        item_from_row(row, tmp_path)
    message = str(caught.value)
    assert "'bad-1'" in message and f"'{field}'" in message and words in message


def test_every_problem_is_listed_before_any_model_call_or_the_rest_runs_with_exclude(tmp_path, monkeypatch):
    paths = write_media(tmp_path)
    (tmp_path / "media" / "broken.png").write_bytes(b"not a png")
    rows = [
        item("good", "CC08", paths),
        item("no-audio", "CC08", paths, audio=None),
        {**item("what-template", "CC08", paths), "template": "XX99"},
        item("broken-image", "IC01", {**paths, "image": "media/broken.png"}),
        item("good", "CC08", paths),  # duplicate id
    ]
    write_items(tmp_path, rows)
    with pytest.raises(SourceError) as caught:
        sources.checked_items(str(tmp_path))
    message = str(caught.value)
    assert "4 bad record(s), found before any model call" in message
    for sample in ("no-audio", "what-template", "broken-image", "duplicate sample_id"):
        assert sample in message
    monkeypatch.setenv(sources.BAD_INPUT_ENV, "exclude")
    source, items, problems = sources.checked_items(str(tmp_path))
    assert [i.sample_id for i in items] == ["good"] and problems == source.problems
    assert sorted(p.reason for p in source.problems) == ["media_unreadable", "record", "record", "record"]


def test_truncated_video_is_unreadable_media(tmp_path):
    paths = write_media(tmp_path)
    (tmp_path / "media" / "cut.mp4").write_bytes((tmp_path / "media" / "clip.mp4").read_bytes()[:200])
    write_items(tmp_path, [item("cut", "CC08", {**paths, "video": "media/cut.mp4"})])
    source = sources.load_source(str(tmp_path))
    (problem,) = source.problems
    assert problem.reason == "media_unreadable" and "'cut'" in problem.detail and "cut.mp4" in problem.detail


def test_hugging_face_dataset_in_the_same_schema_loads_through_datasets(tmp_path, monkeypatch):
    import datasets

    paths = write_media(tmp_path)
    rows = [item("h1", "CC12", paths, distractors=json.dumps({"audio": "blue"})), item("h2", "IC07", paths)]
    (tmp_path / "data").mkdir()
    datasets.Dataset.from_list(rows).to_parquet(str(tmp_path / "data" / "test-00000-of-00001.parquet"))
    source = sources.load_source(f"hf:{tmp_path}")
    assert [i.sample_id for i in source.items] == ["h1", "h2"] and not source.problems
    assert source.items[0].distractors == {"audio": "blue"}
    monkeypatch.setenv(sources.SPLIT_ENV, "validation")
    with pytest.raises(SourceError, match="cannot load split 'validation'"):
        sources.load_source(f"hf:{tmp_path}")


def test_unknown_source_spec_says_what_is_accepted():
    with pytest.raises(SourceError, match="does not exist; give 'demo', 'hf:"):
        sources.load_source("/no/such/place")


def test_a_long_video_is_spread_over_its_duration_and_the_model_is_told_when(tmp_path, monkeypatch):
    from c3po_fixtures import write_mp4

    from faultline_eval.model_wrappers.reference_c3po import evidence_from_messages
    from faultline_eval.tasks import c3po_task

    paths = write_media(tmp_path)
    write_mp4(tmp_path / "media" / "long.mp4", frames=24, fps=2)  # 12 s
    write_items(tmp_path, [item("long", "CC08", {**paths, "video": "media/long.mp4"})])
    monkeypatch.setenv(sources.SOURCE_ENV, str(tmp_path))
    monkeypatch.setenv("C3PO_JUDGE", "exact")
    [row], _ = c3po_task.build_rows("all")
    clip = c3po_task._item(row["item"])
    assert clip.frame_times() == (0.0, 1.5, 3.0, 4.5, 6.0, 7.5, 9.0, 10.5)  # SCEval App. F.2, 8 over 12 s
    messages = c3po_task.doc_to_messages(row)
    label = "Video (8 frames in order, taken at 0, 1.5, 3, 4.5, 6, 7.5, 9, 10.5 s into the clip):"
    assert messages[1]["content"][0] == {"type": "text", "text": label}
    assert len(evidence_from_messages(messages).frames) == 8, "the reference model still finds the frames"
    assert "8 video frame(s) in order, taken at 0, 1.5, 3" in c3po_task.doc_to_text(row)
    record = c3po_task.process_results(row, ["red"])["c3po_record"]
    assert record["frame_times_s"] == clip.frame_times() and record["media_notes"] == []
