"""0.1 README, "Adding your own operator", verbatim."""

# my_package/sceval_ops.py
import numpy as np

from sceval_plugin import hookimpl
from sceval_plugin.operators import SeverityTable, operator

FRACTION = SeverityTable(
    "fraction of pixels flipped to black or white", {10: 0.02, 30: 0.06, 50: 0.10, 70: 0.15}, identity=0.0
)


@operator("salt_pepper", modality="vision", table=FRACTION, stochastic=True)  # 3 variants
def salt_pepper(frames, fraction, rng: np.random.Generator):
    """Set a random fraction of pixels to pure black or white."""
    out = frames.copy()
    hit = rng.random(frames.shape[:-1]) < fraction
    out[hit] = rng.choice(np.array([0, 255], np.uint8), size=(int(hit.sum()), 1))
    return out


@hookimpl
def sceval_register_operators(registry):
    registry.add(salt_pepper)
