"""lmms-eval task configs generated from the template registry.

``c3po_all``; ``c3po_ic`` and ``c3po_cc``; one task per category x tier that has templates
(``c3po_ic_t1`` ... ``c3po_cc_t4``, tag ``c3po_tiers``); one per template
(``c3po_<snake name>``, tag ``c3po_templates``). The built-in files are committed under
``tasks/c3po/`` and a test fails if they drift; third-party templates get their task files in a
cache folder at start-up, like SCEval's plugin conditions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from c3po_plugin.plugins import BUILTIN_PLUGINS, HOST
from c3po_plugin.templates import CATEGORIES, Template, TemplateRegistry, registry
from faultline_eval.core.paths import cache_dir
from faultline_eval.tasks import TASKS_DIR
from faultline_eval.tasks.sceval_configs import files_out_of_date, template_text, write_files

if TYPE_CHECKING:  # the task YAML names its functions by this module path (lmms-eval imports it)
    from faultline_eval.tasks import c3po_task  # noqa: F401

MODULE = "faultline_eval.tasks.c3po_task"
TEMPLATE_NAME = "_c3po_template_yaml"
PLACEHOLDER_NAME = "_c3po_placeholder.jsonl"
HEADER = "# Generated from the C3PO template registry by `c3po tasks --write`; do not edit.\n"
PREFIX = "c3po"


def _task(name: str, selector: str, description: str, tags: Iterable[str] = ()) -> str:
    lines = [HEADER.rstrip("\n"), f"# {description}", f"task: {name}", f"include: {TEMPLATE_NAME}"]
    tags = list(tags)
    if tags:
        lines += ["tag:", *(f"  - {t}" for t in tags)]
    lines.append(f"process_docs: !function {MODULE}.process_docs__{selector}")
    return "\n".join(lines) + "\n"


def selector_tasks(cells: Iterable[tuple[str, int]], whole: bool = True) -> dict[str, tuple[str, str, list[str]]]:
    """task name -> (selector, description, tags): the whole-benchmark and category tasks (when
    ``whole``) and one task per (category, tier) cell."""
    out = {}
    if whole:
        out["c3po_all"] = ("all", "every C3PO item", [])
        for code, name in CATEGORIES.items():
            out[f"c3po_{code}"] = (code, f"{name} items", [])
    for code, tier in sorted(cells, key=lambda c: (c[0] != "ic", c[1])):
        out[f"c3po_{code}_t{tier}"] = (f"{code}_t{tier}", f"{CATEGORIES[code]}, tier {tier}", ["c3po_tiers"])
    return out


def template_task(template: Template) -> str:
    return _task(
        template.task_name,
        template.snake_name,
        f"{template.id} {template.name} ({template.category_name}, tier {template.tier})",
        ["c3po_templates"],
    )


def render_task_files(templates: Iterable[Template], known_cells: Iterable[tuple[str, int]] = ()) -> dict[str, str]:
    """File name -> content of a task folder for ``templates``. The built-in folder (no
    ``known_cells``) also holds the whole-benchmark and category tasks; a plugin folder holds
    only its templates' tasks and the tier tasks of cells the built-ins do not have."""
    # heavy: the task module loads the metrics (pandas, scipy); `c3po --help` starts without them
    from faultline_eval.tasks.c3po_task import METRICS

    templates = list(templates)
    known = set(known_cells)
    files = {
        TEMPLATE_NAME: template_text(
            HEADER,
            [
                "Shared by every C3PO task. The placeholder dataset is replaced by process_docs with",
                "the task's items, read from $C3PO_SOURCE (default: the embedded demo).",
            ],
            MODULE,
            PLACEHOLDER_NAME,
            ((m, f.__name__, higher) for m, (f, higher) in METRICS.items()),
        ),
        PLACEHOLDER_NAME: '{"placeholder": "replaced by process_docs; see _c3po_template_yaml"}\n',
    }
    cells = {(t.category, t.tier) for t in templates} - known
    for name, (selector, description, tags) in selector_tasks(cells, whole=not known).items():
        files[f"{name}.yaml"] = _task(name, selector, description, tags)
    for template in templates:
        files[f"{template.task_name}.yaml"] = template_task(template)
    return files


def split_builtin(templates: TemplateRegistry) -> tuple[list[Template], list[Template]]:
    """(built-in templates, third-party templates)."""
    builtin = {HOST.describe(p) for p in BUILTIN_PLUGINS}
    ours = [t for t in templates if t.plugin in builtin]
    return ours, [t for t in templates if t.plugin not in builtin]


def out_of_date(folder: Path, templates: TemplateRegistry) -> list[str]:
    """Generated files in ``folder`` that differ from the built-in templates' task files."""
    return files_out_of_date(folder, render_task_files(split_builtin(templates)[0]), PREFIX)


def write_task_files(folder: Path, templates: TemplateRegistry) -> list[Path]:
    return write_files(folder, render_task_files(split_builtin(templates)[0]), PREFIX)


def task_dirs() -> list[Path]:
    """The committed built-in task folder, plus a cache folder for third-party templates."""
    ours, extra = split_builtin(registry())
    dirs = [TASKS_DIR / "c3po"]
    if extra:
        files = render_task_files(extra, known_cells={(t.category, t.tier) for t in ours})
        digest = hashlib.blake2b("".join(sorted(files.values())).encode(), digest_size=8).hexdigest()
        folder = cache_dir() / "tasks" / f"c3po-{digest}"
        write_files(folder, files, PREFIX)
        dirs.append(folder)
    return dirs
