"""Tiny C3PO datasets with real media, written into a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from faultline_eval.core import media


def write_mp4(path: Path, frames: int = 4, fps: int = 2) -> Path:
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for i in range(frames):
            image = np.full((48, 64, 3), 40 * i % 256, np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def write_media(root: Path) -> dict[str, str]:
    """One video, one image and one audio clip; their paths relative to ``root``."""
    write_mp4(root / "media" / "clip.mp4")
    media.write_image(root / "media" / "photo.png", np.full((32, 32, 3), 200, np.uint8))
    t = np.arange(16_000) / 16_000
    media.write_audio(root / "media" / "tone.wav", (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32))
    return {"video": "media/clip.mp4", "image": "media/photo.png", "audio": "media/tone.wav"}


def item(sample_id: str, template: str, paths: dict[str, str], **extra) -> dict:
    """A valid row for ``template`` (id or name) carrying exactly the media it needs."""
    from c3po_plugin.templates import registry

    t = registry().get(template)
    row = {
        "sample_id": sample_id,
        "template": template,
        "question": "What colour is it?",
        "answer": "red",
        **{kind: paths[kind] for kind in t.media},
    }
    row.update(extra)
    return {k: v for k, v in row.items() if v is not None}


def write_items(root: Path, rows: list[dict]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
