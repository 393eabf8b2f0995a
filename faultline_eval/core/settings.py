"""Every environment variable of the project, declared once: its name, default and meaning.

The project is configured by command-line flags and, where lmms-eval gives a task or model no
configuration of its own, by environment variables. Each variable is a :class:`Setting`, and
:data:`SETTINGS` is the one table of them: the settings reference page
(``docs/reference/settings.md``) is generated from it and ``tests/test_settings.py`` fails when
the code names a ``SCEVAL_*``/``C3PO_*``/``FAULTLINE_*`` variable that is not in it, or the
table declares one that nothing reads. This module declares the core's own settings (caches,
media limits, the judges', served models', the store's, the offline defaults); each benchmark
declares its own in its package (:mod:`sceval_plugin.sceval_environment`,
:mod:`c3po_plugin.c3po_environment`), which adds them to the table when the package is imported.

A module reads its setting through the object (``SCEVAL_SOURCE.get()``), so the default lives
where the setting is declared only; checking and parsing the value stay in the module that uses
it, next to the error message that names the setting. This module imports nothing of the project.

The rule for every setting: a variable that is unset, empty or only spaces counts as unset
(:meth:`Setting.get` then gives the default), except where :meth:`Setting.raw` is read to keep
a value exactly as given (a folder path).

The benchmarks' settings were declared here until 0.3; they still import from here, with a
``DeprecationWarning`` naming their new module (until 0.4).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from faultline_eval.core.moved_modules import moved_names

__all__ = [
    "GROUPS",
    "GROUP_CACHES",
    "GROUP_MEDIA",
    "GROUP_DATA",
    "GROUP_PROTOCOL",
    "GROUP_PLUGINS",
    "GROUP_JUDGES",
    "GROUP_SERVING",
    "GROUP_DEBUG",
    "GROUP_OFFLINE",
    "SETTINGS",
    "THIRD_PARTY",
    "Setting",
    "SettingsTable",
    "by_name",
]


@dataclass(frozen=True)
class Setting:
    """One environment variable: ``name``, the ``default`` the code uses when it is unset (None:
    no value, the behaviour ``doc`` describes), what it does (``doc``), the values it takes when
    there is a fixed list (``choices``, the default among them) and the ``group`` of the
    reference table it is listed in."""

    name: str
    default: str | None
    doc: str
    choices: tuple[str, ...] = ()
    group: str = ""

    def raw(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The value exactly as set (``environ`` defaults to :data:`os.environ`), None when unset."""
        return (os.environ if environ is None else environ).get(self.name)

    def is_set(self, environ: Mapping[str, str] | None = None) -> bool:
        """Whether the variable holds something other than spaces."""
        return bool((self.raw(environ) or "").strip())

    def get(self, environ: Mapping[str, str] | None = None) -> str:
        """The value without surrounding spaces; :attr:`default_text` when unset or blank."""
        return (self.raw(environ) or "").strip() or self.default_text

    def is_on(self, environ: Mapping[str, str] | None = None) -> bool:
        """A switch: on when the value is anything but ``0`` (unset or blank: the default)."""
        return self.get(environ) not in ("", "0")

    @property
    def default_text(self) -> str:
        """The default as text (``""`` for a setting without one), for parsing like a value."""
        return "" if self.default is None else self.default


# --- the groups of the reference table, in its order ------------------------------------------------
GROUP_CACHES = "Paths and caches"
GROUP_MEDIA = "Media limits"
GROUP_DATA = "Data sources"
GROUP_PROTOCOL = "Prompts, variants and runs"
GROUP_PLUGINS = "Plugins"
GROUP_JUDGES = "Judges"
GROUP_SERVING = "Served models and API keys"
GROUP_DEBUG = "Durability and debugging"
GROUP_OFFLINE = "Offline defaults"
#: The groups of :data:`SETTINGS`, in order.
GROUPS: tuple[str, ...] = (
    GROUP_CACHES,
    GROUP_MEDIA,
    GROUP_DATA,
    GROUP_PROTOCOL,
    GROUP_PLUGINS,
    GROUP_JUDGES,
    GROUP_SERVING,
    GROUP_DEBUG,
    GROUP_OFFLINE,
)


