"""Per-variant random generators that are pure functions of their inputs, and the versioned
scheme that says how a variant's random draws are made.

No global RNG and no Python ``hash()`` (salted per process): the seed is a BLAKE2b digest of
the tuple, so the same (key, operator, severity, variant) gives the same bytes in any process
on any machine with the same NumPy release.

Seed schemes (``SCEVAL_SEED_SCHEME``; every record names the one it was made with):

1. PCG64 seeded by the digest below; ``noise`` draws float32 Gaussians (NumPy's ziggurat) per
   frame and rounds ``pixel + noise``. The scheme of every variant published before it had a
   number.
2. (default) Same seeds and the same draws for every operator except ``noise``, which draws the
   *rounded* Gaussian directly: 16 random bits per value through an inverse-CDF table (see
   :func:`sceval_plugin.operators.vision.rounded_gaussian_table`). Same distribution up to
   2**-17 in every cumulative probability, 3-5x faster; different bytes.

A new scheme never reuses an old number; old numbers keep giving the old bytes.
"""

from __future__ import annotations

import hashlib

import numpy as np

from sceval_plugin.sceval_environment import SCEVAL_SEED_SCHEME

#: The digest's salt. Part of every scheme so far: changing it would change every variant.
SEED_DERIVATION = "sceval-variant-v1"
#: Scheme number -> what it means (the module docstring has the details).
SEED_SCHEMES = {
    1: "PCG64 per variant; noise = rounded float32 ziggurat Gaussians",
    2: "PCG64 per variant; noise = rounded Gaussian drawn from 16-bit inverse-CDF tables",
}
DEFAULT_SEED_SCHEME = int(SCEVAL_SEED_SCHEME.default_text)


def seed_scheme() -> int:
    """The scheme in force: ``$SCEVAL_SEED_SCHEME`` if set, else :data:`DEFAULT_SEED_SCHEME`.

    Read on every call, so a process can reproduce old variants by setting the variable.
    """
    value = SCEVAL_SEED_SCHEME.get()
    if not value.isdigit() or int(value) not in SEED_SCHEMES:
        known = ", ".join(f"{n} ({what})" for n, what in SEED_SCHEMES.items())
        raise ValueError(f"{SCEVAL_SEED_SCHEME.name}={value!r} is not a seed scheme; known: {known}")
    return int(value)


def variant_seed(key: str, operator: str, severity: int, variant: int) -> int:
    """A 128-bit seed for one corruption variant."""
    fields = (SEED_DERIVATION, key, operator, str(int(severity)), str(int(variant)))
    digest = hashlib.blake2b("\x1f".join(fields).encode("utf-8"), digest_size=16).digest()
    return int.from_bytes(digest, "little")


def variant_rng(key: str, operator: str, severity: int, variant: int) -> np.random.Generator:
    """A fresh PCG64 generator for one corruption variant."""
    return np.random.Generator(np.random.PCG64(variant_seed(key, operator, severity, variant)))
