"""Model arguments: the run you asked for, or a clear refusal before anything is loaded or sent.

lmms-eval builds a model as ``cls(**parse(--model_args), batch_size=..., max_batch_size=...,
device=...)``. A misspelt argument (``pretrianed=...``) would otherwise fall into ``**kwargs``
and the default (another checkpoint, another endpoint) would be evaluated instead. Every model
this project registers calls :func:`check_model_args` with what is left in its ``**kwargs``,
first thing in its ``__init__`` (before weights load or a server is asked anything): an unknown
argument is an :class:`UnknownModelArgError` naming the close matches (difflib) and the
arguments the model takes. ``faultline-eval`` makes the same check before lmms-eval is imported
(:func:`check_declared_args`): the arguments a class takes are read from its source.

``label=<name>`` is accepted by every model and changes nothing that is sent: it names the run's
model in reports, audits and the viewer (:mod:`faultline_eval.core.model_names`).

Forward compatibility: ``allow_unknown_args=true`` among the model arguments turns the error
into a warning that names what is ignored (the opt-out is itself a model argument, so the
results' ``model_args`` record that it was used).

:func:`flag` is the project's one parser of boolean model arguments: it refuses what is
neither true nor false (``json_mode=ture`` is an error, not ``False``).
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

from faultline_eval.core.model_names import LABEL_ARG
from faultline_eval.core.registry import close_matches, did_you_mean

#: What lmms-eval itself passes to every model constructor (evaluator.simple_evaluate).
LMMS_EVAL_ARGS = ("batch_size", "max_batch_size", "device")
#: lmms-eval options that are easily put among the model arguments by mistake (named in the hint).
LMMS_EVAL_OPTIONS = ("seed", "limit", "gen_kwargs", "num_fewshot", "output_path", "log_samples", "verbosity")
#: The opt-out model argument.
ALLOW_UNKNOWN = "allow_unknown_args"
#: Model arguments every model takes that the model itself never reads: the opt-out, and the
#: name the reports give the run's model.
EVERY_MODEL_ARGS = (ALLOW_UNKNOWN, LABEL_ARG)
#: The package whose classes' ``__init__`` parameters are the arguments our models take.
PACKAGE = "faultline_eval."

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


class UnknownModelArgError(ValueError):
    """A model argument the model does not take (see the module docstring)."""


def flag(value: Any, name: str = "flag") -> bool:
    """A boolean model argument: ``True``/``False`` (lmms-eval converts ``true``), ``1``/``0``,
    ``yes``/``no``, ``on``/``off``; ``None`` is false. Anything else is a ValueError naming ``name``."""
    if value is None or isinstance(value, bool):
        return bool(value)
    text = str(value).strip().lower()
    if text not in _TRUE + _FALSE:
        raise ValueError(f"{name}={value!r}: use true or false")
    return text in _TRUE


def accepted_args(cls: type) -> list[str]:
    """The keyword arguments ``cls`` takes: the named ``__init__`` parameters of its classes in
    this project (an adapter does not run the ``__init__`` of the lmms-eval class it extends), plus
    lmms-eval's own and :data:`EVERY_MODEL_ARGS`; read from the source (:func:`declared_args`)."""
    return accepted_args_of(f"{cls.__module__}.{cls.__qualname__}")


def accepted_args_of(class_path: str) -> list[str]:
    """:func:`accepted_args` of the class ``module.Class``, which is not imported."""
    return sorted(set(LMMS_EVAL_ARGS) | set(EVERY_MODEL_ARGS) | declared_args(class_path))


def named_with_close_matches(
    unknown: list[str], known: list[str] | tuple[str, ...], options: tuple[str, ...] = LMMS_EVAL_OPTIONS
) -> list[str]:
    """Each unknown argument quoted, with its close matches among ``known`` (else the lmms-eval
    option among ``options`` it resembles): ``'pretrianed' (did you mean 'pretrained'?)``."""
    parts = []
    for name in unknown:
        option = close_matches(name, options, n=1)
        hint = did_you_mean(name, known) or (
            f"did you mean lmms-eval's --{option[0]} option? it is not a model argument" if option else ""
        )
        parts.append(f"{name!r}" + (f" ({hint})" if hint else ""))
    return parts


