"""Content words of a text, lemmatised: the vocabulary E2 looks for and the units E3 counts.

Lower-cased alphabetic words, stop words removed (scikit-learn's English list), each reduced to
its lemma. The paper lemmatises with spaCy (App. F.1); that needs a model package, so the
default here is ``simplemma`` (a light dictionary lemmatiser whose data ship in the wheel).
``spacy`` (the paper's, when spaCy and ``en_core_web_sm`` are installed) and ``rules`` (a few
suffix rules, no dependency) are the named alternatives. Every probe record names the one used.
"""

from __future__ import annotations

import functools
import re

LEMMATIZERS = ("simplemma", "spacy", "rules")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


@functools.lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def _rule_lemma(word: str) -> str:
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + replacement
    return word


@functools.lru_cache(maxsize=1)
def _spacy():
    import spacy

    return spacy.load("en_core_web_sm", disable=["parser", "ner"])


def content_lemmas(text: str, lemmatizer: str = "simplemma") -> list[str]:
    """The lemmas of ``text``'s content words, in order, repeats kept (E3 counts them)."""
    if lemmatizer not in LEMMATIZERS:
        raise ValueError(f"unknown lemmatizer {lemmatizer!r}; choose one of {', '.join(LEMMATIZERS)}")
    words = [w for w in _WORD.findall((text or "").lower()) if w not in stop_words()]
    if lemmatizer == "spacy":
        lemmas = [token.lemma_.lower() for token in _spacy()(" ".join(words))]
    elif lemmatizer == "simplemma":
        import simplemma

        lemmas = [simplemma.lemmatize(w, lang="en").lower() for w in words]
    else:
        lemmas = [_rule_lemma(w) for w in words]
    return [lemma for lemma in lemmas if lemma and lemma not in stop_words()]
