"""Builders of small on-disk datasets and run logs for the tests (no network)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np

from faultline_eval.core import media
from faultline_eval.tasks import sceval_task as task
from sceval_plugin import operators
from sceval_plugin.conditions import catalogue
from sceval_plugin.data.sources import DEMO_DIR


def demo_rows(n: int | None = None) -> list[dict]:
    rows = [json.loads(line) for line in (DEMO_DIR / "items.jsonl").read_text().splitlines()]
    return rows if n is None else rows[:: max(1, len(rows) // n)][:n]


def copy_demo(folder: Path, n: int | None = None, *, mutate=None) -> Path:
    """A local unified-schema folder with ``n`` demo items (``mutate(row)`` may edit each row)."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = demo_rows(n)
    for row in rows:
        src = DEMO_DIR / "media" / row["sample_id"]
        shutil.copytree(src, folder / "media" / row["sample_id"], dirs_exist_ok=True)
        if mutate:
            mutate(row)
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


RELEASE_README = """---
configs:
- config_name: baseline
  data_files:
  - split: train
    path: baseline/*.jsonl
- config_name: single
  data_files:
  - split: train
    path: single/*.jsonl
- config_name: combined
  data_files:
  - split: train
    path: combined/*.jsonl
---
# A local copy laid out like KZL96/ModalityFaultLines-SCEval (test fixture)
"""
HUB_PREFIX = "https://huggingface.co/datasets/KZL96/ModalityFaultLines-SCEval/resolve/main/"


