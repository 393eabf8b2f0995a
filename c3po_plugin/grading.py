"""Grading a free-form C3PO answer: normalised exact match first, a judge only when it fails.

Normalisation folds the differences that never change an answer's meaning: letter case,
punctuation, the articles a/an/the, runs of whitespace, and number words versus digits
("Three" == "3", "twenty-one" == "21"). Anything else (units, synonyms, word order) is the
judge's business.
"""

from __future__ import annotations

import re
import unicodedata

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_NUMBER_WORDS = set(_UNITS) | set(_TENS) | set(_SCALES)
_ARTICLES = {"a", "an", "the"}


def _numbers_to_digits(tokens: list[str]) -> list[str]:
    """Replace each run of number words ("two hundred and five") by its digits ("205")."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        if tokens[i] not in _NUMBER_WORDS:
            out.append(tokens[i])
            i += 1
            continue
        total = current = 0
        j = i
        while j < len(tokens) and (tokens[j] in _NUMBER_WORDS or (tokens[j] == "and" and j + 1 < len(tokens)
                                                                   and tokens[j + 1] in _NUMBER_WORDS and j > i)):
            word = tokens[j]
            if word in _UNITS:
                current += _UNITS[word]
            elif word in _TENS:
                current += _TENS[word]
            elif word == "hundred":
                current = max(current, 1) * 100
            elif word in _SCALES:
                total += max(current, 1) * _SCALES[word]
                current = 0
            j += 1
        out.append(str(total + current))
        i = j
    return out


def normalize(text: str) -> str:
    """The canonical form exact match compares."""
    text = unicodedata.normalize("NFKC", str(text)).lower()
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # 1,000 -> 1000
    text = re.sub(r"(?<=\d)\.(?=\d)", "qqdecimalqq", text)  # keep 2.5 intact
    text = text.replace("-", " ")  # twenty-one, well-known
    text = re.sub(r"[^\w\s]|_", " ", text)
    text = text.replace("qqdecimalqq", ".")
    tokens = [t for t in text.split() if t not in _ARTICLES]
    return " ".join(_numbers_to_digits(tokens))


def exact_match(prediction: str, gold: str) -> bool:
    """True when the prediction equals the gold answer after :func:`normalize`.

    >>> exact_match("The Red box.", "red box")
    True
    >>> exact_match("Three", "3")
    True
    >>> exact_match("red", "blue")
    False
    """
    return bool(normalize(gold)) and normalize(prediction) == normalize(gold)


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD-style token overlap F1 between the normalised strings (0 when either is empty)."""
    p, g = normalize(prediction).split(), normalize(gold).split()
    if not p or not g:
        return 0.0
    common = 0
    remaining = list(g)
    for token in p:
        if token in remaining:
            remaining.remove(token)
            common += 1
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)
