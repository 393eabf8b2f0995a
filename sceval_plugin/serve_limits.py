"""``sceval serve-limits``: the ``--limit-mm-per-prompt`` a vLLM server needs for a run's tasks.

vLLM refuses (HTTP 400) a request with more images, videos or audio clips than the server's
``--limit-mm-per-prompt`` allows (a modality it does not name allows 999,
``vllm/config/multimodal.py``), and sizes its profiling run by those limits. How many of each a
request carries depends on the task and the item: 8 frames and one clip on SCEval's clean
items, 16 on a video under ``probe_frame_budget_16``, one more frame under the appended-frame
distractor, a C3PO tier-3/4 item's frames plus its picture; with ``frames_as=video`` the frames
of a video are one video and pictures stay images. So the limits are counted, not guessed:
every request of the tasks is built as lmms-eval builds it (the task's ``doc_to_messages`` on
the configured source) and counted as ``sceval_openai`` sends it
(:func:`faultline_eval.model_wrappers.openai_client.mm_counts`).
"""

from __future__ import annotations

import collections
import json

MODALITIES = ("image", "video", "audio")


def needed_limits(tasks: list[str], *, frames_as: str = "images", limit: int | None = None
                  ) -> dict[str, collections.Counter]:
    """Per task (groups expanded), the most images, videos and audio clips one request sends;
    ``limit`` counts only the first ``limit`` requests of each task."""
    from lmms_eval.evaluator_utils import get_task_list
    from lmms_eval.tasks import TaskManager, get_task_dict

    import lmms_eval.models  # noqa: F401  (loads our entry point, which adds the SCEval and C3PO tasks)
    from faultline_eval.model_wrappers.openai_client import FRAMES_AS, mm_counts

    if frames_as not in FRAMES_AS:
        raise ValueError(f"frames_as={frames_as!r} is not one of {', '.join(FRAMES_AS)}")
    found = {}
    for output in get_task_list(get_task_dict(tasks, TaskManager("ERROR"), task_type="chat")):
        most: collections.Counter = collections.Counter({m: 0 for m in MODALITIES})
        for index, doc in enumerate(output.task.eval_docs):
            if limit is not None and index >= limit:
                break
            for modality, count in mm_counts(output.task.doc_to_messages(doc), frames_as).items():
                most[modality] = max(most[modality], count)
        found[output.task_name] = most
    return found


def limit_flag(found: dict[str, collections.Counter]) -> str:
    """The ``--limit-mm-per-prompt`` argument allowing every request: each modality's maximum
    (0 for one no request sends, so vLLM reserves nothing for it)."""
    most = {m: max((c[m] for c in found.values()), default=0) for m in MODALITIES}
    return f"--limit-mm-per-prompt '{json.dumps(most)}'"
