"""``<build dir>/settings.json``: the settings a build runs with, and what each stage's run cost.

Every stage reads its settings here: the defaults below, overridden by the build's
``settings.json``, overridden by what the caller passes (a ``c3po build`` flag or a keyword of
``run_<stage>``); what a stage ran with is written back, so a resumed or later stage sees the same.

Defaults and where they come from:

``generator``         ``gemini:gemini-3-pro-preview`` — the paper's generator (Gemini-3-Pro, §3.1.3)
``generator_temperature`` 1.0 (App. I)
``classifier``        ``None``: the generator's model (the paper used Gemma-3-12B, App. B; any spec)
``auditor``           ``None``: the generator's model; the paper used Qwen3-Omni-30B-A3B-Thinking
                      (App. C), e.g. ``lmms:faultline_qwen3_omni,pretrained=Qwen/Qwen3-Omni-30B-A3B-Thinking``
``fit_threshold``     3 — the paper filters on the generator's 1-5 fit score (App. B) without
                      printing the cut; its auditor prompt calls 1-2 "not a very good fit", so a
                      score below 3 is rejected. Any 1-5 value is allowed (1 keeps everything).
``max_query_words``   12 (App. I, "Aggressive Conciseness")
``banned_words``      App. I's meta-vocabulary (generator's Zero-Hint list and the auditor's list)
``malformed_retries`` 1 — a malformed or empty reply is asked once more, then ``rejected``
``concurrency``       4 requests in flight per stage
``max_output_tokens`` 32768 — a cap, not a cost; a thinking model's thoughts count against it
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sceval_plugin.store import write_atomic

#: App. I: the generator's Zero-Hint list ("audio", "video", "image", "narrator", "speaker",
#: "visual evidence", "discrepancy", "claim", "context") and the auditor's ("visual").
BANNED_WORDS = ("audio", "video", "image", "narrator", "speaker", "visual", "discrepancy", "claim", "context")

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
    if not 1 <= int(merged["fit_threshold"]) <= 5:
        raise ValueError(f"fit_threshold must be between 1 and 5, got {merged['fit_threshold']!r}")
    file = path(build_dir)
    file.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(file, json.dumps(merged, indent=2, sort_keys=True) + "\n")
    return merged


def model_for(settings: dict[str, Any], role: str) -> str:
    """The model spec of ``classifier`` or ``auditor``, the generator's when unset."""
    return settings.get(role) or settings["generator"]


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
    total["mean_latency_s"] = round(total["latency_s"] / total["sent"], 3) if total.get("sent") else None
    file.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(file, json.dumps(total, indent=2) + "\n")
    return total
