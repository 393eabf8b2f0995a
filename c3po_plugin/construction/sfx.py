"""The offline sound-effect backend: a procedural synthesiser (numpy, no weights).

The paper makes non-speech audio with AudioLDM2 from the classifier's ``sfx_prompt`` and its
duration (App. B; :class:`c3po_plugin.construction.gpu_backends.AudioLdm2`). This stand-in builds a
sound from a few layers chosen by keywords of the prompt, seeded by the sample id (a blake2b
digest, never ``hash()``), exactly ``duration_s`` long at 16 kHz mono.

What it can express (the first keyword family found decides the main layer; a prompt may also
get a background bed):

==========================================================  ===========================================
keywords                                                    sound
==========================================================  ===========================================
knock, bang, slam, thud, hit, crash, clap, pop, drop, shot  decaying noise bursts (a count word such as
                                                            "three" or "twice" sets how many)
beep, alarm, buzz, timer                                    repeated square-ish beeps
bell, chime, ding, ring                                     struck bell partials with a long decay
siren                                                       a sine sweeping up and down
whistle, horn, tone, hum                                    a steady tone (horn and hum low, whistle high)
bird, chirp, tweet                                          quick upward chirps
dog, bark                                                   short noisy formant bursts
rain, wind, water, stream, pour, sizzle, static, crowd,     filtered noise beds (rain and applause add
applause, traffic, engine, fire                             dense crackle, engine and traffic a drone)
loud / soft, faint, distant, quiet                          level +/-
==========================================================  ===========================================

What it cannot: anything that needs recognisable timbre (a voice, a particular instrument, a
specific machine), words, music, or the spatial and acoustic detail of a scene. A prompt with
no known keyword gets a soft pink-noise bed. It exists so the pipeline runs offline and its
tests hear a real file of the requested length, not to make a benchmark that tests hearing.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from faultline_eval.core.media import SAMPLE_RATE

FAMILIES = {
    "impact": r"\b(knock\w*|bang\w*|slam\w*|thud\w*|hit\w*|crash\w*|clap\w*|pop\w*|drop\w*|shot\w*|gunshot\w*)\b",
    "beep": r"\b(beep\w*|alarm\w*|buzz\w*|timer\w*)\b",
    "bell": r"\b(bell\w*|chime\w*|ding\w*|ring\w*)\b",
    "siren": r"\bsiren\w*\b",
    "tone": r"\b(whistl\w*|horn\w*|tone\w*|hum\w*)\b",
    "bird": r"\b(bird\w*|chirp\w*|tweet\w*)\b",
    "bark": r"\b(dog\w*|bark\w*)\b",
    "noise": r"\b(rain\w*|wind\w*|water|stream\w*|pour\w*|sizzl\w*|static|crowd\w*|applause|traffic|engine\w*|fire)\b",
}
_COUNTS = {
    "once": 1,
    "one": 1,
    "single": 1,
    "twice": 2,
    "two": 2,
    "double": 2,
    "three": 3,
    "thrice": 3,
    "four": 4,
    "five": 5,
    "six": 6,
}


def _rng(key: str, prompt: str) -> np.random.Generator:
    digest = hashlib.blake2b(f"{key}\n{prompt}".encode(), digest_size=8).digest()
    return np.random.default_rng(int.from_bytes(digest, "little"))


def _t(n: int) -> np.ndarray:
    return np.arange(n) / SAMPLE_RATE


def _envelope(n: int, attack_s: float, decay_s: float) -> np.ndarray:
    t = _t(n)
    return np.minimum(1.0, t / max(attack_s, 1e-4)) * np.exp(-t / decay_s)


def _place(out: np.ndarray, sound: np.ndarray, start: int) -> None:
    end = min(len(out), start + len(sound))
    if start < end:
        out[start:end] += sound[: end - start]


def _pink(rng: np.random.Generator, n: int) -> np.ndarray:
    spectrum = np.fft.rfft(rng.standard_normal(n))
    spectrum /= np.sqrt(np.maximum(np.arange(len(spectrum)), 1))
    noise = np.fft.irfft(spectrum, n)
    return noise / (np.abs(noise).max() + 1e-9)


def _lowpass(signal: np.ndarray, cutoff_hz: float) -> np.ndarray:
    spectrum = np.fft.rfft(signal)
    spectrum[np.fft.rfftfreq(len(signal), 1 / SAMPLE_RATE) > cutoff_hz] = 0
    return np.fft.irfft(spectrum, len(signal))


def _events(rng: np.random.Generator, n: int, count: int) -> list[int]:
    """Start samples of ``count`` events spread over the clip with a little jitter."""
    slots = np.linspace(0.08, 0.85, count) * n if count > 1 else np.array([0.15 * n])
    return [int(s + rng.uniform(-0.03, 0.03) * n) for s in slots]


def _impact(rng: np.random.Generator, n: int, count: int | None, prompt: str) -> np.ndarray:
    """Knocks and thuds: filtered noise bursts over a low sine thump."""
    out = np.zeros(n)
    for start in _events(rng, n, count or int(rng.integers(1, 4))):
        m = int(0.25 * SAMPLE_RATE)
        burst = _lowpass(rng.standard_normal(m), rng.uniform(800, 3000)) * _envelope(m, 0.002, 0.04)
        _place(
            out,
            burst + 0.6 * np.sin(2 * np.pi * rng.uniform(60, 140) * _t(m)) * _envelope(m, 0.002, 0.08),
            max(start, 0),
        )
    return out


def _beep(rng: np.random.Generator, n: int, count: int | None, prompt: str) -> np.ndarray:
    """Square-wave beeps at a fixed pitch, one every 0.45 s."""
    out = np.zeros(n)
    freq, on = rng.uniform(800, 2000), 0.18
    for start in range(0, n, int(0.45 * SAMPLE_RATE))[: count or None]:
        m = int(on * SAMPLE_RATE)
        _place(out, np.sign(np.sin(2 * np.pi * freq * _t(m))) * 0.5 * _envelope(m, 0.005, 1.0), start)
    return out


def _bell(rng: np.random.Generator, n: int, count: int | None, prompt: str) -> np.ndarray:
    """Inharmonic partials ringing out to the end of the clip."""
    out = np.zeros(n)
    base = rng.uniform(400, 900)
    for start in _events(rng, n, count or 1):
        m = n - max(start, 0)
        partials = sum(a * np.sin(2 * np.pi * base * r * _t(m)) for r, a in ((1, 1), (2.76, 0.5), (5.4, 0.25)))
        _place(out, partials * _envelope(m, 0.002, 1.2), max(start, 0))
    return out


def _siren(rng: np.random.Generator, n: int, count: int | None, prompt: str) -> np.ndarray:
    """A pitch wailing between 350 and 1050 Hz."""
    freq = 700 + 350 * np.sin(2 * np.pi * 0.4 * _t(n))
    return np.sin(2 * np.pi * np.cumsum(freq) / SAMPLE_RATE)


def _tone(rng: np.random.Generator, n: int, count: int | None, prompt: str) -> np.ndarray:
    """A steady harmonic tone: low for horns and hums, high otherwise."""
    t = _t(n)
    low = re.search(r"\b(horn\w*|hum\w*)\b", prompt)
    freq = rng.uniform(90, 220) if low else rng.uniform(1500, 2800)
    return sum(np.sin(2 * np.pi * freq * k * t) / k for k in (1, 2, 3)) * np.minimum(1, np.minimum(t, t[::-1]) / 0.05)


def _bird(rng: np.random.Generator, n: int, count: int | None, prompt: str) -> np.ndarray:
    """Rising chirps at irregular intervals."""
    out = np.zeros(n)
    for start in range(int(rng.uniform(0, 0.2) * SAMPLE_RATE), n, int(rng.uniform(0.25, 0.6) * SAMPLE_RATE)):
        m = int(rng.uniform(0.05, 0.12) * SAMPLE_RATE)
        sweep = np.linspace(rng.uniform(2500, 3500), rng.uniform(4000, 6000), m)
        _place(out, np.sin(2 * np.pi * np.cumsum(sweep) / SAMPLE_RATE) * np.hanning(m), start)
    return out


def _bark(rng: np.random.Generator, n: int, count: int | None, prompt: str) -> np.ndarray:
    """Short voiced, noisy barks."""
    out = np.zeros(n)
    for start in _events(rng, n, count or int(rng.integers(2, 5))):
        m = int(0.18 * SAMPLE_RATE)
        voiced = np.sign(np.sin(2 * np.pi * rng.uniform(250, 450) * _t(m))) + 0.5 * rng.standard_normal(m)
        _place(out, _lowpass(voiced, 1500) * _envelope(m, 0.01, 0.06), max(start, 0))
    return out


def _noise_bed(rng: np.random.Generator, n: int, count: int | None, prompt: str) -> np.ndarray:
    """Every other family: a noise bed coloured by the prompt's words (rain, engines, wind)."""
    t = _t(n)
    bright = re.search(r"\b(rain\w*|sizzl\w*|static|applause|pour\w*|water|stream\w*)\b", prompt)
    out = _pink(rng, n) if not bright else _lowpass(rng.standard_normal(n), 6000)
    if re.search(r"\b(rain\w*|applause|sizzl\w*|fire)\b", prompt):
        clicks = np.zeros(n)
        clicks[rng.integers(0, n, size=int(n / 40))] = rng.uniform(-1, 1, size=int(n / 40))
        out = out * 0.6 + clicks
    if re.search(r"\b(engine\w*|traffic)\b", prompt):
        out = 0.5 * out + np.sin(2 * np.pi * rng.uniform(40, 90) * t) * (0.8 + 0.2 * np.sin(2 * np.pi * 0.5 * t))
    if re.search(r"\bwind\w*\b", prompt):
        out = _lowpass(out, 900) * (0.6 + 0.4 * np.sin(2 * np.pi * rng.uniform(0.1, 0.3) * t))
    return out


