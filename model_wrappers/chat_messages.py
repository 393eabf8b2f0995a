"""lmms-eval chat messages as local models receive them: what a simple-path request becomes, the
system turn, and what a conversation holds (its media counts, its text)."""

from __future__ import annotations

from typing import Any

from faultline_eval.model_wrappers.media_conversion import AUDIO_EXTENSIONS, VIDEO_EXTENSIONS, is_audio

MEDIA_KINDS = ("image", "audio", "video")


def media_part(visual: Any) -> dict:
    """The chat content part of one ``doc_to_visual`` item (a frame, an audio clip, a file path)."""
    from PIL import Image

    if isinstance(visual, Image.Image):
        return {"type": "image", "url": visual}
    if is_audio(visual):
        return {"type": "audio", "url": visual}
    if isinstance(visual, str):
        lowered = visual.lower()
        kind = (
            "video"
            if lowered.endswith(VIDEO_EXTENSIONS)
            else "audio"
            if lowered.endswith(AUDIO_EXTENSIONS)
            else "image"
        )
        return {"type": kind, "url": visual}
    raise ValueError(f"unsupported media item {type(visual).__name__}")


def messages_from_visuals(context: str, visuals: list) -> list[dict]:
    """lmms-eval chat messages for a simple-path request: every item of ``doc_to_visual`` in
    order (frames, audio, videos; a list of frames counts as its frames), then the request context as text."""
    flat = [item for visual in visuals for item in (visual if isinstance(visual, (list, tuple)) else [visual])]
    content = [media_part(visual) for visual in flat if visual is not None]  # a nested list: frames, in order
    content.append({"type": "text", "text": context})
    return [{"role": "user", "content": content}]


def visuals_and_context(messages: list[dict]) -> tuple[list, str]:
    """The ``doc_to_visual`` items and the context of a simple-path request's messages (the
    inverse of :func:`messages_from_visuals`), for models that read them as they came."""
    [message] = messages
    *media, text = message["content"]
    return [part["url"] for part in media], text["text"]


def with_system_turn(messages: list[dict], system_prompt: str | None) -> list[dict]:
    """The task's messages, with ``system_prompt`` in front only when they carry no system turn
    of their own (lmms-eval's Qwen wrappers always prepend theirs, doubling ours)."""
    if not system_prompt or any(m.get("role") == "system" for m in messages):
        return messages
    return [{"role": "system", "content": [{"type": "text", "text": system_prompt}]}, *messages]


def media_counts(messages: list[dict]) -> dict[str, int]:
    """How many image, audio and video parts the messages hold."""
    return {
        kind: sum(part.get("type") == kind for message in messages for part in message.get("content", []))
        for kind in MEDIA_KINDS
    }


def role_texts(messages: list[dict]) -> str:
    """The messages' text parts, one ``role: text`` line each (what a reply-store key reads)."""
    return "\n".join(
        f"{message.get('role')}: {part.get('text', '')}"
        for message in messages
        for part in message.get("content", [])
        if part.get("type") == "text"
    )
