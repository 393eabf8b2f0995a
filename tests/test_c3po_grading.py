"""Exact match, the judge-reply parser, and the grading cascade with its verdict cache."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faultline_eval.judges import ExactOnly, grade
from faultline_eval.judges.base import NO, YES, JudgeRequest, Verdict
from faultline_eval.judges.cache import VerdictCache, verdict_key
from faultline_eval.judges.judge_prompt import parse_verdict
from faultline_eval.judges.matching import exact_match, normalize, token_f1


@pytest.mark.parametrize(
    "prediction, gold",
    [
        ("The red box.", "red box"),
        ("Three", "3"),
        ("twenty-one", "21"),
        ("two hundred and five", "205"),
        ("  A  Cat!! ", "cat"),
        ("one thousand", "1,000"),
        ("2.5 kg", "2.5 KG"),
        ("well-known", "well known"),
    ],
)
def test_exact_match_folds_case_punctuation_articles_numbers(prediction, gold):
    assert exact_match(prediction, gold)


@pytest.mark.parametrize(
    "prediction, gold",
    [
        ("It's 12", "its twelve"),
        ("minus five", "-5"),
        ("\u22125", "-5"),
        ("5 percent", "5%"),
        ("2.50", "2.5"),
        ("5 degrees", "5°"),
        ("A red box", "red box"),
        ("a the cat", "cat"),
        ("5kg", "5 kg"),
        ("didn't", "didnt"),
    ],
)
def test_exact_match_folds_contractions_number_spellings_and_unit_words(prediction, gold):
    assert exact_match(prediction, gold)


@pytest.mark.parametrize(
    "prediction, gold",
    [
        ("red", "blue"),
        ("3", "4"),
        ("two", "12"),
        ("the red box", "red boxes"),
        ("", ""),
        ("2.5", "25"),
        ("red box", "box red"),
        # signs, units, currency, percent and option letters are meaning (issue 11)
        ("-5", "5"),
        ("-3°C", "3°C"),
        ("3°C", "3°F"),
        ("5%", "5"),
        ("$5", "5"),
        ("€5", "$5"),
        ("Plan A", "plan"),
        ("Option A", "option"),
        ("plan a", "plan"),
        ("A", ""),
        (".5", "5"),
        ("+5", "5"),
        ("5 kg", "5 g"),
    ],
)
def test_exact_match_keeps_meaningful_differences(prediction, gold):
    assert not exact_match(prediction, gold)


_WORDS = {
    0: "zero",
    1: "one",
    2: "two",
    3: "three",
    5: "five",
    7: "seven",
    12: "twelve",
    20: "twenty",
    21: "twenty-one",
    40: "forty",
    100: "one hundred",
    105: "one hundred and five",
    1000: "one thousand",
}
UNITS = ["", "%", "°C", "°F", "kg", "g", "km", "m", "cm", "dollars", "percent points"]
CURRENCY = ["", "$", "€", "£"]


@st.composite
def quantity(draw):
    """An answer stating one quantity, spelled in one of several ways, and what it means."""
    value = draw(
        st.one_of(
            st.sampled_from(sorted(_WORDS)),
            st.integers(0, 10_000),
            st.decimals(min_value=-100, max_value=100, places=2, allow_nan=False),
        )
    )
    negative = draw(st.booleans()) and value != 0
    unit, currency = draw(st.sampled_from(UNITS)), draw(st.sampled_from(CURRENCY))
    space = draw(st.sampled_from(["", " "]))
    if isinstance(value, int) and value in _WORDS and draw(st.booleans()):
        number, space = ("minus " if negative else "") + _WORDS[value], " "  # "fivekg" is one word
    else:
        number = ("-" if negative else "") + (
            f"{value:,}" if isinstance(value, int) and draw(st.booleans()) else str(abs(value) if negative else value)
        )
    prefix = draw(st.sampled_from(["", "The ", "about ", "It's "]))
    meaning = (prefix.lower().strip(" '").replace("'", ""), -abs(value) if negative else value, unit, currency)
    return f"{prefix}{currency}{number}{space if unit else ''}{unit}", meaning


@settings(max_examples=400, deadline=None)
@given(quantity(), quantity())
def test_normalisation_never_merges_answers_that_differ_in_number_sign_or_unit(a, b):
    (text_a, (word_a, value_a, unit_a, cur_a)), (text_b, (word_b, value_b, unit_b, cur_b)) = a, b
    if normalize(text_a) == normalize(text_b):
        assert (float(value_a), unit_a, cur_a) == (float(value_b), unit_b, cur_b), (text_a, text_b)
    if (float(value_a), unit_a, cur_a, word_a) == (float(value_b), unit_b, cur_b, word_b):
        assert normalize(text_a) == normalize(text_b), (text_a, text_b)


text = st.lists(
    st.sampled_from(list("abcXYZ 019,.-!?'") + ["the ", "an ", "two ", "Seven ", "hundred "]), max_size=12
).map("".join)


@settings(max_examples=200, deadline=None)
@given(text)
def test_normalize_is_idempotent_and_case_blind(s):
    assert normalize(normalize(s)) == normalize(s)
    assert normalize(s.upper()) == normalize(s.lower())


@settings(max_examples=200, deadline=None)
@given(text, text)
def test_exact_match_is_symmetric_and_f1_is_bounded(a, b):
    assert exact_match(a, b) == exact_match(b, a)
    assert 0.0 <= token_f1(a, b) <= 1.0
    if exact_match(a, b):
        assert token_f1(a, b) == 1.0


@pytest.mark.parametrize(
    "reply, verdict",
    [
        ("YES", YES),
        ("no", NO),
        ("**Yes**", YES),
        ("No.", NO),
        ('"YES"', YES),
        ("  yes, they match", YES),
        ("Yes and no", None),
        ("NO - but yes partly", None),
        ("Maybe", None),
        ("", None),
        ("The answer is yes", None),
    ],
)
def test_parse_verdict_accepts_only_one_clear_word(reply, verdict):
    assert parse_verdict(reply) == verdict


class CountingJudge:
    """A judge that says YES when the prediction contains the gold's first word."""

    judge_id = "counting"
    prompt_version = "t1"

    def __init__(self, fail_on: str = "") -> None:
        self.asked: list[str] = []
        self.fail_on = fail_on

    def judge(self, requests):
        self.asked += [r.prediction for r in requests]
        out = []
        for r in requests:
            if self.fail_on and self.fail_on in r.prediction:
                out.append(Verdict(None, self.judge_id, error="api_failure: HTTP 500"))
            else:
                out.append(Verdict(YES if r.gold.split()[0] in r.prediction else NO, self.judge_id))
        return out


