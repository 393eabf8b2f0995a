"""Wrapping the benchmarks people have (issue 36): their own task files and local copies.

* A user's task file that ``include:``s a built-in task and points it at a JSON copy through its
  ``dataset_kwargs`` (``my_mvbench``), found under ``--include_path`` by ``faultline wrap`` and by
  ``lmms-eval``, served by the adapter of the task it includes.
* ``--data TASK=PATH`` in every layout the task's own loader reads (:mod:`faultline_eval.tasks.local_data`):
  a hub-layout parquet folder with a folder per config (clotho_aqa, whose YAML names the config
  ``clotho_aqa``), a ``save_to_disk`` copy whose docs have their own ``row_id`` column (MME).
* The wrapper's fields live in the ``_faultline_`` namespace; a dataset holding one stops plain
  ``lmms-eval`` with an error naming the task and the column (exit status 1).
* The results hold the base metrics only; the trials stay in the per-sample logs, where
  ``sceval report`` reads them.

One ``lmms-eval`` run of the scripted ``modality_oracle`` (modality=vision) holds the three wrapped
tasks; a second, refused at the docs, is short (no model call).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import wrap_datasets as wd

from faultline_app import faultline_cli as commands
from faultline_eval.tasks.local_data import LocalDataError, local_dataset
from sceval_plugin import base_task
from sceval_plugin.sceval_trial import WrappedTrial

LIMIT = 4


@pytest.fixture
def fresh_include_paths(monkeypatch, tmp_path):
    """No include path left from another test (the index is per process), and a cache of its own."""
    monkeypatch.setattr(base_task, "_include_paths", [])
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))


def user_task_folder(root: Path, hf_home: Path) -> Path:
    """``my_tasks/my_mvbench.yaml``: the user's copy of mvbench_action_antonym, its docs in a
    JSONL file beside it (a relative ``data_files``, as lmms-eval resolves it), its videos under
    ``$HF_HOME/mvbench_video`` as the task's utils expect."""
    import datasets

    copy = wd.build_mvbench(root / "mvbench", hf_home=hf_home)
    folder = root / "my_tasks"
    folder.mkdir()
    rows = datasets.load_from_disk(str(copy.dataset_path))["train"].to_list()
    (folder / "mvbench.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "my_mvbench.yaml").write_text(
        f"include: {base_task.base_yaml_path('mvbench_action_antonym')}\n"
        "task: my_mvbench\n"
        "dataset_path: json\n"
        "dataset_name: null\n"
        "dataset_kwargs: {data_files: {train: mvbench.jsonl}, video: true, cache_dir: mvbench_video}\n"
    )
    return folder


def clotho_hub_copy(root: Path) -> Path:
    """ClothoAQA as the Hub lays it out, without the README: ``clotho_aqa/<split>-00000-of-00001.parquet``."""
    import datasets

    copy = wd.build_clotho_aqa(root / "clotho")
    split = datasets.load_from_disk(str(copy.dataset_path))["clotho_aqa_test_filtered"]
    folder = root / "clotho_hub"
    (folder / "clotho_aqa").mkdir(parents=True)
    split.to_parquet(str(folder / "clotho_aqa" / "clotho_aqa_test_filtered-00000-of-00001.parquet"))
    return folder


def mme_copy_with(root: Path, column: str) -> Path:
    """The MME copy (save_to_disk) with one more column ``column`` of the dataset's own."""
    import datasets

    copy = wd.build_mme(root / f"mme_{column}")
    split = datasets.load_from_disk(str(copy.dataset_path))["test"]
    split = split.add_column(column, [f"mme-{i}" for i in range(len(split))])
    folder = root / f"mme_with_{column}"
    datasets.DatasetDict({"test": split}).save_to_disk(str(folder))
    return folder


