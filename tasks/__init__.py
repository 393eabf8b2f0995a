"""lmms-eval task configurations for SCEval and C3PO.

Imported as ``faultline_eval.tasks``, its only name (the folder keeps its design-card name, ``tasks/``, in
the repository; ``faultline_eval/tasks`` links to it in a checkout and holds it when installed), so that no
generic top-level ``tasks`` module lands in site-packages or shadows a project's own ``tasks.py``. The task
YAML files are generated from the SCEval condition catalogue and the C3PO template registry;
:data:`TASKS_DIR` is the folder lmms-eval is pointed at.
"""

from pathlib import Path

# One import path per module (issue 37): from a checkout's root `tasks` would also import, as a second copy.
if __name__ != "faultline_eval.tasks":
    raise ImportError(
        f"import faultline_eval.tasks, not {__name__}: the folder tasks/ is the package faultline_eval.tasks"
    )


TASKS_DIR = Path(__file__).resolve().parent

#: Key of an ``image`` message part that is a frame of a video (SCEval's sampled frames, a C3PO
#: item's video): seconds into the clip, or None when unknown (an item given as a frame list).
#: A part without the key is a picture in its own right (a C3PO picture, a single image). Models
#: that send video as video (``sceval_openai`` with ``frames_as=video``) read it; others ignore it.
FRAME_TIME_KEY = "frame_time_s"


def video_frame_parts(frames: list, times, sample_id: str) -> list[dict]:
    """The ``image`` parts of a video's frames, each with its time (``times`` None: unknown)."""
    if times is not None and len(times) != len(frames):
        raise ValueError(f"sample {sample_id!r}: {len(frames)} video frames but {len(times)} frame times")
    return [
        {"type": "image", "url": frame, FRAME_TIME_KEY: None if times is None else float(times[i])}
        for i, frame in enumerate(frames)
    ]
