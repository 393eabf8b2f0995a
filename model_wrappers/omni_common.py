"""What our adapters over lmms-eval's open omni wrappers share.

lmms-eval's ``qwen2_5_omni``, ``qwen3_omni`` and ``minicpm_o`` wrappers each lose part of what
an SCEval task sends (frames after the first, audio given as an ``{"array", "sampling_rate"}``
dict) or cannot run off-hub or on CPU. The adapters keep lmms-eval's classes and replace only
the steps that go wrong; this module holds the pieces they have in common:

* one request loop for the chat and the simple path that answers each doc on its own or, at
  ``batch_size`` > 1 (Qwen), several per ``generate`` call; it hands each request's task the
  latency (and, when generation raised, ``api_failure`` with the error) through
  :mod:`faultline_eval.core.telemetry`, and logs the error with the task and doc id instead of
  stopping the run;
* conversion of every media form our tasks (and lmms-eval's audio tasks) produce into the forms
  the model code consumes: PIL images, mono float32 16 kHz arrays;
* device placement that honours ``device=cpu`` and data-parallel ranks;
* an optional per-request log of how many image/audio/video tokens reached the model
  (``FAULTLINE_MEDIA_TOKEN_LOG=<file.jsonl>``), counted from the ``input_ids`` of the model's
  first forward call, appended through the project's journal (:mod:`faultline_eval.core.store`);
  requests answered from the reply store are not in it;
* the reply store (:mod:`faultline_eval.core.store`, model arg ``store``) that lets a killed run
  resume without generating again the greedy replies it had already finished.

Nothing heavy is imported at module level: lmms-eval imports a model's module only when that
model is selected.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from faultline_eval.model_wrappers.model_args import check_model_args, flag

SAMPLE_RATE = 16_000
MEDIA_TOKEN_LOG_ENV = "FAULTLINE_MEDIA_TOKEN_LOG"
VIDEO_EXTENSIONS = (".mp4", ".avi", ".mov", ".mkv", ".webm")
_log_lock = threading.Lock()
_token_logs: dict[str, Any] = {}


def token_log(path: str):
    """The media token log at ``path``: one :class:`faultline_eval.core.store.Journal` per process, so
    threads and data-parallel ranks appending to one file never interleave partial lines."""
    from faultline_eval.core.store import Journal

    with _log_lock:
        if path not in _token_logs:
            _token_logs[path] = Journal(path)
        return _token_logs[path]


# --- media ---------------------------------------------------------------------------------------

def audio_array(audio: Any, rate: int = SAMPLE_RATE):
    """Mono float32 samples at ``rate`` from an HF audio dict, a torchcodec AudioDecoder, a
    (samples, rate) pair, a bare array (taken to be at ``rate`` already) or a file path."""
    import numpy as np

    if isinstance(audio, dict) and "array" in audio:
        samples, source_rate = audio["array"], int(audio.get("sampling_rate", rate))
    elif type(audio).__name__ == "AudioDecoder":
        decoded = audio.get_all_samples()
        samples, source_rate = decoded.data.cpu().numpy(), int(decoded.sample_rate)
    elif isinstance(audio, (tuple, list)) and len(audio) == 2:
        samples, source_rate = audio
    elif isinstance(audio, (str, os.PathLike)):
        import soundfile

        samples, source_rate = soundfile.read(os.fspath(audio), dtype="float32", always_2d=True)
        samples = samples.T  # channels first, like AudioDecoder
    else:
        samples, source_rate = audio, rate
    samples = np.asarray(samples, dtype=np.float32)
    if samples.ndim > 1:  # channels are the shorter axis
        samples = samples.mean(axis=int(np.argmin(samples.shape)))
    if int(source_rate) != rate:
        import librosa

        samples = librosa.resample(samples, orig_sr=int(source_rate), target_sr=rate)
    return np.ascontiguousarray(samples, dtype=np.float32)


def pil_image(image: Any):
    from PIL import Image

    if isinstance(image, Image.Image):
        return image.convert("RGB")
    if isinstance(image, dict) and image.get("bytes") is not None:
        import io

        return Image.open(io.BytesIO(image["bytes"])).convert("RGB")
    if isinstance(image, dict) and image.get("path"):
        image = image["path"]
    return Image.open(image).convert("RGB")


def is_audio(visual: Any) -> bool:
    return (isinstance(visual, dict) and "array" in visual) or type(visual).__name__ == "AudioDecoder"


def messages_from_visuals(context: str, visuals: list) -> list[dict]:
    """lmms-eval chat messages for a simple-path request: every item of ``doc_to_visual`` in
    order (frames, audio, videos), then the request context as text."""
    from PIL import Image

    content: list[dict] = []
    for visual in visuals:
        if visual is None:
            continue
        if isinstance(visual, Image.Image):
            content.append({"type": "image", "url": visual})
        elif is_audio(visual):
            content.append({"type": "audio", "url": visual})
        elif isinstance(visual, str) and visual.lower().endswith(VIDEO_EXTENSIONS):
            content.append({"type": "video", "url": visual})
        elif isinstance(visual, str) and visual.lower().endswith((".wav", ".flac", ".mp3", ".ogg", ".m4a")):
            content.append({"type": "audio", "url": visual})
        elif isinstance(visual, str):
            content.append({"type": "image", "url": visual})
        else:
            raise ValueError(f"unsupported media item {type(visual).__name__}")
    content.append({"type": "text", "text": context})
    return [{"role": "user", "content": content}]


def with_system_turn(messages: list[dict], system_prompt: str | None) -> list[dict]:
    """The task's messages, with ``system_prompt`` in front only when they carry no system turn
    of their own (lmms-eval's Qwen wrappers always prepend theirs, doubling ours)."""
    if not system_prompt or any(m.get("role") == "system" for m in messages):
        return messages
    return [{"role": "system", "content": [{"type": "text", "text": system_prompt}]}, *messages]


# --- placement -----------------------------------------------------------------------------------

def placement(device: str | None, device_map: str | None) -> dict:
    """Where the model goes: ``device`` (default cuda when there is one, else cpu), or the
    local rank's GPU under a multi-process launch. ``device_map=auto`` shards one process's
    model over all its GPUs."""
    import torch
    from accelerate import Accelerator

    accelerator = Accelerator()
    wanted = str(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if accelerator.num_processes > 1:
        target = torch.device(f"cuda:{accelerator.local_process_index}") if wanted.startswith("cuda") else torch.device(wanted)
        return {"device": target, "device_map": str(target), "accelerator": accelerator,
                "rank": accelerator.process_index, "world_size": accelerator.num_processes}
    target = torch.device(wanted)
    return {"device": target, "device_map": device_map if device_map == "auto" else str(target), "accelerator": None,
            "rank": 0, "world_size": 1}


def apply_placement(model_wrapper: Any, where: dict) -> None:
    model_wrapper._device = where["device"]
    model_wrapper.device_map = where["device_map"]
    model_wrapper._rank, model_wrapper._world_size = where["rank"], where["world_size"]
    if where["accelerator"] is not None:  # lmms-eval's evaluator gathers through it
        model_wrapper.accelerator = where["accelerator"]


# --- counting media tokens -----------------------------------------------------------------------

class MediaTokenCounter:
    """Counts, per request, the image/audio/video placeholder ids in the ``input_ids`` of the
    model's first forward call (the prefill), i.e. what the model itself received; one count per
    row of a batch (padding holds no placeholders)."""

    def __init__(self, module: Any, token_ids: dict[str, int]) -> None:
        self.token_ids = {name: int(i) for name, i in token_ids.items() if i is not None}
        self.rows: list[dict[str, int]] | None = None
        module.register_forward_pre_hook(self._hook, with_kwargs=True)

    def reset(self) -> None:
        self.rows = None

    def _hook(self, module: Any, args: tuple, kwargs: dict) -> None:
        if self.rows is not None:
            return
        input_ids = kwargs.get("input_ids", args[0] if args else None)
        if input_ids is None:
            return
        ids = input_ids.reshape(-1, input_ids.shape[-1])
        self.rows = [{f"n_{name}_tokens": int((row == i).sum()) for name, i in self.token_ids.items()} for row in ids]


# --- the reply store -----------------------------------------------------------------------------

def open_reply_store(name: str, pretrained: str, store: str | None):
    """The reply store of one adapter and checkpoint: ``store=<file.jsonl>``, by default
    ``$SCEVAL_CACHE/replies/<adapter>-<pretrained, sanitised>.jsonl``; ``store=none`` turns it off."""
    from faultline_eval.core.store import open_store, slug

    return open_store(store, f"{name}-{slug(pretrained)}", name, "greedy requests among them are not generated again")


def decoding(wrapper: Any, gen_kwargs: dict) -> dict:
    """The generation settings that change a reply, as the adapters read them."""
    return {"max_new_tokens": int(gen_kwargs.get("max_new_tokens") or getattr(wrapper, "default_max_new_tokens", 0)),
            "temperature": float(gen_kwargs.get("temperature") or 0),
            "do_sample": flag(gen_kwargs.get("do_sample", False), "do_sample"),
            "num_beams": int(gen_kwargs.get("num_beams") or 1)}


def store_key(wrapper: Any, name: str, doc: Any, messages: list[dict], gen_kwargs: dict) -> str | None:
    """The reply-store key of one request, or None when its reply must not be stored or restored.

    Only greedy decoding (temperature 0, ``do_sample`` off) is keyed: its reply is a function of
    the inputs, so a stored one is what a new run would generate. With sampling every run must be a
    fresh draw (repeated runs are how sampling variance is measured), so such requests are always
    generated. Docs without ``dataset`` and ``row_id`` (lmms-eval's own tasks) are not keyed either.
    """
    from faultline_eval.core.identity import fingerprint_of
    from faultline_eval.core.store import request_key

    settings = decoding(wrapper, gen_kwargs)
    if settings["temperature"] > 0 or settings["do_sample"]:
        return None
    if not isinstance(doc, dict) or doc.get("row_id") is None or doc.get("dataset") is None:
        return None
    text = "\n".join(f"{message.get('role')}: {part.get('text', '')}"
                     for message in with_system_turn(messages, getattr(wrapper, "system_prompt", None))
                     for part in message.get("content", []) if part.get("type") == "text")
    return request_key(name, getattr(wrapper, "pretrained", None), fingerprint_of(doc["dataset"]), doc["row_id"],
                       "simple" if wrapper.is_simple else "chat", text, settings["max_new_tokens"],
                       settings["temperature"], settings["do_sample"], settings["num_beams"])


# --- the request loop ----------------------------------------------------------------------------

def _row_id(doc: Any) -> str | None:
    return doc.get("row_id") if isinstance(doc, dict) else None


@dataclass
class _Pending:
    """One request on its way to the model: where its reply goes and what telemetry it gets."""

    index: int
    context: str
    gen_kwargs: Any
    doc: Any
    doc_id: Any
    task: str
    messages: list[dict]
    media: dict[str, int]
    key: str | None
    prepared_s: float


def answer_requests(wrapper: Any, requests: list, answer: Callable[[list[dict], dict], str], name: str,
                    answer_batch: Callable[[list[list[dict]], dict], list[str]] | None = None) -> list[str]:
    """Answer lmms-eval ``generate_until`` requests, one doc at a time or, with ``answer_batch``
    and ``wrapper.batch_size_per_gpu`` > 1, several per model call.

    ``answer(messages, gen_kwargs)`` gets lmms-eval chat messages (``doc_to_messages`` on the
    chat path; every ``doc_to_visual`` item plus the context on the simple path). A failure is
    logged with its doc and recorded as ``api_failure`` for that trial; the run goes on.

    Batching: requests wait in one queue per distinct ``gen_kwargs`` (requests with different
    settings are never mixed) until ``batch_size`` of them are ready; the queues left at the end
    go as smaller batches. Replies come back in request order. If a batched call raises, its
    requests are answered again one at a time, so only the bad doc gets ``api_failure``. A batched
    request's latency is its own preparation time plus the wall time of its batch's call.

    With a reply store (``wrapper.reply_store``) each finished greedy reply is appended to it as
    soon as its call returns, and a request already in it is answered from it without reaching the
    model (telemetry: the stored latency, detail ``restored from the reply store``; no line in the
    media token log). Failed requests are not stored, so a resumed run tries them again.
    """
    from loguru import logger
    from tqdm import tqdm

    from faultline_eval.core import telemetry
    from faultline_eval.core.store import restored_call

    log_path = os.environ.get(MEDIA_TOKEN_LOG_ENV)
    counter: MediaTokenCounter | None = getattr(wrapper, "media_token_counter", None)
    store = getattr(wrapper, "reply_store", None)
    batch_size = max(1, int(getattr(wrapper, "batch_size_per_gpu", 1) or 1)) if answer_batch else 1
    replies: list[str] = [""] * len(requests)
    queues: dict[str, list[_Pending]] = {}
    warned_sampling = False

    def finish(job: _Pending, reply: str, failure: str | None, detail: str, latency: float,
               tokens: dict[str, int]) -> None:
        if _row_id(job.doc) is not None:
            telemetry.record(_row_id(job.doc), telemetry.Call(latency_s=latency, failure=failure, detail=detail))
        if job.key is not None and failure is None:  # stored at once: a kill loses at most the call in flight
            store.put(job.key, reply=reply, failure=failure, latency_s=latency, row_id=_row_id(job.doc), task=job.task)
        logger.debug(f"{name}: {job.task} doc {job.doc_id}: media items {job.media}, tokens {tokens}")
        if log_path:
            line = {"model": name, "task": job.task, "doc_id": job.doc_id, "row_id": _row_id(job.doc),
                    **{f"n_{k}s": v for k, v in job.media.items()}, **tokens, "failure": failure}
            token_log(log_path).append(line)
        wrapper.cache_hook.add_partial("generate_until", (job.context, job.gen_kwargs), reply)
        replies[job.index] = reply

    def fail(job: _Pending, exc: Exception, latency: float) -> None:
        detail = f"generation failed: {type(exc).__name__}: {str(exc)[:300]}"
        logger.opt(exception=exc).error(f"{name}: {job.task} doc {job.doc_id} ({_row_id(job.doc)}): {detail}")
        job.key = None
        finish(job, "", "api_failure", detail, latency, {})

    def run(jobs: list[_Pending]) -> None:
        gen_kwargs = dict(jobs[0].gen_kwargs or {})
        if counter is not None:
            counter.reset()
        start = time.perf_counter()
        try:
            if len(jobs) == 1:
                answered = [answer(jobs[0].messages, gen_kwargs)]
            else:
                answered = answer_batch([job.messages for job in jobs], gen_kwargs)
        except Exception as exc:  # one bad doc (OOM, corrupt media) must not end a long run
            if len(jobs) > 1:
                logger.warning(f"{name}: a batch of {len(jobs)} failed ({type(exc).__name__}: {str(exc)[:200]}); "
                               "answering its requests one at a time")
                for job in jobs:
                    run([job])
                return
            fail(jobs[0], exc, jobs[0].prepared_s + time.perf_counter() - start)
            return
        elapsed = time.perf_counter() - start
        rows = (counter.rows if counter is not None else None) or []
        for position, (job, reply) in enumerate(zip(jobs, answered)):
            tokens = rows[position] if position < len(rows) else {}
            finish(job, reply, None, "", job.prepared_s + elapsed, tokens)

    for index, request in enumerate(tqdm(requests, disable=wrapper.rank != 0, desc=name)):
        if wrapper.is_simple:
            context, gen_kwargs, doc_to_visual, doc_id, task, split = request.args
        else:
            context, doc_to_messages, gen_kwargs, doc_id, task, split = request.args
        doc = wrapper.task_dict[task][split][doc_id]
        start = time.perf_counter()
        job = _Pending(index, context, gen_kwargs, doc, doc_id, task, [], {}, None, 0.0)
        try:
            if wrapper.is_simple:
                job.messages = messages_from_visuals(context, list(doc_to_visual(doc) or []))
            else:
                job.messages = doc_to_messages(doc)
            job.media = {kind: sum(p.get("type") == kind for m in job.messages for p in m.get("content", []))
                         for kind in ("image", "audio", "video")}
            done = None
            if store is not None:
                job.key = store_key(wrapper, name, doc, job.messages, dict(gen_kwargs or {}))
                done = store.get(job.key) if job.key is not None else None
                if job.key is None and not warned_sampling and wrapper.rank == 0:
                    warned_sampling = True
                    logger.info(f"{name}: {task} requests sample or carry no row id; their replies are neither "
                                "restored from nor written to the reply store")
        except Exception as exc:
            fail(job, exc, time.perf_counter() - start)
            continue
        if done is not None:  # finished in an earlier run: the model is not asked again
            if _row_id(doc) is not None:
                telemetry.record(_row_id(doc), restored_call(done))
            logger.debug(f"{name}: {task} doc {doc_id}: restored from the reply store")
            wrapper.cache_hook.add_partial("generate_until", (context, gen_kwargs), done["reply"])
            replies[index] = done["reply"]
            continue
        job.prepared_s = time.perf_counter() - start
        queue = queues.setdefault(json.dumps(gen_kwargs, sort_keys=True, default=repr), [])
        queue.append(job)
        if len(queue) == batch_size:
            run(queue)
            queue.clear()
    for queue in queues.values():
        if queue:
            run(queue)
    return replies


def _init_lmms(wrapper: Any) -> None:
    """The lmms base initialiser only: lmms-eval's Qwen/MiniCPM ``__init__`` hard-code the hub
    processor id, CUDA placement and an assert on extra arguments."""
    from lmms_eval.api.model import lmms

    lmms.__init__(wrapper)


def _dtype(dtype: str):
    import torch

    if dtype == "auto":
        return "auto"
    return getattr(torch, str(dtype))


# --- Qwen-Omni -----------------------------------------------------------------------------------

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

    def __init__(self, pretrained: str, device: str | None = None, device_map: str | None = None,
                 batch_size: int | str = 1, dtype: str = "auto", attn_implementation: str | None = None,
                 use_cache: bool | str = True, system_prompt: str | None = None,
                 max_new_tokens: int | str = 1024, store: str | None = None, **kwargs: Any) -> None:
        import transformers

        _init_lmms(self)
        check_model_args(self.model_id, type(self), kwargs)
        where = placement(device, device_map)
        apply_placement(self, where)
        model_class = getattr(transformers, self.model_class_name)
        processor_class = getattr(transformers, self.processor_class_name)
        if getattr(model_class, "_tp_plan", []) is None:  # as lmms-eval does, for device_map loading
            model_class._tp_plan = []
        load: dict[str, Any] = {"dtype": _dtype(dtype), "device_map": where["device_map"]}
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
        self.media_token_counter = MediaTokenCounter(self._model.thinker, {
            kind: getattr(thinker_config, f"{kind}_token_id", None) for kind in ("image", "audio", "video")})
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
                    parts.append({"type": "image", "image": pil_image(url) if isinstance(url, dict) else url,
                                  **self.image_kwargs})
                elif kind == "audio":
                    parts.append({"type": "audio", "audio": audio_array(part["url"])})
                elif kind == "video":
                    parts.append({"type": "video", "video": part["url"], **self.video_kwargs})
            converted.append({"role": message["role"], "content": parts})
        return converted

    def _generation_kwargs(self, gen_kwargs: dict) -> dict:
        temperature = float(gen_kwargs.get("temperature") or 0)
        kwargs = {"max_new_tokens": int(gen_kwargs.get("max_new_tokens") or self.default_max_new_tokens),
                  "do_sample": temperature > 0, "num_beams": int(gen_kwargs.get("num_beams") or 1),
                  "use_cache": self.use_cache, "eos_token_id": self._tokenizer.eos_token_id,
                  "pad_token_id": self._tokenizer.pad_token_id}
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
            for name, found in zip(media, process_mm_info(hf_messages, use_audio_in_video=False,
                                                          image_patch_size=patch)):
                media[name].extend(found or [])
        inputs = self.processor(text=texts, **{name: found or None for name, found in media.items()},
                                return_tensors="pt", padding=True)
        thinker = self._model.thinker
        inputs = inputs.to(thinker.device).to(thinker.dtype)  # never a hard-coded "cuda"
        # The thinker directly: the full model's generate() ignores max_new_tokens in favour of
        # thinker_max_new_tokens and, in transformers 5, rejects lmms-eval's return_audio=False.
        output = thinker.generate(**inputs, **self._generation_kwargs(gen_kwargs))
        sequences = output.sequences if hasattr(output, "sequences") else output
        new_tokens = sequences[:, inputs["input_ids"].shape[1]:]
        return [reply.strip() for reply in self.processor.batch_decode(
            new_tokens, skip_special_tokens=True, clean_up_tokenization_spaces=False)]

    def generate_until(self, requests: list) -> list[str]:
        return answer_requests(self, requests, self._answer, self.model_id, self._answer_batch)

    def generate_until_multi_round(self, requests: list) -> list[str]:
        raise NotImplementedError(f"{self.model_id} answers in one round")


# --- MiniCPM-o -----------------------------------------------------------------------------------

class MiniCPMOAdapter:
    """Loading and content building for lmms-eval's MiniCPM-o wrapper classes."""

    model_id = ""

    def __init__(self, pretrained: str = "openbmb/MiniCPM-o-2_6", device: str | None = None,
                 device_map: str | None = None, batch_size: int | str = 1, dtype: str = "auto",
                 attn_implementation: str = "sdpa", init_vision: bool | str = True, init_audio: bool | str = True,
                 init_tts: bool | str = False, max_num_frames: int | str = 64, max_new_tokens: int | str = 512,
                 store: str | None = None, **kwargs: Any) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        _init_lmms(self)
        check_model_args(self.model_id, type(self), kwargs)
        where = placement(device, device_map)
        apply_placement(self, where)
        if dtype == "auto":  # the checkpoint's bf16 on GPUs; CPUs run float32 far better
            dtype = "float32" if where["device"].type == "cpu" else "bfloat16"
        self.init_vision, self.init_audio = flag(init_vision, "init_vision"), flag(init_audio, "init_audio")
        self.init_tts = flag(init_tts, "init_tts")
        self._model = AutoModel.from_pretrained(
            pretrained, trust_remote_code=True, attn_implementation=attn_implementation,
            torch_dtype=getattr(torch, dtype), device_map=where["device_map"],
            init_vision=self.init_vision, init_audio=self.init_audio, init_tts=self.init_tts).eval()
        self._tokenizer = AutoTokenizer.from_pretrained(pretrained, trust_remote_code=True)
        if self.init_tts and hasattr(self._model, "init_tts"):
            self._model.init_tts()
            self._model.tts.float()
        self._config = self._model.config
        if int(batch_size) > 1:
            from loguru import logger

            logger.warning(f"{self.model_id}: batch_size={batch_size} ignored: MiniCPM-o's chat() answers one "
                           "conversation per call here (its batched form is not proven equal); requests go one at a time")
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
        from lmms_eval.models.simple.minicpm_o import encode_video

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
            "msgs": [{"role": "user", "content": content}], "tokenizer": self._tokenizer,
            "sampling": temperature > 0,
            "max_new_tokens": int(gen_kwargs.get("max_new_tokens") or self.default_max_new_tokens)}
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
