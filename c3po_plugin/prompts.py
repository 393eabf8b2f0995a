"""The C3PO evaluation prompt (our wording of the protocol in §3.2: all modalities, the
question, and a request for the most specific answer in a few words).

Chat models get one user turn whose parts are labelled in order: the video frames (1 fps, at
most 8), the image, the audio, optional text evidence, then the question. Simple models get the
same media as a list (frames, image, audio) and a legend in the text that says what each
attachment is.
"""

from __future__ import annotations

from dataclasses import dataclass

PROMPT_ID = "c3po-short-v1"

SYSTEM = (
    "You are given a question with evidence in several forms (video frames, a picture, an audio "
    "clip, text). Consider all of it before answering. Reply with only the answer: the most "
    "specific one you can give, in a few words, not a sentence. Do not explain."
)
VIDEO_LABEL = "Video ({n} frames in order, one per second):"
IMAGE_LABEL = "Image:"
AUDIO_LABEL = "Audio:"
CONTEXT_LABEL = "Note: "
QUESTION_LABEL = "Question: "
ANSWER_CUE = "Answer in a few words."


@dataclass(frozen=True)
class Prompt:
    system: str
    user: str  # the question block (context, question, cue)

    def legend(self, n_frames: int, has_image: bool, has_audio: bool) -> str:
        """What a simple model's attachment list holds, in order."""
        parts = []
        if n_frames:
            parts.append(f"{n_frames} video frame(s) in order, one per second")
        if has_image:
            parts.append("1 picture")
        if has_audio:
            parts.append("1 audio clip")
        return f"Attached, in this order: {', then '.join(parts)}." if parts else "Nothing is attached."


def build(question: str, context: str = "") -> Prompt:
    user = (f"{CONTEXT_LABEL}{context}\n" if context else "") + f"{QUESTION_LABEL}{question}\n{ANSWER_CUE}"
    return Prompt(SYSTEM, user)
