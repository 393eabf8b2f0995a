"""The model checks ``faultline-eval`` runs before lmms-eval is imported: a second, not a minute.

lmms-eval learns a model's name, its checkpoint and its server only when it builds the model,
after importing itself and indexing ~2,000 tasks (10-20 s), and then says so in its own words:
a misspelt ``--model`` is a 1,850-character list of every model, a checkpoint folder that does not
exist is Hugging Face's "Repo id must be in the form ...", a server that is down is the first
request's connection error. Here each is refused with the argument, what is wrong and the fix
(:class:`~faultline_eval.core.preflight.PreflightError`):

- :func:`check_model_name`: the name is one lmms-eval knows (read from its registry's source,
  without importing it), one of ours (:data:`.lmms_plugin.MODELS`), or one another installed
  plugin declares (only then are the plugins loaded); else the close matches.
- :func:`check_our_model_args`: a model argument one of our models does not take (a misspelt
  ``pretrianed=``), read from the class's source (:func:`.model_args.check_declared_args`).
- :func:`check_checkpoints`: a checkpoint argument that can only be a path (``/x``, ``./x``,
  ``~/x``, ``a/b/c``) exists.
- :func:`check_endpoints`: the server of a served model answers (:data:`ENDPOINTS`), through the
  same check the model runs when it starts (:func:`.openai_client.served_models`).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

from faultline_eval.core.model_names import split_model_args
from faultline_eval.core.preflight import PreflightError, check_existing_path, looks_like_path, probe_endpoint
from faultline_eval.core.registry import close_matches
from faultline_eval.model_wrappers.lmms_plugin import ENTRY_POINT, MODELS
from faultline_eval.model_wrappers.model_args import check_declared_args
from faultline_eval.model_wrappers.openai_client import DEFAULT_BASE_URL, served_models

#: Model arguments that name a checkpoint (lmms-eval's models and ours), checked as paths when
#: they can only be one.
CHECKPOINT_PATH_ARGS = ("pretrained", "model_path", "peft", "delta")
#: lmms-eval's registry tables in ``lmms_eval/models/__init__.py`` (0.7.3).
REGISTRY_TABLES = ("AVAILABLE_SIMPLE_MODELS", "AVAILABLE_CHAT_TEMPLATE_MODELS", "MODEL_ALIASES")


def model_arguments(text: str) -> dict[str, str]:
    """``--model_args`` as lmms-eval splits it (:func:`~faultline_eval.core.model_names.split_model_args`),
    each part at its first ``=``, values as written; a part without ``=`` is left to lmms-eval to refuse."""
    return dict(part.split("=", 1) for part in split_model_args(text) if "=" in part)


def builtin_models() -> dict[str, str] | None:
    """lmms-eval's own model names and aliases, each mapped to its model id, read from the source
    of its registry without importing it (which takes 10 s: torch, every entry point). ``None``
    when that source is not laid out as in 0.7.3 (the name is then left to lmms-eval)."""
    spec = importlib.util.find_spec("lmms_eval")
    if spec is None or not spec.submodule_search_locations:
        return None
    source = Path(next(iter(spec.submodule_search_locations))) / "models" / "__init__.py"
    tables: dict[str, object] = {}
    try:
        for node in ast.parse(source.read_text(encoding="utf-8")).body:
            target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
            if isinstance(target, ast.Name) and target.id in REGISTRY_TABLES and node.value is not None:  # type: ignore[attr-defined]
                tables[target.id] = ast.literal_eval(node.value)  # type: ignore[attr-defined]
    except (OSError, SyntaxError, ValueError):
        return None
    if set(tables) != set(REGISTRY_TABLES):
        return None
    names = {name: name for table in REGISTRY_TABLES[:2] for name in tables[table]}  # type: ignore[attr-defined]
    names.update({alias: model for model, aliases in tables["MODEL_ALIASES"].items() for alias in aliases})  # type: ignore[attr-defined]
    return names


def plugin_models() -> set[str]:
    """The model names (and aliases) other installed plugins declare: the ``lmms_eval.models``
    entry points besides ours, and ``LMMS_EVAL_PLUGINS``. Loading them may import lmms-eval, so
    this is asked only for a name nothing cheaper knows."""
    names: set[str] = set()
    for entry in entry_points(group="lmms_eval.models"):
        if entry.value == ENTRY_POINT:
            continue
        try:
            payload = entry.load()
            payload = payload() if callable(payload) else payload
        except Exception:  # lmms-eval skips a broken plugin with a warning; its names are unknown
            continue
        for manifest in payload if isinstance(payload, Iterable) else [payload]:
            names.add(str(getattr(manifest, "model_id", "")))
            names.update(getattr(manifest, "aliases", ()))
    for plugin in filter(None, os.environ.get("LMMS_EVAL_PLUGINS", "").split(",")):  # lmms-eval's own variable
        try:
            names.update(getattr(importlib.import_module(f"{plugin}.models"), "AVAILABLE_MODELS", {}))
        except ImportError:
            continue
    return names


def check_model_name(name: str, given: bool = True) -> str:
    """The model id ``--model name`` resolves to (an alias resolves to its model), or a
    :class:`PreflightError` with the close matches (``given=False``: lmms-eval's default name,
    no ``--model`` was given)."""
    ours = [model_id for model_id, _, _ in MODELS]
    builtin = builtin_models()
    if builtin is None or name in ours:
        return name
    if name in builtin:
        return builtin[name]
    if name in plugin_models():
        return name
    if not given:
        raise PreflightError(f"--model is missing (lmms-eval's default {name!r} names no model); name the model to run")
    close = close_matches(name, [*ours, *builtin], cutoff=0.75)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise PreflightError(
        f"--model {name!r} is not a model lmms-eval or an installed plugin knows; {hint}"
        f"faultline-eval's models: {', '.join(ours)}; `lmms-eval models` lists lmms-eval's own"
    )


def check_our_model_args(model_id: str, args: Mapping[str, str], force_simple: bool = False) -> None:
    """Refuse a model argument one of our models (:data:`.lmms_plugin.MODELS`) does not take, as
    its class would when lmms-eval builds it (the chat class, the simple one with
    ``--force_simple``); lmms-eval's own models are left to lmms-eval."""
    for ours, chat, simple in MODELS:
        if ours == model_id:
            class_path = (simple if force_simple else chat) or chat or simple
            check_declared_args(model_id, str(class_path), dict(args))