def check_model_args(model: str, cls: type, leftover: dict[str, Any]) -> None:
    """Refuse the model arguments in ``leftover`` (a constructor's ``**kwargs``) that ``model``
    (class ``cls``) does not take, naming the close matches; lmms-eval's own arguments and
    :data:`EVERY_MODEL_ARGS` are not unknown. With ``allow_unknown_args=true`` the unknown ones are only logged."""
    refuse_unknown_args(model, leftover, lambda: accepted_args(cls))


def check_declared_args(model: str, class_path: str, given: dict[str, Any]) -> None:
    """:func:`check_model_args` before the class is imported (``faultline-eval`` checks a run's
    ``--model_args`` so): the arguments ``class_path`` takes are read from our source
    (:func:`declared_args`), not from the class, whose import loads lmms-eval and torch."""
    known = accepted_args_of(class_path)
    leftover = {k: v for k, v in given.items() if k not in known or k == ALLOW_UNKNOWN}  # as **kwargs gets them
    refuse_unknown_args(model, leftover, lambda: known)


def refuse_unknown_args(model: str, leftover: dict[str, Any], known_args: Callable[[], list[str]]) -> None:
    """The refusal of :func:`check_model_args`: ``known_args()`` lists what ``model`` takes."""
    allow = flag(leftover.get(ALLOW_UNKNOWN), ALLOW_UNKNOWN)
    unknown = sorted(k for k in leftover if k not in LMMS_EVAL_ARGS and k not in EVERY_MODEL_ARGS)
    if not unknown:
        return
    known = known_args()
    if allow:
        from loguru import logger

        logger.warning(f"{model}: ignoring unknown model_args {unknown} ({ALLOW_UNKNOWN}=true)")
        return
    parts = named_with_close_matches(unknown, known)
    ours = [k for k in known if k not in LMMS_EVAL_ARGS and k not in EVERY_MODEL_ARGS]
    raise UnknownModelArgError(
        f"{model}: unknown model argument{'s' if len(parts) > 1 else ''} {', '.join(parts)}; "
        f"{model} takes {', '.join(ours) if ours else 'no model arguments of its own'} "
        f"(and lmms-eval's {', '.join(LMMS_EVAL_ARGS)}). Nothing was loaded or sent; pass "
        f"{ALLOW_UNKNOWN}=true to run anyway with them ignored."
    )


#: The packages whose classes :func:`declared_args` follows to their bases (ours).
SOURCE_PACKAGES = ("faultline_eval.", "sceval_plugin.", "c3po_plugin.")


def declared_args(class_path: str) -> set[str]:
    """The named ``__init__`` parameters (positional-or-keyword and keyword-only) of the class
    ``class_path`` (``module.Class``) and of its bases defined in this project, read from the
    source without importing it (importing a model class loads lmms-eval and torch): a base is
    followed in its module or through a ``from ... import``; only classes of :data:`PACKAGE`
    count (an adapter does not run the ``__init__`` of the lmms-eval class it extends)."""
    module, _, name = class_path.rpartition(".")
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ImportError(f"no source for {module}")
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    imported = {
        alias.asname or alias.name: f"{node.module}.{alias.name}"
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
        for alias in node.names
    }
    names: set[str] = set()
    pending = [name]
    while pending:
        node = classes[pending.pop()]
        init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        if init is not None and module.startswith(PACKAGE):
            names.update(a.arg for a in [*init.args.args[1:], *init.args.kwonlyargs])
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in classes:
                pending.append(base.id)
            elif isinstance(base, ast.Name) and imported.get(base.id, "").startswith(SOURCE_PACKAGES):
                names |= declared_args(imported[base.id])
    return names