def release_fixture(folder: Path, n: int = 3) -> Path:
    """Baseline items, single-modality noise@70 (3 variants) and drop_words+mute t70/a50 rows,
    each pre-corrupted with our operators and stored under <source>/<id>/<modality>/<op>/<sev>/<variant>/."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "README.md").write_text(RELEASE_README)
    baseline, single, combined = [], [], []
    for row in demo_rows(n):
        sid, src = row["sample_id"], "demo"
        frames = [
            media.read_image(DEMO_DIR / p)[0]
            for p in (row["visual"] if isinstance(row["visual"], list) else [row["visual"]])
        ]
        wave, _, _ = media.read_audio(DEMO_DIR / row["audio"])
        clean_dir = f"{src}/{sid}/clean/none/0/0"
        for i, f in enumerate(frames):
            media.write_image(folder / clean_dir / f"frame_{i}.png", f)
        media.write_audio(folder / clean_dir / "audio.wav", wave)
        clean_visual = [f"{clean_dir}/frame_{i}.png" for i in range(len(frames))]
        base = {
            "sample_id": sid,
            "source": src,
            "question": row["question"],
            "options": [row["options"][k] for k in "ABCD"],
            "gold_key": row["gold_key"],
            "visual_url": json.dumps(clean_visual),
            "audio_url": HUB_PREFIX + f"{clean_dir}/audio.wav",
            "corruption_modality": "none",
            "corruption_type": "none",
            "severity_base": 0,
            "severity_variant": 0,
        }
        baseline.append(base)
        for variant in range(3):
            noisy = operators.apply("noise", np.stack(frames), severity=70, variant=variant, key=sid)
            vdir = f"{src}/{sid}/vision/noise/70/{variant}"
            for i, f in enumerate(noisy):
                media.write_image(folder / vdir / f"frame_{i}.png", f)
            single.append(
                {
                    **base,
                    "options": [f"{k}. {row['options'][k]}" for k in "ABCD"],
                    "visual_url": json.dumps([f"{vdir}/frame_{i}.png" for i in range(len(frames))]),
                    "corruption_modality": "vision",
                    "corruption_type": "noise",
                    "severity_base": 70,
                    "severity_variant": variant,
                }
            )
            muted = operators.apply("mute", wave, severity=50, variant=variant, key=sid)
            adir = f"{src}/{sid}/audio/mute/50/{variant}"
            media.write_audio(folder / adir / "audio.wav", muted)
            combined.append(
                {
                    **base,
                    "question": operators.apply("drop_words", row["question"], severity=70, variant=variant, key=sid),
                    "audio_url": f"{adir}/audio.wav",
                    "corruption_modality": "text+audio",
                    "corruption_type": "drop_words+mute",
                    "severity_base": "t70_a50",
                    "severity_variant": variant,
                }
            )
    for name, rows in (("baseline", baseline), ("single", single), ("combined", combined)):
        (folder / name).mkdir(exist_ok=True)
        (folder / name / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def omni_bench_fixture(folder: Path, n: int = 3, *, m_a_p: bool = False, mutate=None) -> Path:
    """A local copy shaped like lmms-lab-audio/Omni_Bench_fix: parquet with Image and Audio columns.

    ``m_a_p=True`` adds the columns of m-a-p/OmniBench (``index``, ``audio type``, ``image content``,
    ``audio content``) and stores the audio as 44.1 kHz stereo MP3, as that release does;
    ``mutate(i, record)`` may edit each record (a dict of column values) before it is written."""
    import io

    import datasets
    import soundfile
    from PIL import Image

    columns = ["question", "options", "answer", "image", "audio", "task type"]
    columns += ["index", "audio type", "image content", "audio content"] if m_a_p else []
    records = {name: [] for name in columns}
    for i, row in enumerate(demo_rows(n)):
        frames = row["visual"] if isinstance(row["visual"], list) else [row["visual"]]
        png = io.BytesIO()
        Image.open(DEMO_DIR / frames[0]).save(png, format="PNG")
        wav = io.BytesIO()
        wave, rate = soundfile.read(DEMO_DIR / row["audio"], dtype="float32")
        if m_a_p:
            import soxr

            stereo = np.repeat(soxr.resample(wave, rate, 44_100)[:, None], 2, axis=1)
            soundfile.write(wav, stereo, 44_100, format="MP3")
        else:
            soundfile.write(wav, wave, rate, format="WAV")
        options = [row["options"][k] for k in "ABCD"]
        record = {
            "question": row["question"],
            "options": options,
            "answer": row["options"][row["gold_key"]],
            "image": {"bytes": png.getvalue(), "path": None},
            "audio": {"bytes": wav.getvalue(), "path": None},
            "task type": "demo",
            "index": 100 + i,
            "audio type": "sound event",
            "image content": "a caption",
            "audio content": "a transcript",
        }
        if mutate:
            mutate(i, record)
        for name in columns:
            records[name].append(record[name])
    features = datasets.Features(
        {
            "question": datasets.Value("string"),
            "options": datasets.Sequence(datasets.Value("string")),
            "answer": datasets.Value("string"),
            "image": datasets.Image(),
            "audio": {"bytes": datasets.Value("binary"), "path": datasets.Value("string")},
            "task type": datasets.Value("string"),
            **(
                {
                    "index": datasets.Value("int64"),
                    "audio type": datasets.Value("string"),
                    "image content": datasets.Value("string"),
                    "audio content": datasets.Value("string"),
                }
                if m_a_p
                else {}
            ),
        }
    )
    # Cast the storage to the hub's Audio feature (encoding through it would need torchcodec).
    table = datasets.Dataset.from_dict(records, features=features).cast_column("audio", datasets.Audio())
    (folder / "data").mkdir(parents=True, exist_ok=True)
    table.to_parquet(str(folder / "data" / "train-00000-of-00001.parquet"))
    return folder


def guesser(doc: dict) -> str:
    """A model that guesses, deterministically per row; every 7th reply unparseable."""
    h = int(hashlib.blake2b(doc["row_id"].encode(), digest_size=4).hexdigest(), 16)
    return "no idea" if h % 7 == 0 else json.dumps({"answer": "ABCD"[h % 4]})


def write_logs(folder: Path, model: str, answer, conditions) -> list[dict]:
    """lmms-eval-shaped logs (results JSON, one per-sample JSONL per condition) of ``answer``."""
    folder.mkdir(parents=True)
    (folder / "20261129_120000_results.json").write_text(json.dumps({"config": {"model": model, "model_args": ""}}))
    records = []
    for cid in conditions:
        rows, _ = task.build_rows(catalogue().get(cid))
        lines = []
        for i, doc in enumerate(rows):
            out = task.process_results(doc, [answer(doc)])
            out["sceval_record"]["model"] = model  # what lmms-eval's run context records
            lines.append(json.dumps({"doc_id": i, "target": doc["target"], **out}))
            records.append(out["sceval_record"])
        (folder / f"20261129_120000_samples_sceval_{cid}.jsonl").write_text("\n".join(lines) + "\n")
    return records
