"""lmms-eval task configs generated from the condition catalogue.

One YAML per condition (``sceval_<id>.yaml``) plus one per short alias, all including a shared
template. The files for the built-in catalogue are committed under ``tasks/sceval/`` (installed
as ``faultline_eval.tasks``) and a test fails if they drift from :func:`render_task_files`;
conditions from third-party plugins are written to a cache folder at start-up instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from faultline_eval.core.paths import cache_dir
from faultline_eval.core.store import write_atomic
from faultline_eval.tasks import TASKS_DIR
from faultline_eval.tasks.sceval_task import METRICS
from sceval_plugin import no_option_control as no_option
from sceval_plugin import operators
from sceval_plugin import probe_conditions as probes
from sceval_plugin.conditions import Condition, catalogue
from sceval_plugin.plugins import BUILTIN_PLUGINS, GENERATED_PLUGINS, describe
from sceval_plugin.prompt_subset import group_files

if TYPE_CHECKING:  # the task YAML names its functions by this module path (lmms-eval imports it)
    from faultline_eval.tasks import sceval_task  # noqa: F401

MODULE = "faultline_eval.tasks.sceval_task"
TEMPLATE_NAME = "_sceval_template_yaml"
PLACEHOLDER_NAME = "_sceval_placeholder.jsonl"
HEADER = "# Generated from the SCEval condition catalogue by `sceval tasks --write`; do not edit.\n"


def tags(condition: Condition) -> list[str]:
    out = []
    if condition.block == "single":
        out.append("sceval_single")
    if "combined" in condition.suites:
        out.append("sceval_combined")
    if "combined_extended" in condition.suites:
        out.append("sceval_combined_extended")
    if condition.id == "clean" or "panel" in condition.suites:
        out.append("sceval_panel")
    if condition.block in ("missing", "shortcut", "option_order"):
        out.append("sceval_controls")
    if condition.block == "prompt":
        out.append("sceval_prompts")
    if condition.probe is not None:
        # another reading than Table 17's (probes.OPTIONS): run by name or with the options' tag only
        out += (
            ["sceval_probe_options"]
            if "probe_option" in condition.suites
            else ["sceval_probes", f"sceval_probes_{probes.get(condition.probe.name).family}"]
        )
    if no_option.in_tag(condition):
        out.append(no_option.TAG)
    return out + ["sceval_all"]


def template_text(
    header: str, comment: list[str], module: str, placeholder: str, metrics: Iterable[tuple[str, str, bool]]
) -> str:
    """The shared task template of a protocol: placeholder dataset, the module's doc and result
    functions, greedy generation, and one metric line per ``(name, aggregation, higher)``."""
    lines = [
        header.rstrip("\n"),
        *(f"# {c}" for c in comment),
        "dataset_path: json",
        "dataset_kwargs:",
        f"  data_files: {placeholder}",
        "test_split: train",
        "output_type: generate_until",
        f"doc_to_messages: !function {module}.doc_to_messages",
        f"doc_to_visual: !function {module}.doc_to_visual",
        f"doc_to_text: !function {module}.doc_to_text",
        f"doc_to_target: !function {module}.doc_to_target",
        f"process_results: !function {module}.process_results",
        "generation_kwargs:",
        "  max_new_tokens: 512",
        "  temperature: 0",
        "  do_sample: false",
        "metric_list:",
    ]
    for name, function, higher in metrics:
        lines += [
            f"  - metric: {name}",
            f"    aggregation: !function {module}.{function}",
            f"    higher_is_better: {'true' if higher else 'false'}",
        ]
    lines += ["metadata:", "  version: 1.0"]
    return "\n".join(lines) + "\n"


def task_yaml(condition: Condition, task_name: str | None = None) -> str:
    """The YAML of ``condition``; ``task_name`` for an alias (which carries no tags)."""
    lines = [HEADER.rstrip("\n")]
    if condition.description:
        lines.append(f"# {condition.description}")
    lines += [f"task: {task_name or condition.task_name}", f"include: {TEMPLATE_NAME}"]
    if task_name is None:
        lines.append("tag:")
        lines += [f"  - {t}" for t in tags(condition)]
    lines.append(f"process_docs: !function {MODULE}.process_docs__{condition.id}")
    return "\n".join(lines) + "\n"


def render_task_files(conditions: Iterable[Condition]) -> dict[str, str]:
    """File name -> content for a task folder holding ``conditions``."""
    higher = {"sceval_accuracy", "sceval_worst_variant_accuracy", "sceval_coverage", "sceval_valid_trials"}
    files = {
        TEMPLATE_NAME: template_text(
            HEADER,
            [
                "Shared by every SCEval task. The placeholder dataset is replaced by process_docs with",
                "the trials of the task's condition, read from $SCEVAL_SOURCE (default: the embedded demo).",
            ],
            MODULE,
            PLACEHOLDER_NAME,
            ((m, f.__name__, m in higher) for m, f in METRICS.items()),
        ),
        PLACEHOLDER_NAME: '{"placeholder": "replaced by process_docs; see _sceval_template_yaml"}\n',
    }
    for condition in conditions:
        files[f"{condition.task_name}.yaml"] = task_yaml(condition)
        for alias in condition.aliases:
            files[f"{alias}.yaml"] = task_yaml(condition, alias)
    return files


def out_of_date(folder: Path, conditions: Iterable[Condition]) -> list[str]:
    """Generated files in ``folder`` that are missing, stale or different from the catalogue's."""
    return files_out_of_date(folder, render_task_files(conditions), "sceval")


