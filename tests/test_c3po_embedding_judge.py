"""The offline embedding judge (guard rules, then all-MiniLM-L6-v2 from its wheel) and the
agreement statistics."""

from __future__ import annotations

import json
import math
import socket
import threading

import pytest

from faultline_eval.core.agreement import agreement_rate, best_threshold, cohen_kappa
from faultline_eval.judges import embedding
from faultline_eval.judges.base import NO, YES, JudgeRequest


def _calibration() -> list[dict]:
    return [json.loads(line) for line in embedding.CALIBRATION_PATH.read_text().splitlines() if line.strip()]


def _requests(rows: list[dict]) -> list[JudgeRequest]:
    return [JudgeRequest(f"cal-{i}", r["question"], r["gold"], r["prediction"]) for i, r in enumerate(rows)]


# --- agreement statistics (no model) ---------------------------------------------------------


def test_cohen_kappa_matches_a_hand_computed_example():
    a = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    b = [1, 1, 1, 0, 1, 0, 0, 0, 0, 0]
    # p_o = 8/10; P(a=1) = P(b=1) = 0.4, so p_e = 0.4*0.4 + 0.6*0.6 = 0.52;
    # kappa = (0.8 - 0.52) / (1 - 0.52) = 0.28 / 0.48 = 7/12.
    assert agreement_rate(a, b) == pytest.approx(0.8)
    assert cohen_kappa(a, b) == pytest.approx(7 / 12)
    assert cohen_kappa(a, a) == 1.0
    assert cohen_kappa([True, False], [False, True]) == pytest.approx(-1.0)


def test_cohen_kappa_degenerate_cases():
    # Both raters constant and equal: chance agreement is 1, defined as 1.0.
    assert cohen_kappa([True] * 5, [True] * 5) == 1.0
    assert cohen_kappa([False] * 3, [False] * 3) == 1.0
    # One rater constant, the other not: p_e < 1, the formula applies and gives 0.
    assert cohen_kappa([True] * 4, [True, True, False, False]) == 0.0
    # Constant but opposite raters: p_e = 0, p_o = 0, kappa 0.
    assert cohen_kappa([True] * 3, [False] * 3) == 0.0
    with pytest.raises(ValueError):
        cohen_kappa([], [])
    with pytest.raises(ValueError):
        cohen_kappa([True], [True, False])


def test_best_threshold_is_deterministic_and_keeps_a_margin():
    scores, labels = [0.1, 0.2, 0.8, 0.9], [False, False, True, True]
    t, kappa, acc = best_threshold(scores, labels)
    assert (kappa, acc) == (1.0, 1.0)
    assert t == 0.5  # the middle of the tied range 0.21..0.80, farthest from both scores


def test_calibration_set_is_balanced_and_beyond_exact_match():
    from faultline_eval.judges.matching import exact_match

    rows = _calibration()
    assert 140 <= len(rows) <= 180
    assert abs(sum(r["equivalent"] for r in rows) - len(rows) / 2) <= len(rows) * 0.1
    assert not any(exact_match(r["prediction"], r["gold"]) for r in rows)
    assert all(r["question"] and r["gold"] and r["prediction"] and r["kind"] for r in rows)
    # Long, demo-style questions are covered, and balanced too (they broke the v1 judge).
    long_q = [r for r in rows if 15 <= len(r["question"].split()) <= 30]
    assert len(long_q) >= 35
    assert abs(sum(r["equivalent"] for r in long_q) - len(long_q) / 2) <= len(long_q) * 0.1


def test_calibration_set_shares_no_pair_with_the_demo():
    from pathlib import Path

    import c3po_plugin

    items = (Path(c3po_plugin.__file__).parent / "data" / "demo" / "items.jsonl").read_text().splitlines()
    demo_questions = {json.loads(line)["question"].strip().lower() for line in items if line.strip()}
    assert not any(r["question"].strip().lower() in demo_questions for r in _calibration())


# --- guard rules (no model) ------------------------------------------------------------------


def test_numbers_are_read_after_normalisation():
    assert embedding.numbers("Three cups") == ["3"]
    assert embedding.numbers("twenty-one, 2.50 and 3rd") == ["2.5", "21", "3"]
    assert embedding.numbers("twice") == ["2"]
    # "one" after a determiner is a pronoun; after anything else it is the count.
    assert embedding.numbers("a yellow one") == embedding.numbers("the one in the red dress") == []
    assert embedding.numbers("just one dog") == ["1"]


