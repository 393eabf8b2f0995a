"""The synthetic vocabulary both embedded demo sets are drawn in: colours, tone pitches, tones.

SCEval's and C3PO's demo items (and the offline reference model that answers them) must agree on
these, so they are defined once.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from faultline_eval.core.media import SAMPLE_RATE

__all__ = ["COLOURS", "HIGH_HZ", "LOW_HZ", "BEEP_HZ", "tone_events", "write_items", "demo_main"]


COLOURS = {
    "red": (215, 45, 45),
    "yellow": (225, 195, 35),
    "green": (45, 165, 65),
    "cyan": (40, 185, 200),
    "blue": (45, 70, 215),
    "magenta": (195, 55, 195),
}

#: Tone pitches: the audio facts the demo items ask about (a high or a low tone, a beep).
HIGH_HZ, LOW_HZ, BEEP_HZ = 1320.0, 330.0, 990.0


def tone_events(seconds: float, events: list[tuple[float, float, float]]) -> np.ndarray:
    """Quiet room noise plus (start, length, frequency) tone events with soft edges."""
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    wave = 0.01 * np.sin(2 * np.pi * 60 * t)
    for start, length, freq in events:
        on = (t >= start) & (t < start + length)
        edge = np.minimum(1.0, np.minimum(t[on] - start, start + length - t[on]) / 0.01)
        wave[on] += 0.45 * edge * np.sin(2 * np.pi * freq * (t[on] - start))
    return wave.astype(np.float32)


def write_items(out: Path, rows: Iterable[dict[str, Any]]) -> Path:
    """``out/items.jsonl``: one demo row a line, keys sorted (byte-stable across runs)."""
    items = out / "items.jsonl"
    items.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    return items


def demo_main(doc: str, generate: Callable[[Path], Path]) -> None:
    """A demo generator's command line: ``python -m <make_demo> OUT`` writes the set into OUT."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    print(f"wrote {generate(parser.parse_args().out)}")
