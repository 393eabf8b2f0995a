"""sceval build convert / pool / publish on tiny local copies laid out like the real releases."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile
from build_sources import VALOR_CAPTIONS, social_iq2_copy, valor_copy
from fixtures import copy_demo, demo_rows, omni_bench_fixture
from test_lmms_cli import lmms_eval, results
from test_plugins import install, run_python

from sceval_plugin.construction import convert, pool, publish
from sceval_plugin.construction.converters import CAPTION_QUESTION
from sceval_plugin.data.sources import load_source

SCEVAL = Path(sys.executable).with_name("sceval")


def _omni_problems(i: int, record: dict) -> None:
    if i == 1:
        record["answer"] = "not an option"
    if i == 2:
        record["audio"] = {"bytes": None, "path": None}


@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sources")
    return {
        "social_iq2": social_iq2_copy(root / "siq"),
        "valor": valor_copy(root / "valor"),
        "omni_bench": omni_bench_fixture(root / "omni", 4, m_a_p=True, mutate=_omni_problems),
    }


@pytest.fixture(scope="module")
def build(copies, tmp_path_factory) -> Path:
    build_dir = tmp_path_factory.mktemp("build")
    done = subprocess.run(
        [SCEVAL, "build", "convert", build_dir, *(f"{k}={v}" for k, v in copies.items())],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "social_iq2: 7 example(s), 3 converted, 4 problem(s)" in done.stdout
    return build_dir


def converted(build_dir: Path, source: str) -> tuple[dict[str, dict], dict[str, dict]]:
    folder = build_dir / "converted" / source
    rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    problems = [json.loads(line) for line in (folder / "problems.jsonl").read_text().splitlines()]
    return {r["sample_id"]: r for r in rows}, {p["source_ref"]: p for p in problems}


def audio_form(path: Path) -> tuple[int, int, float]:
    info = soundfile.info(str(path))
    return info.samplerate, info.channels, info.frames / info.samplerate


def folder_digest(folder: Path) -> str:
    h = hashlib.blake2b()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(path.relative_to(folder).as_posix().encode() + path.read_bytes())
    return h.hexdigest()


def test_social_iq2_release_converts_with_windows_and_problems(build, copies):
    rows, problems = converted(build, "social_iq2")
    assert sorted(rows) == ["social_iq2-vidA_q1_0", "social_iq2-vidA_q2_0", "social_iq2-vidB_q1_0"]
    whole = rows["social_iq2-vidA_q1_0"]
    assert whole["gold_key"] == "B" and whole["options"] == ["Hello", "Goodbye", "Stop", "Run"]
    assert whole["hidden"]["source_ref"] == "social_iq2/val/vidA_q1_0"
    assert whole["hidden"]["visual_kind"] == "video" and whole["hidden"]["evidence_modality"] == "audio+visual"
    assert whole["hidden"]["modalities"] == {"text": True, "visual": True, "audio": True}
    assert "check the source's terms" in whole["hidden"]["license"]
    assert whole["visual"] == rows["social_iq2-vidA_q2_0"]["visual"], "questions on one clip share its media"
    # the whole clip is copied byte for byte; its 22.05 kHz stereo WAV becomes 16 kHz mono, duration kept
    assert (build / "converted/social_iq2" / whole["visual"]).read_bytes() == (
        copies["social_iq2"] / "siq2/video/vidA.mp4"
    ).read_bytes()
    assert audio_form(build / "converted/social_iq2" / whole["audio"]) == (16_000, 1, 10.0)

    items = {it.sample_id: it for it in load_source(str(build / "converted/social_iq2")).items}
    # F.2: 8 frames spread over the 10 s clip, each the first 2 fps frame at or after 0, 1.25, 2.5, ...
    assert items["social_iq2-vidA_q1_0"].frame_times() == (0, 1.5, 2.5, 4, 5, 6.5, 7.5, 9)
    # ts 1.00-4.00 of a 6 s clip: video and its own audio track cut to the window, both starting at 1 s
    window = items["social_iq2-vidB_q1_0"]
    assert window.frame_times() == (0, 1, 2) and len(window.waveform()) == 3 * 16_000
    assert audio_form(Path(window.audio))[:2] == (16_000, 1)

    assert {ref: p["reason"] for ref, p in problems.items()} == {
        "social_iq2/test/vidB_q2_0": "missing_answer",
        "social_iq2/val/vidC_q1_0": "missing_video",
        "social_iq2/val/vidA_q3_0": "bad_answer_index",
        "social_iq2/val/vidD_q1_0": "no_audio_track",
    }


def test_omni_bench_hub_schema_converts_through_the_lmms_adapter(build):
    rows, problems = converted(build, "omni_bench")
    assert sorted(rows) == ["omni_bench-00100", "omni_bench-00103"]
    row = rows["omni_bench-00100"]
    assert row["hidden"]["visual_kind"] == "image" and row["category"] == "demo"
    assert row["hidden"]["source_meta"]["audio_type"] == "sound event"
    assert row["hidden"]["source_meta"]["image_content"] == "a caption", "text stand-ins stay hidden"
    assert audio_form(build / "converted/omni_bench" / row["audio"])[:2] == (16_000, 1)  # from 44.1 kHz stereo MP3
    assert {p["reason"] for p in problems.values()} == {"bad_answer_index", "no_audio_track"}
    assert set(problems) == {"omni_bench/train/101", "omni_bench/train/102"}


def test_valor_captions_become_caption_matching_questions(build):
    rows, problems = converted(build, "valor")
    caption = rows["valor-aaa_0.000_10.000"]
    assert caption["question"] == CAPTION_QUESTION and len(caption["options"]) == 4
    gold = caption["options"]["ABCD".index(caption["gold_key"])]
    assert gold == VALOR_CAPTIONS["aaa_0.000_10.000"]
    assert set(caption["options"]) <= set(VALOR_CAPTIONS.values()) and len(set(caption["options"])) == 4
    qa = rows["valor-q-1"]
    assert qa["gold_key"] == "A" and qa["hidden"]["evidence_modality"] == "audio+visual"
    assert qa["hidden"]["source_meta"]["modality"] == "audio-visual"
    assert {ref: p["reason"] for ref, p in problems.items()} == {
        "valor/avqa_test/q-2": "bad_answer_index",
        "valor/test/eee_0.000_10.000": "missing_video",
    }


def test_converting_twice_gives_the_same_bytes(build, copies, tmp_path):
    for name in ("social_iq2", "valor"):
        convert.convert_source(name, copies[name], tmp_path)
        assert folder_digest(tmp_path / "converted" / name) == folder_digest(build / "converted" / name), name


TOY_CONVERTER = """
import json
from pathlib import Path

