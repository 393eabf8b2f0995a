"""Tiny, randomly initialised Qwen2.5-Omni and Qwen3-Omni checkpoints, built offline (no hub downloads).

Each is the real transformers model, processor and tokenizer classes with a few small layers and
random weights: a thinker (text, vision and audio encoders of one or two layers, a two-layer text
model; Qwen3-Omni's with four experts), no talker (``enable_audio_output=False``), and a byte-level
BPE tokenizer trained here on a few sentences. Their answers are noise; they exist so that tests,
benchmarks and the tutorials can run real model loading, media preprocessing, generation and the
mechanistic probes of ``faultline_qwen2_5_omni`` / ``faultline_qwen3_omni`` on a CPU in seconds.
Building one takes about 10 s on a CPU (mostly importing transformers) and writes under 1 MB.

    faultline tiny-model qwen2_5_omni tiny-qwen-omni
    lmms-eval --model faultline_qwen2_5_omni --model_args pretrained=tiny-qwen-omni,device=cpu \
        --tasks sceval_clean --limit 2 --gen_kwargs max_new_tokens=8

From Python: ``BUILDERS["qwen3_omni"](folder)``. torch, tokenizers and transformers are imported
inside the functions, so importing this module (the ``faultline`` CLI does) stays cheap.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

#: Special tokens in id order (ids 0..); the thinker config below uses these ids.
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|AUDIO|>",
    "<|IMAGE|>",
    "<|VIDEO|>",
    "<|audio_bos|>",
    "<|audio_eos|>",
    "<|vision_bos|>",
    "<|vision_eos|>",
)
TOKEN_ID = {token: index for index, token in enumerate(SPECIAL_TOKENS)}
NUM_MEL_BINS = 128  # what the real checkpoint's WhisperFeatureExtractor produces
MERGE_SIZE = 2

# The structure of Qwen2.5-Omni's own template: media placeholders wrapped in bos/eos markers,
# which the processor then expands to one token per image patch group / audio frame.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or 'image' in part %}<|vision_bos|><|IMAGE|><|vision_eos|>"
    "{% elif part['type'] == 'video' or 'video' in part %}<|vision_bos|><|VIDEO|><|vision_eos|>"
    "{% elif part['type'] == 'audio' or 'audio' in part %}<|audio_bos|><|AUDIO|><|audio_eos|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

CORPUS = [
    "system user assistant You are a careful assistant. Answer with a JSON object.",
    "Question: Count the beeps in the audio clip. What colour is the disc in the frame?",
    "Options: A. red B. green C. blue D. cyan E. magenta F. yellow",
    '{"answer": "A", "confidence": "high", "reasoning": "the higher tone starts at frame 2"}',
    "The frames are numbered from 1 in the order shown. Which shape is largest, smallest?",
] * 20


def build_tokenizer():
    """A byte-level BPE tokenizer trained on :data:`CORPUS`; its special tokens keep the ids of :data:`TOKEN_ID`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import Qwen2TokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(CORPUS, trainer=trainer)
    vocab = backend.get_vocab()
    assert all(vocab[t] == i for t, i in TOKEN_ID.items()), "special tokens must keep the config's ids"
    merges = [
        tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in json.loads(backend.to_str())["model"]["merges"]
    ]
    tokenizer = Qwen2TokenizerFast(
        vocab=vocab,
        merges=merges,
        unk_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        extra_special_tokens={  # the processor reads these named tokens off the tokenizer
            "image_token": "<|IMAGE|>",
            "audio_token": "<|AUDIO|>",
            "video_token": "<|VIDEO|>",
            "vision_bos_token": "<|vision_bos|>",
            "vision_eos_token": "<|vision_eos|>",
            "audio_bos_token": "<|audio_bos|>",
            "audio_eos_token": "<|audio_eos|>",
        },
    )
    tokenizer.add_special_tokens(
        {
            "additional_special_tokens": [
                t for t in SPECIAL_TOKENS if t not in (tokenizer.eos_token, tokenizer.pad_token)
            ]
        },
        replace_extra_special_tokens=False,
    )
    for token, index in TOKEN_ID.items():
        assert tokenizer.convert_tokens_to_ids(token) == index, token
    return tokenizer


HIDDEN = 32  # the width of every encoder and of the text model


