"""C³PO's environment variables, declared once: name, default, meaning (:class:`~faultline_eval.core.settings.Setting`).

Added to the project's one table of settings (:data:`faultline_eval.core.settings.SETTINGS`, from
which the settings reference page is generated) when :mod:`c3po_plugin` is imported: where its items
come from, how many runs, its plugins, and ``c3po build``'s classifier and auditor. (The judges'
``C3PO_JUDGE`` and ``C3PO_VERDICT_CACHE`` are the core's: SCEval's no-option control grades with them.)
"""

from __future__ import annotations

from faultline_eval.core.intake import POLICIES
from faultline_eval.core.settings import (
    GROUP_DATA,
    GROUP_JUDGES,
    GROUP_PLUGINS,
    GROUP_PROTOCOL,
    SETTINGS,
    Setting,
)

__all__ = [
    "C3PO_SOURCE",
    "C3PO_HF_SPLIT",
    "C3PO_ON_BAD_INPUT",
    "C3PO_RUNS",
    "C3PO_DISABLE_PLUGIN_AUTOLOAD",
    "C3PO_STRICT_PLUGINS",
    "C3PO_BUILD_CLASSIFIER",
    "C3PO_BUILD_AUDITOR",
]

C3PO_SOURCE = Setting(
    "C3PO_SOURCE",
    "demo",
    "Where C³PO's items come from: `demo` (the embedded synthetic set), a folder holding "
    "items.jsonl or items.parquet, such a file, or `hf:<repo id or local copy>`.",
    group=GROUP_DATA,
)
C3PO_HF_SPLIT = Setting(
    "C3PO_HF_SPLIT",
    "test",
    "The split read from an `hf:` C³PO source.",
    group=GROUP_DATA,
)
C3PO_ON_BAD_INPUT = Setting(
    "C3PO_ON_BAD_INPUT",
    "error",
    "What a C³PO task does when the source has bad records (every one is listed before any model "
    "call): `error` refuses to run, `exclude` runs the rest.",
    choices=POLICIES,
    group=GROUP_DATA,
)
C3PO_RUNS = Setting(
    "C3PO_RUNS",
    "1",
    "How many times a C³PO task asks each item (a positive integer); a sample's runs are averaged "
    "before the samples are.",
    group=GROUP_PROTOCOL,
)
C3PO_DISABLE_PLUGIN_AUTOLOAD = Setting(
    "C3PO_DISABLE_PLUGIN_AUTOLOAD",
    None,
    "A switch: set (to anything but 0) to load only C³PO's built-in plugins, none of the `c3po` "
    "entry points of installed packages.",
    group=GROUP_PLUGINS,
)
C3PO_STRICT_PLUGINS = Setting(
    "C3PO_STRICT_PLUGINS",
    None,
    "A switch: set (to anything but 0) to make a failing third-party C³PO plugin an error; unset, "
    "it is skipped with a warning that names it.",
    group=GROUP_PLUGINS,
)
C3PO_BUILD_CLASSIFIER = Setting(
    "C3PO_BUILD_CLASSIFIER",
    None,
    "The model spec of `c3po build`'s classifier (stage `classify`: is an item's audio speech or a "
    "sound effect?) when neither its flag nor the "
    "build's settings.json names one. Unset: the generator's model.",
    group=GROUP_JUDGES,
)
C3PO_BUILD_AUDITOR = Setting(
    "C3PO_BUILD_AUDITOR",
    None,
    "The model spec of `c3po build`'s auditor when neither its flag nor the build's settings.json "
    "names one. Unset: the generator's model (with a warning: the paper audits with another model).",
    group=GROUP_JUDGES,
)

SETTINGS.declare(
    __name__,
    C3PO_SOURCE,
    C3PO_HF_SPLIT,
    C3PO_ON_BAD_INPUT,
    C3PO_RUNS,
    C3PO_DISABLE_PLUGIN_AUTOLOAD,
    C3PO_STRICT_PLUGINS,
    C3PO_BUILD_CLASSIFIER,
    C3PO_BUILD_AUDITOR,
)
