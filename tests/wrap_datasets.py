"""Tiny local copies of lmms-eval benchmarks, in each task's own doc schema (groundwork for issue 27).

Issue 27 wraps existing lmms-eval tasks (their YAML, utils, prompts and metrics) with SCEval's
corruptions. Its tests must run those real task configs offline, so each builder here writes a
3-6 doc dataset whose columns, types and media layout are the ones the task's ``utils.py`` reads
(``docs/design/wrap-any-task.md`` has the table and says which columns were read from code and
which are inferred). Media are drawn in code: coloured frames, tones (:mod:`faultline_eval.core.demo_media`),
MP4 clips through PyAV (:func:`faultline_eval.core.media_processing.write_clip`).

A builder returns a :class:`LocalCopy`: where the dataset is (``save_to_disk`` folder or a
parquet folder laid out like the hub repo), which ``$HF_HOME`` the task's utils must see (the
video tasks join their media paths onto ``$HF_HOME/<cache_dir>`` at import), and the
``dataset_path`` / ``dataset_kwargs`` that point a copy of the task YAML at it.

Proof that the real task config loads such a copy and produces requests::

    python tests/wrap_datasets.py --check worldsense      # or av_odyssey, videomme, mvbench_action_antonym, ...
    python tests/wrap_datasets.py --check all

``--check`` builds the copy under a temporary folder, writes ``<task>_local.yaml`` there
(``include:`` the installed base YAML by absolute path, a new ``task:`` name, and the local
``dataset_path``/``dataset_kwargs``), indexes only that folder with lmms-eval's ``TaskManager``,
builds the task with ``get_task_dict`` and ``build_all_requests(limit=2)``, and prints each
request's arguments and what its ``doc_to_visual`` returns; then it scores a canned reply
through the task's own ``process_results`` and aggregation. No network: the cache folder
exists, so ``video: True`` does not snapshot-download, and ``load_from_disk`` reads the copy.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from faultline_eval.core.demo_media import COLOURS, HIGH_HZ, LOW_HZ, tone_events
from faultline_eval.core.media import SAMPLE_RATE, resample_audio, write_audio, write_image
from faultline_eval.tasks.wrapped_task import decoded_audio  # noqa: F401 (re-exported: the one copy is the product's)
from sceval_plugin.base_task import aggregate, base_yaml_path, metric_specs

base_yaml = base_yaml_path  # older name, kept for callers of this module

#: Frames of the synthetic clips: small, so a clip is a few kB and encodes in milliseconds.
CLIP_SIZE = (48, 64)  # (height, width)
CLIP_FRAMES = 8
CLIP_RATE = Fraction(4)


@dataclass
class LocalCopy:
    """A local copy of one lmms-eval task's dataset and how to point the task at it."""

    task: str  # the lmms-eval task whose schema it reproduces
    dataset_path: Path  # a save_to_disk DatasetDict folder, or a hub-layout parquet folder
    dataset_kwargs: dict  # what the YAML copy sets (load_from_disk, the kept video/cache_dir keys)
    hf_home: Path | None = None  # $HF_HOME the task's utils must see (media under $HF_HOME/<cache_dir>)
    reply: str = "A"  # a canned model reply the task's process_results can score
    env: dict = field(default_factory=dict)  # other variables the utils read at import
    audio_column: bool = False  # has an Audio column (decoding it needs torchcodec under datasets>=4)


# --- synthetic media ------------------------------------------------------------------------------


def colour_frame(colour: str, height: int = CLIP_SIZE[0], width: int = CLIP_SIZE[1], shade: int = 0) -> np.ndarray:
    """A flat ``colour`` frame with a white square whose position encodes ``shade`` (frames differ)."""
    frame = np.empty((height, width, 3), np.uint8)
    frame[:] = COLOURS[colour]
    x = (4 + 6 * shade) % max(1, width - 12)
    frame[4:14, x : x + 10] = 255
    return frame


def tone(seconds: float = 1.0, hz: float = HIGH_HZ) -> np.ndarray:
    """``seconds`` of 16 kHz mono float32 with one tone in the middle."""
    return tone_events(seconds, [(0.2 * seconds, 0.5 * seconds, hz)])


def write_clip_file(path: Path, colour: str, *, with_audio: bool = True, hz: float = LOW_HZ) -> Path:
    """A tiny H.264 MP4 (8 frames at 4 fps) with an AAC tone track when ``with_audio``."""
    from faultline_eval.core.media_processing import write_clip

    frames = [colour_frame(colour, shade=i) for i in range(CLIP_FRAMES)]
    return write_clip(path, frames, CLIP_RATE, tone(CLIP_FRAMES / float(CLIP_RATE), hz) if with_audio else None)


def wav_bytes(wave: np.ndarray, rate: int = SAMPLE_RATE) -> bytes:
    """16-bit PCM WAV bytes, as the hub's Audio columns store them."""
    import soundfile

    buffer = io.BytesIO()
    soundfile.write(buffer, wave, rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def png_bytes(image: np.ndarray) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="PNG")
    return buffer.getvalue()


