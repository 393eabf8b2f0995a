"""Text structure corruptions. They touch the question stem only, never options or keys.

A word is a maximal run of non-whitespace characters (punctuation stays attached). Whitespace
between untouched words is kept byte for byte, so only the operator's own damage differs.
"""

from __future__ import annotations

import re

import numpy as np

from sceval_plugin.hookspecs import hookimpl
from sceval_plugin.operators._spec import SeverityTable, operator, round_half_up

_WORD = re.compile(r"\S+")


def _word_spans(stem: str) -> list[tuple[int, int]]:
    return [m.span() for m in _WORD.finditer(stem)]


def _delete_spans(text: str, spans: list[tuple[int, int]]) -> str:
    kept, cursor = [], 0
    for start, end in sorted(spans):
        if start > cursor:
            kept.append(text[cursor:start])
        cursor = max(cursor, end)
    kept.append(text[cursor:])
    return "".join(kept)


DROP_RATE = SeverityTable("fraction of words deleted", {10: 0.10, 30: 0.30, 50: 0.50, 70: 0.70}, identity=0.0)


@operator("drop_words", modality="text", table=DROP_RATE, stochastic=True)
def drop_words(stem: str, rate: float, rng: np.random.Generator) -> str:
    """Delete round(rate * n) randomly chosen words, always keeping at least one.

    A deleted word takes the whitespace after it with it (the last word, the whitespace before
    it), so the output is the input with characters removed and nothing else changed.
    """
    spans = _word_spans(stem)
    n = len(spans)
    k = min(round_half_up(rate * n), n - 1)
    if k <= 0:
        return stem
    cuts = []
    for i in rng.choice(n, size=k, replace=False).tolist():
        if i + 1 < n:
            cuts.append((spans[i][0], spans[i + 1][0]))
        else:
            cuts.append((spans[i - 1][1], spans[i][1]))
    return _delete_spans(stem, cuts)


SHUFFLE_WINDOW = SeverityTable("shuffle window (words)", {10: 2, 30: 4, 50: 6, 70: 8}, identity=1)


@operator("word_shuffle", modality="text", table=SHUFFLE_WINDOW, stochastic=True)
def word_shuffle(stem: str, window: int, rng: np.random.Generator) -> str:
    """Locally permute words: no word moves ``window`` positions or more.

    Word i gets the sort key i + U(0, window) (Lample et al., 2018); sorting by it can only swap
    words closer than ``window``. Words fill the original word slots, so spacing is unchanged.
    """
    spans = _word_spans(stem)
    n = len(spans)
    if n < 2:
        return stem
    order = np.argsort(np.arange(n) + rng.uniform(0.0, window, size=n), kind="stable").tolist()
    pieces, cursor = [], 0
    for slot, source in zip(spans, order):
        pieces.append(stem[cursor : slot[0]])
        pieces.append(stem[spans[source][0] : spans[source][1]])
        cursor = slot[1]
    pieces.append(stem[cursor:])
    return "".join(pieces)


#: OCR confusions: every ASCII letter and digit maps to glyphs a recogniser plausibly reads
#: instead (same length, never itself). Characters outside this table are never changed.
OCR_CONFUSIONS: dict[str, str] = {
    # digits
    "0": "OoD",
    "1": "lI7",
    "2": "Zz",
    "3": "8B",
    "4": "A",
    "5": "Ss",
    "6": "bG",
    "7": "1T",
    "8": "B3",
    "9": "gq",
    # lower case
    "a": "oe",
    "b": "h6",
    "c": "eo",
    "d": "ao",
    "e": "co",
    "f": "t",
    "g": "q9",
    "h": "bn",
    "i": "l1j",
    "j": "i",
    "k": "hx",
    "l": "1Ii",
    "m": "n",
    "n": "mh",
    "o": "0ac",
    "p": "q",
    "q": "g9",
    "r": "n",
    "s": "5",
    "t": "f",
    "u": "vn",
    "v": "uy",
    "w": "v",
    "x": "k",
    "y": "v",
    "z": "2",
    # upper case
    "A": "4",
    "B": "83R",
    "C": "GO",
    "D": "O0",
    "E": "F",
    "F": "EP",
    "G": "C6",
    "H": "N",
    "I": "l1",
    "J": "I",
    "K": "X",
    "L": "I",
    "M": "N",
    "N": "MH",
    "O": "0DQ",
    "P": "R",
    "Q": "O",
    "R": "P",
    "S": "58",
    "T": "7",
    "U": "VO",
    "V": "UY",
    "W": "V",
    "X": "K",
    "Y": "V",
    "Z": "2",
}

TYPO_RATE = SeverityTable(
    "fraction of letters/digits substituted", {10: 0.10, 30: 0.30, 50: 0.50, 70: 0.70}, identity=0.0
)


@operator("typo_ocr", modality="text", table=TYPO_RATE, stochastic=True)
def typo_ocr(stem: str, rate: float, rng: np.random.Generator) -> str:
    """Replace round(rate * m) of the m ASCII letters/digits with OCR look-alikes."""
    eligible = [i for i, ch in enumerate(stem) if ch in OCR_CONFUSIONS]
    k = round_half_up(rate * len(eligible))
    if k <= 0:
        return stem
    chars = list(stem)
    picks = rng.choice(len(eligible), size=k, replace=False)
    draws = rng.random(k)
    for pick, draw in zip(picks.tolist(), draws.tolist()):
        i = eligible[pick]
        options = OCR_CONFUSIONS[chars[i]]
        chars[i] = options[int(draw * len(options))]
    return "".join(chars)


#: What a broken word gap becomes: the stem reads as separate fragments, one per line.
FRAGMENT_BREAK = ".\n"

BREAK_PROB = SeverityTable(
    "fraction of word gaps turned into fragment breaks", {10: 0.10, 30: 0.30, 50: 0.50, 70: 0.70}, identity=0.0
)


@operator("sentence_break", modality="text", table=BREAK_PROB, stochastic=True)
def sentence_break(stem: str, prob: float, rng: np.random.Generator) -> str:
    """Cut the stem into fragments at round(prob * (n - 1)) of its n - 1 word gaps.

    Each chosen gap's whitespace becomes ``".\\n"``; every word is kept, in order.
    """
    spans = _word_spans(stem)
    gaps = len(spans) - 1
    k = round_half_up(prob * gaps)
    if k <= 0:
        return stem
    pieces, cursor = [], 0
    for g in sorted(rng.choice(gaps, size=k, replace=False).tolist()):
        pieces.append(stem[cursor : spans[g][1]])
        pieces.append(FRAGMENT_BREAK)
        cursor = spans[g + 1][0]
    pieces.append(stem[cursor:])
    return "".join(pieces)


@hookimpl
def sceval_register_operators(registry):
    for op in (drop_words, word_shuffle, typo_ocr, sentence_break):
        registry.add(op)
