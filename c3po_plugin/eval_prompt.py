"""The C3PO evaluation prompt (our wording of the protocol in §3.2: all modalities, the
question, and a request for the most specific answer in a few words).

Chat models get one user turn whose parts are labelled in order: the video frames (1 fps, at
most 8, spread over the whole clip: SCEval App. F.2, :func:`faultline_eval.core.media.sample_times`)
with the time of each, the image, the audio, optional text evidence, then the question. Simple
models get the same media as a list (frames, image, audio) and a legend in the text that says
what each attachment is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from faultline_eval.core.media import describe_frame_times

PROMPT_ID = "c3po-short-v1"

SYSTEM = (
    "You are given a question with evidence in several forms (video frames, a picture, an audio "
    "clip, text). Consider all of it before answering. Reply with only the answer: the most "
    "specific one you can give, in a few words, not a sentence. Do not explain."
)
VIDEO_LABEL = "Video ({n} frames in order{times}):"
IMAGE_LABEL = "Image:"
AUDIO_LABEL = "Audio:"
CONTEXT_LABEL = "Note: "
QUESTION_LABEL = "Question: "
ANSWER_CUE = "Answer in a few words."


@dataclass(frozen=True)
class Prompt:
    system: str
    user: str  # the question block (context, question, cue)

    def legend(self, frame_times: Sequence[float], has_image: bool, has_audio: bool) -> str:
        """What a simple model's attachment list holds, in order (``frame_times``: one per frame)."""
        parts = []
        if frame_times:
            parts.append(f"{len(frame_times)} video frame(s) in order{describe_frame_times(frame_times)}")
        if has_image:
            parts.append("1 picture")
        if has_audio:
            parts.append("1 audio clip")
        return f"Attached, in this order: {', then '.join(parts)}." if parts else "Nothing is attached."


def video_label(frame_times: Sequence[float]) -> str:
    """The label before the video frames of a chat turn."""
    return VIDEO_LABEL.format(n=len(frame_times), times=describe_frame_times(frame_times))


def build(question: str, context: str = "") -> Prompt:
    user = (f"{CONTEXT_LABEL}{context}\n" if context else "") + f"{QUESTION_LABEL}{question}\n{ANSWER_CUE}"
    return Prompt(SYSTEM, user)