def save_split(folder: Path, split: str, rows: list[dict], features) -> Path:
    """``rows`` as a one-split DatasetDict saved with ``save_to_disk`` (what ``load_from_disk`` reads)."""
    import datasets

    table = datasets.Dataset.from_list(rows, features=features)
    datasets.DatasetDict({split: table}).save_to_disk(str(folder))
    return folder


def _features(**columns):
    import datasets

    return datasets.Features(columns)


def _str():
    import datasets

    return datasets.Value("string")


def _strings():
    import datasets

    return datasets.Sequence(datasets.Value("string"))


# --- builders, one per task -----------------------------------------------------------------------
# Column names and the values the task's utils accept are read from lmms_eval/tasks/<task>/utils.py
# (0.7.3); types the code does not pin are chosen as the hub card shows them where we have it.

COLOUR_NAMES = ["red", "green", "blue", "yellow", "cyan", "magenta"]
LETTERS = "ABCD"
#: Colours the options of wrong answers name: no frame shows them, and the reference's hue names
#: (model_wrappers.reference_perception.HUES) never give them.
OTHER_COLOURS = ["purple", "orange", "black"]
PITCH_HZ = {"high": HIGH_HZ, "low": LOW_HZ}


def pitch_of(index: int) -> str:
    """The tone pitch of item ``index``: low and high alternate."""
    return "high" if index % 2 else "low"


def encoded_options(index: int, colour: str, pitch: str | None = None, lettered: bool = True) -> tuple[list[str], int]:
    """Four options and the position of the right one (``index % 4``, so a fixed guess is right on
    a quarter of the items). The right option names the item's ``colour`` (and its tone ``pitch``
    when it has audio); the others name colours no frame shows and the other pitch. Each modality
    alone thus identifies the answer: what ``--model modality_oracle`` relies on (design §8)."""
    other_pitch = {"high": "low", "low": "high"}.get(pitch or "")
    wrong = [f"{c} and a {other_pitch} tone" if pitch else c for c in OTHER_COLOURS]
    right = f"{colour} and a {pitch} tone" if pitch else colour
    position = index % len(LETTERS)
    words = wrong[:position] + [right] + wrong[position:]
    return [f"{LETTERS[i]}. {w}" if lettered else w for i, w in enumerate(words)], position


def build_worldsense(root: Path, n: int = 4, hf_home: Path | None = None) -> LocalCopy:
    """lmms-lab/worldsense, split ``test``: a video (with its audio track) under
    ``$HF_HOME/WorldSense/<video_path>``; ``candidates`` are lettered ("A. ..."), ``answer`` a letter."""
    hf_home = hf_home or root / "hf_home"
    rows = []
    for i in range(n):
        colour = COLOUR_NAMES[i % len(COLOUR_NAMES)]
        video_path = f"videos/ws_{i:03d}.mp4"
        write_clip_file(hf_home / "WorldSense" / video_path, colour, hz=PITCH_HZ[pitch_of(i)])
        options, answer = encoded_options(i, colour, pitch_of(i))
        rows.append(
            {
                "index": i,
                "video_path": video_path,
                "subtitle_path": f"subtitles/ws_{i:03d}.srt",
                "question": f"Which colour fills the frames, and is the tone high? (item {i})",
                "candidates": options,
                "answer": LETTERS[answer],
                "task_type": "Attribute Recognition",
                "task_domain": "Daily Life",
                "duration": "<1min",
                "audio_class": ["Event Sound"] if i % 2 else ["Speech", "Music"],
            }
        )
    import datasets

    features = _features(
        index=datasets.Value("int64"),
        video_path=_str(),
        subtitle_path=_str(),
        question=_str(),
        candidates=_strings(),
        answer=_str(),
        task_type=_str(),
        task_domain=_str(),
        duration=_str(),
        audio_class=_strings(),
    )
    save_split(root / "dataset", "test", rows, features)
    return LocalCopy(
        "worldsense", root / "dataset", {"load_from_disk": True, "video": True, "cache_dir": "WorldSense"}, hf_home
    )


