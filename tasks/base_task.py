"""Access to the lmms-eval task a wrapped task wraps (issue 27): its YAML, config and metrics.

A wrapped task (``worldsense__single_noise_v50__var0``) keeps the base task's own prompt,
``process_results`` and aggregations; the wrapper, the report and the audit reach them here:

* :func:`base_yaml_path`: the installed YAML lmms-eval indexes under the task's name (found the
  way ``TaskManager`` finds it: an ``os.walk`` of lmms-eval's task folder, the last file defining
  the name wins), without importing lmms-eval;
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
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from faultline_eval.core.registry import did_you_mean

__all__ = [
    "BaseTaskError",
    "MetricSpec",
    "lmms_eval_tasks_dir",
    "builtin_task_names",
    "base_yaml_path",
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
def _task_index() -> dict[str, Path]:
    """Task name -> YAML for every built-in task file, in ``TaskManager._get_task_and_group``'s
    walk order (later files overwrite earlier ones, as there). Files without a top-level ``task:``
    line are skipped unparsed."""
    index: dict[str, Path] = {}
    for root, dirs, files in os.walk(lmms_eval_tasks_dir()):
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


def builtin_task_names() -> list[str]:
    """Every task name lmms-eval's built-in YAMLs define (a ``task:`` string), sorted."""
    return sorted(_task_index())


def base_yaml_path(task: str) -> Path:
    """The installed YAML lmms-eval indexes for ``task``; :class:`BaseTaskError` naming the task
    (with close names) when no built-in YAML defines it."""
    index = _task_index()
    if task not in index:
        hint = did_you_mean(task, index)
        hint = f"; {hint}" if hint else ""
        raise BaseTaskError(f"no lmms-eval task {task!r} under {lmms_eval_tasks_dir()}{hint}")
    return index[task]


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


def _merged_simple(path: Path) -> dict[str, Any]:
    config = yaml.load(path.read_text(encoding="utf-8"), Loader=_IndexLoader) or {}
    include = config.pop("include", None)
    if include is None:
        return dict(config)
    merged: dict[str, Any] = {}
    for name in reversed([include] if isinstance(include, str) else list(include)):
        included = Path(name) if Path(name).is_file() else path.parent / name
        merged.update(_merged_simple(included))
    return {**merged, **config}


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
    return float(value)
