"""The offline image backend: a caption card — NOT a generative model.

The paper renders its generated images with Nano Banana Pro from the sample's ``image``
caption (App. B); the optional real backend here is a diffusers text-to-image pipeline
(:class:`c3po_plugin.construction.gpu_backends.DiffusersImage`). Offline, with no weights, there is
nothing that can draw the caption's content, so this backend draws the caption itself as text
on a card headed "STAND-IN IMAGE (caption card, not generated)". The pipeline, the audit
stage and the export run on it end to end; a benchmark built with it tests reading, not
seeing, and says so in every item's provenance (``hidden.backends.image``).
"""

from __future__ import annotations

import hashlib
import textwrap

import numpy as np

WIDTH, HEIGHT = 512, 384
LABEL = "STAND-IN IMAGE (caption card, not generated)"


class CaptionCard:
    """Image backend ``caption-card`` (kind ``image``)."""

    name = "caption-card"

    def __init__(self, model: str | None = None) -> None:
        if model:
            raise ValueError(f"backend {self.name!r} takes no model (got {model!r})")

    def draw(self, caption: str, *, key: str) -> np.ndarray:
        """An RGB uint8 ``(384, 512, 3)`` card with ``caption`` wrapped on it; the background
        tint comes from ``key`` (the sample id), so cards of different items differ."""
        from PIL import Image, ImageDraw, ImageFont

        if not caption or not caption.strip():
            raise ValueError("empty image caption")
        tint = hashlib.blake2b(key.encode(), digest_size=3).digest()
        background = tuple(200 + b % 50 for b in tint)
        img = Image.new("RGB", (WIDTH, HEIGHT), background)
        pen = ImageDraw.Draw(img)
        header, body = ImageFont.load_default(size=18), ImageFont.load_default(size=16)
        pen.rectangle([0, 0, WIDTH, 34], fill=(60, 60, 60))
        pen.text((10, 8), LABEL, font=header, fill=(255, 255, 255))
        lines = textwrap.wrap(caption.strip(), width=58)
        limit = (HEIGHT - 60) // 22
        if len(lines) > limit:
            lines = lines[: limit - 1] + [lines[limit - 1][:48] + " ..."]
        for i, line in enumerate(lines):
            pen.text((14, 48 + 22 * i), line, font=body, fill=(20, 20, 20))
        return np.asarray(img, dtype=np.uint8).copy()
