"""A tiny, randomly initialised Qwen3-Omni (MoE) checkpoint built offline (no hub downloads).

The real transformers ``Qwen3OmniMoe*`` classes with a thinker only (audio and vision encoders
of one or two layers, a two-layer text model of four experts), no talker or code2wav
(``enable_audio_output=False``), and the same byte-level BPE tokenizer and chat template as
:mod:`tiny_qwen_omni`. Its answers are noise; it exists so that tests can run real model
loading, media preprocessing and generation for ``faultline_qwen3_omni`` on CPU in seconds.

By hand:  python tests/tiny_qwen3_omni.py /tmp/tiny-qwen3-omni
then      lmms-eval --model faultline_qwen3_omni --model_args pretrained=/tmp/tiny-qwen3-omni,device=cpu \
              --tasks sceval_clean --limit 2 --gen_kwargs max_new_tokens=8
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from tiny_qwen_omni import CHAT_TEMPLATE, MERGE_SIZE, NUM_MEL_BINS, TOKEN_ID, build_tokenizer

PATCH_SIZE = 16  # Qwen3-Omni's vision patch (Qwen2.5-Omni's is 14)


def build_processor(tokenizer):
    from transformers import (
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
        Qwen3OmniMoeProcessor,
        WhisperFeatureExtractor,
    )

    return Qwen3OmniMoeProcessor(
        image_processor=Qwen2VLImageProcessor(merge_size=MERGE_SIZE, patch_size=PATCH_SIZE),
        video_processor=Qwen2VLVideoProcessor(merge_size=MERGE_SIZE, patch_size=PATCH_SIZE),
        feature_extractor=WhisperFeatureExtractor(feature_size=NUM_MEL_BINS),
        tokenizer=tokenizer,
        chat_template=CHAT_TEMPLATE,
    )


def build_model(vocab_size: int):
    import torch
    from transformers import Qwen3OmniMoeConfig, Qwen3OmniMoeForConditionalGeneration, Qwen3OmniMoeThinkerConfig

    hidden = 32
    thinker = Qwen3OmniMoeThinkerConfig(
        audio_config={
            "d_model": hidden,
            "encoder_layers": 1,
            "encoder_attention_heads": 2,
            "encoder_ffn_dim": 32,
            "num_mel_bins": NUM_MEL_BINS,
            "max_source_positions": 1500,
            "n_window": 50,
            "n_window_infer": 400,
            "conv_chunksize": 100,
            "downsample_hidden_size": 8,
            "output_dim": hidden,
        },
        vision_config={
            "depth": 2,
            "hidden_size": hidden,
            "intermediate_size": 32,
            "num_heads": 2,
            "patch_size": PATCH_SIZE,
            "spatial_merge_size": MERGE_SIZE,
            "temporal_patch_size": 2,
            "out_hidden_size": hidden,
            "num_position_embeddings": 576,
            "deepstack_visual_indexes": [0],
        },
        text_config={
            "vocab_size": vocab_size,
            "hidden_size": hidden,
            "intermediate_size": 37,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 8,
            "max_position_embeddings": 4096,
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
            "pad_token_id": TOKEN_ID["<|endoftext|>"],
            "eos_token_id": TOKEN_ID["<|im_end|>"],
        },
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


def build(folder: str | Path) -> Path:
    """Write the tiny checkpoint (model, processor, tokenizer) into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    build_processor(tokenizer).save_pretrained(folder)
    build_model(len(tokenizer)).save_pretrained(folder)
    return folder


if __name__ == "__main__":
    print(build(sys.argv[1] if len(sys.argv) > 1 else "tiny-qwen3-omni"))
