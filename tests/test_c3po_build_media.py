"""The media stages of `c3po build`: base media selection (folder and datasets pools, broken
files), real speech and SFX synthesis, the App. E sampler and answer import, and the export
loaded back by the real `lmms-eval --tasks c3po_all`.

The LLM stages (generate, classify, audit) are written here by hand as ledgers in the shapes the
build's stage interface fixes, so these tests exercise exactly the media half."""

from __future__ import annotations

import csv
import json
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
import soundfile

from c3po_plugin.construction.ledger import Ledger
from c3po_plugin.construction.sample import SheetError, bucket_of, import_answers, run_sample, stratified_round_robin
from c3po_plugin.construction.select import candidates_for, load_pool, rank, run_select
from c3po_plugin.construction.synthesize import registry, run_synthesize
from faultline_eval.core import media
from faultline_eval.core import media_processing as processing


@dataclass(frozen=True)
class Spec:
    """A test-local generation spec with the fields the media stages read."""

    template_id: str
    base_modality: str
    match: dict
    actions: list
    aliases: tuple = ()
    generation_spec: dict = field(default_factory=dict)

    def __post_init__(self):
        self.generation_spec[self.base_modality] = {
            "selection_filter": {"requirement": "test", "match": self.match},
            "actions": self.actions,
        }


SPECS = [
    Spec("IC01", "image", {"tags_any": ["objects"], "min_side_px": 64}, ["keep"]),
    Spec("IC06", "audio", {"tags_any": ["speech"], "min_duration_s": 2.0}, ["extract_audio", "clip_max:3"]),
    Spec("CC08", "video", {"tags_any": ["action"], "min_duration_s": 2.0}, ["mute", "clip:1-4"]),
    Spec("CC12", "video", {"tags_all": ["action", "outdoor"]}, ["mute"]),
]


def _frames(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.clip(rng.normal(128, 40, (72, 96, 3)) + 10 * i, 0, 255).astype(np.uint8) for i in range(n)]


