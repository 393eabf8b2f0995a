"""Which runs are one model, and the name each gets in every report, audit and viewer page.

A model is what was run: its ``--model`` and every model argument that changes what the model is
sent or how it answers. Two runs of one class that differ in such an argument (``modality_oracle``
with ``modality=vision`` and with ``modality=audio``, one checkpoint at two ``dtype`` settings) are
two models. The arguments of :data:`NOT_IDENTITY_ARGS` say how a run reached its model, how fast, where
it kept its replies or which checks it ran, not what the model is: runs that differ only in them
(another ``base_url``, ``max_concurrency``, ``store``) are runs of one model.

**Names.** A run's name is its ``label=`` model argument when it has one (every model of ours
accepts it and sends nothing differently). Otherwise it is ``--model``, plus the checkpoint a
:data:`CHECKPOINT_ARGS` argument names (``faultline_qwen2_5_omni:Qwen/Qwen2.5-Omni-7B``): the name a
lone run has always had. When the runs read together hold several models under one such name, each
gets the arguments that tell them apart, ``modality_oracle (modality=vision)`` and
``modality_oracle (modality=audio)``; an argument a run did not give reads ``default``. Runs of one
model share their name (the readers keep the newer log and say so). Two different models under
one name (one ``label=`` given to runs that differ) are a :class:`ReportError` naming both.

**Read together** means every results JSON under the folders a command is given, so the SCEval and
C3PO reports, the audit and the viewer of the same folders name each model alike.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faultline_eval.core.run_logs import CHECKPOINT_ARGS, ReportError, results_for

__all__ = [
    "LABEL_ARG",
    "CHECKPOINT_ARGS",
    "NOT_IDENTITY_ARGS",
    "RunModel",
    "ModelNames",
    "parse_model_args",
    "split_model_args",
]

#: The model argument that names a run's model in reports (every model of ours accepts it).
LABEL_ARG = "label"
#: Model arguments that are not part of what a model is (ours and lmms-eval 0.7.3's own models'):
#: where it is reached, how many requests at once, how long to wait and retry, where replies and
#: files are kept, secrets, device placement (replies equal across batch sizes: docs/reference/models.md),
#: the checks run before the first request, and the label itself (compared separately).
NOT_IDENTITY_ARGS = frozenset(
    {
        # where the model is reached
        "base_url",
        "base_urls",
        "server_url",
        # how many requests at once
        "max_concurrency",
        "num_concurrent",
        "adaptive_concurrency",
        "adaptive_min_concurrency",
        "adaptive_max_concurrency",
        "build_workers",
        "lookahead",
        "batch_size",
        "max_batch_size",
        # how long to wait, how often to retry
        "timeout",
        "request_timeout",
        "max_retries",
        "initial_backoff",
        "max_backoff",
        "retry_backoff_s",
        # where replies and files are kept
        "store",
        "response_persistent_folder",
        "continual_mode",
        "tmp_folder",
        # secrets
        "api_key",
        # placement
        "device",
        "device_map",
        # how a server caches the media (keys of equal bytes: the features are the same)
        "media_uuids",
        # checks before the first request
        "allow_unknown_args",
        "audio_canary",
        "canary_items",
    }
)


#: What makes two runs one model (:attr:`RunModel.identity`): the class and the arguments that count.
Identity = tuple[str | None, tuple[tuple[str, str], ...]]


def split_model_args(text: str) -> list[str]:
    """``--model_args`` split as lmms-eval 0.7.3's ``simple_parse_args_string`` splits it: at commas
    outside quotes and brackets (a JSON value keeps its commas); each part as written."""
    parts, current, depth, quote = [], "", 0, ""
    for char in text.strip():
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += char
    parts.append(current)
    return parts


def parse_model_args(args: str | dict[str, Any] | None) -> dict[str, str]:
    """``k=v,k=v`` (split by :func:`split_model_args`) or a dict, as stripped strings."""
    if isinstance(args, dict):
        return {str(k).strip(): str(v).strip() for k, v in args.items()}
    pairs = (part.partition("=") for part in split_model_args(str(args or "")))
    return {key.strip(): value.strip() for key, _, value in pairs if key.strip()}


@dataclass(frozen=True)
class RunModel:
    """The model of one run, from its results JSON's ``config``: ``model`` (None: not named) and its
    model arguments in the order given."""

    model: str | None
    args: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, config: dict[str, Any]) -> RunModel:
        model = config.get("model")
        return cls(str(model) if model else None, tuple(parse_model_args(config.get("model_args")).items()))

    @property
    def label(self) -> str | None:
        return dict(self.args).get(LABEL_ARG) or None

    def base_name(self, fallback: str | None = None) -> str:
        """``--model`` plus its checkpoint: the name a lone unlabelled run gets."""
        model = self.model or fallback or "unknown"
        checkpoint = next((v for k, v in self.args if k in CHECKPOINT_ARGS and v), None)
        return f"{model}:{checkpoint}" if checkpoint else model

    @property
    def identity(self) -> Identity:
        """What makes two runs one model: the class and every argument but :data:`NOT_IDENTITY_ARGS`."""
        return self.model, tuple(sorted((k, v) for k, v in self.args if k not in NOT_IDENTITY_ARGS))


@functools.lru_cache(maxsize=256)
def _read(path: str, size: int, mtime_ns: int) -> RunModel | ReportError:
    # a run's task logs share one results JSON, which can weigh megabytes: read it once per version
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8")).get("config") or {}
    except (OSError, ValueError, AttributeError) as exc:
        return ReportError(f"{path}: not a readable results JSON ({exc})")
    return RunModel.of(config if isinstance(config, dict) else {})


def _run_model(path: str) -> RunModel | ReportError:
    st = os.stat(path)
    return _read(path, st.st_size, st.st_mtime_ns)


def _key(path: Path) -> str:
    return os.path.abspath(path)


class ModelNames:
    """The name of each run's model among the runs of some results JSONs (see the module docstring)."""

    def __init__(self, results_files: Iterable[str | Path]) -> None:
        self.runs: dict[str, RunModel] = {}
        for key in sorted({_key(Path(p)) for p in results_files}):
            found = _run_model(key)
            if isinstance(found, RunModel):  # an unreadable one is an error when a log asks for it
                self.runs[key] = found
        self.names = _names(self.runs)

    @classmethod
    def under(cls, run_dirs: Sequence[str | Path]) -> ModelNames:
        """The names among every results JSON under ``run_dirs`` (a per-sample log given as a
        file counts with the results JSON beside it)."""
        files: set[Path] = set()
        for run in map(Path, run_dirs):
            if run.is_dir():
                files.update(run.rglob("*_results.json"))
            elif run.name.endswith("_results.json") and run.is_file():
                files.add(run)
            elif (beside := results_for(run)) is not None:
                files.add(beside)
        return cls(files)

    def of(self, results_file: Path | None, fallback: str | None = None) -> str:
        """The model name of the run that wrote ``results_file``; ``fallback`` (else ``unknown``)
        when there is none or it names no model."""
        if results_file is None or not results_file.is_file():
            return fallback or "unknown"
        key = _key(results_file)
        if key not in self.names:  # not among the runs read together: named alone
            found = _run_model(key)
            if isinstance(found, ReportError):
                raise found
            return found.label or found.base_name(fallback)
        run = self.runs[key]
        return self.names[key] if run.model or run.label else run.base_name(fallback)

    def under_folder(self, folder: str | Path) -> set[str]:
        """The names of the runs whose results JSON lies in or under ``folder``."""
        root = _key(Path(folder))
        return {name for key, name in self.names.items() if key == root or key.startswith(root + os.sep)}


