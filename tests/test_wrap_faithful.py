"""Wrapped ``clean`` is the base task, trial for trial, for a model that samples video frames itself
(issue 36): the real ``lmms-eval`` CLI, the real task configs of the eight built-in adapters' tasks,
their local copies (tests/wrap_datasets.py), and ``modality_oracle`` with ``modality=fingerprint``
and ``video_frames=8``: it samples 8 frames of a video file with lmms-eval's own ``read_video`` and
replies from a digest of every frame and sample it read (an audio dict as received: rate, shape,
values), so equal replies doc for doc mean it was shown the same media. The ClothoAQA copy is
44.1 kHz, so its audio is checked at a rate other than SCEval's 16 kHz. The base side is ``<base>__unwrapped``, which ``faultline wrap`` writes
beside the wrapped tasks on the same local copy (the report's base row).

The model takes lmms-eval's simple interface (``--force_simple``: ``doc_to_visual``'s items as the
task gives them). Under the chat interface the base clotho_aqa and librispeech tasks hand the
model an audio dict as a *video* part whose url is the dataset's bare file name (design §1.6, a
bug of the base tasks that the wrapper fixes), so no model hears their audio unwrapped.

One CLI run holds all sixteen tasks (one lmms-eval start costs ~25 s of imports and indexing).
Under SCEval's grid (``frames=sceval_grid``) the same model would see 2 frames of these 2 s clips
instead of 8: ``tests/test_wrapped_media.py`` checks that difference without the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from wrap_datasets import BUILDERS, PreparedCopies

from faultline_eval.tasks import wrap_configs
from faultline_eval.tasks.wrapped_media import SOURCE_FRAMES
from sceval_plugin.base_task import metric_specs
from sceval_plugin.sceval_trial import WrappedTrial

pytestmark = pytest.mark.slow

LIMIT = 4  # docs per task (MME: two images, both questions of each: the aggregation asserts pairs)
TASKS = list(BUILDERS)  # the eight built-in adapters' tasks


@pytest.fixture(scope="module")
def faithful_run(wrap_copies: PreparedCopies, tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:  # the wrapped YAMLs go where the CLI looks
        patch.setenv("SCEVAL_CACHE", wrap_copies.env["SCEVAL_CACHE"])
        pairs = {}
        for task in TASKS:
            data = wrap_configs.data_override(task, wrap_copies.copies[task].dataset_path)
            [clean] = wrap_configs.write(task, [wrap_configs.condition_named("clean")], data)
            assert wrap_configs.frames_of(task) == SOURCE_FRAMES  # the default
            pairs[task] = (wrap_configs.unwrapped_name(task), clean)
    out = tmp_path_factory.mktemp("faithful_run")
    tasks = [name for pair in pairs.values() for name in pair]
    command = [sys.executable, "-m", "lmms_eval", "--model", "modality_oracle"]
    command += ["--model_args", "modality=fingerprint,video_frames=8", "--tasks", ",".join(tasks)]
    command += ["--force_simple", "--limit", str(LIMIT), "--log_samples", "--output_path", str(out)]
    done = subprocess.run(command, env=wrap_copies.subprocess_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    [results_file] = out.rglob("*_results.json")
    results = json.loads(results_file.read_text())["results"]
    samples = {
        name: sorted(
            (json.loads(line) for path in out.rglob(f"*_samples_{name}.jsonl") for line in path.open()),
            key=lambda line: line["doc_id"],
        )
        for name in tasks
    }
    return pairs, results, samples


@pytest.mark.parametrize("task", TASKS)
def test_wrapped_clean_equals_the_base_trial_for_trial(faithful_run, task):
    pairs, results, samples = faithful_run
    base, clean = pairs[task]
    metrics = [spec.name for spec in metric_specs(task)]  # the task's own metrics
    base_lines, clean_lines = samples[base], samples[clean]
    assert len(base_lines) == len(clean_lines) == LIMIT, (task, len(base_lines), len(clean_lines))
    for before, after in zip(base_lines, clean_lines):
        assert before["doc_id"] == after["doc_id"]
        assert before["filtered_resps"] == after["filtered_resps"], (task, before, after)
        assert [before.get(m) for m in metrics] == [after.get(m) for m in metrics], (task, before["doc_id"])
        assert any(m in before for m in metrics)  # the per-doc item is there to compare (MME: one of two)
        trial = WrappedTrial.from_json(after["faultline_trial"])
        assert (trial.condition_id, trial.frames) == ("clean", SOURCE_FRAMES)
        assert "faultline_trial" not in before  # the base is the base: its own functions only
    reported = {key: value for key, value in results[base].items() if key.split(",")[0] in metrics}
    assert reported, (task, results[base])  # a metric with no item (MME's cognition here) is not reported
    assert reported == {key: results[clean].get(key) for key in reported}, (task, results[base], results[clean])


def test_the_model_read_media_on_every_task(faithful_run):
    """The replies come from the media (a digest), not from a fixed guess: librispeech's open
    answer is the digest itself, different per recording (the copy alternates two tones)."""
    _, _, samples = faithful_run
    replies = [line["filtered_resps"] for line in samples["librispeech_test_clean__unwrapped"]]
    assert len(set(replies)) == 2 and all(len(r) == 16 for r in replies), replies
