"""Offline by default: what every command of the project sets unless the environment says otherwise."""

from __future__ import annotations

import os

from faultline_eval.core.settings import (
    HF_DATASETS_OFFLINE,
    HF_HUB_DISABLE_TELEMETRY,
    HF_HUB_OFFLINE,
    NO_ALBUMENTATIONS_UPDATE,
    WANDB_MODE,
)

__all__ = ["OFFLINE_DEFAULTS", "use_offline_defaults"]

#: What the project's commands set unless the environment already says otherwise: no hub, no
#: telemetry, no update checks. Export e.g. ``HF_HUB_OFFLINE=0`` to reach the hub.
OFFLINE_DEFAULTS = {
    setting.name: setting.default_text
    for setting in (HF_HUB_OFFLINE, HF_DATASETS_OFFLINE, HF_HUB_DISABLE_TELEMETRY, NO_ALBUMENTATIONS_UPDATE, WANDB_MODE)
}


def use_offline_defaults() -> None:
    """Apply :data:`OFFLINE_DEFAULTS` to ``os.environ`` without overriding what is set."""
    for name, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(name, value)