class SettingsTable:
    """Every declared setting, in the reference table's order: by group (:data:`GROUPS`' order),
    then by the declaring module's name, then in declaration order (so the order does not depend
    on which package was imported first). The core declares its own below; each benchmark
    declares its own (:meth:`declare`) when its package is imported."""

    def __init__(self) -> None:
        self._declared: dict[str, tuple[Setting, str]] = {}  # name -> (setting, declaring module)

    def declare(self, module: str, *settings: Setting) -> None:
        """Add ``settings``, declared in ``module`` (its ``__name__``; each is that module's
        attribute of the same name). Declaring one again from the same module (a reload) is a
        no-op; a name declared twice, or a group not in :data:`GROUPS`, is a ``ValueError``."""
        for setting in settings:
            if setting.group not in GROUPS:
                raise ValueError(f"{module}: {setting.name}'s group {setting.group!r} is none of {GROUPS}")
            known = self._declared.get(setting.name)
            if known is not None and known[1] != module:
                raise ValueError(f"{setting.name} is declared twice: in {known[1]} and in {module}")
            self._declared[setting.name] = (setting, module)

    def module_of(self, name: str) -> str:
        """The module that declares the setting ``name``."""
        return self._declared[name][1]

    def __iter__(self) -> Iterator[Setting]:
        rank = {group: k for k, group in enumerate(GROUPS)}
        entries = list(self._declared.values())
        order = sorted(range(len(entries)), key=lambda k: (rank[entries[k][0].group], entries[k][1], k))
        return iter([entries[k][0] for k in order])

    def __len__(self) -> int:
        return len(self._declared)


# --- paths and caches ------------------------------------------------------------------------------

SCEVAL_CACHE = Setting(
    "SCEVAL_CACHE",
    "~/.cache/sceval",
    "The folder of everything cached between runs: decoded media, model reply stores, generated task "
    "files, wrapped tasks' media and judge verdicts. Its name is historical: it serves C³PO too.",
    group=GROUP_CACHES,
)
SCEVAL_DECODE_CACHE_MEMORY_MB = Setting(
    "SCEVAL_DECODE_CACHE_MEMORY_MB",
    "1024",
    "The decode cache's in-memory layer, in MB per process (least recently used media are dropped "
    "past it); 0 turns the layer off.",
    group=GROUP_CACHES,
)
SCEVAL_DECODE_CACHE_GB = Setting(
    "SCEVAL_DECODE_CACHE_GB",
    "20",
    "The decode cache's disk layer under $SCEVAL_CACHE/decoded, in GB (decimal; least recently "
    "written files are deleted down to 90 % past it); 0 turns the layer off.",
    group=GROUP_CACHES,
)

# --- media limits ----------------------------------------------------------------------------------

FAULTLINE_MAX_FRAME_SIDE = Setting(
    "FAULTLINE_MAX_FRAME_SIDE",
    "1920",
    "The longest side of an image or video frame, in pixels: longer ones are downscaled to it, "
    "keeping the aspect ratio. A positive integer.",
    group=GROUP_MEDIA,
)
FAULTLINE_MAX_MEGAPIXELS = Setting(
    "FAULTLINE_MAX_MEGAPIXELS",
    "50",
    "An image or video frame larger than this many megapixels (read from the file's header) is "
    "rejected as bad input. A positive number.",
    group=GROUP_MEDIA,
)
FAULTLINE_MAX_CLIP_SECONDS = Setting(
    "FAULTLINE_MAX_CLIP_SECONDS",
    "600",
    "A video longer than this many seconds is rejected as bad input. A positive number.",
    group=GROUP_MEDIA,
)
FAULTLINE_MAX_AUDIO_SECONDS = Setting(
    "FAULTLINE_MAX_AUDIO_SECONDS",
    "600",
    "Audio longer than this many seconds is rejected as bad input (cutting it would change the "
    "evidence). A positive number.",
    group=GROUP_MEDIA,
)
FAULTLINE_MAX_SOURCE_VIDEO_MB = Setting(
    "FAULTLINE_MAX_SOURCE_VIDEO_MB",
    "2048",
    "The memory, in MB, that every frame of one video may take decoded when a wrapped lmms-eval "
    "task hands the model the whole clip (`frames=source`, the default): a clip over it is refused "
    "naming this setting (raise it, or wrap with `--frames sceval_grid`). A positive number.",
    group=GROUP_MEDIA,
)
FAULTLINE_FRAME_SAMPLING = Setting(
    "FAULTLINE_FRAME_SAMPLING",
    "uniform",
    "Which frames of a video a model is shown: `uniform` over the whole clip (the papers' "
    "sampling) or `head`, the first 8 seconds only.",
    choices=("uniform", "head"),
    group=GROUP_MEDIA,
)

# --- judges ----------------------------------------------------------------------------------------

