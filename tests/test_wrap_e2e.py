"""Wrapped lmms-eval tasks end to end: the real ``lmms-eval`` CLI, the real task configs and utils
of the twelve built-in adapters' tasks, their local copies (tests/wrap_datasets.py), and the
scripted ``modality_oracle``, whose answers depend on one modality, so every number is known in
advance (design §10, §8).

Three CLI runs, each holding several tasks (one lmms-eval start costs ~25 s of imports and indexing):

* ``modality=audio`` on the tasks with audio (worldsense, av_odyssey, omni_bench, clotho_aqa_test,
  librispeech_test_clean, av_speakerbench_audiovisual, air_bench_foundation_sound): ``clean`` and
  ``missing_audio``, plus the unwrapped base copies of the last two;
* ``modality=vision`` on the visual tasks (videomme, mvbench_action_antonym, mme, video_holmes and
  mmmu_val, the last two through their own ``doc_to_messages``): ``clean`` and ``missing_vision``,
  plus the unwrapped base copies (the base vs ``clean`` row of the report);
* ``modality=audio`` with ``--force_simple`` on air_bench's base and ``clean``: a chat model never
  gets the base's in-row audio (design §1.6), a simple one does.

With its modality present the oracle is always right; without it it answers a fixed guess (the
first option, "No", "unknown"), right exactly where the copies put the answer there: the first
of every four docs, the "no" docs, the "No" question of each MME pair. The runs and the copies
take 145 s at a load of about 10 on 2 cores (the two runs of the eight earlier adapters: 94 s at
that load): mostly three lmms-eval start-ups and the lossless re-encodes of the clips.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from wrap_datasets import PreparedCopies

from faultline_eval.tasks import wrap_configs
from sceval_plugin.sceval_trial import WrappedTrial

pytestmark = pytest.mark.slow

LIMIT = 4  # docs per task (MME: two images, both questions of each: the aggregation asserts pairs)
AUDIO_TASKS = ["worldsense", "av_odyssey", "omni_bench", "clotho_aqa_test", "librispeech_test_clean"]
AUDIO_TASKS += ["av_speakerbench_audiovisual", "air_bench_foundation_sound"]
VISION_TASKS = ["videomme", "mvbench_action_antonym", "mme", "video_holmes", "mmmu_val"]
#: The tasks whose unwrapped base copy runs beside its wrapped conditions, in the same run.
BASE_COMPARED = VISION_TASKS + ["av_speakerbench_audiovisual", "air_bench_foundation_sound"]
#: Audio in the row: the base hands a chat model its audio dict as a "video" part whose url is the
#: dict's bare file name (design §1.6), which no model can read; the wrapped task hands an audio
#: part. Their base is compared with clean through the simple interface (``--force_simple``).
SIMPLE_BASE = ["air_bench_foundation_sound"]

#: (metric, value under clean, value with the oracle's modality removed) per base task.
EXPECTED = {
    "worldsense": ("worldsense_score", 100.0, 25.0),
    "av_odyssey": ("av_odyssey_score", 100.0, 25.0),
    "omni_bench": ("accuracy", 100.0, 25.0),
    "clotho_aqa_test": ("exact_match", 1.0, 0.5),
    "librispeech_test_clean": ("wer", 0.0, 100.0),
    "videomme": ("videomme_perception_score", 100.0, 25.0),
    "mvbench_action_antonym": ("mvbench_accuracy", 100.0, 25.0),
    "mme": ("mme_perception_score", 200.0, 50.0),  # acc + acc+ (%): "No" always: 50 + 0
    "video_holmes": ("video_holmes_accuracy", 100.0, 25.0),  # through its own doc_to_messages
    "mmmu_val": ("mmmu_acc", 1.0, 0.25),  # the open question (doc 3) answered "unknown"
    "av_speakerbench_audiovisual": ("av_speakerbench_score", 100.0, 25.0),
    "air_bench_foundation_sound": ("accuracy", 1.0, 0.25),
}


#: Controls run beside clean and the modality removed, for the audit (issue 36): the question
#: removed from tasks that name no options or context field. Without its question the oracle
#: answers its perceived word, which neither task's scorer takes for yes or no.
EXTRA_CONTROLS = {"mme": "shortcut_visual_audio", "clotho_aqa_test": "shortcut_visual_audio"}


def write_wrapped(copies: PreparedCopies, tasks: list[str], removed: str) -> dict[str, tuple[str, ...]]:
    """Write ``clean``, ``removed`` (and the task's :data:`EXTRA_CONTROLS`) of each task, pointed
    at its local copy; task -> names (clean's, removed's, then the extra control's)."""
    names = {}
    for task in tasks:
        data = wrap_configs.data_override(task, copies.copies[task].dataset_path)
        ids = ["clean", removed, *([EXTRA_CONTROLS[task]] if task in EXTRA_CONTROLS else [])]
        names[task] = tuple(wrap_configs.write(task, [wrap_configs.condition_named(i) for i in ids], data))
    return names


def run_cli(
    copies: PreparedCopies, modality: str, tasks: list[str], out: Path, simple: bool = False
) -> tuple[dict, dict[str, list], Path]:
    """One ``lmms-eval`` run of ``modality_oracle`` (its chat interface unless ``simple``):
    (results by task, sample lines by task, the output folder)."""
    command = [sys.executable, "-m", "lmms_eval", "--model", "modality_oracle", "--model_args", f"modality={modality}"]
    command += ["--force_simple"] if simple else []
    command += ["--tasks", ",".join(tasks), "--include_path", str(copies.tasks_dir)]
    command += ["--limit", str(LIMIT), "--log_samples", "--output_path", str(out)]
    done = subprocess.run(command, env=copies.subprocess_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    [results_file] = out.rglob("*_results.json")
    results = json.loads(results_file.read_text())["results"]
    samples = {
        task: [json.loads(line) for path in out.rglob(f"*_samples_{task}.jsonl") for line in path.open()]
        for task in tasks
    }
    return results, samples, out


@pytest.fixture(scope="module")
def audio_run(wrap_copies, tmp_path_factory, monkeypatch_module):
    names = write_wrapped(wrap_copies, AUDIO_TASKS, "missing_audio")
    tasks = [name for pair in names.values() for name in pair]
    tasks += [wrap_copies.names[t] for t in AUDIO_TASKS if t in BASE_COMPARED]
    return names, *run_cli(wrap_copies, "audio", tasks, tmp_path_factory.mktemp("audio_run"))


@pytest.fixture(scope="module")
def vision_run(wrap_copies, tmp_path_factory, monkeypatch_module):
    names = write_wrapped(wrap_copies, VISION_TASKS, "missing_vision")
    tasks = [name for pair in names.values() for name in pair]
    tasks += [wrap_copies.names[t] for t in VISION_TASKS if t in BASE_COMPARED]
    return names, *run_cli(wrap_copies, "vision", tasks, tmp_path_factory.mktemp("vision_run"))


@pytest.fixture(scope="module")
def simple_audio_run(wrap_copies, tmp_path_factory, monkeypatch_module):
    names = write_wrapped(wrap_copies, SIMPLE_BASE, "missing_audio")
    tasks = [names[t][0] for t in SIMPLE_BASE] + [wrap_copies.names[t] for t in SIMPLE_BASE]
    return names, *run_cli(wrap_copies, "audio", tasks, tmp_path_factory.mktemp("simple_audio_run"), simple=True)


@pytest.fixture(scope="module")
def monkeypatch_module(wrap_copies):
    """The wrapped YAMLs go to the copies' cache, which the CLI subprocesses see too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SCEVAL_CACHE", wrap_copies.env["SCEVAL_CACHE"])
        yield patch


def check_run(names, results, samples, tasks, removed):
    for task in tasks:
        metric, clean_value, removed_value = EXPECTED[task]
        clean, corrupted = names[task][:2]
        assert results[clean][f"{metric},none"] == pytest.approx(clean_value), (task, results[clean])
        assert results[corrupted][f"{metric},none"] == pytest.approx(removed_value), (task, results[corrupted])
        for name, condition in ((clean, "clean"), (corrupted, removed)):
            lines = samples[name]
            assert len(lines) == LIMIT, (name, len(lines))
            trials = [WrappedTrial.from_json(line["faultline_trial"]) for line in lines]
            assert {t.base_task for t in trials} == {task} and {t.condition_id for t in trials} == {condition}
            assert sorted(t.doc_id for t in trials) == list(range(LIMIT))
            assert all(metric in line for line in lines)  # the base metric's own per-doc item


def test_audio_tasks_clean_and_missing_audio(audio_run):
    names, results, samples, _ = audio_run
    check_run(names, results, samples, AUDIO_TASKS, "missing_audio")


def check_base(names, results, samples, tasks, local_names):
    """The unwrapped base on the same local copy: the same aggregate as ``clean`` and, doc for
    doc, the same per-doc item of the base metric (the oracle's answers are the same)."""
    for task in tasks:
        metric, clean_value, _ = EXPECTED[task]
        base, clean = local_names[task], names[task][0]
        assert results[base][f"{metric},none"] == pytest.approx(clean_value) == results[clean][f"{metric},none"]
        assert all("faultline_trial" not in line for line in samples[base])
        by_doc = {line["doc_id"]: line[metric] for line in samples[base]}
        assert {line["doc_id"]: line[metric] for line in samples[clean]} == by_doc, task
        assert len(by_doc) == LIMIT


def test_audio_tasks_equal_their_base(audio_run, simple_audio_run, wrap_copies):
    names, results, samples, _ = audio_run
    chat = [t for t in AUDIO_TASKS if t in BASE_COMPARED and t not in SIMPLE_BASE]
    check_base(names, results, samples, chat, wrap_copies.names)
    for task in SIMPLE_BASE:  # through the chat interface the base's audio never reaches the model
        assert {line["filtered_resps"] for line in samples[wrap_copies.names[task]]} == {""}
        assert "" not in {line["filtered_resps"] for line in samples[names[task][0]]}
    check_base(*simple_audio_run[:3], SIMPLE_BASE, wrap_copies.names)


def test_visual_tasks_clean_and_missing_vision_and_the_base(vision_run, wrap_copies):
    names, results, samples, _ = vision_run
    check_run(names, results, samples, VISION_TASKS, "missing_vision")
    check_base(names, results, samples, VISION_TASKS, wrap_copies.names)


@pytest.fixture(scope="module")
def audit_of_both(audio_run, vision_run, tmp_path_factory) -> Path:
    """``faultline audit`` over both runs (tables only)."""
    out = tmp_path_factory.mktemp("audit")
    command = [str(Path(sys.executable).with_name("faultline")), "audit", str(audio_run[3]), str(vision_run[3])]
    done = subprocess.run([*command, "-o", str(out), "--no-figures"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "more than once" not in done.stdout + done.stderr
    return out


def test_the_audit_names_the_two_settings_of_the_oracle_apart(audit_of_both):
    """``faultline audit`` over both runs: one class (``modality_oracle``) with two ``modality``
    settings is two models, named by that argument (issue 35), each with its own tasks' trials."""
    per_item = pd.read_csv(audit_of_both / "audit_per_item.csv")
    tasks = per_item.groupby("model")["base_task"].agg(set).to_dict()
    assert tasks == {
        "modality_oracle (modality=audio)": set(AUDIO_TASKS),
        "modality_oracle (modality=vision)": set(VISION_TASKS),
    }


def test_the_audit_scores_every_metric_kind_and_leaves_nothing_out(audit_of_both):
    """Issue 36 on the real runs: librispeech's WER (0 in clean, 100 without audio) is a row of
    the shares, an error rate needing the audio on every item; MME and clotho_aqa (yes/no golds)
    have chance 1/2; the question-removing shortcut on MME and clotho_aqa shows how much of each
    needs its question (all: the oracle without it answers neither yes nor no)."""
    shares = pd.read_csv(audit_of_both / "audit_shares.csv")
    assert shares["note"].fillna("").str.startswith("left out").sum() == 0, shares[["base_task", "note"]]
    assert set(shares["base_task"]) == set(AUDIO_TASKS) | set(VISION_TASKS)
    rows = shares.set_index(["base_task", "control"])
    asr = rows.loc[("librispeech_test_clean", "missing_audio")]
    assert (asr["kind"], asr["metric"]) == ("error rate", "wer")
    assert asr["answerable"] == 0.0 and asr["needs"] == 1.0 and asr["clean_answerable"] == LIMIT
    kinds = {task: rows.loc[task, "kind"].iloc[0] for task in (*AUDIO_TASKS, *VISION_TASKS)}
    assert kinds["worldsense"] == kinds["mvbench_action_antonym"] == "accuracy"
    assert kinds["mme"] == "yes/no pairs" and kinds["clotho_aqa_test"] == "yes/no"
    for task in ("mme", "clotho_aqa_test"):
        assert rows.loc[(task, EXTRA_CONTROLS[task]), "chance"] == 0.5
        question = rows.loc[(task, "shortcut_visual_audio")]
        assert question["takes_away"] == "question" and question["answerable"] == 0.0 and question["needs"] == 1.0
    # the modality removed: the oracle's fixed guess is right on half the yes/no items (the "no" ones)
    assert rows.loc[("mme", "missing_vision"), "answerable"] == 0.5 == rows.loc[("mme", "missing_vision"), "chance"]
    assert rows.loc[("worldsense", "missing_audio"), "chance"] == 0.25
    per_item = pd.read_csv(audit_of_both / "audit_per_item.csv")
    asr_items = per_item[per_item["base_task"] == "librispeech_test_clean"]
    assert asr_items["missing_audio"].tolist() == [0.0] * LIMIT and asr_items["clean"].tolist() == [1.0] * LIMIT
    assert (
        asr_items["blank"].str.fullmatch("missing_vision, shortcut_visual_audio: not run for this task and model").all()
    )
