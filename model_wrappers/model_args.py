"""Model arguments: the run you asked for, or a clear refusal before anything is loaded or sent.

lmms-eval builds a model as ``cls(**parse(--model_args), batch_size=..., max_batch_size=...,
device=...)``. A misspelt argument (``pretrianed=...``) would otherwise fall into ``**kwargs``
and the default (another checkpoint, another endpoint) would be evaluated instead. Every model
this project registers calls :func:`check_model_args` with what is left in its ``**kwargs``,
first thing in its ``__init__`` (before weights load or a server is asked anything): an unknown
argument is an :class:`UnknownModelArgError` naming the close matches (difflib) and the
arguments the model takes.

``label=<name>`` is accepted by every model and changes nothing that is sent: it names the run's
model in reports, audits and the viewer (:mod:`faultline_eval.core.model_names`).

Forward compatibility: ``allow_unknown_args=true`` among the model arguments turns the error
into a warning that names what is ignored (the opt-out is itself a model argument, so the
results' ``model_args`` record that it was used).

:func:`flag` is the project's one parser of boolean model arguments: it refuses what is
neither true nor false (``json_mode=ture`` is an error, not ``False``).
"""

from __future__ import annotations

import inspect
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
    lmms-eval's own and :data:`EVERY_MODEL_ARGS`."""
    names: set[str] = set(LMMS_EVAL_ARGS) | set(EVERY_MODEL_ARGS)
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or not klass.__module__.startswith(PACKAGE):
            continue
        names.update(
            p.name
            for p in list(inspect.signature(init).parameters.values())[1:]
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        )
    return sorted(names)


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
    allow = flag(leftover.get(ALLOW_UNKNOWN), ALLOW_UNKNOWN)
    unknown = sorted(k for k in leftover if k not in LMMS_EVAL_ARGS and k not in EVERY_MODEL_ARGS)
    if not unknown:
        return
    known = accepted_args(cls)
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
