"""Grading a free-form C3PO answer: normalised exact match first, a judge only when it fails
(paper §3.2: "a normalized string exact match ... after simple preprocessing").

Normalisation folds only differences that never change an answer's meaning:

* letter case, runs of whitespace, and punctuation that separates words (``.,;:!?()"`` ...);
* apostrophes, so a contraction equals its unpunctuated spelling (``It's`` == ``its``);
* word hyphens (``twenty-one`` == ``twenty one``, ``well-known`` == ``well known``);
* the articles *the* and *an*, and a leading *a* (``A red box`` == ``red box``). An *a* after
  the first word may be a letter (``Plan A``, ``Option A``, ``vitamin a``) and is kept;
* number words versus digits (``Three`` == ``3``, ``twenty-one`` == ``21``, ``minus five`` ==
  ``-5``), thousands separators (``1,000`` == ``1000``) and the spelling of a number
  (``2.50`` == ``2.5``, ``-0`` == ``0``);
* ``percent``/``per cent`` == ``%`` and ``degree(s)`` == ``°``.

For the graded scale (SCEval's no-option control) two rules read more than equality:
:func:`abstains` (the answer declines or says the input does not allow one: UNANSWERABLE) and
:func:`partial_overlap` (some but not all of the gold's words: PARTIAL).

Everything else is meaning and is kept: signs (``-5`` != ``5``), units and the symbols
``% ° $ € £ ¥ + < > = / × #`` (``5%`` != ``5``, ``$5`` != ``5``, ``3°C`` != ``3°F``), option
and plan letters, word order. Synonyms and paraphrases are the judge's business.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal

_UNITS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_NUMBER_WORDS = set(_UNITS) | set(_TENS) | set(_SCALES)
_NEGATORS = {"minus", "negative"}
#: Symbols that carry meaning (units, currency, comparison); each is a token of its own.
SYMBOLS = "%°$€£¥+<>=/×#"
_WORD_FOR_SYMBOL = {"percent": "%", "degree": "°", "degrees": "°"}
_TOKEN = re.compile(
    r"(?P<number>(?<![\w.])-?(?:\d+(?:\.\d+)?|\.\d+)|\d+(?:\.\d+)?)"  # a minus sign only at a word's start
    r"|(?P<word>[^\W_]+)"
    rf"|(?P<symbol>[{re.escape(SYMBOLS)}])"
)


def _canonical_number(text: str) -> str:
    """One spelling per value: ``2.50`` -> ``2.5``, ``007`` -> ``7``, ``-0`` -> ``0``."""
    value = Decimal(text)
    return "0" if value == 0 else format(value.normalize(), "f")


def _number_value(words: list[str]) -> int:
    total = current = 0
    for word in words:
        if word in _UNITS:
            current += _UNITS[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word in _SCALES:
            total += max(current, 1) * _SCALES[word]
            current = 0
    return total + current


def _numbers_to_digits(tokens: list[str]) -> list[str]:
    """Replace each run of number words ("two hundred and five") by its digits ("205"), and a
    run after "minus"/"negative" by the negative number ("minus five" -> "-5")."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        negative = tokens[i] in _NEGATORS and i + 1 < len(tokens) and tokens[i + 1] in _NUMBER_WORDS
        start = i + 1 if negative else i
        if tokens[start] not in _NUMBER_WORDS:
            out.append(tokens[i])
            i += 1
            continue
        j = start
        while j < len(tokens) and (
            tokens[j] in _NUMBER_WORDS
            or (tokens[j] == "and" and j + 1 < len(tokens) and tokens[j + 1] in _NUMBER_WORDS and j > start)
        ):
            j += 1
        value = _number_value(tokens[start:j])
        out.append(_canonical_number(str(-value if negative else value)))
        i = j
    return out


def _tokens(text: str) -> list[str]:
    """The lower-case tokens of ``text`` with punctuation gone and articles dropped (see the
    module docstring); meaningful symbols and signed numbers are tokens of their own."""
    text = unicodedata.normalize("NFKC", str(text)).replace("\u2212", "-")  # the minus sign U+2212
    text = re.sub(r"['\u2018\u2019`]", "", text)  # it's -> its
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)  # 1,000 -> 1000
    tokens = [
        _canonical_number(m.group()) if m.lastgroup == "number" else _WORD_FOR_SYMBOL.get(m.group(), m.group())
        for m in _TOKEN.finditer(text.lower())
    ]
    if len(tokens) > 1:  # "the" and "an" are never answers; "a" may be one (Plan A), so only a leading "a" goes
        tokens = [t for t in tokens if t not in ("the", "an")] or tokens[-1:]
        while len(tokens) > 1 and tokens[0] == "a":
            tokens.pop(0)
    merged: list[str] = []
    for token in tokens:  # "per cent" -> "%"
        if token == "cent" and merged and merged[-1] == "per":
            merged[-1] = "%"
        else:
            merged.append(token)
    return merged


def normalize(text: str) -> str:
    """The canonical form exact match compares: :func:`_tokens` with number words as digits."""
    return " ".join(_numbers_to_digits(_tokens(text)))


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


#: Phrases of an answer that declines, or says the input does not allow an answer.
ABSTENTION = re.compile(
    r"\b(?:can ?not|can'?t|could ?n[o']t|unable to|impossible to|not possible to|no way to)\s+(?:be\s+)?"
    r"(?:tell|say|determine|answer|know|see|hear|identify|decide|judge|be determined)\b"
    r"|\b(?:not enough|insufficient|no)\s+(?:information|evidence|data)\b|\bunanswerable\b|\bunknown\b"
    r"|\b(?:do ?n[o']t|does ?n[o']t) know\b|\bnot (?:clear|visible|audible)\b|\bunclear\b",
    re.IGNORECASE,
)


def abstains(prediction: str) -> bool:
    """Whether the answer declines or says the input does not allow one ("cannot tell",
    "not enough information", "unknown", ...): UNANSWERABLE on the graded scale.

    >>> abstains("I cannot tell from the frames"), abstains("red")
    (True, False)
    """
    return bool(ABSTENTION.search(unicodedata.normalize("NFKC", str(prediction)).replace("\u2019", "'")))


def partial_overlap(prediction: str, gold: str) -> bool:
    """Whether the answer has some but not all of the gold's words (after :func:`normalize`):
    PARTIAL on the graded scale ("red square" for "red circle", "circle" for "red circle").

    >>> partial_overlap("red square", "red circle"), partial_overlap("blue", "red")
    (True, False)
    """
    g, p = set(normalize(gold).split()), set(normalize(prediction).split())
    return bool(g & p) and not g <= p
