"""Stage 4b of a C3PO build: synthesising each generated sample's audio and image (paper App. B).

For every sample the generator produced (the ``generate`` ledger) the template's missing media
are made: the audio, typed by the ``classify`` ledger as speech (``tts``: transcript and voice
style prompt) or a sound effect (``sfx``: prompt and a 1-10 s duration), and, where the template
needs an image that is not the base, the image from the generator's caption
(``generated_components.image``). Files go to ``<build dir>/media/items/<sample id>/audio.wav``
(16 kHz mono, the protocol's form, whatever rate the backend speaks at) and ``image.png``.

Backends are chosen by name per kind (``speech=``, ``sfx=``, ``image=``; ``name:<model>`` passes
a checkpoint) from a registry filled by the ``c3po_register_synthesis_backends`` hook
(:mod:`c3po_plugin.hookspecs`), through which the built-ins register too:

=========  ==================  ======================================================  ===========
kind       name                what                                                    needs
=========  ==================  ======================================================  ===========
speech     ``espeak``          eSpeak NG from the ``espeakng-loader`` wheel (default)   nothing
sfx        ``procedural``      a keyword-shaped numpy synthesiser (default)             nothing
image      ``caption-card``    the caption drawn on a labelled card, not generated      nothing
                               (default)
speech     ``qwen3-tts``       Qwen3-TTS 1.7B VoiceDesign, the paper's                 ``[build-gpu]``
sfx        ``audioldm2``       AudioLDM2-large, 500 steps, negative "low quality"      ``[build-gpu]``
image      ``diffusers``       a diffusers text-to-image checkpoint                    ``[build-gpu]``
=========  ==================  ======================================================  ===========

Ledger entry (key = sample id)::

    {"audio": rel | None, "audio_kind": "tts" | "sfx" | None, "audio_duration_s": float | None,
     "image": rel | None, "backends": {"speech": name, "sfx": name, "image": name}}

Samples are synthesised in sample-id order, and every backend is a pure function of its inputs
(text, prompt, caption, sample id), so the files do not depend on the order replies came in, on
a kill and resume, or on the process. A backend error is ``failed`` (retried on resume); a
sample whose template needs audio or an image the generator did not describe is ``rejected``
with that reason; a sample whose audio typing ``classify`` rejected is ``rejected`` here too,
``"audio typing rejected at classify: <reason>"`` (final: :mod:`c3po_plugin.construction.ledger`); one
that ``classify`` has not typed yet (no entry, or a failed one) is left for a later run and
counted ``waiting``. None of these becomes an item.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from c3po_plugin.construction.assemble import nested, project_template_id, template_id_of
from c3po_plugin.construction.ledger import Ledger, Upstream
from c3po_plugin.hookspecs import hookimpl
from c3po_plugin.plugins import HOST
from c3po_plugin.templates import registry as template_registry
from faultline_eval.core import media
from faultline_eval.core.media import SAMPLE_RATE
from faultline_eval.core.registry import PluginError, Registry

if TYPE_CHECKING:  # the built-in backends, loaded by name (_lazy); declared here so that lint-imports checks them
    from c3po_plugin.construction import caption_card, gpu_backends, sfx, speech  # noqa: F401

STAGE = "synthesize"
KINDS = ("speech", "sfx", "image")
DEFAULTS = {"speech": "espeak", "sfx": "procedural", "image": "caption-card"}


class SynthesisRegistry:
    """Backend factories by kind and name: one :class:`Registry` per kind (``speech``, ``sfx``,
    ``image``), filled together by the ``c3po_register_synthesis_backends`` hook."""

    def __init__(self) -> None:
        self.kinds = {kind: Registry[Callable[..., Any]](f"{kind} backend") for kind in KINDS}

    def add(self, kind: str, name: str, factory: Callable[..., Any]) -> None:
        """Register ``factory(model=None)`` as the ``kind`` backend ``name``; an unknown kind or a
        taken name raises PluginError."""
        if kind not in self.kinds:
            raise PluginError(f"synthesis backend {name!r} ({self.plugin}): kind {kind!r} is not one of {KINDS}")
        self.kinds[kind].register(name, factory)

    @property
    def plugin(self) -> str:
        """The plugin adding now."""
        return self.kinds[KINDS[0]].plugin

    @contextmanager
    def adding_for(self, plugin: str) -> Iterator[None]:
        """What one plugin adds, to every kind; undone in all of them if it fails."""
        with ExitStack() as stack:
            for backends in self.kinds.values():
                stack.enter_context(backends.adding_for(plugin))
            yield

    def names(self, kind: str) -> list[str]:
        return sorted(self.kinds[kind].names())

    def make(self, kind: str, spec: str) -> Any:
        """The backend object for ``name`` or ``name:<model>``."""
        name, _, model = spec.partition(":")
        return self.kinds[kind].get(name)(model=model or None)


@functools.lru_cache(maxsize=1)
def registry() -> SynthesisRegistry:
    return HOST.fill_registry("c3po_register_synthesis_backends", SynthesisRegistry(), "synthesis backends")


def _lazy(module: str, cls: str) -> Callable[..., Any]:
    """A factory that imports its module only when a build asks for the backend."""

    def make(model: str | None = None) -> Any:
        return getattr(importlib.import_module(module), cls)(model)

    return make


@hookimpl
def c3po_register_synthesis_backends(registry: SynthesisRegistry) -> None:
    registry.add("speech", "espeak", _lazy("c3po_plugin.construction.speech", "EspeakSpeech"))
    registry.add("sfx", "procedural", _lazy("c3po_plugin.construction.sfx", "ProceduralSfx"))
    registry.add("image", "caption-card", _lazy("c3po_plugin.construction.caption_card", "CaptionCard"))
    registry.add("speech", "qwen3-tts", _lazy("c3po_plugin.construction.gpu_backends", "QwenVoiceDesign"))
    registry.add("sfx", "audioldm2", _lazy("c3po_plugin.construction.gpu_backends", "AudioLdm2"))
    registry.add("image", "diffusers", _lazy("c3po_plugin.construction.gpu_backends", "DiffusersImage"))


# --- the stage -------------------------------------------------------------------------------------------


class Rejected(ValueError):
    """The sample cannot have the media its template needs (a content problem, final)."""


def needs(template_id: str) -> tuple[bool, bool]:
    """(needs synthesised audio, needs a synthesised image) for a template: the modalities its
    items take (:mod:`c3po_plugin.templates`) other than its base modality."""
    template = template_registry().get(template_id)
    base = template.base_modality
    return ("audio" in template.modalities and base != "audio", "image" in template.modalities and base != "image")


def run_synthesize(
    build_dir: str | Path,
    *,
    speech: str = DEFAULTS["speech"],
    sfx: str = DEFAULTS["sfx"],
    image: str = DEFAULTS["image"],
    templates: list[str] | None = None,
) -> dict:
    """Synthesise the media of every generated sample not yet settled; the stage's counts."""
    from tqdm import tqdm

    build_dir = Path(build_dir)
    generated = Ledger(build_dir, "generate").ok()
    typed = Ledger(build_dir, "classify").ok()
    upstream = Upstream(build_dir, ["classify"])
    ledger = Ledger(build_dir, STAGE)
    names = {"speech": speech, "sfx": sfx, "image": image}
    # Made before any sample, so an unknown name or a missing extra stops the stage with its error
    # instead of failing every sample; the real models load only when first called.
    backends = {kind: registry().make(kind, name) for kind, name in names.items()}

    wanted = _template_filter(templates)
    counts = {"ok": 0, "rejected": 0, "failed": 0, "skipped": 0, "waiting": 0}
    for sample_id, sample in tqdm(generated.items(), desc="synthesize", unit="sample"):  # sorted by id
        if wanted is not None and template_id_of(sample_id, sample) not in wanted:
            continue
        if ledger.settled(sample_id):
            counts["skipped"] += 1
            continue
        if needs(template_id_of(sample_id, sample))[0]:  # the audio's kind comes from classify
            verdict = upstream.verdict(sample_id)
            if verdict.status == "rejected":
                ledger.carry(sample_id, verdict)
                counts["rejected"] += 1
                continue
            if verdict.waiting:
                counts["waiting"] += 1
                continue
        try:
            data = _synthesize_one(build_dir, sample_id, sample, typed.get(sample_id), backends, names)
        except Rejected as exc:
            ledger.record(sample_id, "rejected", reason=str(exc))
            counts["rejected"] += 1
            continue
        except Exception as exc:  # a backend's own failure, whatever it is, is this sample's failure
            ledger.record(sample_id, "failed", reason=f"{type(exc).__name__}: {exc}")
            counts["failed"] += 1
            continue
        ledger.record(sample_id, "ok", data)
        counts["ok"] += 1
    return counts