@pytest.mark.parametrize(
    "gold, prediction, value, raw",
    [
        ("3", "4", NO, "rule:numbers 3!=4"),
        ("three", "5", NO, "rule:numbers 3!=5"),
        ("2", "2 or 3", NO, "rule:numbers 2!=2,3"),
        ("10 minutes", "12 minutes", NO, "rule:numbers 10!=12"),
        ("a cat", "2 cats", NO, "rule:numbers none!=2"),
        ("twice", "three times", NO, "rule:numbers 2!=3"),
        ("12", "a dozen", NO, "rule:numbers 12!=none"),  # a known miss, documented
        ("yes", "no", NO, "rule:polarity yes!=no"),
        ("no", "yes", NO, "rule:polarity no!=yes"),
        ("yes", "it is open", NO, "rule:polarity yes!=none"),
        ("no", "yes and no", NO, "rule:polarity no!=no+yes"),
        ("yes", "probably yes", NO, "rule:polarity yes hedged by probably"),
        ("true", "Yes.", YES, "rule:polarity yes"),
        ("no", "it didn't stop", YES, "rule:polarity no"),
        ("yes", "yes, 4 of them", YES, "rule:polarity yes"),  # polarity runs before numbers
        ("red", "red and blue", NO, "rule:containment adds and"),
        ("red", "not red", NO, "rule:containment adds not"),
        ("red", "it isn't red", NO, "rule:containment adds not"),
        ("red", "a red t-shirt", YES, "rule:containment +2"),
        ("red", "maybe red", NO, "rule:containment adds maybe"),
        ("a plate", "a plate and a glass", NO, "rule:containment adds and"),
        ("3", "step 3", YES, "rule:containment +1"),
        ("two", "2 more", YES, "rule:containment +1"),
        ("left", "to her left", YES, "rule:containment +2"),
        ("a sandwich", "a sandwich cut in half", YES, "rule:containment +3"),
    ],
)
def test_guard_rules(gold, prediction, value, raw):
    assert embedding.guard(gold, prediction) == (value, raw)


@pytest.mark.parametrize(
    "gold, prediction",
    [
        ("red", "blue"),  # nothing to rule on
        ("forest", "harbour"),
        ("an onion", "she is slicing a red onion"),  # contained, but 4 tokens added
        ("the doorbell rang", "someone rang the doorbell"),  # not in order
        ("10 minutes", "ten mins"),  # same numbers: no verdict from them
    ],
)
def test_guards_leave_the_rest_to_the_embedding(gold, prediction):
    assert embedding.guard(gold, prediction) is None


def test_guard_verdicts_need_no_model(monkeypatch):
    def broken():
        raise AssertionError("the model was loaded for a pair a rule decides")

    monkeypatch.setattr(embedding, "load_model", broken)
    q = "The beeps count the steps of the recipe from the start; which step does the cook skip before the oven is opened?"
    verdicts = embedding.EmbeddingJudge().judge(
        [
            JudgeRequest("a", q, "three", "5"),
            JudgeRequest("b", q, "3", "step 3"),
            JudgeRequest("c", q, "red", "red and blue"),
            JudgeRequest("d", q, "no", "yes"),
        ]
    )
    assert [v.value for v in verdicts] == [NO, YES, NO, NO]
    assert all(v.error is None and v.raw.startswith("rule:") for v in verdicts)
    assert embedding.score(verdicts[0]) == -math.inf and embedding.score(verdicts[1]) == math.inf


# --- the judge (loads the model: a few seconds, mostly importing sentence-transformers) -------


