"""lmms-eval task configurations for SCEval and C3PO.

Installed as ``faultline_eval.tasks`` (the folder keeps its design-card name, ``tasks/``, in
the repository) so that no generic top-level ``tasks`` module lands in site-packages. The task
YAML files are generated from the SCEval condition catalogue and the C3PO template registry;
:data:`TASKS_DIR` is the folder lmms-eval is pointed at.
"""

from pathlib import Path

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
