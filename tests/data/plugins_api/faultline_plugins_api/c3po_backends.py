"""The 0.1 synthesis-backend plugin, through the API."""

import hashlib

import numpy as np

from c3po_plugin.api import BackendRegistry, hookimpl


class FlatColour:
    """An image backend that paints the picture one colour, chosen by sample id and caption."""

    def __init__(self, model: str | None = None) -> None:
        self.size = int(model or 64)

    def draw(self, caption: str, *, key: str) -> np.ndarray:
        colour = hashlib.blake2b(f"{key}|{caption}".encode(), digest_size=3).digest()
        picture: np.ndarray = np.broadcast_to(np.frombuffer(colour, np.uint8), (self.size, self.size, 3)).copy()
        return picture


@hookimpl
def c3po_register_synthesis_backends(registry: BackendRegistry) -> None:
    registry.add("image", "flat-colour", FlatColour)
