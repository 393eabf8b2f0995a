"""``faultline_minicpm_o``: lmms-eval's MiniCPM-o wrappers, made to see a whole SCEval trial.

lmms-eval's chat wrapper opens every image and audio ``url`` as a file (our frames are PIL
images and our audio an ``{"array", "sampling_rate"}`` dict, so it fails); its simple wrapper
sends only the first ``doc_to_visual`` item (one frame, no audio). The adapter builds MiniCPM-o's
content list from all of them in order, honours ``device`` (``cpu`` included), refuses unknown
model_args with an error naming the close match (:mod:`.model_args`), records failed requests,
and keeps finished greedy replies in a reply store (model arg ``store``) so a killed run resumes
without generating them again (see :class:`MiniCPMOAdapter`).
The model itself is MiniCPM-o's remote code (``trust_remote_code``), which pins its own
transformers version.
"""

from __future__ import annotations

from typing import Any

from lmms_eval.models.chat.minicpm_o import MiniCPM_O as _LmmsChat
from lmms_eval.models.simple.minicpm_o import MiniCPM_O as _LmmsSimple
from lmms_eval.models.simple.minicpm_o import encode_video
from loguru import logger

from faultline_eval.model_wrappers.lmms_base import init_local_model
from faultline_eval.model_wrappers.local_reply_store import open_reply_store
from faultline_eval.model_wrappers.local_requests import answer_requests
from faultline_eval.model_wrappers.media_conversion import audio_array, pil_image
from faultline_eval.model_wrappers.model_args import flag


class MiniCPMOAdapter:
    """Loading and content building for lmms-eval's MiniCPM-o wrapper classes."""

    model_id = ""

    def __init__(
        self,
        pretrained: str = "openbmb/MiniCPM-o-2_6",
        device: str | None = None,
        device_map: str | None = None,
        batch_size: int | str = 1,
        dtype: str = "auto",
        attn_implementation: str = "sdpa",
        init_vision: bool | str = True,
        init_audio: bool | str = True,
        init_tts: bool | str = False,
        max_num_frames: int | str = 64,
        max_new_tokens: int | str = 512,
        store: str | None = None,
        **kwargs: Any,
    ) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        where = init_local_model(self, device, device_map, kwargs)
        if dtype == "auto":  # the checkpoint's bf16 on GPUs; CPUs run float32 far better
            dtype = "float32" if where.device.type == "cpu" else "bfloat16"
        self.init_vision, self.init_audio = flag(init_vision, "init_vision"), flag(init_audio, "init_audio")
        self.init_tts = flag(init_tts, "init_tts")
        self._model = AutoModel.from_pretrained(
            pretrained,
            trust_remote_code=True,
            attn_implementation=attn_implementation,
            torch_dtype=getattr(torch, dtype),
            device_map=where.device_map,
            init_vision=self.init_vision,
            init_audio=self.init_audio,
            init_tts=self.init_tts,
        ).eval()
        self._tokenizer = AutoTokenizer.from_pretrained(pretrained, trust_remote_code=True)
        if self.init_tts and hasattr(self._model, "init_tts"):
            self._model.init_tts()
            self._model.tts.float()
        self._config = self._model.config
        if int(batch_size) > 1:
            logger.warning(
                f"{self.model_id}: batch_size={batch_size} ignored: MiniCPM-o's chat() answers one "
                "conversation per call here (its batched form is not proven equal); requests go one "
                "at a time"
            )
        self.batch_size_per_gpu = 1
        self.use_cache = True
        self.max_num_frames = int(max_num_frames)
        self.default_max_new_tokens = int(max_new_tokens)
        self.system_prompt = None
        self.pretrained = str(pretrained)
        self.reply_store = open_reply_store(self.model_id, self.pretrained, store)

    def _content(self, messages: list[dict]) -> tuple[list, bool]:
        """MiniCPM-o's single user turn: text, PIL frames and 16 kHz audio arrays in the task's
        order (lmms-eval's chat wrapper ``Image.open``s and ``soundfile.read``s every item, so
        only file paths work there). A system turn's text leads, as in lmms-eval's wrapper."""
        content: list = []
        has_audio = False
        for message in messages:
            for part in message.get("content", []):
                kind = part.get("type")
                if kind == "text":
                    content.append(part["text"])
                elif kind == "image":
                    content.append(pil_image(part["url"]))
                elif kind == "audio":
                    content.append(audio_array(part["url"]))
                    has_audio = True
                elif kind == "video":
                    content.extend(encode_video(part["url"], self.max_num_frames))
        return content, has_audio

    def _answer(self, messages: list[dict], gen_kwargs: dict) -> str:
        content, has_audio = self._content(messages)
        temperature = float(gen_kwargs.get("temperature") or 0)
        chat_kwargs: dict[str, Any] = {
            "msgs": [{"role": "user", "content": content}],
            "tokenizer": self._tokenizer,
            "sampling": temperature > 0,
            "max_new_tokens": int(gen_kwargs.get("max_new_tokens") or self.default_max_new_tokens),
        }
        if temperature > 0:
            chat_kwargs["temperature"] = temperature
            if gen_kwargs.get("top_p"):
                chat_kwargs["top_p"] = float(gen_kwargs["top_p"])
        if has_audio and self.init_audio:  # as lmms-eval's wrappers call it
            chat_kwargs["omni_input"] = True
        response = self.model.chat(**chat_kwargs)
        if isinstance(response, tuple):
            response = response[0] if response else ""
        if isinstance(response, dict):
            response = response.get("text", response.get("response", ""))
        return str(response or "")

    def generate_until(self, requests: list) -> list[str]:
        return answer_requests(self, requests, self._answer, self.model_id)

    def generate_until_multi_round(self, requests: list) -> list[str]:
        raise NotImplementedError(f"{self.model_id} answers in one round")


class _MiniCPMO(MiniCPMOAdapter):
    model_id = "faultline_minicpm_o"


class MiniCPMOChat(_MiniCPMO, _LmmsChat):
    is_simple = False


class MiniCPMOSimple(_MiniCPMO, _LmmsSimple):
    is_simple = True
