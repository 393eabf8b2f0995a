"""Every environment variable of the project, declared once: its name, default and meaning.

The project is configured by command-line flags and, where lmms-eval gives a task or model no
configuration of its own, by environment variables. Each variable is a :class:`Setting` here,
and :data:`SETTINGS` is the one table of them: the settings reference page
(``docs/reference/settings.md``) is generated from it and ``tests/test_settings.py`` fails when
the code names a ``SCEVAL_*``/``C3PO_*``/``FAULTLINE_*`` variable that is not in it, or the
table declares one that nothing reads.

A module reads its setting through the object (``SCEVAL_SOURCE.get()``), so the default lives
here only; checking and parsing the value stay in the module that uses it, next to the error
message that names the setting. This module is a catalogue: it imports nothing of the project,
so it may name settings that only a plugin or a model wrapper reads.

The rule for every setting: a variable that is unset, empty or only spaces counts as unset
(:meth:`Setting.get` then gives the default), except where :meth:`Setting.raw` is read to keep
a value exactly as given (a folder path).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["GROUPS", "SETTINGS", "THIRD_PARTY", "Setting", "by_name"]


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


# --- paths and caches ------------------------------------------------------------------------------
_CACHES = "Paths and caches"

SCEVAL_CACHE = Setting(
    "SCEVAL_CACHE",
    "~/.cache/sceval",
    "The folder of everything cached between runs: decoded media, model reply stores, generated task "
    "files, wrapped tasks' media and judge verdicts. Its name is historical: it serves C³PO too.",
    group=_CACHES,
)
SCEVAL_DECODE_CACHE_MEMORY_MB = Setting(
    "SCEVAL_DECODE_CACHE_MEMORY_MB",
    "1024",
    "The decode cache's in-memory layer, in MB per process (least recently used media are dropped "
    "past it); 0 turns the layer off.",
    group=_CACHES,
)
SCEVAL_DECODE_CACHE_GB = Setting(
    "SCEVAL_DECODE_CACHE_GB",
    "20",
    "The decode cache's disk layer under $SCEVAL_CACHE/decoded, in GB (decimal; least recently "
    "written files are deleted down to 90 % past it); 0 turns the layer off.",
    group=_CACHES,
)
SCEVAL_WRAPPED_MEDIA_GB = Setting(
    "SCEVAL_WRAPPED_MEDIA_GB",
    "50",
    "The bound on the corrupted media files of wrapped lmms-eval tasks under "
    "$SCEVAL_CACHE/wrapped_media, in GB (least recently used files are deleted down to 90 % past "
    "it); 0 means no bound.",
    group=_CACHES,
)

# --- media limits ----------------------------------------------------------------------------------
_MEDIA = "Media limits"

FAULTLINE_MAX_FRAME_SIDE = Setting(
    "FAULTLINE_MAX_FRAME_SIDE",
    "1920",
    "The longest side of an image or video frame, in pixels: longer ones are downscaled to it, "
    "keeping the aspect ratio. A positive integer.",
    group=_MEDIA,
)
FAULTLINE_MAX_MEGAPIXELS = Setting(
    "FAULTLINE_MAX_MEGAPIXELS",
    "50",
    "An image or video frame larger than this many megapixels (read from the file's header) is "
    "rejected as bad input. A positive number.",
    group=_MEDIA,
)
FAULTLINE_MAX_CLIP_SECONDS = Setting(
    "FAULTLINE_MAX_CLIP_SECONDS",
    "600",
    "A video longer than this many seconds is rejected as bad input. A positive number.",
    group=_MEDIA,
)
FAULTLINE_MAX_AUDIO_SECONDS = Setting(
    "FAULTLINE_MAX_AUDIO_SECONDS",
    "600",
    "Audio longer than this many seconds is rejected as bad input (cutting it would change the "
    "evidence). A positive number.",
    group=_MEDIA,
)
FAULTLINE_MAX_SOURCE_VIDEO_MB = Setting(
    "FAULTLINE_MAX_SOURCE_VIDEO_MB",
    "2048",
    "The memory, in MB, that every frame of one video may take decoded when a wrapped lmms-eval "
    "task hands the model the whole clip (`frames=source`, the default): a clip over it is refused "
    "naming this setting (raise it, or wrap with `--frames sceval_grid`). A positive number.",
    group=_MEDIA,
)
FAULTLINE_FRAME_SAMPLING = Setting(
    "FAULTLINE_FRAME_SAMPLING",
    "uniform",
    "Which frames of a video a model is shown: `uniform` over the whole clip (the papers' "
    "sampling) or `head`, the first 8 seconds only.",
    choices=("uniform", "head"),
    group=_MEDIA,
)

# --- data sources ----------------------------------------------------------------------------------
_DATA = "Data sources"
#: What both benchmarks do with a bad record (intake.POLICIES holds the same two).
_BAD_INPUT = ("error", "exclude")

SCEVAL_SOURCE = Setting(
    "SCEVAL_SOURCE",
    "demo",
    "Where SCEval's items come from: `demo` (the embedded synthetic set), a folder holding "
    "items.jsonl or items.parquet, such a file, `hf:<repo id or local copy>` (the authors' release) "
    "or `lmms:<task>[@<local copy>]` (an lmms-eval benchmark, through a task adapter).",
    group=_DATA,
)
SCEVAL_HF_MODE = Setting(
    "SCEVAL_HF_MODE",
    "apply",
    "For an `hf:` SCEval source: `apply` runs our operators on the release's clean items; "
    "`released` runs the release's own pre-corrupted variants, mapped to our condition ids.",
    choices=("apply", "released"),
    group=_DATA,
)
SCEVAL_ON_BAD_INPUT = Setting(
    "SCEVAL_ON_BAD_INPUT",
    "error",
    "What an SCEval task does when the source has bad records (every one is listed before any "
    "model call): `error` refuses to run, `exclude` runs the rest.",
    choices=_BAD_INPUT,
    group=_DATA,
)
SCEVAL_MANIFEST = Setting(
    "SCEVAL_MANIFEST",
    None,
    "The annotation manifest (a JSON or JSON-lines file, written by `sceval build manifest`) that "
    "says which samples and corruption cells count. Unset: every trial counts.",
    group=_DATA,
)
SCEVAL_TRIALS = Setting(
    "SCEVAL_TRIALS",
    None,
    "A JSON file of trial ids (`condition/sample_id/variant`) that a budgeted round runs "
    "(`faultline-eval --budget`/`--precision` writes it per round): the SCEval tasks keep only those "
    "trials. Unset: every trial runs.",
    group=_DATA,
)
SCEVAL_STRESS_ONLY = Setting(
    "SCEVAL_STRESS_ONLY",
    "run",
    "Trials the manifest marks stress-only (a cell that does not preserve the gold answer): `run` "
    "runs and records them outside the headline metrics; `exclude` leaves them out before any "
    "model call.",
    choices=("run", "exclude"),
    group=_DATA,
)
C3PO_SOURCE = Setting(
    "C3PO_SOURCE",
    "demo",
    "Where C³PO's items come from: `demo` (the embedded synthetic set), a folder holding "
    "items.jsonl or items.parquet, such a file, or `hf:<repo id or local copy>`.",
    group=_DATA,
)
C3PO_HF_SPLIT = Setting(
    "C3PO_HF_SPLIT",
    "test",
    "The split read from an `hf:` C³PO source.",
    group=_DATA,
)
C3PO_ON_BAD_INPUT = Setting(
    "C3PO_ON_BAD_INPUT",
    "error",
    "What a C³PO task does when the source has bad records (every one is listed before any model "
    "call): `error` refuses to run, `exclude` runs the rest.",
    choices=_BAD_INPUT,
    group=_DATA,
)

# --- the protocol ----------------------------------------------------------------------------------
_PROTOCOL = "Prompts, variants and runs"

SCEVAL_PROMPT_TEMPLATE = Setting(
    "SCEVAL_PROMPT_TEMPLATE",
    None,
    "A JSON file with a prompt template (id, system, user, answer_format) that replaces SCEval's "
    "standard JSON prompt; every record then carries the replacement's id. Unset: the standard "
    "prompt, `sceval-json-v1`.",
    group=_PROTOCOL,
)
SCEVAL_SEED_SCHEME = Setting(
    "SCEVAL_SEED_SCHEME",
    "2",
    "The versioned scheme that turns (sample, operator, severity, variant) into a corruption's "
    "random numbers; set `1` to reproduce variants made before scheme 2.",
    choices=("1", "2"),
    group=_PROTOCOL,
)
C3PO_RUNS = Setting(
    "C3PO_RUNS",
    "1",
    "How many times a C³PO task asks each item (a positive integer); a sample's runs are averaged "
    "before the samples are.",
    group=_PROTOCOL,
)

# --- plugins ---------------------------------------------------------------------------------------
_PLUGINS = "Plugins"

SCEVAL_DISABLE_PLUGIN_AUTOLOAD = Setting(
    "SCEVAL_DISABLE_PLUGIN_AUTOLOAD",
    None,
    "A switch: set (to anything but 0) to load only SCEval's built-in plugins, none of the "
    "`sceval` entry points of installed packages.",
    group=_PLUGINS,
)
SCEVAL_STRICT_PLUGINS = Setting(
    "SCEVAL_STRICT_PLUGINS",
    None,
    "A switch: set (to anything but 0) to make a failing third-party SCEval plugin an error; "
    "unset, it is skipped with a warning that names it.",
    group=_PLUGINS,
)
C3PO_DISABLE_PLUGIN_AUTOLOAD = Setting(
    "C3PO_DISABLE_PLUGIN_AUTOLOAD",
    None,
    "A switch: set (to anything but 0) to load only C³PO's built-in plugins, none of the `c3po` "
    "entry points of installed packages.",
    group=_PLUGINS,
)
C3PO_STRICT_PLUGINS = Setting(
    "C3PO_STRICT_PLUGINS",
    None,
    "A switch: set (to anything but 0) to make a failing third-party C³PO plugin an error; unset, "
    "it is skipped with a warning that names it.",
    group=_PLUGINS,
)

# --- judges ----------------------------------------------------------------------------------------
_JUDGES = "Judges"

C3PO_JUDGE = Setting(
    "C3PO_JUDGE",
    "embedding",
    "The judge that grades a C³PO answer exact match does not decide: `embedding` (offline), "
    "`exact` (exact match only), `lmms:<model>[:<model args>]` or `gemini:<model>[,...]`.",
    group=_JUDGES,
)
C3PO_VERDICT_CACHE = Setting(
    "C3PO_VERDICT_CACHE",
    None,
    "The file judge verdicts are cached in; `none` or `off` turns the cache off. Unset: one file per "
    "judge, $SCEVAL_CACHE/c3po/verdicts/<judge id>.jsonl.",
    group=_JUDGES,
)
SCEVAL_NO_OPTION_SCORER_1 = Setting(
    "SCEVAL_NO_OPTION_SCORER_1",
    "exact",
    "The first of the two scorers of SCEval's no-option control (Table 35), a judge spec as for "
    "C3PO_JUDGE; it sees the answer's text only, never the media.",
    group=_JUDGES,
)
SCEVAL_NO_OPTION_SCORER_2 = Setting(
    "SCEVAL_NO_OPTION_SCORER_2",
    "embedding",
    "The second scorer of SCEval's no-option control (Table 35), a judge spec as for C3PO_JUDGE; it "
    "too sees the answer's text only.",
    group=_JUDGES,
)
C3PO_BUILD_CLASSIFIER = Setting(
    "C3PO_BUILD_CLASSIFIER",
    None,
    "The model spec of `c3po build`'s classifier (stage `classify`: is an item's audio speech or a "
    "sound effect?) when neither its flag nor the "
    "build's settings.json names one. Unset: the generator's model.",
    group=_JUDGES,
)
C3PO_BUILD_AUDITOR = Setting(
    "C3PO_BUILD_AUDITOR",
    None,
    "The model spec of `c3po build`'s auditor when neither its flag nor the build's settings.json "
    "names one. Unset: the generator's model (with a warning: the paper audits with another model).",
    group=_JUDGES,
)

# --- served models ---------------------------------------------------------------------------------
_SERVING = "Served models and API keys"

SCEVAL_OPENAI_API_KEY = Setting(
    "SCEVAL_OPENAI_API_KEY",
    None,
    "The API key `sceval_openai` sends to an OpenAI-compatible server. Unset: OPENAI_API_KEY.",
    group=_SERVING,
)
OPENAI_API_KEY = Setting(
    "OPENAI_API_KEY",
    "EMPTY",
    "The API key `sceval_openai` sends when SCEVAL_OPENAI_API_KEY is unset (`EMPTY` suits a local "
    "vLLM server started without --api-key).",
    group=_SERVING,
)
GEMINI_API_KEY = Setting(
    "GEMINI_API_KEY",
    None,
    "The API key of the Gemini models, judges and `c3po build`'s generator; never passed in a model "
    "spec. Unset: GOOGLE_API_KEY.",
    group=_SERVING,
)
GOOGLE_API_KEY = Setting(
    "GOOGLE_API_KEY",
    None,
    "The Gemini API key read when GEMINI_API_KEY is unset. With neither, a Gemini model refuses to start.",
    group=_SERVING,
)

# --- durability and debugging ----------------------------------------------------------------------
_DEBUG = "Durability and debugging"

FAULTLINE_STORE_FSYNC = Setting(
    "FAULTLINE_STORE_FSYNC",
    "batch",
    "When reply stores and journals force appended records to disk: `record` after each one, "
    "`batch` within a second while appends keep coming, `never` (leave it to the OS).",
    choices=("record", "batch", "never"),
    group=_DEBUG,
)
FAULTLINE_DEBUG = Setting(
    "FAULTLINE_DEBUG",
    None,
    "A switch: set (to anything but 0) to print the full traceback of a command's error and of a "
    "skipped plugin's failure.",
    group=_DEBUG,
)
FAULTLINE_MEDIA_TOKEN_LOG = Setting(
    "FAULTLINE_MEDIA_TOKEN_LOG",
    None,
    "A JSON-lines file that gets one line per request of a local model: the media it was sent and "
    "the image/audio/video tokens the model received. Unset: no log.",
    group=_DEBUG,
)

# --- offline defaults ------------------------------------------------------------------------------
_OFFLINE = "Offline defaults"
_OFFLINE_NOTE = " The project's commands set it to this unless it is set already."

HF_HUB_OFFLINE = Setting(
    "HF_HUB_OFFLINE",
    "1",
    "Hugging Face Hub: no network access (export 0 to download models or datasets)." + _OFFLINE_NOTE,
    group=_OFFLINE,
)
HF_DATASETS_OFFLINE = Setting(
    "HF_DATASETS_OFFLINE",
    "1",
    "Hugging Face datasets: no network access (export 0 to download)." + _OFFLINE_NOTE,
    group=_OFFLINE,
)
HF_HUB_DISABLE_TELEMETRY = Setting(
    "HF_HUB_DISABLE_TELEMETRY",
    "1",
    "Hugging Face Hub: no telemetry." + _OFFLINE_NOTE,
    group=_OFFLINE,
)
NO_ALBUMENTATIONS_UPDATE = Setting(
    "NO_ALBUMENTATIONS_UPDATE",
    "1",
    "albumentations: no check for a newer version at import." + _OFFLINE_NOTE,
    group=_OFFLINE,
)
WANDB_MODE = Setting(
    "WANDB_MODE",
    "disabled",
    "Weights & Biases (which lmms-eval can log to): off." + _OFFLINE_NOTE,
    group=_OFFLINE,
)

#: Every setting, grouped as the reference table lists them.
SETTINGS: tuple[Setting, ...] = (
    SCEVAL_CACHE,
    SCEVAL_DECODE_CACHE_MEMORY_MB,
    SCEVAL_DECODE_CACHE_GB,
    SCEVAL_WRAPPED_MEDIA_GB,
    FAULTLINE_MAX_FRAME_SIDE,
    FAULTLINE_MAX_MEGAPIXELS,
    FAULTLINE_MAX_CLIP_SECONDS,
    FAULTLINE_MAX_AUDIO_SECONDS,
    FAULTLINE_MAX_SOURCE_VIDEO_MB,
    FAULTLINE_FRAME_SAMPLING,
    SCEVAL_SOURCE,
    SCEVAL_HF_MODE,
    SCEVAL_ON_BAD_INPUT,
    SCEVAL_MANIFEST,
    SCEVAL_TRIALS,
    SCEVAL_STRESS_ONLY,
    C3PO_SOURCE,
    C3PO_HF_SPLIT,
    C3PO_ON_BAD_INPUT,
    SCEVAL_PROMPT_TEMPLATE,
    SCEVAL_SEED_SCHEME,
    C3PO_RUNS,
    SCEVAL_DISABLE_PLUGIN_AUTOLOAD,
    SCEVAL_STRICT_PLUGINS,
    C3PO_DISABLE_PLUGIN_AUTOLOAD,
    C3PO_STRICT_PLUGINS,
    C3PO_JUDGE,
    C3PO_VERDICT_CACHE,
    SCEVAL_NO_OPTION_SCORER_1,
    SCEVAL_NO_OPTION_SCORER_2,
    C3PO_BUILD_CLASSIFIER,
    C3PO_BUILD_AUDITOR,
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
#: The groups of :data:`SETTINGS`, in order.
GROUPS: tuple[str, ...] = (_CACHES, _MEDIA, _DATA, _PROTOCOL, _PLUGINS, _JUDGES, _SERVING, _DEBUG, _OFFLINE)

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
    for setting in (*SETTINGS, *THIRD_PARTY):
        if setting.name == name:
            return setting
    raise KeyError(f"no setting {name!r}")
