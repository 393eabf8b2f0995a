"""The paper's synthesis models (App. B), optional: ``pip install "faultline-eval[build-gpu]"``.

=================  =======  =========================================================================
name               kind     model and call
=================  =======  =========================================================================
``qwen3-tts``      speech   ``Qwen/Qwen3-TTS-12Hz-1.7B-VoiceDesign`` through ``qwen_tts`` (transformers):
                            ``generate_voice_design(text=transcript, instruct=voice_style_prompt)``,
                            ``language="English"``, every other parameter at its default (App. B)
``audioldm2``      sfx      ``cvssp/audioldm2-large`` through diffusers' ``AudioLDM2Pipeline``:
                            ``num_inference_steps=500``, ``negative_prompt="low quality"``,
                            ``audio_length_in_s`` = the classifier's duration, seeded by the sample id
``diffusers``      image    any diffusers text-to-image checkpoint (``diffusers:<model id>``; default
                            ``stabilityai/sdxl-turbo``), seeded by the sample id. The paper used Nano
                            Banana Pro, an API model, which has no open checkpoint
=================  =======  =========================================================================

A ``name:<model id or local folder>`` spec loads another checkpoint. Weights come from the
Hugging Face cache (download them once with ``HF_HUB_OFFLINE=0``); the tests never load these.
Models load on first use, once per backend object, on CUDA when available.
"""

from __future__ import annotations

import hashlib

import numpy as np

EXTRA = "build-gpu"
QWEN_TTS = "Qwen/Qwen3-TTS-12Hz-1.7B-VoiceDesign"
LANGUAGE = "English"  # the paper's items are English; it does not say whether it set the language
AUDIOLDM2 = "cvssp/audioldm2-large"
AUDIOLDM2_STEPS = 500
NEGATIVE_PROMPT = "low quality"
IMAGE_MODEL = "stabilityai/sdxl-turbo"


def require(module: str, backend: str, extra: str = EXTRA):
    """``module`` imported, or an error naming the extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise RuntimeError(
            f'synthesis backend {backend!r} needs {module!r}: pip install "faultline-eval[{extra}]" ({exc})'
        ) from exc


def _seed(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest(), "little")


def _device(torch) -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


class _Checkpoint:
    """A backend around one checkpoint: checks its package at once, loads the model on first use."""

    name = default = package = ""

    def __init__(self, model: str | None = None) -> None:
        self.model_id = model or self.default
        self._model = None
        require(self.package, self.name)


class QwenVoiceDesign(_Checkpoint):
    name, default, package = "qwen3-tts", QWEN_TTS, "qwen_tts"

    def speak(self, text: str, style: str | None, *, key: str) -> tuple[np.ndarray, int]:
        import torch
        from qwen_tts import Qwen3TTSModel

        if self._model is None:
            self._model = Qwen3TTSModel.from_pretrained(
                self.model_id,
                device_map=_device(torch),
                dtype=torch.bfloat16 if torch.cuda.is_available() else torch.float32,
            )
        torch.manual_seed(_seed(key))
        wavs, rate = self._model.generate_voice_design(text=text, language=LANGUAGE, instruct=style or "")
        return np.asarray(wavs[0], dtype=np.float32), int(rate)


class AudioLdm2(_Checkpoint):
    name, default, package = "audioldm2", AUDIOLDM2, "diffusers"

    def sound(self, prompt: str, duration_s: float, *, key: str) -> tuple[np.ndarray, int]:
        import torch
        from diffusers import AudioLDM2Pipeline

        if self._model is None:
            dtype = torch.float16 if torch.cuda.is_available() else torch.float32
            self._model = AudioLDM2Pipeline.from_pretrained(self.model_id, torch_dtype=dtype).to(_device(torch))
        generator = torch.Generator(_device(torch)).manual_seed(_seed(key))
        audio = self._model(
            prompt,
            negative_prompt=NEGATIVE_PROMPT,
            num_inference_steps=AUDIOLDM2_STEPS,
            audio_length_in_s=float(duration_s),
            generator=generator,
        ).audios[0]
        rate = 16000  # AudioLDM2's vocoder rate
        return np.asarray(audio, dtype=np.float32)[: int(round(duration_s * rate))], rate


class DiffusersImage(_Checkpoint):
    name, default, package = "diffusers", IMAGE_MODEL, "diffusers"

    def draw(self, caption: str, *, key: str) -> np.ndarray:
        import torch
        from diffusers import AutoPipelineForText2Image

        if self._model is None:
            dtype = torch.float16 if torch.cuda.is_available() else torch.float32
            self._model = AutoPipelineForText2Image.from_pretrained(self.model_id, torch_dtype=dtype).to(_device(torch))
        generator = torch.Generator(_device(torch)).manual_seed(_seed(key))
        image = self._model(prompt=caption, generator=generator).images[0]
        return np.asarray(image.convert("RGB"), dtype=np.uint8)