def _req(pred, gold="red box", sid="s1", question="What is it?"):
    return JudgeRequest(sid, question, gold, pred)


def test_grade_uses_exact_match_first_and_the_judge_only_for_the_rest(tmp_path):
    judge = CountingJudge()
    grades = grade(
        [_req("The red box"), _req("a red crate"), _req("blue box")], judge, VerdictCache(tmp_path / "v.jsonl")
    )
    assert [g.correct for g in grades] == [True, True, False]
    assert [g.decided_by for g in grades] == ["exact_match", "judge", "judge"]
    assert judge.asked == ["a red crate", "blue box"]


def test_verdicts_are_cached_by_normalised_prediction_and_survive_a_new_process(tmp_path):
    path = tmp_path / "v.jsonl"
    judge = CountingJudge()
    grade([_req("a red crate")], judge, VerdictCache(path))
    again = CountingJudge()
    (g,) = grade([_req("A red crate!")], again, VerdictCache(path))  # same after normalisation
    assert again.asked == [] and g.verdict.cached and g.correct is True


class Named:
    def __init__(self, judge_id="counting", prompt_version="t1", sees_media=False):
        self.judge_id, self.prompt_version, self.sees_media = judge_id, prompt_version, sees_media


def test_the_cache_key_covers_everything_the_judge_sees(tmp_path):
    """Judge, prompt version, question, gold, context and (for a judge shown media) the media
    bytes each make another key (issue 11: requests differing only in context shared a verdict)."""
    import shutil
    from dataclasses import replace

    from c3po_plugin.data.sources import load_source

    items = load_source("demo").items
    first = next(it for it in items if it.image)
    other_media = next(it for it in items if it.image and it.sample_id != first.sample_id)
    base = JudgeRequest(first.sample_id, "What is it?", "red box", "red crate", "tier 1", item=first)
    variants = [
        base,
        replace(base, question="Which?"),
        replace(base, gold="red"),
        replace(base, context="tier 2"),
        replace(base, prediction="blue crate"),
    ]
    keys = {verdict_key(Named(), r) for r in variants}
    keys |= {verdict_key(Named("other"), base), verdict_key(Named(prompt_version="t2"), base)}
    assert len(keys) == 7
    assert verdict_key(Named(), replace(base, prediction="A red crate!")) == verdict_key(Named(), base)

    seeing = Named(sees_media=True)
    assert verdict_key(seeing, base) != verdict_key(Named(), base)
    # a text-only judge ignores media; one shown the media does not
    moved = replace(base, item=replace(first, image=other_media.image))
    assert verdict_key(Named(), moved) == verdict_key(Named(), base)
    assert verdict_key(seeing, moved) != verdict_key(seeing, base)
    copy = tmp_path / "copy.png"  # the same bytes elsewhere: the same verdict
    shutil.copy(first.image, copy)
    assert verdict_key(seeing, replace(base, item=replace(first, image=str(copy)))) == verdict_key(seeing, base)
    copy.write_bytes(copy.read_bytes() + b"\0")  # changed bytes: another key
    assert verdict_key(seeing, replace(base, item=replace(first, image=str(copy)))) != verdict_key(seeing, base)


def test_a_missing_media_file_is_a_judge_error_for_a_judge_that_sees_media(tmp_path):
    from dataclasses import replace

    from c3po_plugin.data.sources import load_source

    item = next(it for it in load_source("demo").items if it.audio)
    gone = replace(item, audio=str(tmp_path / "gone.wav"))
    judge = CountingJudge()
    judge.sees_media = True
    (g,) = grade([JudgeRequest(item.sample_id, "Q?", "red box", "red crate", item=gone)], judge)
    assert g.correct is None and g.judge_error.startswith("media_unavailable") and judge.asked == []


def test_judge_errors_are_never_yes_and_never_cached(tmp_path):
    path = tmp_path / "v.jsonl"
    judge = CountingJudge(fail_on="crate")
    (g,) = grade([_req("red crate")], judge, VerdictCache(path))
    assert g.correct is None and g.judge_error.startswith("api_failure")
    assert len(VerdictCache(path)) == 0
    retry = CountingJudge()
    (g,) = grade([_req("red crate")], retry, VerdictCache(path))
    assert retry.asked == ["red crate"] and g.correct is True


def test_cache_skips_a_line_cut_short_by_a_killed_process(tmp_path):
    path = tmp_path / "v.jsonl"
    grade([_req("a red crate")], CountingJudge(), VerdictCache(path))
    with path.open("a") as f:
        f.write('{"key": "abc", "val')
    assert len(VerdictCache(path)) == 1


def test_exact_only_judge_says_no():
    (g,) = grade([_req("crimson box")], ExactOnly())
    assert g.correct is False and g.verdict.value == NO