def build_av_odyssey(root: Path, n: int = 4, hf_home: Path | None = None) -> LocalCopy:
    """AV-Odyssey/AV_Odyssey_Bench_LMMs_Eval, split ``test``: media are relative paths in list
    columns under ``$HF_HOME/AV_Odyssey``; ``[audioN]``/``[imgN]``/``[videoN]`` tags in the question
    say where each goes (doc_to_visual returns the paths in tag order; doc_to_text puts ``<media_i>``)."""
    hf_home = hf_home or root / "hf_home"
    cache = hf_home / "AV_Odyssey"
    rows = []
    for i in range(n):
        colour = COLOUR_NAMES[i % len(COLOUR_NAMES)]
        audio = [f"audio/avo_{i:03d}_1.wav"]
        write_audio(cache / audio[0], tone(1.0, PITCH_HZ[pitch_of(i)]))
        options, answer = encoded_options(i, colour, pitch_of(i))
        if i % 2 == 0:  # image items: "[img1]" and "[audio1]"
            data_type, image, video = "image", [f"image/avo_{i:03d}_1.png"], []
            write_image(cache / image[0], colour_frame(colour))
            question = f"[img1] [audio1] What colour is the image, and how high is the sound? (item {i})"
        else:  # video items
            data_type, image, video = "video", [], [f"video/avo_{i:03d}_1.mp4"]
            write_clip_file(cache / video[0], colour, with_audio=False)
            question = f"[video1] [audio1] What colour is the video, and how high is the sound? (item {i})"
        rows.append(
            {
                "question_id": f"avo_{i:03d}",
                "subfield": "Timbre" if i % 2 else "Tone",
                "question": question,
                "options": options,
                "answer": LETTERS[answer],
                "data_type": data_type,
                "image_path": image,
                "video_path": video,
                "audio_path": audio,
            }
        )
    features = _features(
        question_id=_str(),
        subfield=_str(),
        question=_str(),
        options=_strings(),
        answer=_str(),
        data_type=_str(),
        image_path=_strings(),
        video_path=_strings(),
        audio_path=_strings(),
    )
    save_split(root / "dataset", "test", rows, features)
    return LocalCopy(
        "av_odyssey",
        root / "dataset",
        {"load_from_disk": True, "video": True, "cache_dir": "AV_Odyssey"},
        hf_home,
    )


def build_omni_bench(root: Path, n: int = 4) -> LocalCopy:
    """lmms-lab-audio/Omni_Bench_fix, split ``train``: ``image`` (Image) and ``audio`` (Audio)
    columns; ``options`` are bare texts and ``answer`` is the correct option's text. Written by
    the project's existing fixture (tests/fixtures.py, hub-layout parquet), each record's media and
    options replaced so that the colour and the tone pitch encode the answer, as in the other copies."""
    from fixtures import omni_bench_fixture  # tests/ is on sys.path under pytest and when run as a script

    def encode(i: int, record: dict) -> None:
        colour = COLOUR_NAMES[i % len(COLOUR_NAMES)]
        options, answer = encoded_options(i, colour, pitch_of(i), lettered=False)
        record.update(
            question=f"What colour is the picture, and how high is the tone? (item {i})",
            options=options,
            answer=options[answer],
            image={"bytes": png_bytes(colour_frame(colour, 96, 128)), "path": None},
            audio={"bytes": wav_bytes(tone(1.0, PITCH_HZ[pitch_of(i)])), "path": None},
        )

    folder = omni_bench_fixture(root / "omni_bench", n, mutate=encode)
    return LocalCopy("omni_bench", folder, {}, None, audio_column=True)


def build_videomme(root: Path, n: int = 4, hf_home: Path | None = None) -> LocalCopy:
    """lmms-eval/Video-MME, split ``test``: the video is ``$HF_HOME/videomme/data/<videoID>.mp4``
    (utils exit the process if it is missing); duration/domain/sub_category/task_type must be
    names from the utils' lists or the aggregation raises KeyError."""
    hf_home = hf_home or root / "hf_home"
    rows = []
    for i in range(n):
        colour = COLOUR_NAMES[i % len(COLOUR_NAMES)]
        video_id = f"yt{i:09d}"
        write_clip_file(hf_home / "videomme" / "data" / f"{video_id}.mp4", colour, hz=PITCH_HZ[pitch_of(i)])
        options, answer = encoded_options(i, colour, pitch_of(i))
        rows.append(
            {
                "video_id": f"{i + 1:03d}",
                "duration": "short",
                "domain": "Life Record",
                "sub_category": "Daily Life",
                "url": f"https://www.youtube.com/watch?v={video_id}",
                "videoID": video_id,
                "question_id": f"{i + 1:03d}-1",
                "task_type": "Attribute Perception",
                "question": f"What colour are the frames? (item {i})",
                "options": options,
                "answer": LETTERS[answer],
            }
        )
    features = _features(
        video_id=_str(),
        duration=_str(),
        domain=_str(),
        sub_category=_str(),
        url=_str(),
        videoID=_str(),
        question_id=_str(),
        task_type=_str(),
        question=_str(),
        options=_strings(),
        answer=_str(),
    )
    save_split(root / "dataset", "test", rows, features)
    return LocalCopy(
        "videomme", root / "dataset", {"load_from_disk": True, "video": True, "cache_dir": "videomme"}, hf_home
    )


#: mvbench sub-task -> its folder under the cache (mvbench/utils.py DATA_LIST, two of twenty).
MVBENCH_FOLDERS = {"action_antonym": "ssv2_video_mp4", "fine_grained_action": "Moments_in_Time_Raw/videos"}


