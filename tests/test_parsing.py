"""The answer parser: examples, and properties on arbitrary strings."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sceval_plugin.parsing import INVALID_CATEGORIES, parse_answer

OPTIONS = [("A", "red"), ("B", "blue circle"), ("C", "green"), ("D", "cyan square")]


@pytest.mark.parametrize(
    "reply, answer, invalid",
    [
        ('{"answer": "B", "confidence": "high", "reasoning": "x"}', "B", None),
        ('```json\n{"answer": "c", "confidence": "low"}\n```', "C", None),
        ('Thinking... the square is cyan.\n{"answer": "D"}', "D", None),
        ('{"answer": "(A)"}', "A", None),
        ('{"answer": "green"}', "C", None),
        ("B", "B", None),
        (" (d) ", "D", None),
        ("Blue circle.", "B", None),
        ("option a", "A", None),
        ("", None, "empty"),
        ("   \n", None, "empty"),
        ("I think it is B", None, "parse_failure"),
        ("Answer: A", None, "parse_failure"),
        ('{"answer": "E"}', None, "parse_failure"),
        ('{"answer": ["A", "B"]}', None, "parse_failure"),
        ('{"answer": "purple"}', None, "parse_failure"),
        ("I cannot answer questions about this content.", None, "refusal"),
        ('{"answer": "", "reasoning": "Sorry, I can\'t help with that."}', None, "refusal"),
        ("A or B", None, "parse_failure"),
        ('{"confidence": "high"}', None, "parse_failure"),
    ],
)
def test_examples(reply, answer, invalid):
    parsed = parse_answer(reply, OPTIONS)
    assert (parsed.answer, parsed.invalid) == (answer, invalid)


def test_confidence_and_reasoning_are_kept():
    parsed = parse_answer('{"answer": "A", "confidence": "medium", "reasoning": "red disc"}', OPTIONS)
    assert (parsed.confidence, parsed.reasoning, parsed.via) == ("medium", "red disc", "json")


def test_non_string_reply_is_empty():
    assert parse_answer(None, OPTIONS).invalid == "empty"


def _mentions(reply: str, key: str) -> bool:
    text = dict(OPTIONS)[key].casefold()
    return key in reply.upper() or text in " ".join(reply.split()).casefold()


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_never_raises_and_never_invents(reply):
    parsed = parse_answer(reply, OPTIONS)
    assert (parsed.answer is None) != (parsed.invalid is None)
    assert parsed.invalid is None or parsed.invalid in INVALID_CATEGORIES
    if parsed.answer is not None:
        assert parsed.answer in dict(OPTIONS)
        assert _mentions(reply, parsed.answer)


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
        max_leaves=8,
    )
)
def test_arbitrary_json_never_raises(value):
    reply = json.dumps({"answer": value})
    parsed = parse_answer(reply, OPTIONS)
    if parsed.answer is not None:
        assert isinstance(value, str) and _mentions(value, parsed.answer)
