"""Tiny local copies laid out like the real Social-IQ 2.0 and VALOR-32K releases (synthetic media)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import soundfile

from faultline_eval.core.media import SAMPLE_RATE


def tone(seconds: float, rate: int = SAMPLE_RATE, channels: int = 1, hz: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    wave = (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)
    return wave if channels == 1 else np.repeat(wave[:, None], channels, axis=1)


def clip(path: Path, seconds: int, fps: int = 2, audio: bool = True) -> Path:
    """An H.264 MP4 of ``seconds`` at ``fps`` (each frame a different grey with a white block that
    moves: visual evidence, where a flat frame is none), with a tone track or none."""
    from faultline_eval.core.media_processing import write_clip

    frames = [np.full((24, 32, 3), (37 * i) % 256, np.uint8) for i in range(seconds * fps)]
    for i, frame in enumerate(frames):
        frame[8:16, (2 * i) % 24 : (2 * i) % 24 + 8] = 255
    return write_clip(path, frames, Fraction(fps), tone(seconds) if audio else None)


def social_iq2_copy(root: Path) -> Path:
    """``siq2/``: qa/qa_val.json + qa_test.json (JSON lines), video/, audio/wav/ (22.05 kHz stereo)."""
    base = root / "siq2"
    clip(base / "video" / "vidA.mp4", 10, audio=False)  # 10 s: more than 8 frames at 1 fps
    (base / "audio" / "wav").mkdir(parents=True)
    soundfile.write(base / "audio" / "wav" / "vidA.wav", tone(10, 22_050, channels=2), 22_050)
    clip(base / "video" / "vidB.mp4", 6)  # no separate audio file: its own track
    clip(base / "video" / "vidD.mp4", 4, audio=False)  # no audio at all

    def qa(qid, vid, ts="0.00-10.000", answer=1, q="What does the man say while he looks at the door?"):
        row = {
            "qid": qid,
            "q": q,
            "vid_name": vid,
            "ts": ts,
            "a0": "Hello",
            "a1": "Goodbye",
            "a2": "Stop",
            "a3": "Run",
            "idx_types": ["corr", "matched", "rewrite", "matched"],
        }
        return row if answer is None else {**row, "answer_idx": answer}

    val = [
        qa("vidA_q1_0", "vidA"),
        qa("vidA_q2_0", "vidA", q="How does the woman feel?", answer=3),
        qa("vidB_q1_0", "vidB", ts="1.00-4.00", answer=0),
        qa("vidC_q1_0", "vidC"),
        qa("vidA_q3_0", "vidA", answer=7),
        qa("vidD_q1_0", "vidD", ts="0.00-4.0"),
    ]
    (base / "qa").mkdir(parents=True)
    (base / "qa" / "qa_val.json").write_text("".join(json.dumps(r) + "\n" for r in val))
    (base / "qa" / "qa_test.json").write_text(json.dumps(qa("vidB_q2_0", "vidB", answer=None)) + "\n")
    return root


VALOR_CAPTIONS = {
    "aaa_0.000_10.000": "A dog barks while a man throws a red ball across the lawn.",
    "bbb_30.000_40.000": "Rain falls on a tin roof as a car drives slowly past.",
    "ccc_5.000_15.000": "A woman sings softly and plays a guitar by the window.",
    "ddd_0.000_10.000": "Children laugh and shout on a playground swing.",
    "eee_0.000_10.000": "A train horn sounds as it crosses a bridge at dusk.",
}


def valor_copy(root: Path) -> Path:
    """VALOR-32K style: desc_test.json (video_id + desc), one AVQA-style QA file, videos/ (own tracks)."""
    for video_id in list(VALOR_CAPTIONS)[:4]:  # "eee" has a caption but no clip
        clip(root / "videos" / f"{video_id}.mp4", 3)
    (root / "desc_test.json").write_text(json.dumps([{"video_id": v, "desc": d} for v, d in VALOR_CAPTIONS.items()]))
    qa = [
        {
            "id": "q-1",
            "video_id": "aaa_0.000_10.000",
            "question": "What sound does the animal make while it runs?",
            "options": ["barking", "meowing", "neighing", "silence"],
            "correct_answer_idx": 0,
            "modality": "audio-visual",
            "category": "action",
        },
        {
            "id": "q-2",
            "video_id": "bbb_30.000_40.000",
            "question": "What falls?",
            "options": ["rain", "snow"],
            "correct_answer_idx": 5,
            "modality": "visual",
        },
    ]
    (root / "avqa_test.json").write_text(json.dumps(qa))
    return root