def build_mvbench(root: Path, n: int = 4, sub_task: str = "action_antonym", hf_home: Path | None = None) -> LocalCopy:
    """OpenGVLab/MVBench config ``<sub_task>``, split ``train``: ``video`` is a file name under
    ``$HF_HOME/mvbench_video/<DATA_LIST[sub_task]>/``; ``candidates`` are bare texts and
    ``answer`` is the correct candidate's text (process_results finds its letter)."""
    hf_home = hf_home or root / "hf_home"
    rows = []
    for i in range(n):
        colour = COLOUR_NAMES[i % len(COLOUR_NAMES)]
        name = f"mv_{i:03d}.mp4"
        write_clip_file(hf_home / "mvbench_video" / MVBENCH_FOLDERS[sub_task] / name, colour, with_audio=False)
        candidates, answer = encoded_options(i, colour, lettered=False)
        rows.append(
            {
                "video": name,
                "question": f"What colour is the video? (item {i})",
                "candidates": candidates,
                "answer": candidates[answer],
            }
        )
    save_split(
        root / "dataset", "train", rows, _features(video=_str(), question=_str(), candidates=_strings(), answer=_str())
    )
    return LocalCopy(
        f"mvbench_{sub_task}",
        root / "dataset",
        {"load_from_disk": True, "video": True, "cache_dir": "mvbench_video"},
        hf_home,
        reply="(A)",
    )


def save_audio_split(folder: Path, split: str, rows: list[dict], columns: dict, rate: int = SAMPLE_RATE) -> Path:
    """Like :func:`save_split` with an ``audio`` column typed ``Audio(sampling_rate=rate)`` as on
    the hub. The rows are written as ``{bytes, path}`` structs and the column is then cast: encoding
    through the Audio feature would need torchcodec under datasets>=4, casting the storage does not."""
    import datasets

    struct = {"bytes": datasets.Value("binary"), "path": _str()}
    table = datasets.Dataset.from_list(rows, features=_features(audio=struct, **columns))
    table = table.cast_column("audio", datasets.Audio(sampling_rate=rate))
    datasets.DatasetDict({split: table}).save_to_disk(str(folder))
    return folder


#: ClothoAQA's rate on the hub: the local copy keeps it, so wrapped audio is checked at a rate
#: other than SCEval's 16 kHz (tests/test_wrap_faithful.py: clean hears what the base hears).
CLOTHO_RATE = 44_100


def build_clotho_aqa(root: Path, n: int = 4, seconds: float = 1.0, rate: int = CLOTHO_RATE) -> LocalCopy:
    """lmms-lab-audio/ClothoAQA config ``clotho_aqa``, split ``clotho_aqa_test_filtered``: an
    Audio column, a free-text ``question`` and a one-word ``answer`` (exact_match, no process_results).
    ``seconds``/``rate`` size the clips (the hub's are 15-30 s at 44.1 kHz; benchmarks/wrap.py)."""
    rows = [
        {
            "audio": {
                "bytes": wav_bytes(resample_audio(tone(seconds, PITCH_HZ[pitch_of(i)]), SAMPLE_RATE, rate), rate),
                "path": f"clotho_{i:03d}.wav",
            },
            "question": f"Is the tone high? (item {i})",
            "answer": "yes" if pitch_of(i) == "high" else "no",
        }
        for i in range(n)
    ]
    save_audio_split(root / "dataset", "clotho_aqa_test_filtered", rows, {"question": _str(), "answer": _str()}, rate)
    return LocalCopy(
        "clotho_aqa_test", root / "dataset", {"load_from_disk": True}, None, reply="yes", audio_column=True
    )


def build_librispeech(root: Path, n: int = 4) -> LocalCopy:
    """lmms-lab-audio/librispeech config ``librispeech_test_clean``, split of the same name: an
    Audio column, the transcript ``gt``, ``source`` and ``task`` ("asr_en": the WER aggregation
    reads the language from ``task[4:]``). The "speech" is a tone and its transcript the tone's
    pitch word (``HIGH``/``LOW``), so an audio-reading model can transcribe it."""
    rows = [
        {
            "audio": {"bytes": wav_bytes(tone(1.0, PITCH_HZ[pitch_of(i)])), "path": f"ls_{i:03d}.flac"},
            "gt": pitch_of(i).upper(),
            "source": "librispeech_test_clean",
            "task": "asr_en",
        }
        for i in range(n)
    ]
    save_audio_split(root / "dataset", "librispeech_test_clean", rows, {"gt": _str(), "source": _str(), "task": _str()})
    return LocalCopy(
        "librispeech_test_clean",
        root / "dataset",
        {"load_from_disk": True},
        None,
        reply="low",
        audio_column=True,
    )