C3PO_JUDGE = Setting(
    "C3PO_JUDGE",
    "embedding",
    "The judge that grades a C³PO answer exact match does not decide: `embedding` (offline), "
    "`exact` (exact match only), `lmms:<model>[:<model args>]` or `gemini:<model>[,...]`.",
    group=GROUP_JUDGES,
)
C3PO_VERDICT_CACHE = Setting(
    "C3PO_VERDICT_CACHE",
    None,
    "The file judge verdicts are cached in; `none` or `off` turns the cache off. Unset: one file per "
    "judge, $SCEVAL_CACHE/c3po/verdicts/<judge id>.jsonl.",
    group=GROUP_JUDGES,
)

# --- served models ---------------------------------------------------------------------------------

SCEVAL_OPENAI_API_KEY = Setting(
    "SCEVAL_OPENAI_API_KEY",
    None,
    "The API key `sceval_openai` sends to an OpenAI-compatible server. Unset: OPENAI_API_KEY.",
    group=GROUP_SERVING,
)
OPENAI_API_KEY = Setting(
    "OPENAI_API_KEY",
    "EMPTY",
    "The API key `sceval_openai` sends when SCEVAL_OPENAI_API_KEY is unset (`EMPTY` suits a local "
    "vLLM server started without --api-key).",
    group=GROUP_SERVING,
)
GEMINI_API_KEY = Setting(
    "GEMINI_API_KEY",
    None,
    "The API key of the Gemini models, judges and `c3po build`'s generator; never passed in a model "
    "spec. Unset: GOOGLE_API_KEY.",
    group=GROUP_SERVING,
)
GOOGLE_API_KEY = Setting(
    "GOOGLE_API_KEY",
    None,
    "The Gemini API key read when GEMINI_API_KEY is unset. With neither, a Gemini model refuses to start.",
    group=GROUP_SERVING,
)

# --- durability and debugging ----------------------------------------------------------------------

FAULTLINE_STORE_FSYNC = Setting(
    "FAULTLINE_STORE_FSYNC",
    "batch",
    "When reply stores and journals force appended records to disk: `record` after each one, "
    "`batch` within a second while appends keep coming, `never` (leave it to the OS).",
    choices=("record", "batch", "never"),
    group=GROUP_DEBUG,
)
FAULTLINE_DEBUG = Setting(
    "FAULTLINE_DEBUG",
    None,
    "A switch: set (to anything but 0) to print the full traceback of a command's error and of a "
    "skipped plugin's failure.",
    group=GROUP_DEBUG,
)
FAULTLINE_MEDIA_TOKEN_LOG = Setting(
    "FAULTLINE_MEDIA_TOKEN_LOG",
    None,
    "A JSON-lines file that gets one line per request of a local model: the media it was sent and "
    "the image/audio/video tokens the model received. Unset: no log.",
    group=GROUP_DEBUG,
)

# --- offline defaults ------------------------------------------------------------------------------
_OFFLINE_NOTE = " The project's commands set it to this unless it is set already."

HF_HUB_OFFLINE = Setting(
    "HF_HUB_OFFLINE",
    "1",
    "Hugging Face Hub: no network access (export 0 to download models or datasets)." + _OFFLINE_NOTE,
    group=GROUP_OFFLINE,
)
HF_DATASETS_OFFLINE = Setting(
    "HF_DATASETS_OFFLINE",
    "1",
    "Hugging Face datasets: no network access (export 0 to download)." + _OFFLINE_NOTE,
    group=GROUP_OFFLINE,
)
HF_HUB_DISABLE_TELEMETRY = Setting(
    "HF_HUB_DISABLE_TELEMETRY",
    "1",
    "Hugging Face Hub: no telemetry." + _OFFLINE_NOTE,
    group=GROUP_OFFLINE,
)
NO_ALBUMENTATIONS_UPDATE = Setting(
    "NO_ALBUMENTATIONS_UPDATE",
    "1",
    "albumentations: no check for a newer version at import." + _OFFLINE_NOTE,
    group=GROUP_OFFLINE,
)
WANDB_MODE = Setting(
    "WANDB_MODE",
    "disabled",
    "Weights & Biases (which lmms-eval can log to): off." + _OFFLINE_NOTE,
    group=GROUP_OFFLINE,
)