@pytest.mark.slow
def test_loads_offline_with_sockets_blocked(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network access attempted by the embedding judge")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(embedding, "_model", None)  # force a real load inside this test
    judge = embedding.EmbeddingJudge()
    [verdict] = judge.judge([JudgeRequest("s", "What tool is used?", "a wrench", "a spanner")])
    assert verdict.error is None and verdict.value in (YES, NO)
    assert verdict.raw.startswith("cos:") and len(verdict.raw.split(".")[1]) == 4
    assert 0.0 < embedding.score(verdict) <= 1.0
    assert judge.judge_id == f"embedding:all-MiniLM-L6-v2@{embedding.THRESHOLD:.2f}"
    assert judge.prompt_version == "embed-guarded-answer-v2"


@pytest.mark.slow
def test_model_is_loaded_once_across_threads(monkeypatch):
    monkeypatch.setattr(embedding, "_model", None)
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(embedding.load_model())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 4 and all(m is seen[0] for m in seen)


@pytest.mark.slow
@pytest.mark.parametrize("form", sorted(embedding.TEXT_FORMS))
def test_paraphrases_are_closer_than_unrelated_answers(form):
    judge = embedding.EmbeddingJudge(text_form=form)
    q = "What does the man do after shutting the door?"
    paraphrase, unrelated = judge.similarities(
        [
            JudgeRequest("p", q, "he locks it", "locks the door"),
            JudgeRequest("u", q, "he locks it", "a bowl of soup"),
        ]
    )
    assert paraphrase > unrelated + 0.1


@pytest.mark.slow
def test_calibration_kappa_reaches_the_documented_figure():
    rows = _calibration()
    verdicts = embedding.EmbeddingJudge().judge(_requests(rows))
    assert all(v.error is None for v in verdicts)
    predicted = [v.value == YES for v in verdicts]
    truth = [r["equivalent"] for r in rows]
    # The documented figures are the ones the judge reproduces (to their 3 decimals) ...
    assert cohen_kappa(predicted, truth) == pytest.approx(embedding.CALIBRATION_KAPPA, abs=0.0005)
    assert agreement_rate(predicted, truth) == pytest.approx(embedding.CALIBRATION_ACCURACY, abs=0.0005)
    # ... and the documented threshold is still the one the sweep picks with the guards applied.
    scores = [embedding.score(v) for v in verdicts]
    t, kappa, _ = best_threshold(scores, truth)
    assert t == embedding.THRESHOLD and kappa == pytest.approx(embedding.CALIBRATION_KAPPA, abs=0.0005)
    # The guards are what lifts it: the bare embedding alone, at its own best threshold, is worse.
    alone = [embedding.score(v) for v in embedding.EmbeddingJudge(guards=False).judge(_requests(rows))]
    assert best_threshold(alone, truth)[1] < kappa - 0.1


@pytest.mark.slow
def test_long_shared_question_no_longer_makes_everything_equivalent():
    """The v1 failure on the demo: with the question embedded, every pair scored 0.95-0.999."""
    q = (
        "Three readings of one tank, one bar or beep per litre: the gauge being filmed was calibrated "
        "today, the photographed one last year. How many litres are in the tank?"
    )
    cases = [
        ("three", "5", NO),
        ("3", "4", NO),
        ("red", "blue", NO),
        ("no", "yes", NO),
        ("forest", "harbour", NO),
        ("two", "2 more", YES),
        ("3", "step 3", YES),
    ]
    verdicts = embedding.EmbeddingJudge().judge([JudgeRequest("s", q, g, p) for g, p, _ in cases])
    assert [v.value for v in verdicts] == [want for _, _, want in cases], [v.raw for v in verdicts]
    raws = [v.raw for v in verdicts]
    assert raws[0] == "rule:numbers 3!=5" and raws[3] == "rule:polarity no!=yes"
    assert raws[2].startswith("cos:") and raws[4].startswith("cos:")  # decided by the embedding
    assert raws[5] == raws[6] == "rule:containment +1"


@pytest.mark.slow
def test_batched_verdicts_equal_one_by_one():
    requests = _requests(_calibration()[:24])
    judge = embedding.EmbeddingJudge(batch_size=8)
    batched = judge.judge(requests)
    single = [judge.judge([r])[0] for r in requests]
    assert [v.value for v in batched] == [v.value for v in single]
    assert all(
        a.raw == b.raw if not a.raw.startswith("cos:") else abs(embedding.score(a) - embedding.score(b)) <= 2e-4
        for a, b in zip(batched, single)
    )
    assert sum(v.raw.startswith("cos:") for v in batched) >= 8  # the embedding path is exercised


@pytest.mark.slow
def test_empty_prediction_is_no_and_empty_gold_is_an_error():
    judge = embedding.EmbeddingJudge()
    empty, punct, no_gold, fine = judge.judge(
        [
            JudgeRequest("e", "What colour?", "red", ""),
            JudgeRequest("p", "What colour?", "red", " ?! "),
            JudgeRequest("g", "What colour?", "", "red"),
            JudgeRequest("f", "What colour?", "red", "scarlet"),
        ]
    )
    assert (empty.value, empty.raw, empty.error) == (NO, "rule:empty", None)
    assert punct.value == NO
    assert no_gold.value is None and no_gold.error.startswith("bad_request")
    assert fine.error is None and fine.raw.startswith("cos:")


def test_model_failure_gives_errors_not_exceptions(monkeypatch):
    def broken():
        raise RuntimeError("weights missing")

    monkeypatch.setattr(embedding, "load_model", broken)
    verdicts = embedding.EmbeddingJudge().judge(
        [
            JudgeRequest("a", "q", "red", "crimson"),
            JudgeRequest("b", "q", "red", ""),
            JudgeRequest("c", "q", "red", "red and blue"),
        ]
    )
    assert verdicts[0].value is None and "weights missing" in verdicts[0].error
    assert verdicts[1].value == NO and verdicts[2].value == NO  # decided without the model


def test_judge_id_carries_the_threshold():
    assert embedding.EmbeddingJudge(threshold=0.8).judge_id == "embedding:all-MiniLM-L6-v2@0.80"
    assert embedding.EmbeddingJudge(threshold=0.855).judge_id.endswith("@0.855")
    assert embedding.EmbeddingJudge().prompt_version == "embed-guarded-answer-v2"
    assert embedding.EmbeddingJudge(text_form="qa", guards=False).prompt_version == "embed-qa-v2"
    with pytest.raises(ValueError):
        embedding.EmbeddingJudge(text_form="sentence")
