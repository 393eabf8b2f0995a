"""``faultline_minicpm_o``: lmms-eval's MiniCPM-o wrappers, made to see a whole SCEval trial.

lmms-eval's chat wrapper opens every image and audio ``url`` as a file (our frames are PIL
images and our audio an ``{"array", "sampling_rate"}`` dict, so it fails); its simple wrapper
sends only the first ``doc_to_visual`` item (one frame, no audio). The adapter builds MiniCPM-o's
content list from all of them in order, honours ``device`` (``cpu`` included), refuses unknown
model_args with an error naming the close match (:mod:`.model_args`), records failed requests,
and keeps finished greedy replies in a reply store (model arg ``store``) so a killed run resumes
without generating them again (see :class:`omni_common.MiniCPMOAdapter`).
The model itself is MiniCPM-o's remote code (``trust_remote_code``), which pins its own
transformers version.
"""

from __future__ import annotations

from lmms_eval.models.chat.minicpm_o import MiniCPM_O as _LmmsChat
from lmms_eval.models.simple.minicpm_o import MiniCPM_O as _LmmsSimple

from faultline_eval.model_wrappers.omni_common import MiniCPMOAdapter


class _MiniCPMO(MiniCPMOAdapter):
    model_id = "faultline_minicpm_o"


class MiniCPMOChat(_MiniCPMO, _LmmsChat):
    is_simple = False


class MiniCPMOSimple(_MiniCPMO, _LmmsSimple):
    is_simple = True