def build_mme(root: Path, n_images: int = 2, size: tuple[int, int] = (96, 128)) -> LocalCopy:
    """lmms-lab-encoder/MME, split ``test``: an Image column; two yes/no questions per image share
    ``question_id`` (the image's name) and the aggregation asserts both are present. ``size``
    is (height, width) of the images (the hub's are mostly 500-1,500 px a side; benchmarks/wrap.py)."""
    import datasets

    rows = []
    for i in range(n_images):
        colour = COLOUR_NAMES[i]
        image = {"bytes": png_bytes(colour_frame(colour, *size)), "path": None}
        for asked, answer in ((colour, "Yes"), ("purple", "No")):
            rows.append(
                {
                    "question_id": f"color/{i:04d}.png",
                    "image": image,
                    "question": f"Is the background {asked}? Please answer yes or no.",
                    "answer": answer,
                    "category": "color",
                }
            )
    save_split(
        root / "dataset",
        "test",
        rows,
        _features(question_id=_str(), image=datasets.Image(), question=_str(), answer=_str(), category=_str()),
    )
    return LocalCopy("mme", root / "dataset", {"load_from_disk": True}, None, reply="Yes")


#: Video-Holmes keeps its clips in the hub's own cache of the dataset repo: its utils call
#: ``snapshot_download(cache_dir=$HF_HOME)`` inside doc_to_visual (video_holmes/utils.py l.33-52).
VIDEO_HOLMES_SNAPSHOT = ("datasets--TencentARC--Video-Holmes", "0" * 40)


def build_video_holmes(root: Path, n: int = 4, hf_home: Path | None = None) -> LocalCopy:
    """TencentARC/Video-Holmes (``data_files: {test: test_Video-Holmes.json}``), split ``test``:
    ``video ID``, ``Question``, ``Options`` (a dict letter -> text, A-F; a struct column as the
    JSON loader reads it), ``Answer`` (a letter) and ``Question Type`` (one of the utils' seven).
    The clips are ``<snapshot>/videos_cropped/<video ID>.mp4`` in a hub-cache layout under
    ``$HF_HOME`` (refs/main naming a snapshot folder), which ``snapshot_download`` resolves offline;
    the empty ``$HF_HOME/video_holmes`` (the YAML's cache_dir) keeps ``download()`` off the Hub.
    Silent clips: the benchmark asks about "the provided video frames"."""
    hf_home = hf_home or root / "hf_home"
    repo, revision = VIDEO_HOLMES_SNAPSHOT
    (hf_home / repo / "refs").mkdir(parents=True, exist_ok=True)
    (hf_home / repo / "refs" / "main").write_text(revision)
    (hf_home / "video_holmes").mkdir(parents=True, exist_ok=True)
    clips = hf_home / repo / "snapshots" / revision / "videos_cropped"
    letters = "ABCDEF"
    rows = []
    for i in range(n):
        colour = COLOUR_NAMES[i % len(COLOUR_NAMES)]
        video_id = f"vh_{i:03d}"
        write_clip_file(clips / f"{video_id}.mp4", colour, with_audio=False)
        words, answer = encoded_options(i, colour, lettered=False)
        words += ["white", "brown"]  # six options; no frame shows these either
        rows.append(
            {
                "video ID": video_id,
                "Question": f"Which colour does the film show? (item {i})",
                "Options": dict(zip(letters, words)),
                "Answer": letters[answer],
                "Question Type": ["SR", "IMC", "TCI", "TA", "MHR", "PAR", "CTI"][i % 7],
            }
        )
    features = _features(
        **{"video ID": _str(), "Question": _str(), "Options": {k: _str() for k in letters}},
        **{"Answer": _str(), "Question Type": _str()},
    )
    save_split(root / "dataset", "test", rows, features)
    return LocalCopy(
        "video_holmes", root / "dataset", {"load_from_disk": True, "video": True, "cache_dir": "video_holmes"}, hf_home
    )


def build_av_speakerbench(root: Path, n: int = 4, hf_home: Path | None = None) -> LocalCopy:
    """plnguyen2908/AV-SpeakerBench (revision ``lmms_version``), split ``test``: relative paths
    under ``$HF_HOME/AV-SpeakerBench`` for the three tasks' media (``audio_visual_path``: a clip
    with its audio track; ``audio_path``: a WAV; ``visual_path``: the silent clip), ``question``,
    ``choices`` as the Python list literal of lettered options that ``_parse_choices`` parses
    (av_speakerbench/utils.py l.18-43), ``answer`` (a letter), ``question_id`` and ``task_id``."""
    hf_home = hf_home or root / "hf_home"
    cache = hf_home / "AV-SpeakerBench"
    rows = []
    for i in range(n):
        colour, pitch = COLOUR_NAMES[i % len(COLOUR_NAMES)], pitch_of(i)
        write_clip_file(cache / "audiovisual" / f"avs_{i:03d}.mp4", colour, hz=PITCH_HZ[pitch])
        write_clip_file(cache / "visual" / f"avs_{i:03d}.mp4", colour, with_audio=False)
        write_audio(cache / "audio" / f"avs_{i:03d}.wav", tone(2.0, PITCH_HZ[pitch]))
        options, answer = encoded_options(i, colour, pitch)
        rows.append(
            {
                "question_id": f"avs_{i:03d}",
                "task_id": "speaker_counting" if i % 2 else "speaker_attribute",
                "question": f"What colour is the speaker's shirt, and is the voice high? (item {i})",
                "choices": repr(options),
                "answer": LETTERS[answer],
                "audio_visual_path": f"audiovisual/avs_{i:03d}.mp4",
                "audio_path": f"audio/avs_{i:03d}.wav",
                "visual_path": f"visual/avs_{i:03d}.mp4",
            }
        )
    columns = ("question_id", "task_id", "question", "choices", "answer", "audio_visual_path", "audio_path")
    save_split(root / "dataset", "test", rows, _features(**{c: _str() for c in (*columns, "visual_path")}))
    return LocalCopy(
        "av_speakerbench_audiovisual",
        root / "dataset",
        {"load_from_disk": True, "video": True, "cache_dir": "AV-SpeakerBench"},
        hf_home,
    )


