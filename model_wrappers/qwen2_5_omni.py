"""``faultline_qwen2_5_omni``: lmms-eval's Qwen2.5-Omni wrappers, made to see a whole SCEval trial.

What the adapter changes (see :class:`.qwen_omni_adapter.QwenOmniAdapter`):

* processor and tokenizer come from ``pretrained`` (lmms-eval loads ``Qwen/Qwen2.5-Omni-7B``
  whatever ``pretrained`` says), so local and fine-tuned checkpoints work offline;
* ``device`` is honoured, ``cpu`` included (lmms-eval moves inputs to ``"cuda"``);
* the audio dict becomes the 16 kHz array qwen_omni_utils reads (it wants an ndarray or a path);
* the simple path sends every frame and the audio (lmms-eval's sends only the first item);
* the task's system turn is kept and no second one is added;
* a failing request is recorded (empty reply, ``api_failure``, error logged with the doc id).
* each finished greedy reply goes to a reply store as soon as it is generated, and a run killed
  part-way and started again does not generate those again (model arg ``store``, default
  ``$SCEVAL_CACHE/replies/faultline_qwen2_5_omni-<pretrained>.jsonl``; ``store=none`` turns it off).

    lmms-eval --model faultline_qwen2_5_omni --model_args pretrained=Qwen/Qwen2.5-Omni-7B,device=cuda \\
        --tasks sceval_panel --log_samples --output_path out/
"""

from __future__ import annotations

from lmms_eval.models.chat.qwen2_5_omni import Qwen2_5_Omni as _LmmsChat
from lmms_eval.models.simple.qwen2_5_omni import Qwen2_5_Omni as _LmmsSimple

from faultline_eval.model_wrappers.qwen_omni_adapter import QwenOmniAdapter


class _Qwen2_5Omni(QwenOmniAdapter):
    model_class_name = "Qwen2_5OmniForConditionalGeneration"
    processor_class_name = "Qwen2_5OmniProcessor"
    model_id = "faultline_qwen2_5_omni"

    def __init__(self, pretrained: str = "Qwen/Qwen2.5-Omni-7B", **kwargs) -> None:
        super().__init__(pretrained=pretrained, **kwargs)


class Qwen2_5OmniChat(_Qwen2_5Omni, _LmmsChat):
    """Chat path: the task's doc_to_messages (system turn, frames, audio, question)."""

    is_simple = False


class Qwen2_5OmniSimple(_Qwen2_5Omni, _LmmsSimple):
    """Simple path (``--force_simple``): every doc_to_visual item, then the prompt text."""

    is_simple = True
