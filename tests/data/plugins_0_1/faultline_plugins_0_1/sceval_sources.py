"""0.1 README, "Your own source is a plugin": its imports and hook verbatim, with a ``convert``
that reads a two-file release (``qa.jsonl`` and ``clips/<id>/``) where the README wrote ``...``."""

# my_package/sceval_sources.py         setup.cfg: [options.entry_points]  sceval = mine = my_package.sceval_sources
import json
import shutil

from sceval_plugin import hookimpl
from sceval_plugin.build.convert import Converter, Rejected

KEYS = "ABCD"


def convert(root, out):  # yield one unified row (media under out/"media") or a Rejected per example
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
def sceval_register_converters(registry):
    registry.add(Converter("mine", convert, "CC-BY-4.0", evidence_modality="audio+visual"))