def build_mmmu(root: Path, n: int = 4) -> LocalCopy:
    """lmms-lab-encoder/MMMU, split ``validation``: ``id`` (``validation_<subject>_<n>``, which
    the aggregation parses), ``question`` with ``<image N>`` tags naming the Image columns
    ``image_1`` ... ``image_7`` that doc_to_visual reads, ``options`` (the string of a Python
    list, bare texts; the prompt letters them), ``answer`` (a letter, or the text of an open
    question), ``question_type`` (``multiple-choice`` / ``open``) and the columns the utils carry
    along (``explanation``, ``img_type``, ``topic_difficulty``, ``subfield``). Item 1 shows two
    images; the last item is an open question answered by the colour's name."""
    import datasets

    rows = []
    for i in range(n):
        colour = COLOUR_NAMES[i % len(COLOUR_NAMES)]
        image = {"bytes": png_bytes(colour_frame(colour, 96, 128)), "path": None}
        images = {f"image_{k}": None for k in range(1, 8)}
        images["image_1"] = image
        tags = "<image 1>"
        if i == 1:
            images["image_2"] = image
            tags = "<image 1> and <image 2>"
        words, answer = encoded_options(i, colour, lettered=False)
        open_question = i == n - 1
        rows.append(
            {
                "id": f"validation_Art_{i + 1}",
                "question": f"Which colour fills {tags}? (item {i})",
                "options": "[]" if open_question else repr(words),
                "explanation": "",
                **images,
                "img_type": "['Paintings']",
                "answer": colour if open_question else LETTERS[answer],
                "topic_difficulty": "Easy",
                "question_type": "open" if open_question else "multiple-choice",
                "subfield": "Fine Arts",
            }
        )
    texts = ("id", "question", "options", "explanation", "img_type", "answer", "topic_difficulty", "question_type")
    features = _features(
        **{c: _str() for c in texts[:4]},
        **{f"image_{k}": datasets.Image() for k in range(1, 8)},
        **{c: _str() for c in (*texts[4:], "subfield")},
    )
    save_split(root / "dataset", "validation", rows, features)
    return LocalCopy("mmmu_val", root / "dataset", {"load_from_disk": True}, None)


def build_air_bench(root: Path, n: int = 4, category: str = "sound") -> LocalCopy:
    """lmms-lab/AIR_Bench config ``Foundation``, split ``<category>``: an Audio column,
    ``question``, four options in ``choice_a`` ... ``choice_d`` (bare texts), ``answer_gt`` (the
    right option's text, which ``get_gt`` turns into its letter), ``task_name`` (the aggregation's
    category) and ``uniq_id`` (the submission's key) (air_bench/utils.py l.152-184, l.259-267)."""
    rows = []
    for i in range(n):
        pitch = pitch_of(i)
        other = {"high": "low", "low": "high"}[pitch]
        answer = i % len(LETTERS)  # the right option names the pitch heard, the others the other pitch
        words = [f"a {other} {sound}" for sound in ("hum", "whistle", "beep")]
        words.insert(answer, f"a {pitch} tone")
        rows.append(
            {
                "audio": {"bytes": wav_bytes(tone(1.0, PITCH_HZ[pitch])), "path": f"air_{i:03d}.wav"},
                "question": f"How high is the tone? (item {i})",
                **{f"choice_{k}": w for k, w in zip("abcd", words)},
                "answer_gt": words[answer],
                "task_name": "Sound_AQA" if i % 2 else "Acoustic_Scene_Classification",
                "uniq_id": i,
            }
        )
    import datasets

    columns = {"question": _str(), **{f"choice_{k}": _str() for k in "abcd"}, "answer_gt": _str()}
    columns |= {"task_name": _str(), "uniq_id": datasets.Value("int64")}
    save_audio_split(root / "dataset", category, rows, columns)
    return LocalCopy(
        f"air_bench_foundation_{category}", root / "dataset", {"load_from_disk": True}, None, audio_column=True
    )


