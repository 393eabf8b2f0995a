"""``<build dir>/settings.json``: the settings a build runs with, and what each stage's run cost.

Every stage reads its settings here: the defaults below, overridden by the build's
``settings.json``, overridden by what the caller passes (a ``c3po build`` flag or a keyword of
``run_<stage>``); what a stage ran with is written back, so a resumed or later stage sees the same.

Defaults and where they come from:

``generator``         ``gemini:gemini-3-pro-preview`` — the paper's generator (Gemini-3-Pro, §3.1.3)
``generator_temperature`` 1.0 (App. I)
``classifier``        ``None``: ``$C3PO_BUILD_CLASSIFIER``, else the generator's model (the paper
                      used Gemma-3-12B, App. B; any spec)
``auditor``           ``None``: ``$C3PO_BUILD_AUDITOR``, else the generator's model, with a warning
                      (:func:`model_warnings`); the paper used Qwen3-Omni-30B-A3B-Thinking (App. C),
                      :data:`PAPER_AUDITOR`
``fit_threshold``     3 — the paper filters on the generator's 1-5 fit score (App. B) without
                      printing the cut; its auditor prompt calls 1-2 "not a very good fit", so a
                      score below 3 is rejected. Any 1-5 value is allowed (1 keeps everything).
``max_query_words``   12 (App. I, "Aggressive Conciseness")
``banned_words``      App. I's meta-vocabulary (generator's Zero-Hint list and the auditor's list)
``malformed_retries`` 1 — a malformed or empty reply is asked once more, then ``rejected``
``concurrency``       4 requests in flight per stage
``max_output_tokens`` 32768 — a cap, not a cost; a thinking model's thoughts count against it

The auditor and the audio typer are *configured* when the caller (``--auditor``, a
``run_<stage>`` keyword), ``settings.json`` or the environment (:data:`ROLE_ENV`) names them, in
that order; the environment's choice is written into ``settings.json`` at the build's first stage,
so the build keeps it. Unconfigured, they fall back to the generator's model. App. C chose a
different auditor "to avoid propagating the biases from the generator model", so an auditor that
is the generator's model (:func:`c3po_plugin.construction.model_specs.model_identity`) is warned about in the
build's summary and its exported dataset card (:func:`model_warnings`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from c3po_plugin.c3po_environment import C3PO_BUILD_AUDITOR, C3PO_BUILD_CLASSIFIER
from c3po_plugin.construction.model_specs import model_identity, model_label
from faultline_eval.core.store import write_atomic

#: App. I: the generator's Zero-Hint list ("audio", "video", "image", "narrator", "speaker",
#: "visual evidence", "discrepancy", "claim", "context") and the auditor's ("visual").
BANNED_WORDS = ("audio", "video", "image", "narrator", "speaker", "visual", "discrepancy", "claim", "context")

#: The paper's model of each LLM role (§3.1.3, App. B, App. C), for summaries and cards.
PAPER_MODELS = {"generator": "Gemini-3-Pro", "classifier": "Gemma-3-12B", "auditor": "Qwen3-Omni-30B-A3B-Thinking"}
#: App. C's auditor as a model spec.
PAPER_AUDITOR = "lmms:faultline_qwen3_omni,pretrained=Qwen/Qwen3-Omni-30B-A3B-Thinking"
#: Where the auditor / audio typer is configured when neither the caller nor settings.json names it.
ROLE_SETTINGS = {"classifier": C3PO_BUILD_CLASSIFIER, "auditor": C3PO_BUILD_AUDITOR}
ROLE_ENV = {role: setting.name for role, setting in ROLE_SETTINGS.items()}
#: The stage each LLM role runs.
ROLE_STAGE = {"generator": "generate", "classifier": "classify", "auditor": "audit"}

DEFAULTS: dict[str, Any] = {
    "generator": "gemini:gemini-3-pro-preview",
    "generator_temperature": 1.0,
    "classifier": None,
    "classifier_temperature": 0.0,
    "auditor": None,
    "auditor_temperature": 0.0,
    "fit_threshold": 3,
    "max_query_words": 12,
    "banned_words": list(BANNED_WORDS),
    "malformed_retries": 1,
    "concurrency": 4,
    "max_output_tokens": 32768,
}


def path(build_dir: str | Path) -> Path:
    return Path(build_dir) / "settings.json"


def load(build_dir: str | Path) -> dict[str, Any]:
    """Every setting of the build: the defaults, then ``settings.json`` (other stages' keys kept)."""
    file = path(build_dir)
    stored = json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}
    if not isinstance(stored, dict):
        raise ValueError(f"{file}: settings must be a JSON object")
    return {**DEFAULTS, **stored}


