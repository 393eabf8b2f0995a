"""The offline speech backend: eSpeak NG, the library shipped in the ``espeakng-loader`` wheel,
driven through ctypes (no system espeak, no downloaded weights).

The paper synthesises speech with Qwen3-TTS VoiceDesign from the sample's ``transcript`` (the
text) and ``voice_style_prompt`` (the instruct), App. B; that backend is
:class:`c3po_plugin.build.gpu_backends.QwenVoiceDesign`. eSpeak is a formant synthesiser: the
words are intelligible, the voice robotic. It reads the style prompt for what it can express
(:func:`voice_for`) and ignores the rest (emotion, timbre, pauses, intonation):

==================================================  ==============================
words in the style prompt                           eSpeak setting
==================================================  ==============================
female, woman, girl                                 voice variant ``f3``
whisper, whispering, hushed                         voice variant ``whisper``
british / scottish                                  voice ``en`` / ``en-gb-scotland``
slow, calm, measured, deliberate, relaxed           rate 140 words/min (default 175)
fast, quick, rapid, hurried, urgent, excited        rate 210
high-pitched, high, young, child                    pitch 70 (default 50)
deep, low, gravelly, elderly, old                   pitch 30
==================================================  ==============================

eSpeak speaks at 22.05 kHz; the wave is resampled to the protocol's 16 kHz mono (soxr).
"""

from __future__ import annotations

import ctypes
import re
import threading
from dataclasses import dataclass

import numpy as np

from sceval_plugin.operators import SAMPLE_RATE

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_CHARS_UTF8 = 1
_RATE, _PITCH = 1, 3
_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)
_LOCK = threading.Lock()  # eSpeak keeps one global synthesiser per process


@dataclass(frozen=True)
class Voice:
    name: str = "en-us"
    rate_wpm: int = 175
    pitch: int = 50


_WORDS = {
    "female": r"\b(female|woman|girl|feminine)\b", "whisper": r"\b(whisper\w*|hushed)\b",
    "british": r"\b(british|english accent|received pronunciation)\b", "scottish": r"\bscottish\b",
    "slow": r"\b(slow\w*|calm\w*|measured|deliberate\w*|relaxed)\b",
    "fast": r"\b(fast|quick\w*|rapid\w*|hurried\w*|urgent\w*|excited\w*)\b",
    "high": r"\b(high-pitched|high|young|child\w*)\b", "deep": r"\b(deep|low|gravelly|elderly|old)\b",
}


def voice_for(style: str | None) -> Voice:
    """The eSpeak voice for a ``voice_style_prompt`` (see the module's table)."""
    text = (style or "").lower()
    has = {key: bool(re.search(pattern, text)) for key, pattern in _WORDS.items()}
    name = "en-gb-scotland" if has["scottish"] else "en" if has["british"] else "en-us"
    if has["whisper"]:
        name += "+whisper"
    elif has["female"]:
        name += "+f3"
    rate = 140 if has["slow"] and not has["fast"] else 210 if has["fast"] and not has["slow"] else 175
    pitch = 70 if has["high"] and not has["deep"] else 30 if has["deep"] and not has["high"] else 50
    return Voice(name, rate, pitch)


class _Engine:
    """The process's eSpeak library, initialised once."""

    def __init__(self) -> None:
        from c3po_plugin.build.gpu_backends import require

        espeakng_loader = require("espeakng_loader", "espeak", extra="build")

        lib = ctypes.CDLL(espeakng_loader.get_library_path())
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_Synth.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint,
                                     ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
        self.rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, espeakng_loader.get_data_path().encode(), 0)
        if self.rate <= 0:
            raise RuntimeError(f"eSpeak NG failed to initialise (data at {espeakng_loader.get_data_path()})")
        self.chunks: list[np.ndarray] = []
        self._callback = _CALLBACK(self._collect)  # kept alive: eSpeak holds the pointer
        lib.espeak_SetSynthCallback(self._callback)
        self.lib = lib

    def _collect(self, wav, count, _events) -> int:
        if wav and count > 0:
            self.chunks.append(np.ctypeslib.as_array(wav, shape=(count,)).copy())
        return 0

    def speak(self, text: str, voice: Voice) -> np.ndarray:
        if self.lib.espeak_SetVoiceByName(voice.name.encode()) != 0:
            raise RuntimeError(f"eSpeak NG has no voice {voice.name!r}")
        self.lib.espeak_SetParameter(_RATE, voice.rate_wpm, 0)
        self.lib.espeak_SetParameter(_PITCH, voice.pitch, 0)
        self.chunks = []
        data = text.encode("utf-8")
        if self.lib.espeak_Synth(data, len(data) + 1, 0, 0, 0, _CHARS_UTF8, None, None) != 0:
            raise RuntimeError("eSpeak NG could not synthesise the text")
        self.lib.espeak_Synchronize()
        return np.concatenate(self.chunks) if self.chunks else np.zeros(0, np.int16)


_ENGINE: _Engine | None = None


class EspeakSpeech:
    """Speech backend ``espeak`` (kind ``speech``)."""

    name = "espeak"

    def __init__(self, model: str | None = None) -> None:
        from c3po_plugin.build.gpu_backends import require

        if model:
            raise ValueError(f"backend {self.name!r} takes no model (got {model!r})")
        require("espeakng_loader", self.name, extra="build")  # now, so a missing extra stops the stage once

    def speak(self, text: str, style: str | None, *, key: str) -> tuple[np.ndarray, int]:
        """(16 kHz mono float32 wave, 16000) of ``text`` in the voice ``style`` describes;
        ``key`` (the sample id) is unused: eSpeak is deterministic."""
        import soxr

        global _ENGINE
        if not text or not text.strip():
            raise ValueError("empty transcript")
        with _LOCK:
            _ENGINE = _ENGINE or _Engine()
            pcm, rate = _ENGINE.speak(text, voice_for(style)), _ENGINE.rate
        if not len(pcm) or not np.any(pcm):
            raise RuntimeError("eSpeak NG produced silence")
        wave = soxr.resample(pcm.astype(np.float32) / 32768.0, rate, SAMPLE_RATE)
        return wave.astype(np.float32), SAMPLE_RATE
