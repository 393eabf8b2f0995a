"""Per-variant random generators that are pure functions of their inputs.

No global RNG and no Python ``hash()`` (salted per process): the seed is a BLAKE2b digest of
the tuple, so the same (key, operator, severity, variant) gives the same bytes in any process
on any machine with the same NumPy release.
"""

from __future__ import annotations

import hashlib

import numpy as np

#: Bumped only if the derivation changes, which would change every published variant.
SEED_SCHEME = "sceval-variant-v1"


def variant_seed(key: str, operator: str, severity: int, variant: int) -> int:
    """A 128-bit seed for one corruption variant."""
    fields = (SEED_SCHEME, key, operator, str(int(severity)), str(int(variant)))
    digest = hashlib.blake2b("\x1f".join(fields).encode("utf-8"), digest_size=16).digest()
    return int.from_bytes(digest, "little")


def variant_rng(key: str, operator: str, severity: int, variant: int) -> np.random.Generator:
    """A fresh PCG64 generator for one corruption variant."""
    return np.random.Generator(np.random.PCG64(variant_seed(key, operator, severity, variant)))
