"""Where the project keeps what it caches between runs: one folder, one setting."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CACHE_ENV", "cache_dir"]

#: The cache folder's setting (its historical name: SCEval had the first cache).
CACHE_ENV = "SCEVAL_CACHE"


def cache_dir() -> Path:
    """``$SCEVAL_CACHE``, else ``~/.cache/sceval``: decoded media, reply stores, generated task files."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "sceval")
