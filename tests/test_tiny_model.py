"""``faultline tiny-model``: a tiny random checkpoint written by the installed console script and loaded
back with transformers' own Auto classes, as any user of the checkpoint would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from faultline_app.faultline_cli import main as faultline

FAULTLINE = str(Path(sys.executable).with_name("faultline"))


@pytest.mark.slow  # about 20 s on 2 busy cores: the subprocess and this test each import transformers
def test_tiny_model_writes_a_checkpoint_that_transformers_loads(tmp_path):
    out = tmp_path / "tiny-qwen-omni"
    done = subprocess.run(
        [FAULTLINE, "tiny-model", "qwen2_5_omni", str(out)], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert str(out) in done.stdout

    from transformers import AutoConfig, AutoProcessor

    config = AutoConfig.from_pretrained(out)
    assert config.model_type == "qwen2_5_omni"
    assert config.enable_audio_output is False  # thinker only
    assert config.thinker_config.text_config.num_hidden_layers == 2
    processor = AutoProcessor.from_pretrained(out)
    assert type(processor).__name__ == "Qwen2_5OmniProcessor"
    assert processor.tokenizer.convert_tokens_to_ids("<|IMAGE|>") == config.thinker_config.image_token_index
    prompt = processor.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What colour?"}]}],
        add_generation_prompt=True,
        tokenize=False,
    )
    assert prompt.endswith("<|vision_bos|><|IMAGE|><|vision_eos|>What colour?<|im_end|>\n<|im_start|>assistant\n")
    assert (out / "spk_dict.pt").is_file()  # Qwen2_5OmniForConditionalGeneration.from_pretrained needs it
    assert sum(f.stat().st_size for f in out.iterdir()) < 1_000_000  # the --help text says under 1 MB


def test_tiny_model_refuses_a_file_or_a_folder_with_files_in_it(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    assert faultline(["tiny-model", "qwen2_5_omni", str(taken)]) == 2
    assert f"OUT {taken} is not empty" in capsys.readouterr().err
    assert [p.name for p in taken.iterdir()] == ["notes.txt"]

    a_file = tmp_path / "a-file"
    a_file.write_text("mine")
    assert faultline(["tiny-model", "qwen3_omni", str(a_file)]) == 2
    assert f"OUT '{a_file}' cannot be written ({a_file} is a file, not a folder)" in capsys.readouterr().err


def test_tiny_model_names_the_variants_it_builds(capsys):
    with pytest.raises(SystemExit) as exit_status:
        faultline(["tiny-model", "qwen9_omni", "out"])
    assert exit_status.value.code == 2
    assert "choose from 'qwen2_5_omni', 'qwen3_omni'" in capsys.readouterr().err
