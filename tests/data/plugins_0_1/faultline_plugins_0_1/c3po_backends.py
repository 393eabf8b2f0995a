"""A synthesis backend as 0.1's ``c3po_register_synthesis_backends`` docstring described it:
``registry.add(kind, name, factory)``, ``factory(model=None)`` returning an object with ``draw``."""

import hashlib

import numpy as np

from c3po_plugin import hookimpl


class FlatColour:
    """An image backend that paints the picture one colour, chosen by sample id and caption."""

    def __init__(self, model=None):
        self.size = int(model or 64)

    def draw(self, caption, *, key):
        colour = hashlib.blake2b(f"{key}|{caption}".encode(), digest_size=3).digest()
        return np.broadcast_to(np.frombuffer(colour, np.uint8), (self.size, self.size, 3)).copy()


@hookimpl
def c3po_register_synthesis_backends(registry):
    registry.add("image", "flat-colour", FlatColour)