def encoder_and_text_configs(vocab_size: int, *, audio: dict, vision: dict, text: dict) -> dict[str, dict]:
    """The thinker's ``audio_config``, ``vision_config`` and ``text_config``: the sizes both families share,
    updated with each family's own keys."""
    return {
        "audio_config": {
            "d_model": HIDDEN,
            "encoder_layers": 1,
            "encoder_attention_heads": 2,
            "encoder_ffn_dim": 32,
            "num_mel_bins": NUM_MEL_BINS,
            "max_source_positions": 1500,
            "output_dim": HIDDEN,
            **audio,
        },
        "vision_config": {
            "hidden_size": HIDDEN,
            "intermediate_size": 32,
            "num_heads": 2,
            "spatial_merge_size": MERGE_SIZE,
            "temporal_patch_size": 2,
            "out_hidden_size": HIDDEN,
            **vision,
        },
        "text_config": {
            "vocab_size": vocab_size,
            "hidden_size": HIDDEN,
            "intermediate_size": 37,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 4096,
            "pad_token_id": TOKEN_ID["<|endoftext|>"],
            "eos_token_id": TOKEN_ID["<|im_end|>"],
            **text,
        },
    }


def build_processor(processor_class, tokenizer, patch_size: int):
    """The family's processor over the shared tokenizer and chat template; ``patch_size`` is its vision patch."""
    from transformers import Qwen2VLImageProcessor, Qwen2VLVideoProcessor, WhisperFeatureExtractor

    return processor_class(
        image_processor=Qwen2VLImageProcessor(merge_size=MERGE_SIZE, patch_size=patch_size),
        video_processor=Qwen2VLVideoProcessor(merge_size=MERGE_SIZE, patch_size=patch_size),
        feature_extractor=WhisperFeatureExtractor(feature_size=NUM_MEL_BINS),
        tokenizer=tokenizer,
        chat_template=CHAT_TEMPLATE,
    )


# --- Qwen2.5-Omni ---

QWEN2_5_PATCH_SIZE = 14  # its vision patch


#: What vLLM's CPU backend needs of the tiny Qwen2.5-Omni beyond the defaults above (``vllm serve`` of
#: ``build_qwen2_5_omni(folder, for_vllm=True)``): attention heads of at least 32 dimensions in the text
#: model and both encoders, a ``silu`` vision MLP, and an output head of its own (untied embeddings).
VLLM_SIZES = {
    "audio": {"d_model": 64, "encoder_ffn_dim": 64, "output_dim": 128},
    "vision": {"hidden_size": 64, "intermediate_size": 64, "out_hidden_size": 128, "hidden_act": "silu"},
    # 128 / 4 heads = 32 per head; mrope sections add up to 32 / 2
    "text": {
        "hidden_size": 128,
        "intermediate_size": 128,
        "tie_word_embeddings": False,
        "max_position_embeddings": 16384,  # room for a request's frames and audio in vLLM's max_model_len
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 6, 6]},
    },
}


def build_qwen2_5_omni_model(vocab_size: int, *, for_vllm: bool = False):
    import torch
    from transformers import Qwen2_5OmniConfig, Qwen2_5OmniForConditionalGeneration, Qwen2_5OmniThinkerConfig

    sizes = VLLM_SIZES if for_vllm else {"audio": {}, "vision": {}, "text": {}}
    thinker = Qwen2_5OmniThinkerConfig(
        **encoder_and_text_configs(
            vocab_size,
            audio={"n_window": 100, **sizes["audio"]},
            vision={
                "depth": 1,
                "patch_size": QWEN2_5_PATCH_SIZE,
                "fullatt_block_indexes": [0],
                "window_size": 112,
                "hidden_act": "quick_gelu",
                **sizes["vision"],
            },
            # mrope sections must add up to head_dim / 2 (32 / 4 heads / 2 = 4)
            text={
                "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 2]},
                **sizes["text"],
            },
        ),
        audio_token_index=TOKEN_ID["<|AUDIO|>"],
        image_token_index=TOKEN_ID["<|IMAGE|>"],
        video_token_index=TOKEN_ID["<|VIDEO|>"],
        audio_start_token_id=TOKEN_ID["<|audio_bos|>"],
        audio_end_token_id=TOKEN_ID["<|audio_eos|>"],
        vision_start_token_id=TOKEN_ID["<|vision_bos|>"],
        vision_end_token_id=TOKEN_ID["<|vision_eos|>"],
        user_token_id=TOKEN_ID["<|im_start|>"],
        position_id_per_seconds=25,
        seconds_per_chunk=2,
    )
    torch.manual_seed(0)
    config = Qwen2_5OmniConfig(thinker_config=thinker.to_dict(), enable_audio_output=False)
    return Qwen2_5OmniForConditionalGeneration(config).eval()