def _names(runs: dict[str, RunModel]) -> dict[str, str]:
    """Each run's name (module docstring); a :class:`ReportError` when one name covers two models."""
    groups: dict[str, dict[Identity, list[str]]] = {}
    for key, run in runs.items():
        groups.setdefault(run.label or run.base_name(), {}).setdefault(run.identity, []).append(key)
    names: dict[str, str] = {}
    for name, models in groups.items():
        args = {identity: dict(identity[1]) for identity in models}
        differ = sorted(
            {k for a in args.values() for k in a if k != LABEL_ARG and len({b.get(k) for b in args.values()}) > 1}
        )
        for identity, keys in models.items():
            told = ", ".join(f"{k}={args[identity].get(k, 'default')}" for k in differ)
            names.update(dict.fromkeys(keys, f"{name} ({told})" if told and not runs[keys[0]].label else name))
    first: dict[str, str] = {}  # name -> the first run given it
    for key, name in names.items():
        other = first.setdefault(name, key)
        if runs[other].identity != runs[key].identity:
            raise ReportError(
                f"model name {name!r} covers two different models: {other} ({_shown_args(runs[other])}) and "
                f"{key} ({_shown_args(runs[key])}); give each its own {LABEL_ARG}= model argument, or report them apart"
            )
    return names


def _shown_args(run: RunModel) -> str:
    return f"--model {run.model} --model_args {','.join(f'{k}={v}' for k, v in run.args) or '(none)'}"
