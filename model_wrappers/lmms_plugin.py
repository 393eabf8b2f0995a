"""faultline-eval's ``lmms_eval.models`` entry point.

lmms-eval imports this when it builds its model registry (``import lmms_eval.models``, which
``lmms-eval eval`` does before it indexes tasks). Besides declaring our models, it makes
lmms-eval's TaskManager index the SCEval and C3PO task folders, because lmms-eval 0.7.3 has no task
entry point and its ``LMMS_EVAL_PLUGINS`` task path is applied too late in the CLI. So
``lmms-eval --model <any> --tasks sceval_...`` works right after ``pip install``, with no
``--include_path``. It also writes ``<timestamp>_run_info.json`` beside each results JSON
(:func:`install_run_info`): the packages' versions and each model's request and token totals,
which lmms-eval's own ``efficiency`` counts leave at 0 for our models. (``lmms-eval tasks list`` never imports the model registry, so it does not
show our tasks; ``sceval conditions`` does.)

Unknown task names: lmms-eval only says "Tasks not found". :func:`check_task_names` names the
close matches; ``faultline-eval`` calls it on our namespaces (``sceval_*``, ``c3po_*``) before
lmms-eval is even imported (a second, not the minutes it takes to import lmms-eval and index
its ~2,000 built-in tasks), and the wrapped ``TaskManager.match_tasks`` calls it on every name
once lmms-eval has indexed its tasks, so plain ``lmms-eval`` gets the close matches too.
"""

from __future__ import annotations

import functools
import os
import types
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from faultline_eval.core import telemetry
from faultline_eval.core.registry import close_matches
from faultline_eval.core.request_lifecycle import take_run_usage
from faultline_eval.core.run_logs import write_run_info
from sceval_plugin.sceval_trial import WRAPPED_TRIAL_KEY

if TYPE_CHECKING:  # the classes of MODELS, which lmms-eval imports by name; declared so that lint-imports checks them
    from faultline_eval.model_wrappers import (  # noqa: F401
        gemini,
        minicpm_o,
        modality_oracle,
        openai_chat,
        qwen2_5_omni,
        qwen3_omni,
        reference,
        reference_c3po_build,
    )

PACKAGE = "faultline_eval.model_wrappers"


#: Our models as (model id, chat class, simple class): plain data, so ``faultline-eval`` knows the
#: names before lmms-eval is imported (:mod:`.preflight`); :func:`manifests` makes lmms-eval's of them.
MODELS: tuple[tuple[str, str | None, str | None], ...] = (
    ("sceval_reference", f"{PACKAGE}.reference.ReferenceChat", f"{PACKAGE}.reference.ReferenceSimple"),
    # Calibration: answers from ONE modality (model arg modality=audio|vision), so a wrapped task's
    # modality-necessity audit has numbers known in advance (issue 27).
    (
        "modality_oracle",
        f"{PACKAGE}.modality_oracle.ModalityOracleChat",
        f"{PACKAGE}.modality_oracle.ModalityOracleSimple",
    ),
    # The offline generator / audio typer / auditor of `c3po build` (demo-quality items).
    ("c3po_build_reference", f"{PACKAGE}.reference_c3po_build.BuildReferenceChat", None),
    ("sceval_gemini", f"{PACKAGE}.gemini.GeminiChat", None),
    # OpenAI-compatible endpoints (vLLM, vLLM-Omni) with the audio sent and checked (docs/reference/models.md).
    ("sceval_openai", f"{PACKAGE}.openai_chat.OpenAIChat", None),
    # Adapters over lmms-eval's open omni wrappers (docs/reference/models.md, "What the adapters fix").
    ("faultline_qwen2_5_omni", f"{PACKAGE}.qwen2_5_omni.Qwen2_5OmniChat", f"{PACKAGE}.qwen2_5_omni.Qwen2_5OmniSimple"),
    ("faultline_qwen3_omni", f"{PACKAGE}.qwen3_omni.Qwen3OmniChat", f"{PACKAGE}.qwen3_omni.Qwen3OmniSimple"),
    ("faultline_minicpm_o", f"{PACKAGE}.minicpm_o.MiniCPMOChat", f"{PACKAGE}.minicpm_o.MiniCPMOSimple"),
)
#: This module's entry point as ``setup.cfg`` declares it (group ``lmms_eval.models``).
ENTRY_POINT = f"{__name__}:manifests"


