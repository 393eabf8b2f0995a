"""The four task adapters of issue 36 (video_holmes, av_speakerbench_audiovisual, mmmu_val,
air_bench_foundation_*) on their local copies (tests/wrap_datasets.py): which conditions apply,
the option orders scored by the base's own process_results, and that a corruption changes what
the model is given (the question, the images, the audio, the clip) while what must survive does
(MMMU's ``<image N>`` tags, the options). The real CLI runs of these tasks are in
tests/test_wrap_e2e.py. About 10 s.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import test_wrap_tasks
from test_wrap_tasks import _build

from faultline_eval.core import media
from faultline_eval.core.record_fields import decode_track
from faultline_eval.tasks import wrap_configs, wrapped_task
from faultline_eval.tasks.wrapped_media import corrupt_media
from sceval_plugin import base_task, task_adapters
from sceval_plugin.conditions import catalogue

# test_wrap_tasks' fixtures: the local copies' docs as lmms-eval reads them; a private cache folder
local_copies = test_wrap_tasks.local_copies
wrap_cache = test_wrap_tasks.wrap_cache

VIDEO_HOLMES, SPEAKERBENCH, MMMU, AIR_BENCH = (
    "video_holmes",
    "av_speakerbench_audiovisual",
    "mmmu_val",
    "air_bench_foundation_sound",
)
CONDITIONS = (
    "clean",
    "single_noise_v50",
    "single_mute_a50",
    "single_drop_words_t70",
    "missing_vision",
    "missing_audio",
    "missing_text",
    "shortcut_options_only",
    "order1_clean",
    "probe_temporal_frame_reverse",
)


def test_each_adapter_applies_the_conditions_its_modalities_and_fields_allow():
    conditions = [catalogue().get(c) for c in CONDITIONS]
    applies = {task: [c.id for c in wrap_configs.plan(task, conditions)[0]] for task in (VIDEO_HOLMES, MMMU)}
    refused = {task: wrap_configs.plan(task, conditions)[1] for task in (VIDEO_HOLMES, SPEAKERBENCH, MMMU, AIR_BENCH)}
    visual = ["clean", "single_noise_v50", "single_drop_words_t70", "missing_vision", "shortcut_options_only"]
    assert applies[VIDEO_HOLMES] == [*visual, "order1_clean", "probe_temporal_frame_reverse"]
    assert applies[MMMU] == [*visual, "order1_clean"]  # still images: no frame probes
    assert "still image" in refused[MMMU]["probe_temporal_frame_reverse"]
    for task in (VIDEO_HOLMES, MMMU):
        assert "audio" in refused[task]["single_mute_a50"] and "audio" in refused[task]["missing_audio"]
    assert set(refused[SPEAKERBENCH]) == {"missing_text"}  # audio-visual, question, options: all else
    assert set(refused[AIR_BENCH]) == {
        "single_noise_v50",
        "missing_vision",
        "missing_text",
        "probe_temporal_frame_reverse",
    }
    assert all("vision" in refused[AIR_BENCH][c] for c in ("single_noise_v50", "missing_vision"))
    # no task names a context field (subtitles, captions): the no-text control would equal clean
    assert all("context" in refused[t]["missing_text"] for t in refused)
    with pytest.raises(wrap_configs.WrapNameError, match="does not apply to 'air_bench_foundation_sound'"):
        wrap_configs.write(AIR_BENCH, [catalogue().get("single_noise_v50")])


#: task -> (the base metric, its value when every doc is right, the field of the gold letter or None
#: when the gold is the option's text, which the task finds among choice_a..choice_d)
SCORED = {
    VIDEO_HOLMES: ("video_holmes_accuracy", 100.0, "Answer"),
    SPEAKERBENCH: ("av_speakerbench_score", 100.0, "answer"),
    MMMU: ("mmmu_acc", 1.0, "answer"),
    AIR_BENCH: ("accuracy", 1.0, None),
}


def _gold_letter(task: str, doc: dict) -> str:
    field = SCORED[task][2]
    if field is not None:
        return doc[field]
    texts = [doc[f"choice_{k}"] for k in "abcd"]
    return "ABCD"[texts.index(doc["answer_gt"])]


@pytest.mark.parametrize("task", list(SCORED))
def test_option_orders_move_the_options_and_the_base_scores_the_order_shown(local_copies, task):
    _, _, docs = local_copies[task]
    name = f"{task}__order1_clean__var0"
    wrapped = wrapped_task.wrapped(name)
    process_results = getattr(wrapped_task, f"process_results__{name}")
    metric, full, _ = SCORED[task]
    shown_right, original_right = [], []
    for doc in docs:
        shown = wrapped_task.shown_doc(wrapped, doc)
        if doc.get("question_type") == "open":  # MMMU's open question has no options to move
            assert shown == doc
            continue
        assert shown != doc and _gold_letter(task, shown) != _gold_letter(task, doc)
        shown_right.append(process_results(doc, [_gold_letter(task, shown)])[metric])
        original_right.append(process_results(doc, [_gold_letter(task, doc)])[metric])
    assert len(shown_right) >= 3
    assert base_task.aggregate(task, metric, shown_right) == pytest.approx(full)
    assert base_task.aggregate(task, metric, original_right) == 0.0


def test_video_holmes_question_is_corrupted_and_its_options_and_clip_follow_the_condition(local_copies, wrap_cache):
    copy, _, docs = local_copies[VIDEO_HOLMES]
    doc = docs[0]
    clean_prompt = wrapped_task.doc_to_text__video_holmes__clean__var0(doc)
    dropped = wrapped_task.doc_to_text__video_holmes__single_drop_words_t70__var1(doc)
    assert clean_prompt.startswith(f"Question: {doc['Question']}\nA. ") and dropped != clean_prompt
    options = "".join(f"\n{k}. {v}" for k, v in sorted(doc["Options"].items()))
    assert options in dropped and doc["Question"] not in dropped  # the stem changes, the options stay
    # the clip the task's own doc_to_visual names, as the condition hands it on (the wrapped
    # doc_to_messages maps its video part's url through the same function)
    clip = next(copy.hf_home.rglob(f"videos_cropped/{doc['video ID']}.mp4"))
    frames = {c: _frames(f"{VIDEO_HOLMES}__{c}__var0", str(clip), doc) for c in ("clean", "single_noise_v50")}
    assert frames["clean"].shape == frames["single_noise_v50"].shape
    assert np.abs(frames["clean"].astype(int) - frames["single_noise_v50"]).mean() > 5


def test_av_speakerbench_clip_is_muted_and_its_frames_kept_under_an_audio_condition(local_copies, wrap_cache):
    copy, _, docs = local_copies[SPEAKERBENCH]
    doc = docs[1]
    clip = str(copy.hf_home / "AV-SpeakerBench" / doc["audio_visual_path"])
    written = {c: _written(f"{SPEAKERBENCH}__{c}__var0", clip, doc) for c in ("clean", "single_mute_a50")}
    clean_audio, muted_audio = (decode_track(written[c]).array for c in ("clean", "single_mute_a50"))
    assert np.abs(clean_audio).max() > 0.1 and clean_audio.shape == muted_audio.shape
    assert np.count_nonzero(muted_audio) < 0.75 * np.count_nonzero(clean_audio)
    assert np.array_equal(*(media.read_video_frames(written[c], fps=1000, max_frames=1000).frames for c in written))
    prompt = wrapped_task.doc_to_text__av_speakerbench_audiovisual__shortcut_options_only__var0(doc, {})
    assert doc["question"] not in prompt and "A. purple and a low tone" in prompt  # options only


def _written(name: str, source: str, doc: dict) -> str:
    task = wrapped_task.wrapped(name)
    (path,) = corrupt_media([source], wrapped_task.media_corruption(task, task.adapter.key_of(doc)), where=name)
    return path


def _frames(name: str, source: str, doc: dict) -> np.ndarray:
    return media.read_video_frames(_written(name, source, doc), fps=1000, max_frames=1000).frames


def _requests(task: str, local_copies: dict, *names: str) -> list[list]:
    """The requests of ``task`` under each ``<condition>__var<k>`` of ``names``, written pointed at
    its local copy and built by lmms-eval."""
    conditions = [catalogue().get(name.rsplit("__", 1)[0]) for name in names]
    wrap_configs.write(task, conditions, wrap_configs.data_override(task, local_copies[task][0].dataset_path))
    return [_build(f"{task}__{name}")[1] for name in names]


def test_mmmu_images_are_corrupted_and_its_image_tags_survive_in_text_and_messages(local_copies, wrap_cache):
    clean, noisy, dropped = _requests(
        MMMU, local_copies, "clean__var0", "single_noise_v50__var0", "single_drop_words_t70__var2"
    )
    tag = re.compile(r"<image \d+>")
    for (c_args, doc), (n_args, _), (d_args, _) in zip(clean, noisy, dropped):
        base = [np.asarray(doc[f"image_{k}"].convert("RGB")) for k in (1, 2) if doc[f"image_{k}"] is not None]
        clean_pixels = [np.asarray(image) for image in c_args[2](doc)]
        noisy_pixels = [np.asarray(image) for image in n_args[2](doc)]
        assert len(clean_pixels) == len(base) == len(noisy_pixels)  # item 1 shows two images
        assert all(np.array_equal(a, b) for a, b in zip(clean_pixels, base))
        assert not any(np.array_equal(a, b) for a, b in zip(noisy_pixels, base))
        assert n_args[0] == c_args[0]  # a vision condition leaves the prompt alone
        assert d_args[0] != c_args[0] and tag.findall(d_args[0]) == tag.findall(c_args[0])
    # a chat model gets the task's own doc_to_messages: text split at the tags, the corrupted images
    _, chat = _build(f"{MMMU}__single_noise_v50__var0", task_type="chat")
    (arguments, doc), (simple_arguments, _) = chat[1], noisy[1]
    (message,) = arguments[1](doc)
    assert [part["type"] for part in message["content"]] == ["text", "image", "text", "image", "text"]
    images = [np.asarray(part["url"]) for part in message["content"] if part["type"] == "image"]
    assert all(np.array_equal(a, np.asarray(b)) for a, b in zip(images, simple_arguments[2](doc)))


def test_air_bench_audio_is_corrupted_at_16khz_and_the_options_only_shortcut_keeps_the_options(
    local_copies, wrap_cache
):
    names = ("clean__var0", "single_mute_a50__var0", "shortcut_options_only__var0")
    clean, muted, options_only = _requests(AIR_BENCH, local_copies, *names)
    for (c_args, doc), (m_args, _), (o_args, _) in zip(clean, muted, options_only):
        (clean_audio,), (muted_audio,) = c_args[2](doc), m_args[2](doc)
        source = np.asarray(doc["audio"]["array"], dtype=np.float32)
        assert clean_audio["sampling_rate"] == muted_audio["sampling_rate"] == 16000
        assert np.array_equal(clean_audio["array"], source) and len(muted_audio["array"]) == len(source)
        assert np.count_nonzero(muted_audio["array"]) < np.count_nonzero(source)
        assert doc["question"] in c_args[0] and doc["question"] not in o_args[0]
        assert all(f"{k}. {doc[f'choice_{k.lower()}']}" in o_args[0] for k in "ABCD")
        assert o_args[2](doc) == []  # the shortcut shows no media


def test_the_tasks_page_lists_every_built_in_adapter_in_order():
    page = (Path(__file__).parents[1] / "docs" / "reference" / "tasks.md").read_text()
    section = page.split("### Built-in task adapters", 1)[1]
    listed = re.findall(r"^\| `(\w+)` \| (.+?) \|", section, re.M)
    assert [name for name, _ in listed] == [a.name for a in task_adapters.BUILTIN_ADAPTERS]
    for (_, tasks), adapter in zip(listed, task_adapters.BUILTIN_ADAPTERS):
        assert re.findall(r"`([^`]+)`", tasks) == list(adapter.tasks), adapter.name