#: Every setting of the project: the core's, and each benchmark's once its package is imported.
SETTINGS = SettingsTable()
SETTINGS.declare(
    __name__,
    SCEVAL_CACHE,
    SCEVAL_DECODE_CACHE_MEMORY_MB,
    SCEVAL_DECODE_CACHE_GB,
    FAULTLINE_MAX_FRAME_SIDE,
    FAULTLINE_MAX_MEGAPIXELS,
    FAULTLINE_MAX_CLIP_SECONDS,
    FAULTLINE_MAX_AUDIO_SECONDS,
    FAULTLINE_MAX_SOURCE_VIDEO_MB,
    FAULTLINE_FRAME_SAMPLING,
    C3PO_JUDGE,
    C3PO_VERDICT_CACHE,
    SCEVAL_OPENAI_API_KEY,
    OPENAI_API_KEY,
    GEMINI_API_KEY,
    GOOGLE_API_KEY,
    FAULTLINE_STORE_FSYNC,
    FAULTLINE_DEBUG,
    FAULTLINE_MEDIA_TOKEN_LOG,
    HF_HUB_OFFLINE,
    HF_DATASETS_OFFLINE,
    HF_HUB_DISABLE_TELEMETRY,
    NO_ALBUMENTATIONS_UPDATE,
    WANDB_MODE,
)

# --- read, not ours --------------------------------------------------------------------------------
_THIRD_PARTY = "Read, not ours"

RANK = Setting(
    "RANK",
    "0",
    "This process's rank, set by `accelerate launch`/torchrun; lmms-eval hands each rank its share "
    "of the docs, and each rank of `sceval_openai` starts its round-robin over the `base_url` "
    "endpoints on a different one.",
    group=_THIRD_PARTY,
)
WORLD_SIZE = Setting(
    "WORLD_SIZE",
    "1",
    "The number of ranks, set by `accelerate launch`/torchrun; our host-side models (API clients, "
    "the reference and oracle models) report it to lmms-eval's evaluator.",
    group=_THIRD_PARTY,
)
LOCAL_RANK = Setting(
    "LOCAL_RANK",
    "0",
    "This process's rank on its machine, set by `accelerate launch`/torchrun: under NCCL our "
    "host-side models give lmms-eval's collectives that GPU.",
    group=_THIRD_PARTY,
)
HF_TOKEN = Setting(
    "HF_TOKEN",
    None,
    "The Hugging Face token (read by huggingface_hub, or `hf auth login`) that "
    "`sceval build publish` and `c3po build export --push-to-hub` upload with.",
    group=_THIRD_PARTY,
)

#: Variables of other tools that the project reads or names, for the reference table.
THIRD_PARTY: tuple[Setting, ...] = (RANK, WORLD_SIZE, LOCAL_RANK, HF_TOKEN)


def by_name(name: str) -> Setting:
    """The setting (of :data:`SETTINGS` or :data:`THIRD_PARTY`) called ``name``."""
    for setting in itertools.chain(SETTINGS, THIRD_PARTY):
        if setting.name == name:
            return setting
    raise KeyError(f"no setting {name!r}")


# The benchmarks' settings moved to their packages in 0.3; the core names their modules, never imports them.
__getattr__ = moved_names(
    __name__,
    {
        "SCEVAL_WRAPPED_MEDIA_GB": "sceval_plugin.sceval_environment",
        "SCEVAL_SOURCE": "sceval_plugin.sceval_environment",
        "SCEVAL_HF_MODE": "sceval_plugin.sceval_environment",
        "SCEVAL_ON_BAD_INPUT": "sceval_plugin.sceval_environment",
        "SCEVAL_MANIFEST": "sceval_plugin.sceval_environment",
        "SCEVAL_STRESS_ONLY": "sceval_plugin.sceval_environment",
        "SCEVAL_PROMPT_TEMPLATE": "sceval_plugin.sceval_environment",
        "SCEVAL_SEED_SCHEME": "sceval_plugin.sceval_environment",
        "SCEVAL_DISABLE_PLUGIN_AUTOLOAD": "sceval_plugin.sceval_environment",
        "SCEVAL_STRICT_PLUGINS": "sceval_plugin.sceval_environment",
        "SCEVAL_NO_OPTION_SCORER_1": "sceval_plugin.sceval_environment",
        "SCEVAL_NO_OPTION_SCORER_2": "sceval_plugin.sceval_environment",
        "C3PO_SOURCE": "c3po_plugin.c3po_environment",
        "C3PO_HF_SPLIT": "c3po_plugin.c3po_environment",
        "C3PO_ON_BAD_INPUT": "c3po_plugin.c3po_environment",
        "C3PO_RUNS": "c3po_plugin.c3po_environment",
        "C3PO_DISABLE_PLUGIN_AUTOLOAD": "c3po_plugin.c3po_environment",
        "C3PO_STRICT_PLUGINS": "c3po_plugin.c3po_environment",
        "C3PO_BUILD_CLASSIFIER": "c3po_plugin.c3po_environment",
        "C3PO_BUILD_AUDITOR": "c3po_plugin.c3po_environment",
    },
)