def lmms_eval(tasks: list[str], include: Path, out: Path, env: dict) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "lmms_eval", "--model", "modality_oracle", "--model_args", "modality=vision"]
    command += ["--tasks", ",".join(tasks), "--include_path", str(include), "--limit", str(LIMIT)]
    command += ["--log_samples", "--output_path", str(out)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def wrap_cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    faultline = str(Path(sys.executable).with_name("faultline"))
    return subprocess.run([faultline, "wrap", *args], env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """``faultline wrap`` of the three tasks (clotho_aqa and MME written with their copies), then one
    lmms-eval run of their clean conditions."""
    import os

    root = tmp_path_factory.mktemp("wrap_local")
    hf_home = root / "hf_home"
    user = user_task_folder(root, hf_home)
    env = {**os.environ, "HF_HOME": str(hf_home), "SCEVAL_CACHE": str(root / "cache")}
    wrapped = [  # my_mvbench listed only: lmms-eval writes its wrapped task on request, finding it on --include_path
        wrap_cli("my_mvbench", "--include-path", str(user), "--conditions", "clean", env=env),
        wrap_cli(
            "clotho_aqa_test",
            "mme",
            "--conditions",
            "clean",
            "--write",
            "--data",
            f"clotho_aqa_test={clotho_hub_copy(root)}",
            "--data",
            f"mme={mme_copy_with(root, 'row_id')}",
            env=env,
        ),
    ]
    out = root / "out"
    done = lmms_eval(["my_mvbench__clean", "clotho_aqa_test__clean", "mme__clean"], user, out, env)
    return root, env, wrapped, done, out


@pytest.mark.slow
def test_a_users_task_file_and_local_copies_run_wrapped(local_run):
    root, env, wrapped, done, out = local_run
    for call in wrapped:
        assert call.returncode == 0, call.stderr
    assert "my_mvbench (mvbench@" in wrapped[0].stdout  # the adapter of the task it includes
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    [results_file] = out.rglob("*_results.json")
    results = json.loads(results_file.read_text())["results"]
    # modality_oracle sees the frames and the image, not the audio (clotho: its fixed guess)
    assert results["my_mvbench__clean__var0"]["mvbench_accuracy,none"] == pytest.approx(100.0)
    assert results["mme__clean__var0"]["mme_perception_score,none"] == pytest.approx(200.0)
    assert results["clotho_aqa_test__clean__var0"]["exact_match,none"] == pytest.approx(0.5)
    # the results hold the base metrics only; the trials are in the per-sample logs
    assert not [key for entry in results.values() for key in entry if "faultline_trial" in key]
    for task in ("my_mvbench__clean__var0", "mme__clean__var0", "clotho_aqa_test__clean__var0"):
        [log] = out.rglob(f"*_samples_{task}.jsonl")
        trials = [WrappedTrial.from_json(json.loads(line)["faultline_trial"]) for line in log.open()]
        assert sorted(t.doc_id for t in trials) == list(range(LIMIT)), task
    trial = WrappedTrial.from_json(
        json.loads(next(out.rglob("*_samples_my_mvbench__*")).open().readline())["faultline_trial"]
    )
    assert trial.base_task == "my_mvbench" and trial.adapter.startswith("mvbench@")


@pytest.mark.slow
def test_sceval_report_reads_the_run_of_a_users_task(local_run):
    """A new process, not given the include path: the user's task is found through the wrapped
    tasks' manifest, and its metrics through its own YAML."""
    root, env, _, done, out = local_run
    assert done.returncode == 0
    report = root / "report"
    sceval = str(Path(sys.executable).with_name("sceval"))
    call = subprocess.run([sceval, "report", str(out), "-o", str(report)], env=env, capture_output=True, text=True)
    assert call.returncode == 0, call.stderr[-3000:]
    names = {p.name for p in report.rglob("*")}
    assert any("my_mvbench" in name for name in names), sorted(names)


@pytest.mark.slow
def test_a_dataset_column_in_the_wrappers_namespace_stops_lmms_eval(local_run):
    root, env, _, _, _ = local_run
    copy = mme_copy_with(root, "_faultline_row_id")
    call = wrap_cli("mme", "--conditions", "clean", "--write", "--data", f"mme={copy}", env=env)
    assert call.returncode == 0, call.stderr
    done = lmms_eval(["mme__clean"], root / "my_tasks", root / "refused", env)
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "wrapped task mme__clean__var0" in said and "'_faultline_row_id'" in said, said[-3000:]
    assert "RetryError" not in said  # refused at once, not retried five times


# --- fast: the CLI's names and the local layouts ---------------------------------------------------


def test_faultline_wrap_finds_a_task_under_include_path(fresh_include_paths, tmp_path, capsys):
    user = tmp_path / "tasks"
    user.mkdir()
    (user / "my_worldsense.yaml").write_text(
        f"include: {base_task.base_yaml_path('worldsense')}\ntask: my_worldsense\ndataset_path: /nowhere\n"
    )
    (user / "variants").mkdir()
    (user / "variants" / "my_worldsense_small.yaml").write_text(
        "include: ../my_worldsense.yaml\ntask: my_worldsense_small\n"
    )
    assert commands.main(["wrap", "my_worldsense", "--conditions", "clean"]) == 1
    err = capsys.readouterr().err
    assert "no lmms-eval task 'my_worldsense'" in err and "--include_path" in err
    assert commands.main(["wrap", "my_worldsense", "--conditions", "clean", "--include-path", str(user)]) == 0
    assert "my_worldsense (worldsense@" in capsys.readouterr().out
    # a task including the user's task by a relative path: the chain is followed to the benchmark
    assert base_task.base_lineage("my_worldsense_small") == ["my_worldsense_small", "my_worldsense", "worldsense"]
    assert commands.main(["wrap", "my_worldsense_small", "--conditions", "clean", "--write"]) == 0
    assert "my_worldsense_small (worldsense@" in capsys.readouterr().out
    written = (base_task.wrap_root() / "my_worldsense_small" / "my_worldsense_small__clean__var0.yaml").read_text()
    assert f'include: "{user / "variants" / "my_worldsense_small.yaml"}"' in written  # by absolute path


def _load(override: dict, config: dict):
    """The dataset lmms-eval's ``download`` would load with ``override`` (its two calls)."""
    import datasets

    kwargs = {k: v for k, v in override["dataset_kwargs"].items() if k not in ("video", "cache_dir")}
    if kwargs.pop("load_from_disk", False):
        return datasets.load_from_disk(override["dataset_path"])
    name = override.get("dataset_name", config.get("dataset_name"))
    return datasets.load_dataset(override["dataset_path"], name=name, **kwargs)


def test_data_layouts_each_load_as_the_tasks_split(tmp_path):
    """save_to_disk (DatasetDict or one Dataset), a hub layout with README configs, one without
    (a folder per config), a single parquet file and a JSONL folder: each gives clotho_aqa's split
    with its Audio column; a copy without that split is refused naming it."""
    import datasets

    config = base_task.base_simple_config("clotho_aqa_test")
    copy = wd.build_clotho_aqa(tmp_path / "clotho")
    split = datasets.load_from_disk(str(copy.dataset_path))["clotho_aqa_test_filtered"]
    shard = "clotho_aqa_test_filtered-00000-of-00001.parquet"
    layouts = {"save_to_disk": copy.dataset_path}
    split.save_to_disk(str(tmp_path / "one_dataset"))
    layouts["one saved Dataset"] = tmp_path / "one_dataset"
    for name in ("hub", "hub_readme"):
        (tmp_path / name / "clotho_aqa").mkdir(parents=True)
        split.to_parquet(str(tmp_path / name / "clotho_aqa" / shard))
        layouts[name] = tmp_path / name
    (tmp_path / "hub_readme" / "README.md").write_text(
        "---\nconfigs:\n- config_name: clotho_aqa\n  data_files:\n  - split: clotho_aqa_test_filtered\n"
        f"    path: clotho_aqa/{shard}\n---\n"
    )
    layouts["one file"] = tmp_path / "hub" / "clotho_aqa" / shard
    for name, path in layouts.items():
        loaded = _load(local_dataset("clotho_aqa_test", config, path), config)
        assert list(loaded) == ["clotho_aqa_test_filtered"], name
        assert len(loaded["clotho_aqa_test_filtered"]) == len(split), name
        assert isinstance(loaded["clotho_aqa_test_filtered"].features["audio"], datasets.Audio), name
    text = tmp_path / "text"
    text.mkdir()
    (text / "test.jsonl").write_text('{"question": "q", "answer": "a"}\n')
    with pytest.raises(LocalDataError, match="no data file of split 'clotho_aqa_test_filtered'.*test.jsonl"):
        local_dataset("clotho_aqa_test", config, text)
    (text / "clotho_aqa_test_filtered.jsonl").write_text('{"question": "q", "answer": "a"}\n')
    assert len(_load(local_dataset("clotho_aqa_test", config, text), config)["clotho_aqa_test_filtered"]) == 1
    with pytest.raises(LocalDataError, match=r"holds the split\(s\) 'test', not 'clotho_aqa_test_filtered'"):
        local_dataset("clotho_aqa_test", config, wd.build_mme(tmp_path / "mme").dataset_path)