def manifests() -> list:
    """Our models for lmms-eval's registry (and, as a side effect, our task folders)."""
    from lmms_eval.models.registry_v2 import ModelManifest

    install_task_path()
    install_run_info()
    install_log_only_keys()
    return [
        ModelManifest(model_id=model_id, chat_class_path=chat, simple_class_path=simple)
        for model_id, chat, simple in MODELS
    ]


def install_task_path() -> None:
    """Wrap ``TaskManager.initialize_tasks`` once so it also indexes our task folders."""
    from lmms_eval.tasks import TaskManager

    if getattr(TaskManager.initialize_tasks, "_faultline", False):
        return
    original = TaskManager.initialize_tasks

    @functools.wraps(original)
    def initialize_tasks(self, include_path=None, include_defaults=True):
        paths = [include_path] if isinstance(include_path, str) else list(include_path or [])
        paths += [str(d) for d in our_task_dirs() if str(d) not in paths]
        telemetry.RUN_CONTEXT["model"] = getattr(self, "model_name", None)
        return original(self, include_path=paths, include_defaults=include_defaults)

    original_match = TaskManager.match_tasks

    @functools.wraps(original_match)
    def match_tasks(self, task_list):
        index_wrapped_tasks(self, task_list)
        check_task_names(task_list, self.all_tasks, namespaces=("",))
        return original_match(self, task_list)

    initialize_tasks._faultline = True  # type: ignore[attr-defined]
    TaskManager.initialize_tasks = initialize_tasks
    TaskManager.match_tasks = match_tasks
    parse_task_configs_with_libyaml()


def install_run_info() -> None:
    """Wrap ``EvaluationTracker.save_results_aggregated`` once: after lmms-eval writes
    ``<timestamp>_results.json`` (rank 0, ``--output_path`` given), write its
    :func:`~faultline_eval.core.run_logs.write_run_info` with the request totals the models'
    lifecycles counted in this process since the last results JSON. Under data parallelism the
    other ranks' requests are not in it (their processes hold them)."""
    from lmms_eval.loggers.evaluation_tracker import EvaluationTracker

    if getattr(EvaluationTracker.save_results_aggregated, "_faultline", False):
        return
    original = EvaluationTracker.save_results_aggregated

    @functools.wraps(original)
    def save_results_aggregated(self, results, samples, datetime_str):
        original(self, results, samples, datetime_str)
        requests = take_run_usage()
        if not self.output_path:
            return
        folder = Path(self.output_path) / self.general_config_tracker.model_name_sanitized
        results_file = folder / f"{datetime_str.replace(':', '-')}_results.json"
        if results_file.is_file():
            write_run_info(results_file, requests)

    save_results_aggregated._faultline = True  # type: ignore[attr-defined]
    EvaluationTracker.save_results_aggregated = save_results_aggregated


def install_log_only_keys() -> None:
    """Wrap ``TaskOutput.calculate_aggregate_metric`` once: before lmms-eval aggregates a task,
    drop the per-doc entries of :data:`~sceval_plugin.sceval_trial.WRAPPED_TRIAL_KEY` (a wrapped
    task's trial record) unless the task aggregates that key. lmms-eval writes every key
    ``process_results`` returns to the per-sample log (already done by then, so the report still
    reads the trials there) and also to the results, an empty ``'faultline_trial,none': []`` for
    a key without an aggregation: the results then hold the base task's metrics only."""
    from lmms_eval.evaluator_utils import TaskOutput

    if getattr(TaskOutput.calculate_aggregate_metric, "_faultline", False):
        return
    original = TaskOutput.calculate_aggregate_metric

    @functools.wraps(original)
    def calculate_aggregate_metric(self, *args, **kwargs):
        aggregated = self.task.aggregation() if self.task is not None else {}
        for key in [k for k in self.sample_metrics if k[0] == WRAPPED_TRIAL_KEY and k[0] not in aggregated]:
            del self.sample_metrics[key]
        return original(self, *args, **kwargs)

    calculate_aggregate_metric._faultline = True  # type: ignore[attr-defined]
    TaskOutput.calculate_aggregate_metric = calculate_aggregate_metric