def check_checkpoints(args: Mapping[str, str]) -> None:
    """Refuse a checkpoint argument (:data:`CHECKPOINT_PATH_ARGS`) that can only be a local path and
    does not exist (a Hugging Face repo id, ``org/name``, is left to the hub)."""
    for key in CHECKPOINT_PATH_ARGS:
        value = args.get(key, "")
        if value and looks_like_path(value):
            check_existing_path(
                value,
                f"--model_args {key}",
                kind="file_or_folder",
                fix="give an existing checkpoint folder, or a Hugging Face repo id (org/name)",
            )


@dataclass(frozen=True)
class Endpoint:
    """How a served model finds its server, and what answering means for it."""

    lists_models: bool  # an OpenAI-compatible server: GET <base_url>/models lists what it serves
    default: str | None = None  # the URL used without base_url
    environment: str | None = None  # the variable read without base_url (lmms-eval's)
    several: bool = False  # base_url may join replicas with "|"


#: The served models by model id: ours, and lmms-eval's that take a ``base_url``.
ENDPOINTS = {
    "sceval_openai": Endpoint(lists_models=True, default=DEFAULT_BASE_URL, several=True),
    "sceval_gemini": Endpoint(lists_models=False),  # Google's API unless base_url names another server
    "openai": Endpoint(lists_models=True, environment="OPENAI_API_BASE"),
    "async_openai": Endpoint(lists_models=True, environment="OPENAI_API_BASE"),
    "litellm": Endpoint(lists_models=False, environment="OPENAI_API_BASE"),  # any provider's API
}


def endpoint_urls(model_id: str, args: Mapping[str, str]) -> list[tuple[str, str]]:
    """(argument, URL) of each server ``model_id`` will send to, as the model reads them."""
    endpoint = ENDPOINTS.get(model_id)
    if endpoint is None:
        return []
    if args.get("base_url"):
        urls = args["base_url"].split("|") if endpoint.several else [args["base_url"]]
        return [("--model_args base_url", url.strip()) for url in urls if url.strip()]
    if endpoint.environment and os.environ.get(endpoint.environment):
        return [(endpoint.environment, os.environ[endpoint.environment])]
    if endpoint.default:
        return [(f"{model_id}'s default base_url", endpoint.default)]
    return []


def check_endpoints(model_id: str, args: Mapping[str, str]) -> None:
    """Refuse a served model whose server does not answer, with the hint that fits what failed."""
    endpoint = ENDPOINTS.get(model_id)
    for argument, url in endpoint_urls(model_id, args):
        if endpoint is not None and endpoint.lists_models:
            served_models(url, argument)
        else:
            probe_endpoint(url, f"{argument}={url}")
