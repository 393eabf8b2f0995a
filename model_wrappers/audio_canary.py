"""The audio canary: proof, before a run, that an endpoint's model actually hears the audio.

Some serving stacks accept an audio part and silently drop it (lmms-eval 0.7.3's own ``vllm``
and ``openai`` backends never send it; a server whose chat template has no audio placeholder
ignores it). Every answer of such a run would be a text-and-vision answer recorded as omni.

:func:`run_canary` takes the first items of the run that carry a real (non-silent) audio clip
and asks each three times at temperature 0: as built, with the audio replaced by silence of
the same length, and with the audio of the next canary item (rotating). It passes when some
reply changes with silence AND some reply changes with the swapped audio, the two checks of
``sceval smoke`` (paper App. G.8) on the run's own requests. A backend that fails is refused
with :class:`AudioCanaryError` unless the user turns the canary off (``audio_canary=off``).
Canary requests are not stored and not recorded as trials.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Peak amplitude below which a clip counts as silence (a missing-audio condition's track).
SILENCE_PEAK = 1e-4


class AudioCanaryError(RuntimeError):
    pass


@dataclass(frozen=True)
class CanaryResult:
    items: int
    changed_by_silence: int
    changed_by_swap: int
    answered: int
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.changed_by_silence > 0 and self.changed_by_swap > 0

    def summary(self) -> str:
        return (
            f"{self.changed_by_silence}/{self.answered} replies change with silence, "
            f"{self.changed_by_swap}/{self.answered} with the audio swapped between items "
            f"({self.items} items)" + (f"; {self.detail}" if self.detail else "")
        )


def audio_clip(messages: list[dict]) -> dict | None:
    """The one non-silent audio clip of a request's messages, or None."""
    for message in messages:
        for part in message.get("content", []):
            if part.get("type") == "audio" and isinstance(part.get("url"), dict):
                samples = np.asarray(part["url"]["array"])
                if samples.size and float(np.abs(samples).max()) > SILENCE_PEAK:
                    return part["url"]
    return None


def with_audio(messages: list[dict], clip: dict) -> list[dict]:
    """``messages`` with their audio part's clip replaced by ``clip``."""
    return [
        {**m, "content": [{**p, "url": clip} if p.get("type") == "audio" else p for p in m.get("content", [])]}
        for m in messages
    ]


def run_canary(requests: list[list[dict]], ask: Callable[[list[dict]], Any], *, concurrency: int = 4) -> CanaryResult:
    """``requests``: the lmms-eval messages of at least two items with audio (see
    :func:`audio_clip`); ``ask(messages)`` returns a :class:`faultline_eval.core.request_lifecycle.Reply`."""
    if len(requests) < 2:
        raise AudioCanaryError("the audio canary needs at least two items with audio")
    clips = [audio_clip(m) for m in requests]
    asked = []
    for i, messages in enumerate(requests):
        clip, donor = clips[i], clips[(i + 1) % len(requests)]
        silence = {
            "array": np.zeros_like(np.asarray(clip["array"], dtype=np.float32)),
            "sampling_rate": clip["sampling_rate"],
        }
        asked += [messages, with_audio(messages, silence), with_audio(messages, donor)]
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        replies = list(pool.map(ask, asked))
    silence_changed = swap_changed = answered = 0
    failures = []
    for i in range(len(requests)):
        original, silent, swapped = replies[3 * i : 3 * i + 3]
        failed = [r for r in (original, silent, swapped) if r.failure == "api_failure"]
        if failed:
            failures.append(failed[0].detail)
            continue
        answered += 1
        silence_changed += silent.text != original.text
        swap_changed += swapped.text != original.text
    return CanaryResult(
        len(requests),
        silence_changed,
        swap_changed,
        answered,
        f"{len(failures)} item(s) unanswered: {failures[0]}" if failures else "",
    )