BUILDERS: dict[str, Callable[[Path], LocalCopy]] = {
    "worldsense": build_worldsense,
    "av_odyssey": build_av_odyssey,
    "omni_bench": build_omni_bench,
    "videomme": build_videomme,
    "mvbench_action_antonym": build_mvbench,
    "clotho_aqa_test": build_clotho_aqa,
    "librispeech_test_clean": build_librispeech,
    "mme": build_mme,
    "video_holmes": build_video_holmes,
    "av_speakerbench_audiovisual": build_av_speakerbench,
    "mmmu_val": build_mmmu,
    "air_bench_foundation_sound": build_air_bench,
}


#: The builders that put media under ``$HF_HOME/<cache_dir>`` (they take ``hf_home=``).
VIDEO_TASKS = (
    "worldsense",
    "av_odyssey",
    "videomme",
    "mvbench_action_antonym",
    "video_holmes",
    "av_speakerbench_audiovisual",
)


def build_copies(
    root: Path, tasks: list[str] | None = None, options: dict[str, dict] | None = None
) -> dict[str, LocalCopy]:
    """The local copies of ``tasks`` (default: all of them), each under ``root/<task>``, with the
    media of the video tasks under ONE ``root/hf_home``: their cache folders differ, so a single
    lmms-eval process (one ``$HF_HOME``, read by the utils at import) can run them together.
    ``options`` maps a task to more arguments of its builder (``{"mme": {"size": (768, 1024)}}``)."""
    copies = {}
    for task in tasks or list(BUILDERS):
        shared = {"hf_home": root / "hf_home"} if task in VIDEO_TASKS else {}
        copies[task] = BUILDERS[task](root / task, **shared, **(options or {}).get(task, {}))
    return copies


def task_folder(copies: dict[str, LocalCopy], folder: Path) -> dict[str, str]:
    """Write the ``wrapcheck_<task>`` YAML of each copy into ``folder`` (an ``--include_path``);
    returns task -> its local task name."""
    return {task: local_yaml(copy, folder)[0] for task, copy in copies.items()}


@dataclass
class PreparedCopies:
    """The local copies of several tasks, their ``wrapcheck_<task>`` YAMLs in one folder, and the
    environment an lmms-eval process needs to run them (see :func:`prepare`)."""

    root: Path
    copies: dict[str, LocalCopy]
    tasks_dir: Path  # the --include_path holding the wrapcheck_<task> YAMLs
    names: dict[str, str]  # task -> its local task name
    env: dict[str, str]  # HF_HOME (read by the video utils at import), the project cache

    def subprocess_env(self) -> dict[str, str]:
        """``os.environ`` with :attr:`env` on top, for an lmms-eval subprocess."""
        return {**os.environ, **self.env}


def prepare(root: Path, tasks: list[str] | None = None, options: dict[str, dict] | None = None) -> PreparedCopies:
    """Build the copies of ``tasks`` (default: all) under ``root/data``, write their YAMLs to
    ``root/tasks`` and say which environment runs them: ``HF_HOME`` must be set before lmms-eval
    imports the tasks' utils, so run lmms-eval in a subprocess with :meth:`PreparedCopies.subprocess_env`
    (or set it first thing in a fresh process); ``SCEVAL_CACHE`` is where wrapped tasks are written."""
    copies = build_copies(root / "data", tasks, options)
    names = task_folder(copies, root / "tasks")
    env = {"HF_HOME": str(root / "data" / "hf_home"), "SCEVAL_CACHE": str(root / "cache")}
    return PreparedCopies(root, copies, root / "tasks", names, env)


# --- the proof: the real task config reads the copy and makes requests -------------------------------


def torchcodec_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("torchcodec") is not None


def local_yaml(copy: LocalCopy, folder: Path) -> tuple[str, Path]:
    """A YAML copy of ``copy.task`` pointed at the local dataset: the base file by ``include:``
    (so its ``!function utils.*`` still resolve next to it), a new task name (a built-in name
    would shadow it in the index), and the local ``dataset_path``/``dataset_kwargs``."""
    name = f"wrapcheck_{copy.task}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    lines = [f"include: {base_yaml_path(copy.task)}", f"task: {name}", f"dataset_path: {copy.dataset_path}"]
    lines.append(f"dataset_kwargs: {json.dumps(copy.dataset_kwargs)}" if copy.dataset_kwargs else "dataset_kwargs: {}")
    if copy.audio_column and not torchcodec_installed():
        # the one line that is not the task's own: without it the task fails to build (see decoded_audio)
        lines.append("process_docs: !function faultline_eval.tasks.wrapped_task.decoded_audio")
    path.write_text("\n".join(lines) + "\n")
    return name, path


