"""``faultline_qwen3_omni``: lmms-eval's Qwen3-Omni wrappers with the same fixes as
``faultline_qwen2_5_omni`` (see :class:`.qwen_omni_adapter.QwenOmniAdapter`).

lmms-eval's Qwen3-Omni classes already load the processor from ``pretrained`` and keep mixed
frame+audio lists together on the simple path; what remains is the audio dict handed to
qwen_omni_utils on the chat path, the doubled system turn, ``"cuda"`` inputs under
``device_map=auto``, the assert on extra model_args, and unrecorded generation failures.
Finished greedy replies go to the same reply store (model arg ``store``) so a killed run resumes
without generating them again.
"""

from __future__ import annotations

from lmms_eval.models.chat.qwen3_omni import Qwen3_Omni as _LmmsChat
from lmms_eval.models.simple.qwen3_omni import Qwen3_Omni as _LmmsSimple

from faultline_eval.model_wrappers.qwen_omni_adapter import QwenOmniAdapter


class _Qwen3Omni(QwenOmniAdapter):
    model_class_name = "Qwen3OmniMoeForConditionalGeneration"
    processor_class_name = "Qwen3OmniMoeProcessor"
    model_id = "faultline_qwen3_omni"

    def __init__(self, pretrained: str = "Qwen/Qwen3-Omni-30B-A3B-Instruct", **kwargs) -> None:
        super().__init__(pretrained=pretrained, **kwargs)


class Qwen3OmniChat(_Qwen3Omni, _LmmsChat):
    is_simple = False


class Qwen3OmniSimple(_Qwen3Omni, _LmmsSimple):
    is_simple = True
