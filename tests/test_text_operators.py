"""Measured semantics of the four text operators on random stems."""

from __future__ import annotations

import math
import re
import string

import numpy as np
import pytest
from conftest import make_stem

from sceval_plugin import operators
from sceval_plugin.operators.text import FRAGMENT_BREAK, OCR_CONFUSIONS

SEVERITIES = (10, 30, 50, 70)
RATE = {10: 0.1, 30: 0.3, 50: 0.5, 70: 0.7}


def half_up(x: float) -> int:
    return math.floor(x + 0.5 + 1e-9)


def is_char_subsequence(small: str, big: str) -> bool:
    it = iter(big)
    return all(ch in it for ch in small)


def is_subsequence(small: list, big: list) -> bool:
    it = iter(big)
    return all(x in it for x in small)


def stems(rng, count=40):
    for i in range(count):
        yield i, make_stem(rng, int(rng.integers(1, 60)))


@pytest.mark.parametrize("severity", SEVERITIES)
def test_drop_words_deletes_exact_count_and_nothing_else(rng, severity):
    for i, stem in stems(rng):
        words = stem.split()
        out = operators.apply("drop_words", stem, severity=severity, variant=i % 3, key=f"s{i}")
        expected = len(words) - min(half_up(RATE[severity] * len(words)), len(words) - 1)
        assert len(out.split()) == expected >= 1
        assert is_subsequence(out.split(), words)
        assert is_char_subsequence(out, stem), "only deletions: the rest is byte-identical"


@pytest.mark.parametrize("severity", SEVERITIES)
def test_word_shuffle_moves_no_word_window_or_more(rng, severity):
    window = operators.get("word_shuffle").parameter(severity)
    largest = 0
    for i, _ in stems(rng, 30):
        stem = make_stem(rng, int(rng.integers(1, 120)), unique=True)
        out = operators.apply("word_shuffle", stem, severity=severity, variant=i % 3, key=f"s{i}")
        before, after = stem.split(), out.split()
        assert sorted(before) == sorted(after)
        position = {w: j for j, w in enumerate(before)}
        moves = [abs(position[w] - j) for j, w in enumerate(after)]
        assert max(moves) < window
        largest = max(largest, max(moves))
        assert re.split(r"\S+", out) == re.split(r"\S+", stem), "whitespace layout must not change"
    assert largest >= window // 2, "the window should actually be used"


@pytest.mark.parametrize("severity", SEVERITIES)
def test_typo_ocr_substitutes_the_rate_of_alphanumerics_from_the_table(rng, severity):
    for i, stem in stems(rng):
        out = operators.apply("typo_ocr", stem, severity=severity, variant=i % 3, key=f"s{i}")
        assert len(out) == len(stem)
        eligible = sum(ch in OCR_CONFUSIONS for ch in stem)
        changed = [(a, b) for a, b in zip(stem, out) if a != b]
        assert len(changed) == half_up(RATE[severity] * eligible)
        assert all(b in OCR_CONFUSIONS[a] for a, b in changed)


def test_ocr_table_covers_every_letter_and_digit_with_real_confusions():
    assert set(OCR_CONFUSIONS) == set(string.ascii_letters + string.digits)
    for ch, options in OCR_CONFUSIONS.items():
        assert options and ch not in options
        assert len(set(options)) == len(options)


def test_typo_ocr_leaves_non_ascii_and_punctuation_alone():
    stem = "Ωμέγα — ¿qué? ... !!"
    out = operators.apply("typo_ocr", stem, severity=70, key="x")
    changed = [(a, b) for a, b in zip(stem, out) if a != b]
    assert len(changed) == 1 and changed[0][0] in "qu"  # round(0.7 * 2 eligible)


@pytest.mark.parametrize("severity", SEVERITIES)
def test_sentence_break_fragments_at_the_rate_of_gaps_keeping_every_word(rng, severity):
    for i, stem in stems(rng):
        out = operators.apply("sentence_break", stem, severity=severity, variant=i % 3, key=f"s{i}")
        words, pieces = stem.split(), out.split()
        assert len(pieces) == len(words), "every word is kept"
        broken = [a + "." == b for a, b in zip(words, pieces)]
        assert all(a == b or cut for a, b, cut in zip(words, pieces, broken))
        assert sum(broken) == half_up(RATE[severity] * (len(words) - 1))
        assert not broken[-1], "a break sits between two words"
        assert out.count(FRAGMENT_BREAK) >= sum(broken)


@pytest.mark.parametrize("name", ["drop_words", "word_shuffle", "typo_ocr", "sentence_break"])
def test_variants_differ_and_repeat(rng, name):
    stem = make_stem(rng, 40, unique=True)
    outs = [operators.apply(name, stem, severity=50, variant=v, key="sample-17") for v in range(3)]
    assert len(set(outs)) == 3
    assert outs[1] == operators.apply(name, stem, severity=50, variant=1, key="sample-17")
    assert outs[1] != operators.apply(name, stem, severity=50, variant=1, key="sample-18")


def test_single_word_stems_survive_every_text_operator():
    for name in operators.names("text"):
        for severity in SEVERITIES:
            out = operators.apply(name, "Why?", severity=severity, key="k")
            assert out.strip(), name
    assert operators.apply("drop_words", "Why?", severity=70, key="k") == "Why?"


def test_text_operators_need_the_stem_as_a_nonempty_str():
    with pytest.raises(operators.OperatorInputError, match="non-empty"):
        operators.apply("drop_words", " \n\t", severity=30, key="k")
    with pytest.raises(operators.OperatorInputError, match="got bytes"):
        operators.apply("typo_ocr", b"What colour?", severity=30, key="k")
    with pytest.raises(operators.OperatorInputError, match="got list"):
        operators.apply("word_shuffle", ["What", "colour"], severity=30, key="k")


def test_text_operators_are_seeded_not_global(rng):
    stem = make_stem(rng, 30)
    np.random.seed(1)
    a = operators.apply("drop_words", stem, severity=50, key="k")
    np.random.seed(2)
    import random

    random.seed(3)
    assert operators.apply("drop_words", stem, severity=50, key="k") == a