def build_qwen2_5_omni(folder: str | Path, *, for_vllm: bool = False) -> Path:
    """Write the tiny Qwen2.5-Omni checkpoint (model, processor, tokenizer, speakers) into ``folder``;
    ``for_vllm``: with the sizes vLLM's CPU backend serves (:data:`VLLM_SIZES`)."""
    import torch
    from transformers import Qwen2_5OmniProcessor

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    build_processor(Qwen2_5OmniProcessor, tokenizer, QWEN2_5_PATCH_SIZE).save_pretrained(folder)
    build_qwen2_5_omni_model(len(tokenizer), for_vllm=for_vllm).save_pretrained(folder)
    # Qwen2_5OmniForConditionalGeneration.from_pretrained insists on a speaker table.
    torch.save({"Chelsie": {"bos_token": torch.tensor(0)}}, folder / "spk_dict.pt")
    return folder


# --- Qwen3-Omni (MoE thinker): the same tokenizer and chat template ---

QWEN3_PATCH_SIZE = 16  # Qwen3-Omni's vision patch (Qwen2.5-Omni's is 14)


def build_qwen3_omni_model(vocab_size: int):
    import torch
    from transformers import Qwen3OmniMoeConfig, Qwen3OmniMoeForConditionalGeneration, Qwen3OmniMoeThinkerConfig

    thinker = Qwen3OmniMoeThinkerConfig(
        **encoder_and_text_configs(
            vocab_size,
            audio={"n_window": 50, "n_window_infer": 400, "conv_chunksize": 100, "downsample_hidden_size": 8},
            vision={
                "depth": 2,
                "patch_size": QWEN3_PATCH_SIZE,
                "num_position_embeddings": 576,
                "deepstack_visual_indexes": [0],
            },
            text={
                "head_dim": 8,
                "num_experts": 4,
                "num_experts_per_tok": 2,
                "moe_intermediate_size": 16,
                # mrope sections must add up to head_dim / 2 (8 / 2 = 4)
                "rope_parameters": {
                    "rope_type": "default",
                    "rope_theta": 10000.0,
                    "mrope_section": [1, 1, 2],
                    "interleaved": True,
                },
            },
        ),
        audio_token_id=TOKEN_ID["<|AUDIO|>"],
        image_token_id=TOKEN_ID["<|IMAGE|>"],
        video_token_id=TOKEN_ID["<|VIDEO|>"],
        audio_start_token_id=TOKEN_ID["<|audio_bos|>"],
        vision_start_token_id=TOKEN_ID["<|vision_bos|>"],
        user_token_id=TOKEN_ID["<|im_start|>"],
        position_id_per_seconds=13,
    )
    torch.manual_seed(0)
    config = Qwen3OmniMoeConfig(
        thinker_config=thinker.to_dict(),
        enable_audio_output=False,
        im_start_token_id=TOKEN_ID["<|im_start|>"],
        im_end_token_id=TOKEN_ID["<|im_end|>"],
    )
    return Qwen3OmniMoeForConditionalGeneration(config).eval()


def build_qwen3_omni(folder: str | Path) -> Path:
    """Write the tiny Qwen3-Omni checkpoint (model, processor, tokenizer) into ``folder``."""
    from transformers import Qwen3OmniMoeProcessor

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    build_processor(Qwen3OmniMoeProcessor, tokenizer, QWEN3_PATCH_SIZE).save_pretrained(folder)
    build_qwen3_omni_model(len(tokenizer)).save_pretrained(folder)
    return folder


#: The checkpoint builders by model variant (our lmms-eval model ``faultline_<variant>`` loads the result).
BUILDERS: dict[str, Callable[[str | Path], Path]] = {"qwen2_5_omni": build_qwen2_5_omni, "qwen3_omni": build_qwen3_omni}
