"""Access to the lmms-eval task a wrapped task wraps (issue 27): its YAML, config and metrics.

A wrapped task (``worldsense__single_noise_v50__var0``) keeps the base task's own prompt,
``process_results`` and aggregations; the wrapper, the report and the audit reach them here:

* :func:`base_yaml_path`: the YAML lmms-eval indexes under the task's name (found the way
  ``TaskManager`` finds it: an ``os.walk`` of lmms-eval's task folder, then of each
  ``--include_path`` folder (:func:`add_include_paths`), the first folder defining the name winning
  and within a folder the last file), without importing lmms-eval. A task a user defined under an
  include path is found in later processes too (the report, the run of its wrapped tasks) through
  the manifest ``faultline wrap`` wrote beside its wrapped tasks (:func:`wrapped_manifest`);
* :func:`base_lineage`: the task names along a task's ``include:`` chain (``my_worldsense`` ->
  ``worldsense``), so a user's copy of a benchmark is served by the benchmark's task adapter;
* :func:`base_config`: the full config, ``include:`` merged and ``!function`` resolved by
  lmms-eval's own loader (so the task's ``utils.py`` is imported as lmms-eval imports it);
* :func:`metric_specs` / :func:`aggregate`: the ``metric_list`` as lmms-eval reads it
  (``ConfigurableTask._prepare_metric_and_aggregation``), and one call of a metric's own
  aggregation with its logging silenced (worldsense logs a line per category on every call,
  which a bootstrap would multiply).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import inspect
import io
import json
import numbers
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from faultline_eval.core.paths import cache_dir
from faultline_eval.core.registry import did_you_mean

#: ``<cache>/wrapped_tasks``: where ``faultline wrap`` writes a folder per base task, with its manifest.
WRAPPED_TASKS = "wrapped_tasks"
MANIFEST = "wrapped.json"

__all__ = [
    "BaseTaskError",
    "MetricSpec",
    "WRAPPED_TASKS",
    "MANIFEST",
    "lmms_eval_tasks_dir",
    "builtin_task_names",
    "add_include_paths",
    "include_paths",
    "known_task_names",
    "wrap_root",
    "wrapped_manifest",
    "base_yaml_path",
    "base_lineage",
    "base_simple_config",
    "base_config",
    "metric_specs",
    "aggregate",
]


class BaseTaskError(KeyError):
    """A base task lmms-eval does not define, or a metric it does not report; the message names it."""

    def __str__(self) -> str:  # KeyError would quote the message like a dict key
        return str(self.args[0])


@dataclass(frozen=True)
class MetricSpec:
    """One entry of a base task's ``metric_list``, resolved as lmms-eval resolves it."""

    name: str
    #: The aggregation lmms-eval calls on the metric's per-doc items.
    aggregation: Callable[..., Any]
    higher_is_better: bool
    #: Whether the aggregation takes ``args`` (lmms-eval passes it the CLI arguments).
    takes_args: bool


def lmms_eval_tasks_dir() -> Path:
    """lmms-eval's built-in task folder (found without importing lmms-eval, which takes seconds)."""
    spec = importlib.util.find_spec("lmms_eval")
    if spec is None or not spec.submodule_search_locations:
        raise BaseTaskError("lmms-eval is not installed: no lmms_eval package to find base tasks in")
    return Path(next(iter(spec.submodule_search_locations))) / "tasks"


class _IndexLoader(getattr(yaml, "CFullLoader", yaml.FullLoader)):  # type: ignore[misc]
    """lmms-eval's ``mode="simple"`` reading (its ``yaml.full_load``; libyaml's when built with
    it: a fifth of the time): ``!function`` tags stay strings."""


_IndexLoader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))  # type: ignore[arg-type]


_TASK_LINE = re.compile(r"^task\s*:", re.M)


