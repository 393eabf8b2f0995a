"""Loading and generation for lmms-eval's Qwen2.5-Omni / Qwen3-Omni wrapper classes.

lmms-eval's Qwen-Omni wrappers lose part of what an SCEval task sends (frames after the first on
the simple path, audio given as an ``{"array", "sampling_rate"}`` dict), load the processor from
the hub whatever ``pretrained`` says, and move inputs to ``"cuda"``. :class:`QwenOmniAdapter`
keeps lmms-eval's classes and replaces only the steps that go wrong; its requests go through the
one request lifecycle (:mod:`.local_requests`), batched at ``batch_size`` > 1.

Nothing heavy is imported at module level: lmms-eval imports a model's module only when that
model is selected.
"""

from __future__ import annotations

from typing import Any

from faultline_eval.model_wrappers.chat_messages import with_system_turn
from faultline_eval.model_wrappers.device_placement import torch_dtype
from faultline_eval.model_wrappers.lmms_base import init_local_model
from faultline_eval.model_wrappers.local_reply_store import open_reply_store
from faultline_eval.model_wrappers.local_requests import answer_requests
from faultline_eval.model_wrappers.media_conversion import audio_array, pil_image
from faultline_eval.model_wrappers.media_token_log import MediaTokenCounter
from faultline_eval.model_wrappers.model_args import flag


