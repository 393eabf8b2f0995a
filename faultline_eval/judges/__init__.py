"""Grading with a judge: exact match first, then the cache, then the judge.

Judge specs (``C3PO_JUDGE``, ``c3po judge --judge``):

``embedding``                    offline sentence-embedding judge (the demo default)
``exact``                        no judge: an answer that fails exact match is wrong
``lmms:<model>[:<model_args>]``  any lmms-eval model, e.g. the paper's judge (App. D)
                                 ``lmms:faultline_qwen3_omni:pretrained=Qwen/Qwen3-Omni-30B-A3B-Thinking``
``gemini:<model>[,base_url=...]`` Gemini through google-genai (our ``sceval_gemini`` model);
                                 the key comes from ``GEMINI_API_KEY``

LLM judges take ``judge_media``, ``judge_max_new_tokens`` and ``judge_thinking`` among their
arguments (:mod:`faultline_eval.model_wrappers.lmms_judge`); by default they see the sample's media.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from faultline_eval.core.paths import cache_dir
from faultline_eval.core.settings import C3PO_JUDGE, C3PO_VERDICT_CACHE
from faultline_eval.core.store import slug
from faultline_eval.judges.base import PARTIAL, UNANSWERABLE, Judge, JudgeRequest, Verdict, negative, positive
from faultline_eval.judges.cache import VerdictCache, verdict_key
from faultline_eval.judges.matching import abstains, exact_match, partial_overlap

if TYPE_CHECKING:  # the BACKENDS, loaded by name; declared so that lint-imports checks them (.importlinter
    # lets this one import of the harness through: the lmms-eval judge drives an lmms-eval model class)
    from faultline_eval.judges import embedding  # noqa: F401
    from faultline_eval.model_wrappers import lmms_judge  # noqa: F401

DEFAULT_JUDGE = C3PO_JUDGE.default_text


def graded_rule(request: JudgeRequest) -> Verdict | None:
    """The graded scale's rule verdict, when a rule decides: UNANSWERABLE for an abstention
    (:func:`~faultline_eval.judges.matching.abstains`), PARTIAL for some but not all of the gold's words
    (:func:`~faultline_eval.judges.matching.partial_overlap`); None otherwise. Shared by the exact-match
    scorer and the embedding judge, so the two differ only where the embedding decides."""
    if abstains(request.prediction):
        return Verdict(UNANSWERABLE, "", raw="rule:abstains")
    if partial_overlap(request.prediction, request.gold):
        return Verdict(PARTIAL, "", raw="rule:partial_overlap")
    return None


class ExactOnly:
    """No judge: whatever exact match did not accept is wrong (NO). On the graded scale the
    rules of :func:`graded_rule` still tell an abstention and a partial answer from a wrong one."""

    judge_id = "exact"
    prompt_version = "none"

    def judge(self, requests: Sequence[JudgeRequest]) -> list[Verdict]:
        verdicts = []
        for request in requests:
            ruled = graded_rule(request) if request.scale == "graded" else None
            if ruled is not None:
                verdicts.append(Verdict(ruled.value, self.judge_id, raw=ruled.raw))
            else:
                verdicts.append(Verdict(negative(request.scale), self.judge_id, raw="exact match failed"))
        return verdicts


#: Judge backends that live in other layers, loaded by name on first use, like plugins: the embedding
#: judge imports sentence-transformers (seconds), and the lmms-eval judge is a harness binding
#: (it drives an lmms-eval model class), which this package sits below.
BACKENDS = {
    "embedding": "faultline_eval.judges.embedding:EmbeddingJudge",
    "lmms": "faultline_eval.model_wrappers.lmms_judge:LmmsJudge",
}


def backend(name: str) -> type:
    """The judge class registered as ``name`` in :data:`BACKENDS`."""
    module, _, attribute = BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), attribute)


def make_judge(spec: str | None = None) -> Judge:
    """The judge a spec names (default ``$C3PO_JUDGE``, else the embedding judge)."""
    spec = (spec or C3PO_JUDGE.get()).strip()
    if spec == "embedding":
        return backend("embedding")()
    if spec in ("exact", "none"):
        return ExactOnly()
    if spec.startswith("lmms:"):
        model, _, args = spec[5:].partition(":")
        return backend("lmms").from_spec(model, args)
    if spec.startswith("gemini:"):
        return backend("lmms").gemini(spec[7:])
    raise ValueError(f"unknown judge {spec!r}: use embedding, exact, lmms:<model>[:<args>] or gemini:<model>[,...]")


def default_cache_path(judge: Judge) -> Path:
    return cache_dir() / "c3po" / "verdicts" / f"{slug(judge.judge_id)}.jsonl"


def open_cache(judge: Judge) -> VerdictCache | None:
    """``$C3PO_VERDICT_CACHE`` (``none`` turns caching off), else one file per judge id."""
    setting = C3PO_VERDICT_CACHE.get()
    if setting.lower() in ("none", "off"):
        return None
    return VerdictCache(setting or default_cache_path(judge))


@dataclass(frozen=True)
class Grade:
    """How one answer was graded. ``correct`` is None only when the judge failed; ``label`` is
    the request scale's label (YES/NO, or CORRECT/PARTIAL/INCORRECT/UNANSWERABLE), None then too."""

    correct: bool | None
    exact_match: bool
    decided_by: str  # "exact_match" or "judge"
    verdict: Verdict | None = None
    label: str | None = None

    @property
    def judge_error(self) -> str | None:
        return self.verdict.error if self.verdict is not None else None


def grade(requests: Sequence[JudgeRequest], judge: Judge, cache: VerdictCache | None = None) -> list[Grade]:
    """Grade every request: exact match, else a cached verdict, else one batched judge call.
    Each request is graded on its own scale (``JudgeRequest.scale``)."""
    grades: list[Grade | None] = [None] * len(requests)
    pending: list[tuple[int, str]] = []
    for i, request in enumerate(requests):
        if exact_match(request.prediction, request.gold):
            grades[i] = Grade(True, True, "exact_match", label=positive(request.scale))
            continue
        try:
            key = verdict_key(judge, request)
        except OSError as exc:  # a media file the judge should see is gone
            error = f"media_unavailable: sample {request.sample_id!r}: {exc}"
            grades[i] = Grade(None, False, "judge", Verdict(None, judge.judge_id, error=error))
            continue
        cached = cache.get(key) if cache is not None else None
        if cached is not None:
            grades[i] = Grade(cached.value == positive(request.scale), False, "judge", cached, cached.value)
        else:
            pending.append((i, key))
    if pending:
        verdicts = judge.judge([requests[i] for i, _ in pending])
        if len(verdicts) != len(pending):
            raise RuntimeError(f"judge {judge.judge_id} returned {len(verdicts)} verdicts for {len(pending)} requests")
        for (i, key), verdict in zip(pending, verdicts):
            if cache is not None:
                cache.put(key, verdict)
            correct = None if verdict.value is None else verdict.value == positive(requests[i].scale)
            grades[i] = Grade(correct, False, "judge", verdict, verdict.value)
    return grades  # type: ignore[return-value]
