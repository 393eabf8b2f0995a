"""The 0.1 converter plugin, through the API."""

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sceval_plugin.api import Converter, ConverterRegistry, Rejected, hookimpl

KEYS = "ABCD"


def convert(root: Path, out: Path) -> Iterator[dict[str, Any] | Rejected]:
    for line in (root / "qa.jsonl").read_text().splitlines():
        qa = json.loads(line)
        ref, sample_id = f"mine/{qa['id']}", f"mine-{qa['id']}"
        if not 0 <= qa["answer"] < len(qa["choices"]):
            yield Rejected(ref, "bad_answer_index", f"answer {qa['answer']} is out of range", sample_id)
            continue
        shutil.copytree(root / "clips" / qa["id"], out / "media" / qa["id"])
        frames = sorted((out / "media" / qa["id"]).glob("frame_*.png"))
        yield {
            "sample_id": sample_id,
            "question": qa["question"],
            "options": dict(zip(KEYS, qa["choices"])),
            "gold_key": KEYS[qa["answer"]],
            "visual": [str(frame.relative_to(out)) for frame in frames],
            "audio": f"media/{qa['id']}/audio.flac",
            "hidden": {"source_ref": ref},
        }


@hookimpl
def sceval_register_converters(registry: ConverterRegistry) -> None:
    registry.add(Converter("mine", convert, "CC-BY-4.0", evidence_modality="audio+visual"))
