"""The models that answer base lmms-eval tasks' docs: ``modality_oracle`` (answers from one
modality) and ``sceval_reference`` on what base tasks' ``doc_to_visual`` returns (issue 27).

The end-to-end runs through the lmms-eval CLI are in tests/test_wrap_e2e.py."""

from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile
from PIL import Image
from wrap_datasets import COLOUR_NAMES, build_av_odyssey, build_worldsense, colour_frame, encoded_options, tone

from faultline_eval.core.demo_media import HIGH_HZ, LOW_HZ
from faultline_eval.core.record_fields import RecordError
from faultline_eval.model_wrappers.chat_messages import messages_from_visuals
from faultline_eval.model_wrappers.modality_oracle import UNKNOWN, oracle_reply, perceived
from faultline_eval.model_wrappers.reference import answer_visuals, base_options, is_protocol_prompt
from faultline_eval.model_wrappers.reference_perception import (
    conversation_media,
    dominant_colour,
    item_media,
    pitch_word,
    split_visuals,
)
from sceval_plugin.eval_prompts import STANDARD

WORLDSENSE_PROMPT = "Which colour?\nA. purple and a low tone\nB. red and a high tone\nC. orange and a low tone\nD. black and a low tone\nAnswer with the option's letter."
MVBENCH_PROMPT = (
    "Question:What colour?\nOption:\n(A) purple\n(B) orange\n(C) green\n(D) black\nOnly give the best option.\n"
)


def test_oracle_reply_takes_the_form_the_prompt_asks_for():
    assert oracle_reply(WORLDSENSE_PROMPT, "red") == "B"
    assert oracle_reply(WORLDSENSE_PROMPT, "high") == "B"
    assert oracle_reply(MVBENCH_PROMPT, "green") == "C"
    assert oracle_reply("Is the background red?\nAnswer the question using a single word or phrase.", "red") == "Yes"
    assert oracle_reply("Is the background purple?\nAnswer using a single word.", "red") == "No"
    assert oracle_reply("Please recognize the speech and only output the transcription.", "high") == "high"


def test_oracle_reply_without_its_modality_is_a_fixed_guess():
    assert oracle_reply(WORLDSENSE_PROMPT, None) == "A"
    assert oracle_reply(WORLDSENSE_PROMPT, "low") == "A"  # three options name it: not identified, guessed
    assert oracle_reply("Is the tone high?", None) == "No"
    assert oracle_reply("Please recognize the speech.", None) == UNKNOWN


def test_perception_reads_one_fact_per_modality():
    frames = [colour_frame(colour) for colour in ("blue", "blue", "red")]
    assert dominant_colour(frames) == "blue"
    assert dominant_colour([np.full((48, 64, 3), 128, np.uint8)]) is None  # a blank (missing_vision) frame
    assert pitch_word(tone(1.0, HIGH_HZ)) == "high" and pitch_word(tone(1.0, LOW_HZ)) == "low"
    assert pitch_word(np.zeros(16_000, np.float32)) is None  # silence (missing_audio)
    assert perceived("audio", frames, None) is None and perceived("vision", [], tone()) is None


def test_encoded_options_let_each_modality_alone_identify_the_answer():
    for index in range(8):
        options, answer = encoded_options(index, COLOUR_NAMES[index % 6], "high" if index % 2 else "low")
        prompt = "\n".join(options)
        letter = "ABCD"[answer]
        assert answer == index % 4
        assert oracle_reply(prompt, COLOUR_NAMES[index % 6]) == letter
        assert oracle_reply(prompt, "high" if index % 2 else "low") == letter


def test_item_media_reads_what_base_tasks_send(tmp_path):
    """Video paths (frames on SCEval's grid + the audio track), image and audio paths, PIL lists,
    audio dicts at another rate, ``{"type": "audio", ...}``: the forms base tasks'
    doc_to_visual and lmms-eval's auto-messages produce."""
    copy = build_worldsense(tmp_path / "ws", n=2)
    video = str(copy.hf_home / "WorldSense" / "videos" / "ws_001.mp4")  # green, high tone
    frames, wave = item_media(video)
    assert frames and dominant_colour(frames) == "green" and pitch_word(wave) == "high"

    odyssey = build_av_odyssey(tmp_path / "avo", n=1)
    image, audio = (str(odyssey.hf_home / "AV_Odyssey" / f) for f in ("image/avo_000_1.png", "audio/avo_000_1.wav"))
    frames, wave = split_visuals([image, audio])
    assert dominant_colour(frames) == "red" and pitch_word(wave) == "low"

    pil = Image.fromarray(colour_frame("yellow"))
    at_44k = {"array": 0.5 * np.sin(2 * np.pi * HIGH_HZ * np.arange(44_100) / 44_100), "sampling_rate": 44_100}
    frames, wave = split_visuals([[pil, pil], {"type": "audio", **at_44k}])
    assert len(frames) == 2 and dominant_colour(frames) == "yellow"
    assert wave is not None and wave.size == 16_000 and pitch_word(wave) == "high"  # resampled to 16 kHz

    with pytest.raises(RecordError, match="missing.mp4"):
        item_media(str(tmp_path / "missing.mp4"))
    with pytest.raises(ValueError, match="doc 7: cannot read a media item of type int"):
        item_media(3, "doc 7")


def test_chat_parts_may_hold_paths_and_dicts(tmp_path):
    """lmms-eval's auto-messages put an audio dict in a *video* part (design §1.6); a path in
    any media part is decoded by its extension."""
    buffer = io.BytesIO()
    soundfile.write(buffer, tone(1.0, HIGH_HZ), 16_000, format="WAV")
    (tmp_path / "a.wav").write_bytes(buffer.getvalue())
    messages = [
        {"role": "user", "content": [{"type": "video", "url": {"array": tone(1.0, LOW_HZ), "sampling_rate": 16_000}}]},
        {"role": "user", "content": [{"type": "audio", "url": str(tmp_path / "a.wav")}, {"type": "text", "text": "Q"}]},
    ]
    frames, wave, texts = conversation_media(messages)
    assert frames == [] and pitch_word(wave) == "high" and texts == ["Q"]


def test_reference_answers_base_prompts_with_a_bare_letter():
    """On a base task's prompt the reference model replies as the prompt asks (a letter); SCEval
    protocol prompts (an ``Options:`` section) still get its JSON reply."""
    assert not is_protocol_prompt(WORLDSENSE_PROMPT)
    assert not is_protocol_prompt("Question:\nWhich?\n\nOptions:\nA. red\nB. blue\n\nAnswer with the option's letter")
    _, protocol = STANDARD.render("What colour?", [("A", "red"), ("B", "blue")], visual="image", audio=False)
    assert is_protocol_prompt(protocol)
    assert [key for key, _ in base_options(MVBENCH_PROMPT)] == ["A", "B", "C", "D"]
    red = Image.fromarray(colour_frame("red", 96, 128))
    assert answer_visuals(WORLDSENSE_PROMPT, [red]) == "B"  # the option naming the colour it sees
    assert messages_from_visuals("q", [[red, red]])[0]["content"][1]["type"] == "image"  # a frame list, flattened
