"""Model specs of the build stages: ``gemini:<model>[,args]``, ``lmms:<model>,<model_args>`` or
``rules``: parsed, labelled for tables and dataset cards, and reduced to the model they name.

Shared by the stage clients (:mod:`.client`, which connect to the model) and the build settings
(:mod:`.settings`, which record and compare the models of each role).
"""

from __future__ import annotations

from faultline_eval.core.run_logs import CHECKPOINT_ARGS


def parse_spec(spec: str) -> tuple[str, str, str]:
    """``(backend, model, model_args)`` of ``gemini:<model>[,args]`` or ``lmms:<model>[,|:args]``."""
    backend, _, rest = spec.strip().partition(":")
    if backend not in ("gemini", "lmms") or not rest:
        raise ValueError(f"model spec {spec!r}: use gemini:<model>[,base_url=...] or lmms:<model>,<model_args>")
    cut = min((i for i in (rest.find(","), rest.find(":")) if i >= 0), default=len(rest))
    return backend, rest[:cut], rest[cut + 1 :]


def _named_model(spec: str) -> tuple[str, str, str]:
    """(backend, model, the checkpoint an ``lmms:`` spec loads or "") of a spec."""
    backend, model, args = parse_spec(spec)
    named = {}
    for part in args.split(","):  # leniently: an lmms argument may hold JSON with commas
        key, equals, value = part.partition("=")
        if equals and value.strip():
            named[key.strip()] = value.strip()
    return backend, model, next((named[k] for k in CHECKPOINT_ARGS if k in named), "") if backend == "lmms" else ""


def model_label(spec: str) -> str:
    """A spec without its connection arguments, for tables and dataset cards:
    ``gemini:<model>``, or ``lmms:<model>`` with the checkpoint it loads
    (``lmms:faultline_qwen3_omni (Qwen/Qwen3-Omni-30B-A3B-Thinking)``)."""
    if spec == "rules":
        return spec
    backend, model, checkpoint = _named_model(spec)
    return f"{backend}:{model}" + (f" ({checkpoint})" if checkpoint else "")


def model_identity(spec: str) -> str:
    """The model a spec names, to tell whether two stages ask the same one: the checkpoint of an
    ``lmms:`` spec (``pretrained``, ``model_version``, ...), else its model name; the last part
    of a path, lower case. So ``gemini:gemini-3-pro-preview`` and
    ``lmms:sceval_gemini,model_version=gemini-3-pro-preview`` are one model, and so are
    ``Qwen/Qwen3-Omni-30B-A3B-Thinking`` and a local copy of it."""
    if spec == "rules":
        return spec
    _, model, checkpoint = _named_model(spec)
    return (checkpoint or model).rstrip("/").rsplit("/", 1)[-1].lower()


def spec_arguments(spec: str, args: str) -> dict[str, str]:
    """``key=value,...`` of a model spec as strings. Parsed here rather than by lmms-eval's
    parser so that a ``gemini:`` stage never imports lmms-eval (seconds of start-up)."""
    parsed = {}
    for part in filter(None, (p.strip() for p in args.split(","))):
        key, equals, value = part.partition("=")
        if not equals or not key.strip():
            raise ValueError(f"model spec {spec!r}: argument {part!r} is not key=value")
        parsed[key.strip()] = value.strip()
    return parsed
