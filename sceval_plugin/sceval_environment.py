"""SCEval's environment variables, declared once: name, default, meaning (:class:`~faultline_eval.core.settings.Setting`).

Added to the project's one table of settings (:data:`faultline_eval.core.settings.SETTINGS`, from
which the settings reference page is generated) when :mod:`sceval_plugin` is imported. A module
reads its setting through the object (``SCEVAL_SOURCE.get()``).
"""

from __future__ import annotations

from faultline_eval.core.intake import POLICIES
from faultline_eval.core.settings import (
    GROUP_CACHES,
    GROUP_DATA,
    GROUP_JUDGES,
    GROUP_PLUGINS,
    GROUP_PROTOCOL,
    SETTINGS,
    Setting,
)

__all__ = [
    "SCEVAL_WRAPPED_MEDIA_GB",
    "SCEVAL_SOURCE",
    "SCEVAL_HF_MODE",
    "SCEVAL_ON_BAD_INPUT",
    "SCEVAL_MANIFEST",
    "SCEVAL_TRIALS",
    "SCEVAL_STRESS_ONLY",
    "SCEVAL_PROMPT_TEMPLATE",
    "SCEVAL_SEED_SCHEME",
    "SCEVAL_DISABLE_PLUGIN_AUTOLOAD",
    "SCEVAL_STRICT_PLUGINS",
    "SCEVAL_NO_OPTION_SCORER_1",
    "SCEVAL_NO_OPTION_SCORER_2",
]

SCEVAL_WRAPPED_MEDIA_GB = Setting(
    "SCEVAL_WRAPPED_MEDIA_GB",
    "50",
    "The bound on the corrupted media files of wrapped lmms-eval tasks under "
    "$SCEVAL_CACHE/wrapped_media, in GB (least recently used files are deleted down to 90 % past "
    "it); 0 means no bound.",
    group=GROUP_CACHES,
)
SCEVAL_SOURCE = Setting(
    "SCEVAL_SOURCE",
    "demo",
    "Where SCEval's items come from: `demo` (the embedded synthetic set), a folder holding "
    "items.jsonl or items.parquet, such a file, `hf:<repo id or local copy>` (the authors' release) "
    "or `lmms:<task>[@<local copy>]` (an lmms-eval benchmark, through a task adapter).",
    group=GROUP_DATA,
)
SCEVAL_HF_MODE = Setting(
    "SCEVAL_HF_MODE",
    "apply",
    "For an `hf:` SCEval source: `apply` runs our operators on the release's clean items; "
    "`released` runs the release's own pre-corrupted variants, mapped to our condition ids.",
    choices=("apply", "released"),
    group=GROUP_DATA,
)
SCEVAL_ON_BAD_INPUT = Setting(
    "SCEVAL_ON_BAD_INPUT",
    "error",
    "What an SCEval task does when the source has bad records (every one is listed before any "
    "model call): `error` refuses to run, `exclude` runs the rest.",
    choices=POLICIES,
    group=GROUP_DATA,
)
SCEVAL_MANIFEST = Setting(
    "SCEVAL_MANIFEST",
    None,
    "The annotation manifest (a JSON or JSON-lines file, written by `sceval build manifest`) that "
    "says which samples and corruption cells count. Unset: every trial counts.",
    group=GROUP_DATA,
)
SCEVAL_TRIALS = Setting(
    "SCEVAL_TRIALS",
    None,
    "A JSON file of trial ids (`condition/sample_id/variant`) that a budgeted round runs "
    "(`faultline-eval --budget`/`--precision` writes it per round): the SCEval tasks keep only those "
    "trials. Unset: every trial runs.",
    group=GROUP_DATA,
)
SCEVAL_STRESS_ONLY = Setting(
    "SCEVAL_STRESS_ONLY",
    "run",
    "Trials the manifest marks stress-only (a cell that does not preserve the gold answer): `run` "
    "runs and records them outside the headline metrics; `exclude` leaves them out before any "
    "model call.",
    choices=("run", "exclude"),
    group=GROUP_DATA,
)
SCEVAL_PROMPT_TEMPLATE = Setting(
    "SCEVAL_PROMPT_TEMPLATE",
    None,
    "A JSON file with a prompt template (id, system, user, answer_format) that replaces SCEval's "
    "standard JSON prompt; every record then carries the replacement's id. Unset: the standard "
    "prompt, `sceval-json-v1`.",
    group=GROUP_PROTOCOL,
)
SCEVAL_SEED_SCHEME = Setting(
    "SCEVAL_SEED_SCHEME",
    "2",
    "The versioned scheme that turns (sample, operator, severity, variant) into a corruption's "
    "random numbers; set `1` to reproduce variants made before scheme 2.",
    choices=("1", "2"),
    group=GROUP_PROTOCOL,
)
SCEVAL_DISABLE_PLUGIN_AUTOLOAD = Setting(
    "SCEVAL_DISABLE_PLUGIN_AUTOLOAD",
    None,
    "A switch: set (to anything but 0) to load only SCEval's built-in plugins, none of the "
    "`sceval` entry points of installed packages.",
    group=GROUP_PLUGINS,
)
SCEVAL_STRICT_PLUGINS = Setting(
    "SCEVAL_STRICT_PLUGINS",
    None,
    "A switch: set (to anything but 0) to make a failing third-party SCEval plugin an error; "
    "unset, it is skipped with a warning that names it.",
    group=GROUP_PLUGINS,
)
SCEVAL_NO_OPTION_SCORER_1 = Setting(
    "SCEVAL_NO_OPTION_SCORER_1",
    "exact",
    "The first of the two scorers of SCEval's no-option control (Table 35), a judge spec as for "
    "C3PO_JUDGE; it sees the answer's text only, never the media.",
    group=GROUP_JUDGES,
)
SCEVAL_NO_OPTION_SCORER_2 = Setting(
    "SCEVAL_NO_OPTION_SCORER_2",
    "embedding",
    "The second scorer of SCEval's no-option control (Table 35), a judge spec as for C3PO_JUDGE; it "
    "too sees the answer's text only.",
    group=GROUP_JUDGES,
)

SETTINGS.declare(
    __name__,
    SCEVAL_WRAPPED_MEDIA_GB,
    SCEVAL_SOURCE,
    SCEVAL_HF_MODE,
    SCEVAL_ON_BAD_INPUT,
    SCEVAL_MANIFEST,
    SCEVAL_TRIALS,
    SCEVAL_STRESS_ONLY,
    SCEVAL_PROMPT_TEMPLATE,
    SCEVAL_SEED_SCHEME,
    SCEVAL_DISABLE_PLUGIN_AUTOLOAD,
    SCEVAL_STRICT_PLUGINS,
    SCEVAL_NO_OPTION_SCORER_1,
    SCEVAL_NO_OPTION_SCORER_2,
)