def files_out_of_date(folder: Path, expected: dict[str, str], prefix: str) -> list[str]:
    """Names of ``<prefix>_*``/``_<prefix>*`` files in ``folder`` that differ from ``expected``."""
    present = {p.name: p.read_text() for p in folder.glob("*") if p.name.startswith((f"{prefix}_", f"_{prefix}"))}
    return sorted(n for n in set(expected) | set(present) if expected.get(n) != present.get(n))


def write_task_files(folder: Path, conditions: Iterable[Condition]) -> list[Path]:
    """Write the task folder, removing stale generated YAML files."""
    return write_files(folder, render_task_files(conditions), "sceval")


def write_files(folder: Path, files: dict[str, str], prefix: str) -> list[Path]:
    """Write generated task files, removing ``<prefix>_*.yaml`` files no longer generated."""
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(f"{prefix}_*.yaml"):
        if stale.name not in files:
            stale.unlink()
    written = []
    for name, text in files.items():
        path = folder / name
        if not path.is_file() or path.read_text() != text:
            write_atomic(path, text)
        written.append(path)
    return written


def is_builtin(condition: Condition) -> bool:
    """Registered by SCEval itself and using only SCEval's own operators (so its task file is
    committed under tasks/sceval)."""
    builtin = {describe(p) for p in BUILTIN_PLUGINS if p not in GENERATED_PLUGINS}
    return (
        condition.plugin in builtin
        and all(operators.get(c.operator).plugin in builtin for c in condition.corruptions)
        and (condition.probe is None or probes.get(condition.probe.name).plugin in builtin)
    )


def task_dirs() -> list[Path]:
    """Folders lmms-eval should index: the committed built-in tasks, plus (when third-party
    plugins add operators or conditions, or ``sceval prompt-subset`` chose per-model subsets) a
    generated folder in the cache, with the subsets' groups."""
    dirs = [TASKS_DIR / "sceval"]
    extra = [c for c in catalogue() if not is_builtin(c)]
    groups = group_files()
    if extra or groups:
        text = "\n".join([*(task_yaml(c) for c in extra), *groups.values()])
        digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
        folder = cache_dir() / "tasks" / digest
        write_files(folder, {**render_task_files(extra), **groups}, "sceval")
        dirs.append(folder)
    return dirs