def resolve(build_dir: str | Path, **given: Any) -> dict[str, Any]:
    """The settings with ``given`` (None values ignored) on top, written back to ``settings.json``."""
    merged = {**load(build_dir), **{k: v for k, v in given.items() if v is not None}}
    for role in ROLE_ENV:
        merged[role] = merged.get(role) or _from_environment(role)
    if not 1 <= int(merged["fit_threshold"]) <= 5:
        raise ValueError(f"fit_threshold must be between 1 and 5, got {merged['fit_threshold']!r}")
    file = path(build_dir)
    file.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(file, json.dumps(merged, indent=2, sort_keys=True) + "\n")
    return merged


def _from_environment(role: str) -> str | None:
    return ROLE_SETTINGS[role].get() or None


def model_for(settings: dict[str, Any], role: str) -> str:
    """The model spec of ``generator``, ``classifier`` or ``auditor``: the settings', else the
    environment's (:data:`ROLE_ENV`), else the generator's."""
    return settings.get(role) or (_from_environment(role) if role in ROLE_ENV else None) or settings["generator"]


def role_models(build_dir: str | Path) -> dict[str, list[str]]:
    """The model specs each LLM role ran with, per the stage's usage file (every model one of its
    runs used); for a stage that has not run, the one the settings name."""
    settings = load(build_dir)
    models = {}
    for role, stage in ROLE_STAGE.items():
        file = usage_path(build_dir, stage)
        usage = json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}
        models[role] = usage.get("models") or ([usage["model"]] if usage.get("model") else [model_for(settings, role)])
    return models


def model_warnings(build_dir: str | Path) -> list[str]:
    """The build's warnings about its models: an auditor that is the generator's model (App. C)."""
    models = role_models(build_dir)
    generators = {model_identity(m) for m in models["generator"]}
    same = [model_label(m) for m in models["auditor"] if model_identity(m) in generators]
    if not same:
        return []
    return [
        f"WARNING: the auditor is the generator's model ({', '.join(same)}). The paper audits with a "
        f"different model ({PAPER_MODELS['auditor']}, App. C) so that the filter does not share the "
        f"generator's biases; name one with --auditor, settings.json's \"auditor\" or ${ROLE_ENV['auditor']} "
        f"(e.g. {PAPER_AUDITOR})."
    ]


def card_section(build_dir: str | Path) -> str:
    """The dataset card's paragraph on the models that built the items, and the warnings."""
    models = role_models(build_dir)
    used = "; ".join(f"{role} {', '.join(f'`{model_label(m)}`' for m in models[role])}" for role in ROLE_STAGE)
    paper = ", ".join(f"{role} {name}" for role, name in PAPER_MODELS.items())
    return "\n\n".join([f"Models: {used} (the paper's: {paper})."] + [f"**{w}**" for w in model_warnings(build_dir)])


def usage_path(build_dir: str | Path, stage: str) -> Path:
    return Path(build_dir) / "replies" / f"{stage}.usage.json"


def add_usage(build_dir: str | Path, stage: str, model_id: str, usage: dict[str, Any]) -> dict[str, Any]:
    """Add one run's usage to the stage's running total (every resumed run adds what it sent)."""
    file = usage_path(build_dir, stage)
    total = json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}
    for key in ("sent", "restored", "retries", "input_tokens", "output_tokens", "latency_s"):
        total[key] = round(total.get(key, 0) + (usage.get(key) or 0), 3)
    failures = total.setdefault("failures", {})
    for category, n in usage.get("failures", {}).items():
        failures[category] = failures.get(category, 0) + n
    total["model"] = model_id
    total["models"] = list(dict.fromkeys([*total.get("models", []), model_id]))  # a resumed run may change it
    total["mean_latency_s"] = round(total["latency_s"] / total["sent"], 3) if total.get("sent") else None
    file.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(file, json.dumps(total, indent=2) + "\n")
    return total
