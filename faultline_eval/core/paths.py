"""Where the project keeps what it caches between runs: one folder, one setting."""

from __future__ import annotations

from pathlib import Path

from faultline_eval.core.settings import SCEVAL_CACHE

__all__ = ["CACHE_ENV", "cache_dir"]

#: The cache folder's setting (its historical name: SCEval had the first cache).
CACHE_ENV = SCEVAL_CACHE.name


def cache_dir() -> Path:
    """``$SCEVAL_CACHE`` (as given), else ``~/.cache/sceval``: decoded media, reply stores, generated task files."""
    given = SCEVAL_CACHE.raw()
    return Path(given) if given else Path(SCEVAL_CACHE.default_text).expanduser()