class QwenOmniAdapter:
    """Loading and generation for lmms-eval's Qwen2.5-Omni / Qwen3-Omni wrapper classes.

    Put first in the bases of a subclass of lmms-eval's class, with ``model_class_name`` and
    ``processor_class_name`` naming the transformers classes.
    """

    model_class_name = ""
    processor_class_name = ""
    model_id = ""
    # The per-media budget of lmms-eval's chat omni wrappers (_chat_base), for both paths.
    image_kwargs = {"max_pixels": 512 * 512}
    video_kwargs = {"fps": 2, "max_frames": 16, "max_pixels": 384 * 384}

    def __init__(
        self,
        pretrained: str,
        device: str | None = None,
        device_map: str | None = None,
        batch_size: int | str = 1,
        dtype: str = "auto",
        attn_implementation: str | None = None,
        use_cache: bool | str = True,
        system_prompt: str | None = None,
        max_new_tokens: int | str = 1024,
        store: str | None = None,
        **kwargs: Any,
    ) -> None:
        import transformers

        where = init_local_model(self, device, device_map, kwargs)
        model_class = getattr(transformers, self.model_class_name)
        processor_class = getattr(transformers, self.processor_class_name)
        if getattr(model_class, "_tp_plan", []) is None:  # as lmms-eval does, for device_map loading
            model_class._tp_plan = []
        load: dict[str, Any] = {"dtype": torch_dtype(dtype), "device_map": where.device_map}
        if attn_implementation:
            load["attn_implementation"] = attn_implementation
        # Text answers only: without the talker the checkpoint's speech weights are not built.
        self._model = model_class.from_pretrained(pretrained, enable_audio_output=False, **load).eval()
        if hasattr(self._model, "disable_talker"):
            self._model.disable_talker()
        self.processor = processor_class.from_pretrained(pretrained)  # not the 7B hub id
        self._tokenizer = self.processor.tokenizer
        self._config = self._model.config
        self.batch_size_per_gpu = int(batch_size)
        self._tokenizer.padding_side = "left"  # batched prompts end together, where generation starts
        self.use_cache = flag(use_cache, "use_cache")
        self.system_prompt = system_prompt or None
        self.default_max_new_tokens = int(max_new_tokens)
        self.max_num_frames = self.video_kwargs["max_frames"]
        thinker_config = self._config.thinker_config
        self.media_token_counter = MediaTokenCounter(
            self._model.thinker,
            {kind: getattr(thinker_config, f"{kind}_token_id", None) for kind in ("image", "audio", "video")},
        )
        self.pretrained = str(pretrained)
        self.reply_store = open_reply_store(self.model_id, self.pretrained, store)

    def _hf_messages(self, messages: list[dict]) -> list[dict]:
        """lmms-eval chat messages -> the message format qwen_omni_utils reads, with audio as
        16 kHz mono arrays (it takes an ndarray or a path, not an HF audio dict)."""
        converted = []
        for message in with_system_turn(messages, self.system_prompt):
            parts = []
            for part in message.get("content", []):
                kind = part.get("type")
                if kind == "text":
                    parts.append({"type": "text", "text": part["text"]})
                elif kind == "image":
                    url = part["url"]
                    parts.append(
                        {
                            "type": "image",
                            "image": pil_image(url) if isinstance(url, dict) else url,
                            **self.image_kwargs,
                        }
                    )
                elif kind == "audio":
                    parts.append({"type": "audio", "audio": audio_array(part["url"])})
                elif kind == "video":
                    parts.append({"type": "video", "video": part["url"], **self.video_kwargs})
            converted.append({"role": message["role"], "content": parts})
        return converted

    def _generation_kwargs(self, gen_kwargs: dict) -> dict:
        temperature = float(gen_kwargs.get("temperature") or 0)
        kwargs = {
            "max_new_tokens": int(gen_kwargs.get("max_new_tokens") or self.default_max_new_tokens),
            "do_sample": temperature > 0,
            "num_beams": int(gen_kwargs.get("num_beams") or 1),
            "use_cache": self.use_cache,
            "eos_token_id": self._tokenizer.eos_token_id,
            "pad_token_id": self._tokenizer.pad_token_id,
        }
        if temperature > 0:
            kwargs["temperature"] = temperature
            if gen_kwargs.get("top_p") is not None:
                kwargs["top_p"] = float(gen_kwargs["top_p"])
        return kwargs

    def _answer(self, messages: list[dict], gen_kwargs: dict) -> str:
        return self._answer_batch([messages], gen_kwargs)[0]

    def _answer_batch(self, conversations: list[list[dict]], gen_kwargs: dict) -> list[str]:
        """One ``generate`` call for several conversations sharing ``gen_kwargs``. Prompts are
        padded on the left (the tokenizer's padding side is set so at load), so every row's new
        tokens start at the same column; media lists are concatenated in prompt order, which is
        how the processor pairs them with their placeholders."""
        from qwen_omni_utils import process_mm_info

        patch = getattr(self.processor.image_processor, "patch_size", 14)
        texts, media = [], {"audio": [], "images": [], "videos": []}
        for messages in conversations:
            hf_messages = self._hf_messages(messages)
            texts.append(self.processor.apply_chat_template(hf_messages, add_generation_prompt=True, tokenize=False))
            for name, found in zip(
                media, process_mm_info(hf_messages, use_audio_in_video=False, image_patch_size=patch)
            ):
                media[name].extend(found or [])
        inputs = self.processor(
            text=texts, **{name: found or None for name, found in media.items()}, return_tensors="pt", padding=True
        )
        thinker = self._model.thinker
        inputs = inputs.to(thinker.device).to(thinker.dtype)  # never a hard-coded "cuda"
        # The thinker directly: the full model's generate() ignores max_new_tokens in favour of
        # thinker_max_new_tokens and, in transformers 5, rejects lmms-eval's return_audio=False.
        output = thinker.generate(**inputs, **self._generation_kwargs(gen_kwargs))
        sequences = output.sequences if hasattr(output, "sequences") else output
        new_tokens = sequences[:, inputs["input_ids"].shape[1] :]
        return [
            reply.strip()
            for reply in self.processor.batch_decode(
                new_tokens, skip_special_tokens=True, clean_up_tokenization_spaces=False
            )
        ]

    def generate_until(self, requests: list) -> list[str]:
        return answer_requests(self, requests, self._answer, self.model_id, self._answer_batch)

    def generate_until_multi_round(self, requests: list) -> list[str]:
        raise NotImplementedError(f"{self.model_id} answers in one round")
