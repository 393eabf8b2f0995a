"""Recovering an option key from a model's reply, conservatively.

Order: a JSON object with an ``answer`` field; else the whole reply being a lone option key or
exactly one option's text. Anything else is invalid, with a category: ``empty`` (nothing but
whitespace), ``refusal`` (the model declines), ``parse_failure`` (no key recoverable).
``api_failure`` is assigned by the model layer, never here. The parser never raises and never
invents an answer: a key it returns is written in the reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

INVALID_CATEGORIES = ("api_failure", "parse_failure", "refusal", "empty")

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_KEY = re.compile(r"^\W*(?:option\s+)?\(?([A-Za-z])\)?\W*$", re.IGNORECASE)
_REFUSAL = re.compile(
    r"\b(i\s+(?:can(?:no|')t|cannot|won't|will\s+not|am\s+(?:not\s+able|unable))|i'm\s+(?:not\s+able|unable)|"
    r"unable\s+to\s+(?:answer|determine|help)|as\s+an\s+ai|i\s+(?:must|have\s+to)\s+decline|sorry,?\s+(?:but\s+)?i)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ParsedAnswer:
    answer: str | None
    invalid: str | None = None  # one of INVALID_CATEGORIES, when answer is None
    confidence: str | None = None
    reasoning: str | None = None
    via: str = ""  # "json", "key" or "option_text"


def _normalise(text: str) -> str:
    return " ".join(text.split()).strip().rstrip(".").casefold()


def _key_from(value: Any, options: Sequence[tuple[str, str]]) -> str | None:
    if not isinstance(value, str):
        return None
    keys = {k.upper() for k, _ in options}
    match = _KEY.match(value.strip())
    if match and match.group(1).upper() in keys:
        return match.group(1).upper()
    wanted = _normalise(value)
    hits = [k for k, text in options if _normalise(text) == wanted]
    return hits[0] if len(hits) == 1 else None


def _json_objects(text: str):
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            obj, _ = decoder.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(obj, dict):
            yield obj


def parse_answer(reply: Any, options: Sequence[tuple[str, str]]) -> ParsedAnswer:
    """Parse ``reply`` against ``options`` (``(key, text)`` pairs)."""
    if not isinstance(reply, str) or not reply.strip():
        return ParsedAnswer(None, "empty")
    text = _FENCE.sub("", reply.strip())
    for obj in _json_objects(text):
        if "answer" in obj:
            key = _key_from(obj.get("answer"), options)
            confidence = obj.get("confidence") if isinstance(obj.get("confidence"), str) else None
            reasoning = obj.get("reasoning") if isinstance(obj.get("reasoning"), str) else None
            if key is not None:
                return ParsedAnswer(key, None, confidence, reasoning, via="json")
            category = "refusal" if _REFUSAL.search(text) else "parse_failure"
            return ParsedAnswer(None, category, confidence, reasoning, via="json")
    key = _key_from(text, options)
    if key is not None:
        return ParsedAnswer(key, via="key" if _KEY.match(text) else "option_text")
    return ParsedAnswer(None, "refusal" if _REFUSAL.search(text) else "parse_failure")
