"""Point an lmms-eval task at a local copy of its dataset (``faultline wrap --data TASK=PATH``).

The task's own loader reads the copy: lmms-eval's ``ConfigurableTask.download`` calls
``datasets.load_from_disk(dataset_path)`` when ``dataset_kwargs.load_from_disk`` is set, else
``datasets.load_dataset(dataset_path, name=dataset_name, **dataset_kwargs)``. :func:`local_dataset`
says which of those reads ``PATH`` and with what, from what ``PATH`` holds (the how-to's table,
docs/how-to/wrap-a-task.md, says the same to users):

1. a ``save_to_disk`` folder: a ``DatasetDict`` (``dataset_dict.json``) holding the task's split,
   read with ``load_from_disk``; or one ``Dataset`` (``state.json``), read as the task's split
   through its Arrow files;
2. a hub-layout folder whose ``README.md`` declares ``configs:`` (what ``hf download REPO
   --repo-type dataset --local-dir PATH`` gives): ``load_dataset(PATH, name=<the task's config>)``,
   exactly as from the Hub;
3. any other folder of data files (``.parquet``, ``.json``/``.jsonl``, ``.csv``, ``.arrow``): the
   files of the task's config (a folder or a file named after it, when the task names one) split
   by name (``<split>-00000-of-00001.parquet``, ``<split>.jsonl``, a folder ``<split>/``), or all
   of them as the task's split when none is named after a split; read with the format's builder
   and explicit ``data_files`` (``dataset_name`` set to null: the builder has no such config);
4. one data file: the task's split.

The base's ``video``/``cache_dir`` keys are kept, so a video task's ``download()`` finds its media
under ``$HF_HOME/<cache_dir>`` and never calls the Hub; every other base key (``token``,
``revision``, the Hub's ``data_files``) is dropped. A copy that holds no data for the task's split
is refused, naming the split, what was found and how to name the files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

__all__ = ["DATA_BUILDERS", "LocalDataError", "local_dataset"]

#: Data file suffix -> the ``datasets`` builder that reads it.
DATA_BUILDERS = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv", ".arrow": "arrow"}
#: Folders a download or a save leaves beside the data, never data.
_SKIPPED = (".cache", ".huggingface", ".git")


class LocalDataError(ValueError):
    """A local copy the task's loader cannot read as the task's dataset; the message names the
    task, the path, what it holds and what it must hold."""


def local_dataset(task: str, config: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """``dataset_path``, ``dataset_name`` (only when it must change) and ``dataset_kwargs`` that
    make ``task`` (its merged YAML ``config``) read the local copy at ``path`` (see the module doc)."""
    target = Path(path).expanduser().resolve()
    where = f"--data {task}={path}"
    if not target.exists():
        raise LocalDataError(f"{where}: no such file or folder")
    split = config.get("test_split") or config.get("validation_split")
    if not split:
        raise LocalDataError(f"{where}: the task names no test_split or validation_split to read")
    base_kwargs = dict(config.get("dataset_kwargs") or {})
    kept = {k: base_kwargs[k] for k in ("video", "cache_dir") if k in base_kwargs}
    if target.is_file():
        builder = _builder(target, where)
        return _files(builder, {split: [str(target)]}, kept)
    if (target / "dataset_dict.json").is_file():
        splits = json.loads((target / "dataset_dict.json").read_text(encoding="utf-8")).get("splits", [])
        if split not in splits:
            raise LocalDataError(
                f"{where}: the saved DatasetDict holds the split(s) {', '.join(map(repr, splits))}, not "
                f"{split!r}, which {task} reads; save it as DatasetDict({{{split!r}: ...}})"
            )
        return {"dataset_path": str(target), "dataset_kwargs": {"load_from_disk": True, **kept}}
    if (target / "state.json").is_file():  # one saved Dataset: its Arrow files are the split
        return _files("arrow", {split: sorted(str(p) for p in target.glob("*.arrow"))}, kept)
    declared = _readme_configs(target)
    if declared:
        name = config.get("dataset_name")
        if name is not None and name not in declared:
            raise LocalDataError(
                f"{where}: its README.md declares the config(s) {', '.join(map(repr, declared))}, not "
                f"{name!r}, which {task} reads"
            )
        return {"dataset_path": str(target), "dataset_kwargs": kept}
    return _data_files(task, target, where, config.get("dataset_name"), split, kept)


def _files(builder: str, data_files: dict[str, list[str]], kept: dict[str, Any]) -> dict[str, Any]:
    return {"dataset_path": builder, "dataset_name": None, "dataset_kwargs": {"data_files": data_files, **kept}}


def _builder(file: Path, where: str) -> str:
    builder = DATA_BUILDERS.get(file.suffix.lower())
    if builder is None:
        raise LocalDataError(f"{where}: {file.name} is not a data file ({', '.join(DATA_BUILDERS)})")
    return builder


def _readme_configs(folder: Path) -> list[str]:
    """The ``config_name`` of each entry of the README's ``configs:`` metadata (none: [])."""
    readme = folder / "README.md"
    if not readme.is_file():
        return []
    text = readme.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return []
    try:
        metadata = yaml.safe_load(text.split("---", 2)[1]) or {}
    except yaml.YAMLError:
        return []
    configs = metadata.get("configs") if isinstance(metadata, dict) else None
    return [str(c.get("config_name", "default")) for c in configs or [] if isinstance(c, dict)]


def _names(file: Path, root: Path, name: str) -> bool:
    """Whether ``file`` (under ``root``) is named after ``name``: a folder on its way, its stem,
    or its stem's part before the shard number (``name-00000-of-00001``)."""
    relative = file.relative_to(root)
    return name in relative.parts[:-1] or file.stem == name or file.stem.startswith(f"{name}-")


def _data_files(
    task: str, folder: Path, where: str, config_name: str | None, split: str, kept: dict[str, Any]
) -> dict[str, Any]:
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.suffix.lower() in DATA_BUILDERS and not set(p.relative_to(folder).parts) & set(_SKIPPED)
    )
    if not files:
        raise LocalDataError(
            f"{where}: the folder holds no dataset: no dataset_dict.json or state.json (save_to_disk), no README.md "
            f"declaring configs, no data file ({', '.join(DATA_BUILDERS)})"
        )
    if config_name is not None:  # a hub layout keeps a config's files in a folder or a file named after it
        files = [p for p in files if _names(p, folder, config_name)] or files
    chosen = [p for p in files if _names(p, folder, split)]
    if not chosen:
        other = [p for p in files if p.stem.split("-")[0] in ("train", "test", "validation", "dev", "val")]
        if other:
            found = ", ".join(str(p.relative_to(folder)) for p in other[:4])
            raise LocalDataError(
                f"{where}: no data file of split {split!r}, which {task} reads (found {found}); name its files "
                f"{split}.parquet, {split}-00000-of-00001.parquet or put them in a folder {split}/"
            )
        chosen = files  # no file names a split: the folder is the task's one split
    builders = {_builder(p, where) for p in chosen}
    if len(builders) > 1:
        raise LocalDataError(f"{where}: the data files of split {split!r} mix formats ({', '.join(sorted(builders))})")
    return _files(builders.pop(), {split: [str(p) for p in chosen]}, kept)