class _LibyamlForTaskConfigs(types.ModuleType):
    """PyYAML as ``lmms_eval.utils`` sees it, with ``full_load`` on libyaml's parser.

    lmms-eval parses every task YAML it indexes (~3,700 loads, 1,700 built-in tasks) at each start
    with PyYAML's pure-Python parser: 2.1 s of CPU for its 1,927 files here, 0.26 s with libyaml.
    ``CFullLoader`` is the same constructor and resolver over the C parser, so the configs are
    equal (``tests/test_lmms_cli.py`` compares every built-in YAML both ways); ``!function``
    constructors lmms-eval adds go to both loaders. Everything else is PyYAML itself.
    """

    def __getattr__(self, name: str):
        return getattr(yaml, name)

    @staticmethod
    def full_load(stream):
        loader = yaml.CFullLoader(stream)
        # lmms-eval's ``!function`` resolves its module beside ``loader.name`` (the YAML's path),
        # which PyYAML's pure-Python reader sets and libyaml's does not.
        loader.name = getattr(stream, "name", "<file>")
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()

    @staticmethod
    def add_constructor(tag, constructor, Loader=None):
        yaml.add_constructor(tag, constructor, Loader=Loader)
        if Loader is None:
            yaml.add_constructor(tag, constructor, Loader=yaml.CFullLoader)


def parse_task_configs_with_libyaml() -> None:
    """Make lmms-eval parse task YAMLs with libyaml where PyYAML was built with it."""
    import lmms_eval.utils

    if getattr(yaml, "__with_libyaml__", False) and not isinstance(lmms_eval.utils.yaml, _LibyamlForTaskConfigs):
        lmms_eval.utils.yaml = _LibyamlForTaskConfigs("yaml")


def index_wrapped_tasks(manager, names: Iterable[str]) -> None:
    """Write the wrapped tasks (``<base>__<condition>[__var<k>]``, issue 27) that ``names`` ask
    for and are not written yet, and index their folders into ``manager`` (a TaskManager that has
    already indexed everything else): only those folders are walked, not lmms-eval's ~1,700
    built-ins again. A mistyped condition raises :class:`UnknownTaskError` with the close names."""
    # heavy: as in our_task_dirs (the catalogue, the adapters)
    from faultline_eval.tasks import wrap_configs  # heavy: as above

    try:  # a base task may be defined under the run's --include_path
        wanted = wrap_configs.ensure(names, include_paths=getattr(manager, "include_path", None) or ())
    except (wrap_configs.WrapNameError, wrap_configs.BaseTaskError) as exc:
        raise UnknownTaskError(str(exc)) from None
    missing = {wrap_configs.parse_name(n).base for n in wanted if n not in manager._task_index}  # type: ignore[union-attr]
    if not missing:
        return
    for base in sorted(missing):
        manager._task_index.update(manager._get_task_and_group(str(wrap_configs.task_folder(base))))
    index = manager._task_index
    manager._all_tasks = sorted(index)
    manager._all_groups = sorted(n for n in index if index[n]["type"] == "group")
    manager._all_subtasks = sorted(n for n in index if index[n]["type"] == "task")
    manager._all_tags = sorted(n for n in index if index[n]["type"] == "tag")


