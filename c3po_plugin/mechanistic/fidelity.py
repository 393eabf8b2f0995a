"""E3: caption fidelity (C3PO App. F.1).

The model is asked to describe the audio and the image in the ``AUDIO: ... IMAGE: ...`` format
(:data:`DESCRIBE_PROMPT`; the paper states the format, not the wording, so the wording is ours),
greedy, at most 128 new tokens. Two scores, both ROUGE-1 recall of content words (lower-cased,
stop words removed, lemmatised: :mod:`.lemmas`) of a reference against the response:

* ``audio_fidelity``: the reference is the audio transcript (the paper's is a Whisper-base ASR
  transcript; here the transcript C3PO's generation stage wrote, given through the item's
  ``hidden.transcript`` or ``--references``), scored against the response's ``AUDIO:`` section;
* ``image_fidelity``: the reference is the ``IMAGE:`` section of a second, image-only pass of the
  same model (the audio and its label removed), scored against the first response's ``IMAGE:``
  section.

A response without the section markers is scored whole (``sections_found`` says so). E3 needs
only generated text, so it runs on models whose E1/E2 are blocked.
"""

from __future__ import annotations

import collections
import re
from typing import Any

from c3po_plugin.mechanistic.lemmas import content_lemmas

DESCRIBE_PROMPT = (
    "Describe the contents of the audio and of the image. Format your response exactly as:\n"
    "AUDIO: <what the audio contains>\nIMAGE: <what the image shows>"
)
#: The image-only pass (the image reference) is not asked about an audio it does not get.
IMAGE_ONLY_PROMPT = (
    "Describe the contents of the image. Format your response exactly as:\nIMAGE: <what the image shows>"
)
MAX_NEW_TOKENS = 128
_SECTION = re.compile(r"^\s*\**\s*(AUDIO|IMAGE)\s*\**\s*:\**", re.IGNORECASE | re.MULTILINE)


def describe_messages(messages: list[dict], *, audio: bool = True) -> list[dict]:
    """The task's media with its labels, asked :data:`DESCRIBE_PROMPT`: the system turn (a task's
    answer-format rules, e.g. C3PO's "reply with only the answer") is dropped and the question
    (the user turn's last text part) replaced; with ``audio=False`` the audio parts and the text
    label right before each are dropped too, and :data:`IMAGE_ONLY_PROMPT` is asked."""
    out = []
    for message in messages:
        if message.get("role") == "system":
            continue
        parts = list(message.get("content", []))
        if message.get("role") == "user":
            if parts and parts[-1].get("type") == "text":
                parts = parts[:-1]
            if not audio:
                kept = []
                for part in parts:
                    if part.get("type") == "audio":
                        if kept and kept[-1].get("type") == "text":
                            kept.pop()
                        continue
                    kept.append(part)
                parts = kept
            parts.append({"type": "text", "text": DESCRIBE_PROMPT if audio else IMAGE_ONLY_PROMPT})
        out.append({**message, "content": parts})
    return out


def sections(response: str) -> dict[str, str] | None:
    """``{"audio": ..., "image": ...}`` from an ``AUDIO: ... IMAGE: ...`` response, or None."""
    marks = list(_SECTION.finditer(response or ""))
    if not marks:
        return None
    found = {"audio": "", "image": ""}
    for mark, following in zip(marks, marks[1:] + [None]):
        found[mark.group(1).lower()] += response[mark.end() : following.start() if following else None].strip()
    return found


def rouge1_recall(reference: str, response: str, lemmatizer: str = "simplemma") -> float | None:
    """ROUGE-1 recall of the reference's content lemmas (clipped counts); None for an empty reference."""
    ref = collections.Counter(content_lemmas(reference, lemmatizer))
    if not ref:
        return None
    got = collections.Counter(content_lemmas(response, lemmatizer))
    return sum(min(n, got[w]) for w, n in ref.items()) / sum(ref.values())


def _part(response: str, name: str) -> str:
    found = sections(response)
    return response if found is None else found[name]


def probe_fidelity(
    adapter: Any,
    messages: list[dict],
    transcript: str | None,
    *,
    lemmatizer: str = "simplemma",
    max_new_tokens: int = MAX_NEW_TOKENS,
) -> dict:
    """E3 on one sample."""
    greedy = {"max_new_tokens": max_new_tokens, "temperature": 0}
    kinds = {p.get("type") for m in messages for p in m.get("content", [])}
    response = adapter._answer(describe_messages(messages), greedy)
    record: dict[str, Any] = {
        "response": response,
        "sections_found": sections(response) is not None,
        "lemmatizer": lemmatizer,
        "audio_fidelity": None,
        "image_fidelity": None,
        "image_only_response": None,
    }
    if "audio" in kinds and transcript:
        record["audio_fidelity"] = rouge1_recall(transcript, _part(response, "audio"), lemmatizer)
    if "image" in kinds:
        image_only = adapter._answer(describe_messages(messages, audio=False), greedy)
        record["image_only_response"] = image_only
        record["image_fidelity"] = rouge1_recall(_part(image_only, "image"), _part(response, "image"), lemmatizer)
    return record