def describe(value) -> str:
    """A short printable form of a doc_to_visual item."""
    if isinstance(value, str):
        return f"path {value} ({'exists' if os.path.exists(value) else 'MISSING'})"
    if isinstance(value, dict) and "array" in value:
        return f"audio dict array={np.asarray(value['array']).shape} sr={value.get('sampling_rate')}"
    if isinstance(value, dict):
        return f"dict keys={sorted(value)}"
    if hasattr(value, "size") and hasattr(value, "mode"):
        return f"PIL {value.mode} {value.size}"
    return type(value).__name__


def describe_messages(messages: list[dict]) -> list[str]:
    """The parts of chat messages: ``type`` and a short form of each url or text."""
    return [
        f"{part['type']}: " + (repr(part["text"][:40]) if part["type"] == "text" else describe(part["url"]))
        for message in messages
        for part in message["content"]
    ]


def check(task: str, root: Path, chat: bool = False) -> dict:
    """Build ``task``'s local copy under ``root``, load it through lmms-eval's real config and
    utils, make the first two requests and score a canned reply. Returns what it saw.

    ``chat`` builds the task as lmms-eval does for a chat model (``ConfigurableMessagesTask``):
    requests then carry ``doc_to_messages`` (the task's own, or lmms-eval's automatic one from
    doc_to_visual + doc_to_text), whose parts are printed."""
    copy = BUILDERS[task](root / "data")
    if copy.hf_home is not None:  # the utils read $HF_HOME when lmms-eval imports them
        os.environ["HF_HOME"] = str(copy.hf_home)
    os.environ.update(copy.env)
    name, path = local_yaml(copy, root / "tasks")
    print(f"== {task}: {path}\n{path.read_text()}", flush=True)

    from lmms_eval.tasks import TaskManager, get_task_dict

    manager = TaskManager("WARNING", include_path=[str(path.parent)], include_defaults=False)
    built = get_task_dict([name], manager, task_type="chat" if chat else "simple")[name]
    built.build_all_requests(limit=2, rank=0, world_size=1)
    split = built.config.test_split
    seen = {"task": task, "requests": []}
    for instance in built.instances[:2]:
        if chat:
            context, doc_to_messages, gen_kwargs, doc_id, task_name, split_name = instance.arguments
            parts = describe_messages(doc_to_messages(built.test_docs()[doc_id]))
            print(f"-- chat request doc_id={doc_id}: doc_to_messages -> {parts}", flush=True)
            seen["requests"].append({"doc_id": doc_id, "context": context, "parts": parts})
            continue
        context, gen_kwargs, doc_to_visual, doc_id, task_name, split_name = instance.arguments
        doc = built.test_docs()[doc_id]
        visuals = doc_to_visual(doc)
        print(
            f"-- request doc_id={doc_id} task={task_name} split={split_name}\n   context={context!r}\n"
            f"   gen_kwargs={gen_kwargs}\n   doc_to_visual -> {[describe(v) for v in visuals]}",
            flush=True,
        )
        seen["requests"].append({"doc_id": doc_id, "context": context, "visuals": [describe(v) for v in visuals]})
    docs = [built.dataset_no_image[split][i] for i in range(len(built.instances[:2]))]
    if task == "mme":  # MME's aggregation needs both questions of an image
        docs = [built.dataset_no_image[split][i] for i in range(2)]
    scored = [built.process_results(doc, [copy.reply]) for doc in docs]
    print(f"-- process_results({copy.reply!r}) -> {scored}", flush=True)
    # the base aggregations of the task's metrics (process_results may return more keys: mmmu's
    # pass@k); a submission file writer (air_bench's "submission") returns no number and writes a file
    reported = {s.name for s in metric_specs(copy.task)} - {"submission"}
    for metric in sorted(reported & {m for s in scored for m in s}):  # with task args where it takes them
        items = [s[metric] for s in scored if metric in s]
        print(f"-- {metric}: {aggregate(copy.task, metric, items)}", flush=True)
    seen["scored"] = scored
    return seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", metavar="TASK", required=True, help=f"one of {sorted(BUILDERS)} or 'all'")
    parser.add_argument("--chat", action="store_true", help="build the task as for a chat model (doc_to_messages)")
    parser.add_argument("--keep", type=Path, help="build under this folder (default: a temporary one)")
    args = parser.parse_args(argv)
    from faultline_eval.core.offline import use_offline_defaults

    use_offline_defaults()
    tasks = sorted(BUILDERS) if args.check == "all" else [args.check]
    failed = []
    for task in tasks:
        with tempfile.TemporaryDirectory(prefix=f"wrapcheck_{task}_") as scratch:
            root = (args.keep / task) if args.keep else Path(scratch)
            try:
                check(task, root, chat=args.chat)
            except Exception as exc:  # report each task's obstacle and go on with the next one
                failed.append(task)
                print(f"!! {task}: {type(exc).__name__}: {exc}", flush=True)
    print(f"checked {len(tasks) - len(failed)}/{len(tasks)}" + (f"; failed: {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