@functools.cache
def _folder_index(folder: str) -> dict[str, Path]:
    """Task name -> YAML for every task file under ``folder``, in ``TaskManager._get_task_and_group``'s
    walk order (later files overwrite earlier ones, as there). Files without a top-level ``task:``
    line are skipped unparsed."""
    index: dict[str, Path] = {}
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".ipynb_checkpoints")]
        for name in files:
            if not name.endswith(".yaml"):
                continue
            path = Path(root) / name
            text = path.read_text(encoding="utf-8", errors="replace")
            if not _TASK_LINE.search(text):
                continue
            try:
                config = yaml.load(text, Loader=_IndexLoader)
            except yaml.YAMLError:
                continue  # lmms-eval would fail on it too; it defines no task we can wrap
            if isinstance(config, dict) and isinstance(config.get("task"), str) and "class" not in config:
                index[config["task"]] = path
    return index


def _defines(path: Path, task: str) -> bool:
    """Whether the YAML at ``path`` still defines ``task``."""
    try:
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=_IndexLoader)
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(config, dict) and config.get("task") == task


def _task_index() -> dict[str, Path]:
    """The built-in task files (see :func:`_folder_index`)."""
    return _folder_index(str(lmms_eval_tasks_dir()))


#: The ``--include_path`` folders of this process (``faultline wrap``, an lmms-eval run), in order.
_include_paths: list[Path] = []


def add_include_paths(paths: Any) -> None:
    """Index ``paths`` (a folder or several, lmms-eval's ``--include_path``) after lmms-eval's own
    tasks, as lmms-eval does: a built-in name shadows a task of the same name there. A path that
    is not a folder raises :class:`BaseTaskError` naming it."""
    for path in [paths] if isinstance(paths, (str, Path)) else list(paths or []):
        folder = Path(path).resolve()
        if not folder.is_dir():
            raise BaseTaskError(f"--include_path {path}: no such folder")
        if folder not in _include_paths:
            _include_paths.append(folder)


def include_paths() -> list[Path]:
    """The folders :func:`add_include_paths` added in this process."""
    return list(_include_paths)


def known_task_names() -> set[str]:
    """The task names lmms-eval would index here: the built-ins and those under the include paths."""
    names = set(_task_index())
    for folder in _include_paths:
        names.update(_folder_index(str(folder)))
    return names


def wrap_root() -> Path:
    """``<cache>/wrapped_tasks``: the folder lmms-eval indexes for wrapped tasks."""
    return cache_dir() / WRAPPED_TASKS