def _template_filter(templates: list[str] | None) -> set[str] | None:
    return None if templates is None else {project_template_id(t) for t in templates}


def _synthesize_one(
    build_dir: Path, sample_id: str, sample: dict, typed: dict | None, backends: dict[str, Any], names: dict[str, str]
) -> dict:
    template_id = template_id_of(sample_id, sample)
    wants_audio, wants_image = needs(template_id)
    out = build_dir / "media" / "items" / sample_id
    data: dict[str, Any] = {
        "audio": None,
        "audio_kind": None,
        "audio_duration_s": None,
        "image": None,
        "backends": dict(names),
    }
    if wants_audio:  # typed is set here: run_synthesize checked the classify entry
        data.update(_synthesize_audio(build_dir, out, sample_id, sample, typed, template_id, backends, names))
    if wants_image:
        data.update(_synthesize_image(build_dir, out, sample_id, sample, template_id, backends, names))
    return data


def _synthesize_audio(
    build_dir: Path,
    out: Path,
    sample_id: str,
    sample: dict,
    typed: dict,
    template_id: str,
    backends: dict[str, Any],
    names: dict[str, str],
) -> dict[str, Any]:
    """The sample's speech or sound effect, as classify typed it, written at 16 kHz."""
    import soxr

    data: dict[str, Any] = {}
    kind = typed.get("kind")
    if kind == "tts":
        text = typed.get("transcript") or nested(sample, "generated_components", "audio", "transcript")
        style = typed.get("voice_style_prompt") or nested(sample, "generated_components", "audio", "voice_style_prompt")
        if not text or not str(text).strip():
            raise Rejected("audio typed as speech (tts) but the transcript is empty")
        wave, rate = backends["speech"].speak(str(text), style, key=sample_id)
        data["transcript"] = str(text)  # the reference of the mechanistic probes (E2, E3)
    elif kind == "sfx":
        prompt, duration = typed.get("sfx_prompt"), typed.get("duration_s")
        if not prompt or not duration:
            raise Rejected(
                f"audio typed as sfx without a prompt or duration (prompt {prompt!r}, duration {duration!r})"
            )
        wave, rate = backends["sfx"].sound(str(prompt), float(duration), key=sample_id)
    else:
        raise Rejected(f"template {template_id} needs audio but the audio was typed {kind!r}")
    wave = np.asarray(wave, dtype=np.float32).reshape(-1)
    if rate != SAMPLE_RATE:
        wave = soxr.resample(wave, rate, SAMPLE_RATE).astype(np.float32)
    if not len(wave) or not np.any(wave):
        raise RuntimeError(f"{names['speech' if kind == 'tts' else 'sfx']} produced silence")
    path = media.write_audio(out / "audio.wav", np.clip(wave, -1, 1))
    return {
        **data,
        "audio": str(path.relative_to(build_dir)),
        "audio_kind": kind,
        "audio_duration_s": round(len(wave) / SAMPLE_RATE, 3),
    }


def _synthesize_image(
    build_dir: Path,
    out: Path,
    sample_id: str,
    sample: dict,
    template_id: str,
    backends: dict[str, Any],
    names: dict[str, str],
) -> dict[str, Any]:
    """The sample's picture, drawn from the generator's caption."""
    caption = nested(sample, "generated_components", "image")
    if isinstance(caption, dict):  # a generator that nests it: {"caption": ...}
        caption = caption.get("caption") or caption.get("description")
    if not caption or not str(caption).strip() or str(caption).strip().lower() == "null":
        raise Rejected(f"template {template_id} needs an image but the generator gave no caption")
    picture = np.asarray(backends["image"].draw(str(caption), key=sample_id), dtype=np.uint8)
    if picture.ndim != 3 or picture.shape[2] != 3:
        raise RuntimeError(f"image backend {names['image']} returned shape {picture.shape}, not (H, W, 3)")
    return {
        "image_description": str(caption),
        "image": str(media.write_image(out / "image.png", picture).relative_to(build_dir)),
    }