def _tone(seconds: float, hz: float = 440.0, rate: int = 16000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.4 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def make_pool(folder: Path, *, as_csv: bool = False) -> Path:
    """Two pictures, a silent clip, a clip with sound, a sound, a corrupt clip and a missing file."""
    (folder / "files").mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in (1, 2):
        media.write_image(folder / f"files/pic{i}.png", rng.integers(0, 255, (80, 120, 3), dtype=np.uint8))
    media.write_image(folder / "files/tiny.png", rng.integers(0, 255, (40, 50, 3), dtype=np.uint8))
    processing.write_clip(folder / "files/walk.mp4", _frames(12, 1), Fraction(2))  # 6 s, silent
    processing.write_clip(folder / "files/talk.mp4", _frames(12, 2), Fraction(2), _tone(6.0))  # 6 s with sound
    stereo = np.stack([_tone(4.0, rate=44100), _tone(4.0, 660, 44100)], 1)
    soundfile.write(str(folder / "files/song.wav"), stereo, 44100)
    (folder / "files/broken.mp4").write_bytes(b"this is not a video")
    rows = [
        {"id": "pic1", "path": "files/pic1.png", "tags": ["objects", "kitchen"], "license": "CC0-1.0", "caption": "a"},
        {"id": "pic2", "path": "files/pic2.png", "tags": "objects;outdoor", "license": "CC-BY-4.0"},
        {"id": "tiny", "path": "files/tiny.png", "tags": ["objects"]},  # too small for IC01's 64 px
        {"id": "walk", "path": "files/walk.mp4", "tags": ["action", "outdoor"]},
        {"id": "talk", "path": "files/talk.mp4", "tags": ["speech", "action"]},
        {"id": "song", "path": "files/song.wav", "tags": ["speech"]},
        {"id": "broken", "path": "files/broken.mp4", "tags": ["action"]},
        {"id": "gone", "path": "files/gone.png", "tags": ["objects"]},
    ]
    if as_csv:
        with (folder / "annotations.csv").open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=["id", "path", "modality", "tags", "license"])
            writer.writeheader()
            for row in rows:
                tags = row["tags"] if isinstance(row["tags"], str) else ";".join(row["tags"])
                writer.writerow({"id": row["id"], "path": row["path"], "tags": tags, "license": row.get("license", "")})
    else:
        (folder / "annotations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _audio_streams(path: Path) -> int:
    with av.open(str(path)) as container:
        return len(container.streams.audio)


def test_select_filters_processes_and_records_broken_files(tmp_path):
    pool = make_pool(tmp_path / "pool")
    build = tmp_path / "build"
    counts = run_select(build, pool=pool, specs=SPECS, per_template=(2, 10))
    entries = {e["key"]: e for e in Ledger(build, "select").entries()}

    # IC01: the two big pictures; the 40 px one fails min_side_px; the missing file is failed, named.
    assert {k for k, e in entries.items() if k.startswith("IC01/") and e["status"] == "ok"} == {
        "IC01/pic1",
        "IC01/pic2",
    }
    assert entries["IC01/gone"]["status"] == "failed" and "gone.png" in entries["IC01/gone"]["reason"]
    assert "IC01/tiny" not in entries
    pic = entries["IC01/pic1"]["data"]
    assert pic["candidate_id"] == "IC01__pic1" and pic["media"] == {"image": "media/base/IC01__pic1/image.png"}
    assert pic["source"] == {"pool": str(pool), "path": "files/pic1.png", "license": "CC0-1.0"}
    assert pic["annotations"]["caption"] == "a"
    assert (build / pic["media"]["image"]).read_bytes() == (pool / "files/pic1.png").read_bytes()

    # CC08: muted and clipped to 1-4 s; the corrupt clip is failed naming the file, never a candidate.
    assert entries["CC08/broken"]["status"] == "failed" and "broken.mp4" in entries["CC08/broken"]["reason"]
    walk = entries["CC08/walk"]["data"]
    clip = build / walk["media"]["video"]
    assert walk["duration_s"] == pytest.approx(3.0, abs=0.05) and walk["frame_times_s"] == [0.0, 1.0, 2.0]
    talk = entries["CC08/talk"]["data"]
    assert _audio_streams(build / talk["media"]["video"]) == 0 and _audio_streams(pool / "files/talk.mp4") == 1
    assert media.read_video_frames(clip).frames.shape[0] == 3

    # IC06 (audio base): the clip's audio track extracted, and the stereo 44.1 kHz song, both
    # 16 kHz mono and cut to 3 s; the silent clip has no audio track, so it is no candidate.
    for key in ("IC06/talk", "IC06/song"):
        data = entries[key]["data"]
        assert set(data["media"]) == {"audio"} and data["duration_s"] == pytest.approx(3.0, abs=0.01)
        info = soundfile.info(str(build / data["media"]["audio"]))
        assert (info.samplerate, info.channels) == (16000, 1)
    assert "IC06/walk" not in entries

    # CC12 needs tags_all action+outdoor: only the walk.
    assert {k for k in entries if k.startswith("CC12/")} == {"CC12/walk"}
    assert counts["failed"] == 2 and counts["below_minimum"] == {"CC12": 1}

    # Idempotent: a second run does nothing new; a failed entry is retried (and fails again).
    again = run_select(build, pool=pool, specs=SPECS, per_template=(2, 10))
    assert again["ok"] == 0 and again["skipped"] == counts["ok"] and again["failed"] == 2


def test_selection_order_is_a_pure_function_of_seed_template_and_base(tmp_path):
    pool = load_pool(make_pool(tmp_path / "pool", as_csv=True), tmp_path / "build")
    assert {it.base_id: sorted(it.tags) for it in pool.items}["pic2"] == ["objects", "outdoor"]
    order = [it.base_id for it, problem in candidates_for(SPECS[0], pool, seed=0)]
    assert order == sorted(["pic1", "pic2", "gone"], key=lambda b: rank(0, "IC01", b))
    assert rank(0, "IC01", "pic1") == rank(0, "IC01", "pic1") != rank(1, "IC01", "pic1")
    reordered = load_pool(tmp_path / "pool", tmp_path / "build")
    reordered.items.reverse()  # pool order does not matter
    assert [it.base_id for it, _ in candidates_for(SPECS[0], reordered, seed=0)] == order


def test_select_from_a_datasets_pool(tmp_path):
    import datasets

    folder = make_pool(tmp_path / "pool")
    table = datasets.Dataset.from_dict(
        {
            "id": ["pic1", "pic2"],
            "tags": [["objects"], ["outdoor"]],
            "picture": [str(folder / "files/pic1.png"), str(folder / "files/pic2.png")],
        }
    ).cast_column("picture", datasets.Image())
    table.save_to_disk(str(tmp_path / "saved"))
    for pool in (table, f"hf:{tmp_path / 'saved'}"):
        build = tmp_path / f"build-{type(pool).__name__}"
        counts = run_select(build, pool=pool, specs=SPECS[:1], per_template=(1, 5))
        ok = Ledger(build, "select").ok()
        assert counts["ok"] == 1 and set(ok) == {"IC01/pic1"}
        assert ok["IC01/pic1"]["source"]["pool"] == ("dataset" if pool is table else pool)  # the name as given
        image = media.read_image(build / ok["IC01/pic1"]["media"]["image"])[0]
        assert image.shape == (80, 120, 3)


def test_unknown_match_key_or_action_is_an_error_naming_the_template(tmp_path):
    pool = make_pool(tmp_path / "pool")
    with pytest.raises(ValueError, match=r"IC01.*colour"):
        run_select(tmp_path / "b", pool=pool, specs=[Spec("IC01", "image", {"colour": "red"}, ["keep"])])
    with pytest.raises(ValueError, match=r"CC08.*'blur'"):
        run_select(tmp_path / "b", pool=pool, specs=[Spec("CC08", "video", {}, ["blur"])])
    with pytest.raises(ValueError, match=r"IC01.*'mute' does not apply to a image"):
        run_select(tmp_path / "b", pool=pool, specs=[Spec("IC01", "image", {}, ["mute"])])


# --- synthesis ----------------------------------------------------------------------------------------

TRANSCRIPT = "Perfect. Next, take that bottle of chili oil and drizzle it over the whole pizza."


def test_espeak_speech_is_real_speech_at_16k_shaped_by_the_style():
    speech = registry().make("speech", "espeak")
    calm, rate = speech.speak(TRANSCRIPT, "A calm, slow female voice", key="s1")
    hurried, _ = speech.speak(TRANSCRIPT, "an excited, fast male voice", key="s1")
    assert rate == 16000 and calm.dtype == np.float32
    words = len(TRANSCRIPT.split())
    for wave in (calm, hurried):
        seconds = len(wave) / rate
        assert words / 5.0 < seconds < words / 1.5  # 1.5-5 words a second
        frames = wave[: len(wave) // 400 * 400].reshape(-1, 400)
        assert np.mean(np.sqrt((frames**2).mean(1)) > 0.01) > 0.4  # mostly voiced, not silence
    assert len(calm) > 1.15 * len(hurried)  # "slow" speaks slower than "fast"
    with pytest.raises(ValueError, match="empty transcript"):
        speech.speak("  ", None, key="s1")


def test_procedural_sfx_has_the_requested_duration_and_follows_its_prompt():
    sfx = registry().make("sfx", "procedural")
    for prompt, seconds in (
        ("Three loud knocks on a wooden door", 2.5),
        ("A smoke alarm beeping", 4.0),
        ("Heavy rain on a tin roof", 7.0),
        ("something nobody can name", 1.0),
    ):
        wave, rate = sfx.sound(prompt, seconds, key="CC08_001")
        assert rate == 16000 and len(wave) == round(seconds * 16000) and np.abs(wave).max() > 0.1
    first, _ = sfx.sound("A smoke alarm beeping", 2.0, key="CC08_001")
    assert np.array_equal(first, sfx.sound("A smoke alarm beeping", 2.0, key="CC08_001")[0])  # seeded by the id
    assert not np.array_equal(first, sfx.sound("A smoke alarm beeping", 2.0, key="CC08_002")[0])
    tone, _ = sfx.sound("A smoke alarm beeping", 2.0, key="x")
    noise, _ = sfx.sound("Heavy rain on a tin roof", 2.0, key="x")
    flatness = [
        np.exp(np.mean(np.log(s + 1e-12))) / np.mean(s) for s in (np.abs(np.fft.rfft(w)) ** 2 for w in (tone, noise))
    ]
    assert flatness[0] < flatness[1]  # beeps are tonal, rain is noise


def _generated(
    sample_id: str,
    template_id: str,
    candidate_id: str,
    *,
    transcript="",
    style="",
    image=None,
    question="What happened?",
    answer="red circle",
) -> dict:
    return {
        "sample_id": sample_id,
        "template_id": template_id,
        "candidate_id": candidate_id,
        "template_selection_rationale": "fits #### 4 ####",
        "base_modality": {
            "type": next(s.base_modality for s in SPECS if s.template_id == template_id),
            "content_summary": "x",
        },
        "generated_components": {
            "audio": {"transcript": transcript, "voice_style_prompt": style, "logic_check": "x"},
            "text": {"role": "user_query", "content": question, "reasoning_required": "x"},
            "image": image,
        },
        "ground_truth": {"answer": answer, "evidence_modality": "visual_inference", "timestamp_evidence": "0-3s"},
        "self_audit": {
            "mute_test_passed": True,
            "blind_test_passed": True,
            "prior_test_passed": True,
            "ambiguity_check_passed": True,
            "notes": "x",
        },
    }


def hand_made_build(tmp_path: Path) -> Path:
    """A build dir whose select ran for real and whose LLM stages are hand-written ledgers."""
    build = tmp_path / "build"
    run_select(build, pool=make_pool(tmp_path / "pool"), specs=SPECS, per_template=(1, 10))
    generate, classify = Ledger(build, "generate"), Ledger(build, "classify")
    samples = [  # (id, template, candidate, classify data, extra)
        (
            "CC08_000",
            "CC08",
            "CC08__walk",
            {
                "kind": "tts",
                "transcript": TRANSCRIPT,
                "voice_style_prompt": "calm",
                "sfx_prompt": None,
                "duration_s": None,
            },
            {},
        ),
        (
            "CC08_001",
            "CC08",
            "CC08__talk",
            {
                "kind": "sfx",
                "transcript": None,
                "voice_style_prompt": None,
                "sfx_prompt": "A heavy door slams twice",
                "duration_s": 3,
            },
            {},
        ),
        (
            "IC01_000",
            "IC01",
            "IC01__pic1",
            {
                "kind": "sfx",
                "transcript": None,
                "voice_style_prompt": None,
                "sfx_prompt": "A bell rings",
                "duration_s": 2,
            },
            {"answer": "blue"},
        ),
        (
            "IC01_001",
            "IC01",
            "IC01__pic2",
            {
                "kind": "tts",
                "transcript": "Second from the left.",
                "voice_style_prompt": "a deep voice",
                "sfx_prompt": None,
                "duration_s": None,
            },
            {"answer": "square"},
        ),
        (
            "CC12_000",
            "CC12",
            "CC12__walk",
            {
                "kind": "tts",
                "transcript": "It is blue, trust me.",
                "voice_style_prompt": "british",
                "sfx_prompt": None,
                "duration_s": None,
            },
            {"image": "A catalogue photo of a blue ball on a white table.", "answer": "red"},
        ),
        (
            "IC06_000",
            "IC06",
            "IC06__song",
            {"kind": "none", "transcript": None, "voice_style_prompt": None, "sfx_prompt": None, "duration_s": None},
            {"image": "A kitchen counter with dough being kneaded.", "answer": "adding water"},
        ),
        (
            "CC12_001",
            "CC12",
            "CC12__walk",
            {"kind": "tts", "transcript": "Blue.", "voice_style_prompt": "", "sfx_prompt": None, "duration_s": None},
            {"image": None},
        ),  # no caption
        ("CC08_002", "CC08", "CC08__walk", None, {}),  # not classified yet
    ]
    for sample_id, template, candidate, typed, extra in samples:
        generate.record(sample_id, "ok", _generated(sample_id, template, candidate, **extra))
        if typed is not None:
            classify.record(sample_id, "ok", typed)
    generate.record("CC08_003", "rejected", reason="query has 14 words (max 12)")
    generate.record("IC01_002", "failed", reason="malformed JSON reply")
    return build


def test_synthesize_makes_real_media_and_records_what_it_cannot(tmp_path):
    build = hand_made_build(tmp_path)
    counts = run_synthesize(build)
    entries = {e["key"]: e for e in Ledger(build, "synthesize").entries()}
    assert counts == {"ok": 6, "rejected": 1, "failed": 0, "skipped": 0, "waiting": 1}

    speech = entries["CC08_000"]["data"]
    wave, rate = soundfile.read(str(build / speech["audio"]))
    assert rate == 16000 and wave.ndim == 1 and np.abs(wave).max() > 0.1
    assert speech["audio_kind"] == "tts" and speech["backends"]["speech"] == "espeak"
    assert 2.0 < speech["audio_duration_s"] < 10.0 and speech["image"] is None
    door = entries["CC08_001"]["data"]
    assert door["audio_kind"] == "sfx" and soundfile.info(str(build / door["audio"])).frames == 3 * 16000
    card = entries["CC12_000"]["data"]  # tier 3: speech and an image
    assert card["audio_kind"] == "tts" and media.read_image(build / card["image"])[0].shape == (384, 512, 3)
    assert card["transcript"].strip() and card["image_description"].strip()  # the probes' references
    assert entries["IC06_000"]["data"]["audio"] is None  # the base is the audio; only the image is made
    assert entries["IC06_000"]["data"]["image"] == "media/items/IC06_000/image.png"
    assert entries["CC12_001"]["status"] == "rejected" and "no caption" in entries["CC12_001"]["reason"]
    assert "CC08_002" not in entries  # not typed yet: waiting for classify, not a failure of this stage

    with pytest.raises(RuntimeError, match="build-gpu"):  # stops before any sample, none marked failed
        run_synthesize(build, sfx="audioldm2")
    assert Ledger(build, "synthesize").counts() == {"ok": 6, "rejected": 1, "failed": 0}
    again = run_synthesize(build, templates=["CC08"])  # resumable; the waiting one is looked at again
    assert again == {"ok": 0, "rejected": 0, "failed": 0, "skipped": 2, "waiting": 1}

    from c3po_plugin.construction.export import run_export

    nothing = run_export(build)  # nothing audited yet: the funnel, but no dataset
    assert nothing["ok"] == 0 and "no dataset" in nothing["note"] and not (build / "export/items.parquet").exists()
    assert (
        json.loads((build / "export/funnel.json").read_text())["total"]["candidates"]
        == Ledger(build, "select").counts()["ok"]
    )


def test_backends_register_through_the_hook_and_clashes_name_both_plugins():
    from c3po_plugin.construction.synthesize import SynthesisRegistry, c3po_register_synthesis_backends
    from sceval_plugin.plugins import PluginError

    assert {k: registry().names(k) for k in ("speech", "sfx", "image")} == {
        "speech": ["espeak", "qwen3-tts"],
        "sfx": ["audioldm2", "procedural"],
        "image": ["caption-card", "diffusers"],
    }
    mine = SynthesisRegistry()
    c3po_register_synthesis_backends(mine)  # the built-ins' own hook implementation
    with mine.adding_for("'my_tts' (distribution my-tts 1.0)"):
        with pytest.raises(PluginError, match=r"speech backend 'espeak' is registered by two plugins: .*my_tts"):
            mine.add("speech", "espeak", object)
        with pytest.raises(PluginError, match="kind 'video'"):
            mine.add("video", "sora", object)


def test_a_missing_gpu_backend_names_the_extra():
    with pytest.raises(RuntimeError, match=r"build-gpu"):
        registry().make("sfx", "audioldm2")
    with pytest.raises(KeyError, match="unknown image backend 'paint'"):
        registry().make("image", "paint")


def test_speech_without_the_build_extra_names_it_before_any_sample(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "espeakng_loader", None)  # as if `[build]` were not installed
    with pytest.raises(RuntimeError, match=r"faultline-eval\[build\]"):
        run_synthesize(tmp_path)  # stops at the start, not with a failed entry per sample
    ledger = tmp_path / "ledger" / "synthesize.jsonl"
    assert not ledger.exists() or not ledger.read_text()


# --- human-evaluation sample ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    sample_id: str
    template_id: str
    category: str
    difficulty: int


def test_buckets_and_stratified_round_robin():
    assert [bucket_of(d) for d in (1, 2, 3, 4, 5, 7, 8, 10)] == [
        "<2.5",
        "<2.5",
        "2.5-4.9",
        "2.5-4.9",
        "5.0-7.4",
        "5.0-7.4",
        ">=7.5",
        ">=7.5",
    ]
    items = [Item(f"IC01_{i:03d}", "IC01", "ic", 3) for i in range(10)]
    items += [Item(f"IC04_{i:03d}", "IC04", "ic", 4) for i in range(2)]
    items += [Item(f"IC05_{i:03d}", "IC05", "ic", 3) for i in range(1)]
    items += [Item(f"CC05_{i:03d}", "CC05", "cc", 9) for i in range(3)]
    strata = stratified_round_robin(items, per_bucket=5, seed=0)
    chosen = strata["ic", "2.5-4.9"]
    assert len(chosen) == 5
    # round robin: every template of the stratum before any template twice
    assert [it.template_id for it in chosen[:3]] == ["IC01", "IC04", "IC05"]
    assert sorted(it.template_id for it in chosen) == ["IC01", "IC01", "IC04", "IC04", "IC05"]
    assert len(strata["cc", ">=7.5"]) == 3 and strata["cc", "<2.5"] == []
    assert stratified_round_robin(items, 5, seed=0) == strata  # seeded, no global RNG
    other = stratified_round_robin(items, 5, seed=1)["ic", "2.5-4.9"]
    assert sorted(it.template_id for it in other) == sorted(it.template_id for it in chosen)


def _accept(build: Path, verdicts: dict[str, int | None]) -> None:
    audit = Ledger(build, "audit")
    for sample_id, difficulty in verdicts.items():
        if difficulty is None:
            audit.record(
                sample_id,
                "rejected",
                {
                    "decision": "REJECT",
                    "failing_pillar": "Query Sanitisation",
                    "rationale": "leaks",
                    "fit_score": 4,
                    "difficulty": -1,
                },
                reason="Query Sanitisation: leaks",
            )
        else:
            audit.record(
                sample_id,
                "ok",
                {
                    "decision": "ACCEPT",
                    "failing_pillar": None,
                    "rationale": "fine",
                    "fit_score": 5,
                    "difficulty": difficulty,
                },
            )


def test_sample_sheets_are_disjoint_and_answers_are_validated(tmp_path):
    build = hand_made_build(tmp_path)
    run_synthesize(build)
    _accept(build, {"CC08_000": 3, "CC08_001": 8, "IC01_000": 2, "IC01_001": 6, "CC12_000": 5, "IC06_000": 9})
    counts = run_sample(build, per_bucket=25, annotators=2)
    assert counts["ok"] == 6 and counts["strata"]["cc/2.5-4.9"] == 1 and counts["strata"]["ic/>=7.5"] == 1
    sheets = {p: list(csv.DictReader((build / p).open())) for p in counts["sheets"]}
    assert set(sheets) == {"sample/annotator_1.csv", "sample/annotator_2.csv"}
    ids = [[r["sample_id"] for r in rows] for rows in sheets.values()]
    assert not set(ids[0]) & set(ids[1])  # disjoint
    assert sorted(ids[0] + ids[1]) == ["CC08_000", "CC08_001", "CC12_000", "IC01_000", "IC01_001", "IC06_000"]
    assert [len(i) for i in ids] == [3, 3]  # equal shares
    row = next(r for rows in sheets.values() for r in rows if r["sample_id"] == "CC12_000")
    assert set(row) == {"sample_id", "video", "image", "audio", "question", "human_answer"}  # no gold answer
    assert (build / "sample" / row["video"]).is_file() and (build / "sample" / row["image"]).is_file()
    assert (build / "sample" / "instructions.md").read_text().count("Insufficient Information") == 1
    assert run_sample(build, per_bucket=1)["skipped"] == 6  # the drawn sample is kept

    bad = tmp_path / "bad.csv"
    bad.write_text("sample_id,human_answer\nCC08_000,a ball\nNOPE_1,x\nCC08_000,again\nIC01_000,\n")
    with pytest.raises(SheetError) as caught:
        import_answers(build, bad)
    assert caught.value.problems == [
        "row 3, column 'sample_id': unknown sample id 'NOPE_1' (not in this build's human-evaluation sample)",
        "row 4, column 'sample_id': 'CC08_000' repeats row 2",
        "row 5, column 'human_answer': empty answer for 'IC01_000' (write 'Insufficient Information' if it cannot "
        "be answered)",
    ]
    assert all("human_answer" not in d for d in Ledger(build, "sample").ok().values())  # nothing imported
    with pytest.raises(SheetError, match="column 'human_answer' is missing"):
        (tmp_path / "nohead.csv").write_text("sample_id,answer\nCC08_000,x\n")
        import_answers(build, tmp_path / "nohead.csv")

    sheet = build / counts["sheets"][0]
    rows = list(csv.DictReader(sheet.open()))
    for r in rows:
        r["human_answer"] = f"answer to {r['sample_id']}"
    with sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert import_answers(build, sheet)["imported"] == 3
    answered = {k: v.get("human_answer") for k, v in Ledger(build, "sample").ok().items()}
    assert sum(a is not None for a in answered.values()) == 3


# --- export -----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_export_runs_through_lmms_eval_c3po_all(tmp_path):
    from test_lmms_cli import lmms_eval, results

    from c3po_plugin.construction.export import run_export
    from c3po_plugin.data.sources import checked_items

    build = hand_made_build(tmp_path)
    run_synthesize(build)
    _accept(build, {"CC08_000": 3, "CC08_001": None, "IC01_000": 2, "IC01_001": 6, "CC12_000": 8, "IC06_000": 9})
    Ledger(build, "audit").record(
        "CC08_002",
        "ok",
        {"decision": "ACCEPT", "difficulty": 4, "fit_score": 4, "rationale": "x", "failing_pillar": None},
    )  # never synthesized
    run_sample(build, annotators=1)
    sheet = build / "sample" / "annotator_1.csv"
    rows = list(csv.DictReader(sheet.open()))
    with sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({**r, "human_answer": "red" if r["sample_id"] == "CC12_000" else "no idea"} for r in rows)
    import_answers(build, sheet)

    counts = run_export(build)
    out = build / "export"
    assert counts["ok"] == 5 and counts["failed"] == 1
    failed = {e["key"]: e["reason"] for e in Ledger(build, "export").entries("failed")}
    assert "synthesized media" in failed["CC08_002"]
    source, items, problems = checked_items(str(out))  # the tasks' own loader, media decoded in full
    assert problems == [] and {it.sample_id for it in items} == {
        "CC08_000",
        "IC01_000",
        "IC01_001",
        "CC12_000",
        "IC06_000",
    }
    by_id = {it.sample_id: it for it in items}
    assert by_id["CC12_000"].human_answer == "red" and by_id["CC12_000"].difficulty == 8
    assert by_id["CC12_000"].video and by_id["CC12_000"].image and by_id["CC12_000"].audio
    assert by_id["IC06_000"].audio.endswith("IC06_000.wav") and by_id["IC06_000"].video is None
    assert by_id["IC01_000"].hidden["license"] == "CC0-1.0" and by_id["IC01_000"].hidden["fit_score"] == 5
    assert by_id["CC12_000"].hidden["transcript"] and by_id["CC12_000"].hidden["image_description"]

    funnel = json.loads((out / "funnel.json").read_text())
    # CC08_002 was never typed: waiting, not a synthesis failure; the hand-made ids are not the
    # candidates' (D_T..._idx), so both CC08 candidates are unsettled as far as the funnel can tell
    assert funnel["CC08"] == {
        "candidates": 2,
        "generated": 4,
        "rule_rejected": 1,
        "audited": 3,
        "accepted": 2,
        "exported": 1,
        "generate_failed": 0,
        "classify_rejected": 0,
        "synthesis_failed": 0,
        "synthesis_rejected": 0,
        "unsettled": 2,
    }
    assert funnel["IC01"]["generate_failed"] == 1 and funnel["total"]["exported"] == 5
    assert (out / "funnel.md").read_text().count("| CC08 |") == 1
    assert (out / "difficulty.png").stat().st_size > 10_000 and (out / "difficulty.pdf").is_file()

    lmms_eval(
        "--model",
        "sceval_reference",
        "--tasks",
        "c3po_all",
        "--log_samples",
        "--output_path",
        "run/",
        cwd=tmp_path,
        env={"C3PO_SOURCE": str(out), "SCEVAL_CACHE": str(tmp_path / "cache")},
    )
    summary, samples = results(tmp_path / "run")
    records = [line["c3po_record"] for line in samples["c3po_all"]]
    assert sorted(r["sample_id"] for r in records) == sorted(by_id)
    assert {r["sample_id"]: r["human_answer"] for r in records}["CC12_000"] == "red"
    assert 0.0 <= summary["results"]["c3po_all"]["c3po_accuracy,none"] <= 1.0

    from test_c3po_lmms import c3po  # the same export through the command line, into another folder

    done = c3po("build", "export", str(build), "--out", str(tmp_path / "again"), cwd=tmp_path)
    assert done.returncode == 1 and "export: 1 of 6 items failed" in done.stdout  # CC08_002, above 0.1
    done = c3po(
        "build", "export", str(build), "--out", str(tmp_path / "again"), "--max-failure-rate", "0.2", cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "again" / "items.parquet").read_bytes() == (out / "items.parquet").read_bytes()


def test_demo_pool_is_reproducible_and_covers_every_base_modality(tmp_path):
    from c3po_plugin.construction.demo_pool import make_demo_pool
    from c3po_plugin.templates import registry as templates

    first, second = make_demo_pool(tmp_path / "a"), make_demo_pool(tmp_path / "b")
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)  # seeded, byte for byte
    pool = load_pool(first, tmp_path)
    headers = {it.base_id: pool.header(it) for it in pool.items}
    assert not [b for b, h in headers.items() if isinstance(h, str)]  # every file decodes
    assert {json.loads(line)["license"] for line in (first / "annotations.jsonl").read_text().splitlines()} == {
        "CC0-1.0"
    }
    for base in {t.base_modality for t in templates()}:
        fitting = [
            it
            for it in pool.items
            if it.modality == base or (base == "audio" and headers[it.base_id].has_audio and it.modality == "video")
        ]
        assert len(fitting) >= 2, base
