"""The offline speech backend: eSpeak NG, the library shipped in the ``espeakng-loader`` wheel,
driven through ctypes (no system espeak, no downloaded weights).

The paper synthesises speech with Qwen3-TTS VoiceDesign from the sample's ``transcript`` (the
text) and ``voice_style_prompt`` (the instruct), App. B; that backend is
:class:`c3po_plugin.construction.gpu_backends.QwenVoiceDesign`. eSpeak is a formant synthesiser: the
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

**Reproducible**: the same (text, style) gives the same bytes in any order, process or machine
with the same wheel: each utterance is spoken by a freshly loaded copy of the library with a
fixed noise seed (:func:`synthesise`), because eSpeak carries state from one utterance to the
next and seeds its noise from the clock.
"""

from __future__ import annotations

import ctypes
import re
import threading
from dataclasses import dataclass

import numpy as np

from c3po_plugin.construction.gpu_backends import require
from faultline_eval.core.media import SAMPLE_RATE

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_CHARS_UTF8 = 1
_RATE, _PITCH = 1, 3
_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)
_LOCK = threading.Lock()  # the library's state is process-global: one utterance at a time


@dataclass(frozen=True)
class Voice:
    name: str = "en-us"
    rate_wpm: int = 175
    pitch: int = 50


_WORDS = {
    "female": r"\b(female|woman|girl|feminine)\b",
    "whisper": r"\b(whisper\w*|hushed)\b",
    "british": r"\b(british|english accent|received pronunciation)\b",
    "scottish": r"\bscottish\b",
    "slow": r"\b(slow\w*|calm\w*|measured|deliberate\w*|relaxed)\b",
    "fast": r"\b(fast|quick\w*|rapid\w*|hurried\w*|urgent\w*|excited\w*)\b",
    "high": r"\b(high-pitched|high|young|child\w*)\b",
    "deep": r"\b(deep|low|gravelly|elderly|old)\b",
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


#: The seed of eSpeak's noise generator (breath noise of the whisper variant, Klatt voices),
#: set for every utterance: the library seeds it from the clock when it initialises.
NOISE_SEED = 1


def _private_library() -> str:
    """A copy of the wheel's library file that only this module loads, made once per process.

    eSpeak keeps synthesis state in C statics that no API call resets (the pitch-flutter phase in
    ``AdvanceParameters``, the gain control and cycle counters of ``Wavegen``; the noise seed comes
    from ``time()``), so one utterance changed the next. Each utterance therefore loads this copy,
    initialises it, speaks and unloads it (``dlclose``): every utterance starts from the library's
    pristine state. A private copy, because ``dlclose`` only unloads a library nobody else holds.
    """
    global _PRIVATE
    if _PRIVATE is None:
        import atexit
        import shutil
        import tempfile
        from pathlib import Path

        source = Path(require("espeakng_loader", "espeak", extra="build").get_library_path())
        folder = Path(tempfile.mkdtemp(prefix="faultline-espeak-"))
        atexit.register(shutil.rmtree, folder, True)
        shutil.copyfile(source, folder / source.name)
        _PRIVATE = str(folder / source.name)
    return _PRIVATE


_PRIVATE: str | None = None


def _unload(lib: ctypes.CDLL) -> None:
    import _ctypes

    (getattr(_ctypes, "dlclose", None) or _ctypes.FreeLibrary)(lib._handle)


def synthesise(text: str, voice: Voice) -> tuple[np.ndarray, int]:
    """(int16 pcm, sample rate) of ``text`` in ``voice``, from a freshly loaded library
    (:func:`_private_library`) with the noise seed :data:`NOISE_SEED`: a pure function of its
    arguments, whatever was spoken before, in this process or another."""
    data_path = require("espeakng_loader", "espeak", extra="build").get_data_path()
    chunks: list[np.ndarray] = []

    def collect(wav, count, _events) -> int:
        if wav and count > 0:
            chunks.append(np.ctypeslib.as_array(wav, shape=(count,)).copy())
        return 0

    callback = _CALLBACK(collect)  # kept alive until the library is unloaded
    lib = ctypes.CDLL(_private_library())
    try:
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_Synth.argtypes = [
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, data_path.encode(), 0)
        if rate <= 0:
            raise RuntimeError(f"eSpeak NG failed to initialise (data at {data_path})")
        try:
            seed = lib.espeak_ng_SetRandSeed
        except AttributeError:
            raise RuntimeError(
                "this eSpeak NG has no espeak_ng_SetRandSeed (1.52 or later needed for "
                "reproducible speech); update espeakng-loader"
            ) from None
        seed.argtypes = [ctypes.c_long]
        seed(NOISE_SEED)
        try:
            lib.espeak_SetSynthCallback(callback)
            if lib.espeak_SetVoiceByName(voice.name.encode()) != 0:
                raise RuntimeError(f"eSpeak NG has no voice {voice.name!r}")
            lib.espeak_SetParameter(_RATE, voice.rate_wpm, 0)
            lib.espeak_SetParameter(_PITCH, voice.pitch, 0)
            encoded = text.encode("utf-8")
            if lib.espeak_Synth(encoded, len(encoded) + 1, 0, 0, 0, _CHARS_UTF8, None, None) != 0:
                raise RuntimeError("eSpeak NG could not synthesise the text")
            lib.espeak_Synchronize()
        finally:
            lib.espeak_Terminate()
    finally:
        _unload(lib)
    return (np.concatenate(chunks) if chunks else np.zeros(0, np.int16)), rate


class EspeakSpeech:
    """Speech backend ``espeak`` (kind ``speech``)."""

    name = "espeak"

    def __init__(self, model: str | None = None) -> None:
        if model:
            raise ValueError(f"backend {self.name!r} takes no model (got {model!r})")
        require("espeakng_loader", self.name, extra="build")  # now, so a missing extra stops the stage once

    def speak(self, text: str, style: str | None, *, key: str) -> tuple[np.ndarray, int]:
        """(16 kHz mono float32 wave, 16000) of ``text`` in the voice ``style`` describes, a pure
        function of the two (:func:`synthesise`); ``key`` (the sample id) is unused."""
        import soxr

        if not text or not text.strip():
            raise ValueError("empty transcript")
        with _LOCK:
            pcm, rate = synthesise(text, voice_for(style))
        if not len(pcm) or not np.any(pcm):
            raise RuntimeError("eSpeak NG produced silence")
        wave = soxr.resample(pcm.astype(np.float32) / 32768.0, rate, SAMPLE_RATE)
        return wave.astype(np.float32), SAMPLE_RATE