from sceval_plugin import hookimpl
from faultline_eval.core import media
from sceval_plugin.construction.convert import Converter, Rejected

def convert(root, out):
    for entry in json.loads((Path(root) / "toy.json").read_text()):
        if "image" not in entry:
            yield Rejected(f"toy/{entry['id']}", "missing_image")
            continue
        folder = out / "media" / entry["id"]
        media.write_image(folder / "image.png", media.read_image(Path(root) / entry["image"])[0])
        media.write_audio(folder / "audio.wav", media.read_audio(Path(root) / entry["audio"])[0])
        yield {"sample_id": f"toy-{entry['id']}", "question": entry["q"], "options": entry["options"],
               "gold_key": entry["gold"], "visual": f"media/{entry['id']}/image.png",
               "audio": f"media/{entry['id']}/audio.wav", "hidden": {"source_ref": f"toy/{entry['id']}"}}

@hookimpl
def sceval_register_converters(registry):
    registry.add(Converter("toy", convert, "CC0-1.0", evidence_modality="visual"))
"""


def test_a_third_party_converter_arrives_through_the_hook(tmp_path):
    site = install(tmp_path, "sceval-toy-source", "sceval_toy_source", TOY_CONVERTER)
    demo = copy_demo(tmp_path / "demo", 3)
    size = [json.loads(line) for line in (demo / "items.jsonl").read_text().splitlines()][2]  # one picture
    entries = [
        {
            "id": "one",
            "q": size["question"],
            "options": size["options"],
            "gold": size["gold_key"],
            "image": size["visual"],
            "audio": size["audio"],
        },
        {"id": "two"},
    ]
    (demo / "toy.json").write_text(json.dumps(entries))
    done = run_python(
        site,
        f"""
        import sys
        from faultline_app.sceval_cli import main
        sys.exit(main(["build", "convert", {str(tmp_path / "b")!r}, "toy={demo}"]))
    """,
    )
    assert done.returncode == 0, done.stderr
    assert "toy: 2 example(s), 1 converted, 1 problem(s)" in done.stdout and not done.stderr.strip()
    rows, problems = converted(tmp_path / "b", "toy")
    assert rows["toy-one"]["hidden"]["evidence_modality"] == "visual"
    assert rows["toy-one"]["hidden"]["visual_kind"] == "image" and rows["toy-one"]["source"] == "toy"
    assert problems["toy/two"]["reason"] == "missing_image"


def test_a_converter_name_taken_twice_names_both_plugins():
    from sceval_plugin.plugins import PluginError

    registry = convert.ConverterRegistry()
    with registry.adding_for("'first' (distribution a 1)"):
        registry.add(convert.Converter("clips", lambda root, out: iter(()), "MIT"))
    with registry.adding_for("'second' (distribution b 2)"):
        with pytest.raises(
            PluginError, match=r"converter 'clips' is registered by two plugins: 'first' .* and 'second'"
        ):
            registry.add(convert.Converter("clips", lambda root, out: iter(()), "MIT"))
        with pytest.raises(PluginError, match="evidence_modality must be one of"):
            registry.add(convert.Converter("other", lambda root, out: iter(()), "MIT", evidence_modality="smell"))


def _demo_converted(build_dir: Path, tmp_path: Path) -> None:
    """The 30 demo items through the ``items`` converter: odd ones without sound cues in the
    question, and demo-size-05 with a silent track."""

    def mutate(row):
        if int(row["sample_id"][-2:]) % 2:
            row["question"] = "Which of these options is right?"

    folder = copy_demo(tmp_path / "unified", mutate=mutate)
    silent = next(r for r in demo_rows() if r["sample_id"] == "demo-size-05")["audio"]
    soundfile.write(folder / silent, np.zeros(16_000, np.float32), 16_000, format="FLAC")
    assert convert.convert_source("items", folder, build_dir)["converted"] == 30


def test_pool_is_seeded_within_budget_and_oversamples_tri_modal_items(tmp_path):
    build_dir = tmp_path / "build"
    _demo_converted(build_dir, tmp_path)
    funnel = pool.build_pool(build_dir, budget=10, seed=3)
    first = (build_dir / "pool" / "items.jsonl").read_bytes()
    counts = funnel["sources"]["items"]
    assert counts == {
        "examples": 30,
        "converted": 30,
        "eligible": 29,
        "pooled": 10,
        "tri_modal_eligible": 15,
        "tri_modal_pooled": counts["tri_modal_pooled"],
    }
    assert counts["tri_modal_pooled"] / 10 > 15 / 29, "weight 4 draws tri-modal items more often than their share"
    pooled = [json.loads(line) for line in first.decode().splitlines()]
    assert all(r["hidden"]["pool"]["tri_modal_cues"] == pool.tri_modal_cues(r) for r in pooled)
    excluded = {e["sample_id"]: e["reason"] for e in funnel["excluded"]}
    assert excluded["items-demo-size-05"] == "modality_unavailable: audio"
    assert len(excluded) == 20 and sum(r.startswith("not_drawn") for r in excluded.values()) == 19
    assert load_source(str(build_dir / "pool")).problems == []

    assert pool.build_pool(build_dir, budget=10, seed=3) == funnel
    assert (build_dir / "pool" / "items.jsonl").read_bytes() == first, "same seed, same bytes"
    pool.build_pool(build_dir, budget=10, seed=4)
    assert (build_dir / "pool" / "items.jsonl").read_bytes() != first
    heavy = pool.build_pool(build_dir, budget=10, seed=3, tri_modal_weight=1e9)["sources"]["items"]
    assert heavy["tri_modal_pooled"] == 10, "an overwhelming weight draws tri-modal items first"


@pytest.mark.slow
def test_publish_is_a_datasets_folder_the_tasks_run_on(build, tmp_path, monkeypatch):
    import datasets

    pool.build_pool(build, budget=3)
    pooled = [json.loads(line)["sample_id"] for line in (build / "pool/items.jsonl").read_text().splitlines()]
    rejected, unannotated = pooled[0], pooled[1]
    entries = [{"sample_id": s, "valid": True, "answerable": True, "source": s.split("-")[0]} for s in pooled[2:]]
    entries.append(
        {
            "sample_id": rejected,
            "valid": True,
            "answerable": False,
            "failure_reason": "text leakage",
            "adjudication_note": "the question names the sound",
            "source": rejected.split("-")[0],
        }
    )
    (build / "manifest.json").write_text(json.dumps({"schema": "sceval-manifest/2", "samples": entries, "cells": []}))
    kept_expected = set(pooled[2:])
    done = subprocess.run([SCEVAL, "build", "publish", build], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = build / "published"
    table = datasets.load_dataset(str(out), split="test", cache_dir=str(tmp_path / "hf"))
    assert set(table["sample_id"]) == kept_expected
    assert (out / "manifest.json").read_bytes() == (build / "manifest.json").read_bytes()
    card = (out / "README.md").read_text()
    assert "source_licenses:" in card and "check the source's terms" in card
    assert f"`{rejected}` ({rejected.split('-')[0]}): text leakage" in card
    assert f"`{unannotated}` ({unannotated.split('-')[0]}): not_annotated" in card
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(convert.BuildError, match="HF_HUB_OFFLINE=1 is set"):
        publish.publish(build, out=tmp_path / "p", push_to_hub="me/x")
    assert not (tmp_path / "p").exists(), "nothing is written before the offline guard"

    lmms_eval(
        "--model",
        "sceval_reference",
        "--tasks",
        "sceval_clean",
        "--log_samples",
        "--output_path",
        "out",
        cwd=tmp_path,
        env={"SCEVAL_SOURCE": str(out), "SCEVAL_MANIFEST": str(out / "manifest.json")},
    )
    summary, samples = results(tmp_path / "out")
    assert len(samples["sceval_clean"]) == len(kept_expected)
    assert summary["results"]["sceval_clean"]["sceval_valid_trials,none"] == len(kept_expected)


def test_a_flat_picture_of_one_colour_is_no_visual_evidence(tmp_path):
    """Issue 25: a flat red frame varies across channels but not over its pixels; only a frame
    that varies spatially in some channel is visual evidence."""
    from PIL import Image

    first, flat = (r["sample_id"] for r in demo_rows(2))

    def mutate(row):
        if row["sample_id"] == flat:
            row.update(visual="media/flat_red.png", key_frame_index=None)

    folder = copy_demo(tmp_path / "unified", 2, mutate=mutate)
    Image.new("RGB", (64, 48), (255, 0, 0)).save(folder / "media/flat_red.png")
    done = subprocess.run(
        [SCEVAL, "build", "convert", tmp_path / "b", f"items={folder}"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    rows, _ = converted(tmp_path / "b", "items")
    assert rows[f"items-{flat}"]["hidden"]["modalities"]["visual"] is False
    assert rows[f"items-{first}"]["hidden"]["modalities"]["visual"] is True
    assert convert.has_visual_evidence(np.zeros((2, 4, 4, 3), np.uint8) + np.array([0, 0, 200], np.uint8)) is False