def wrapped_manifest(task: str) -> dict[str, Any] | None:
    """The manifest ``faultline wrap`` wrote for base task ``task`` (None: none readable)."""
    try:
        return json.loads((wrap_root() / task / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def builtin_task_names() -> list[str]:
    """Every task name lmms-eval's built-in YAMLs define (a ``task:`` string), sorted."""
    return sorted(_task_index())


def base_yaml_path(task: str) -> Path:
    """The YAML lmms-eval indexes for ``task``: a built-in, else the first include path's
    (:func:`add_include_paths`), else the user's YAML a wrapped-task manifest recorded (a task
    wrapped from an include path, read back by a process that was not given that path);
    :class:`BaseTaskError` naming the task (with close names) when none defines it."""
    index = _task_index()
    if task in index:
        return index[task]
    for folder in _include_paths:
        found = _folder_index(str(folder)).get(task)
        if found is not None:
            return found
    recorded = (wrapped_manifest(task) or {}).get("base_yaml")
    if recorded and _defines(Path(recorded), task):
        return Path(recorded)
    hint = did_you_mean(task, known_task_names())
    hint = f"; {hint}" if hint else ""
    where = ", ".join(str(p) for p in [lmms_eval_tasks_dir(), *_include_paths])
    raise BaseTaskError(
        f"no lmms-eval task {task!r} under {where}{hint} (a task defined in your own folder: give that "
        "folder to faultline wrap as --include-path, to lmms-eval as --include_path)"
    )


@functools.cache
def _full_config(task: str) -> dict[str, Any]:
    # heavy: lmms_eval.utils imports torch and friends (seconds)
    from lmms_eval.utils import load_yaml_config

    return dict(load_yaml_config(str(base_yaml_path(task)), mode="full"))


def base_simple_config(task: str) -> dict[str, Any]:
    """The base task's config as lmms-eval's indexer reads it (``mode="simple"``: ``include:``
    merged, the including file's keys winning; ``!function`` values left as their dotted names),
    without importing lmms-eval or the task's utils."""
    return _merged_simple(base_yaml_path(task))


def _read_yaml(path: Path) -> dict[str, Any]:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_IndexLoader) or {}


def _included(path: Path, include: Any) -> list[Path]:
    """The files an ``include:`` of the YAML at ``path`` names, in its order, resolved as
    lmms-eval resolves them (a path that is a file as it is, else beside the including file)."""
    names = [include] if isinstance(include, str) else list(include or [])
    return [Path(name) if Path(name).is_file() else path.parent / name for name in names]


def _merged_simple(path: Path) -> dict[str, Any]:
    config = _read_yaml(path)
    merged: dict[str, Any] = {}
    for included in reversed(_included(path, config.pop("include", None))):  # the first named wins
        merged.update(_merged_simple(included))
    return {**merged, **config}


def base_lineage(task: str) -> list[str]:
    """``task`` and the task names defined along its ``include:`` chain, nearest first (in the
    order lmms-eval's merge gives them precedence): ``my_worldsense``, whose YAML includes the
    built-in ``worldsense.yaml``, gives ``["my_worldsense", "worldsense"]``."""
    names = [task]

    def walk(path: Path) -> None:
        for included in _included(path, _read_yaml(path).get("include")):
            name = _read_yaml(included).get("task")
            if isinstance(name, str) and name not in names:
                names.append(name)
            walk(included)

    walk(base_yaml_path(task))
    return names


def base_config(task: str) -> dict[str, Any]:
    """The base task's full config: ``include:`` merged, ``!function`` resolved (the task's
    ``utils.py`` imported by lmms-eval's loader, once per process). A shallow copy: callers may
    add keys without changing what the next caller gets."""
    return dict(_full_config(task))


def metric_specs(task: str) -> list[MetricSpec]:
    """The base task's metrics in ``metric_list`` order, each with the aggregation and direction
    lmms-eval would use (string aggregations and metrics without one resolved through lmms-eval's
    registry; no ``metric_list``: the output type's default metrics)."""
    # heavy: lmms-eval's metrics module fills the registry (as importing lmms_eval.api.task does)
    import lmms_eval.api.metrics  # noqa: F401
    from lmms_eval.api.registry import (
        DEFAULT_METRIC_REGISTRY,
        get_aggregation,
        get_metric_aggregation,
        is_higher_better,
    )

    config = _full_config(task)
    entries = config.get("metric_list")
    if entries is None:
        entries = [{"metric": m} for m in DEFAULT_METRIC_REGISTRY[config.get("output_type", "generate_until")]]
    specs = []
    for entry in entries:
        name = entry["metric"]
        aggregation = entry.get("aggregation")
        if isinstance(aggregation, str):
            aggregation = get_aggregation(aggregation)
        elif aggregation is None:
            aggregation = get_metric_aggregation(name)
        higher = entry["higher_is_better"] if "higher_is_better" in entry else is_higher_better(name)
        takes_args = "args" in inspect.signature(aggregation).parameters
        specs.append(MetricSpec(name, aggregation, bool(higher), takes_args))
    return specs


def aggregate(task: str, metric: str, items: list, *, args: Any = None) -> float:
    """``metric``'s aggregation of the base task on ``items`` (per-doc values as
    ``process_results`` returned them), called as lmms-eval's evaluator calls it (``args``: the
    CLI arguments, for aggregations that take them), with loguru and stdout silenced."""
    specs = {s.name: s for s in metric_specs(task)}
    if metric not in specs:
        raise BaseTaskError(f"task {task!r} reports no metric {metric!r} (it reports {', '.join(specs)})")
    spec = specs[metric]
    # heavy: loguru comes with lmms-eval; imported here so this module stays light
    from loguru import logger

    logger.disable("")
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            value = spec.aggregation(items, args=args) if spec.takes_args else spec.aggregation(items)
    finally:
        logger.enable("")
    if not isinstance(value, numbers.Real):
        raise BaseTaskError(
            f"task {task!r}: the aggregation of {metric!r} returned {value!r}, no score "
            "(a metric that writes a submission file has none)"
        )
    return float(value)