def our_task_dirs() -> list[Path]:
    """The SCEval and C3PO task folders (plugin conditions included), and the wrapped lmms-eval
    tasks' folder (its stale folders regenerated first)."""
    from loguru import logger

    # heavy: lmms-eval imports this entry point for every run, whatever the model; our task folders
    # load both benchmarks' catalogues and every plugin, so only a run that indexes tasks pays for them
    from faultline_eval.tasks import TASKS_DIR  # heavy: as above
    from faultline_eval.tasks.c3po_configs import task_dirs as c3po_task_dirs  # heavy: as above
    from faultline_eval.tasks.sceval_configs import task_dirs as sceval_task_dirs  # heavy: as above
    from sceval_plugin.plugins import PluginError  # heavy: as above

    ours: list[Path] = []
    for protocol, task_dirs in (("sceval", sceval_task_dirs), ("c3po", c3po_task_dirs)):
        try:
            ours += task_dirs()
        except PluginError:  # only raised when strict mode (<PROJECT>_STRICT_PLUGINS) asks for it
            raise
        except Exception as exc:  # a broken third-party plugin must not break lmms-eval itself
            logger.error(
                f"faultline-eval: {protocol} plugin tasks unavailable ({type(exc).__name__}: {exc}); "
                f"only the built-in {protocol} tasks are indexed"
            )
            ours.append(TASKS_DIR / protocol)
    from faultline_eval.tasks import wrap_configs  # heavy: as above

    if wrap_configs.wrap_root().is_dir():
        try:
            for line in wrap_configs.refresh_stale():
                logger.info(f"faultline-eval: wrapped tasks {line}")
        except Exception as exc:  # a broken generated folder must not break lmms-eval itself
            logger.error(f"faultline-eval: wrapped tasks not regenerated ({type(exc).__name__}: {exc})")
        ours.append(wrap_configs.wrap_root())
    return ours


#: Our task names' namespaces: a requested name in one of them must be one of our tasks.
NAMESPACES = ("sceval_", "c3po_")


class UnknownTaskError(ValueError):
    """A requested task, group or tag name that no task folder defines."""


def our_task_names(dirs: Iterable[Path] | None = None) -> set[str]:
    """The task, group and tag names our task folders define, as lmms-eval's indexer reads them
    (``task:`` a name: a task, a list: a group named ``group:``; every ``tag:``), without importing
    lmms-eval: ``!function`` references are not resolved."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    names: set[str] = set()
    for folder in our_task_dirs() if dirs is None else dirs:
        for path in Path(folder).rglob("*.yaml"):
            config = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader) or {}
            task = config.get("task")
            if isinstance(task, str):
                names.add(task)
                for key in ("tag", "group"):
                    value = config.get(key) or []
                    names.update([value] if isinstance(value, str) else value)
            elif isinstance(task, list) and config.get("group"):
                names.add(config["group"])
    return names


def check_task_names(
    requested: Iterable[str], known: Iterable[str] | None = None, namespaces: tuple[str, ...] = NAMESPACES
) -> None:
    """Raise :class:`UnknownTaskError` naming each requested name in ``namespaces`` that is not in
    ``known`` (default: :func:`our_task_names`), with its close matches. Wildcards and YAML paths
    (which lmms-eval also accepts) are left to lmms-eval."""
    candidates = [n for n in requested if n and "*" not in n and n.startswith(namespaces) and not os.path.exists(n)]
    if not candidates:
        return
    known = set(our_task_names() if known is None else known)
    missing = [n for n in candidates if n not in known]
    if not missing:
        return
    parts = []
    for name in missing:
        close = close_matches(name, known, cutoff=0.8)  # task names share long prefixes: only near-misses
        parts.append(f"{name}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
    raise UnknownTaskError(
        f"unknown task name{'s' if len(parts) > 1 else ''}: {'; '.join(parts)}. "
        "`sceval conditions` lists the SCEval tasks; `lmms-eval --tasks list` (with --model) lists "
        "all."
    )