# One synthesiser per keyword family; families without one get a noise bed.
_SYNTHS = {
    "impact": _impact,
    "beep": _beep,
    "bell": _bell,
    "siren": _siren,
    "tone": _tone,
    "bird": _bird,
    "bark": _bark,
}


def _layer(family: str, rng: np.random.Generator, n: int, count: int | None, prompt: str) -> np.ndarray:
    return _SYNTHS.get(family, _noise_bed)(rng, n, count, prompt)


def families(prompt: str) -> list[str]:
    """The keyword families a prompt names, in the order of :data:`FAMILIES`."""
    text = prompt.lower()
    return [name for name, pattern in FAMILIES.items() if re.search(pattern, text)]


class ProceduralSfx:
    """SFX backend ``procedural`` (kind ``sfx``)."""

    name = "procedural"

    def __init__(self, model: str | None = None) -> None:
        if model:
            raise ValueError(f"backend {self.name!r} takes no model (got {model!r})")

    def sound(self, prompt: str, duration_s: float, *, key: str) -> tuple[np.ndarray, int]:
        """(wave of exactly ``round(duration_s * 16000)`` samples, 16000), seeded by ``key``."""
        if not (duration_s and duration_s > 0):
            raise ValueError(f"SFX duration must be positive, got {duration_s!r}")
        text = (prompt or "").lower()
        n = int(round(duration_s * SAMPLE_RATE))
        rng = _rng(key, text)
        count = next((_COUNTS[w] for w in re.findall(r"[a-z]+", text) if w in _COUNTS), None)
        found = families(text)
        wave = sum((_layer(f, rng, n, count, text) for f in found[:2]), np.zeros(n)) if found else 0.3 * _pink(rng, n)
        peak = np.abs(wave).max()
        quiet = re.search(r"\b(soft|faint|distant|distance|quiet)\w*", text)
        level = 0.9 if re.search(r"\bloud\w*\b", text) else 0.35 if quiet else 0.7
        wave = wave / peak * level if peak > 0 else wave
        return wave.astype(np.float32), SAMPLE_RATE
