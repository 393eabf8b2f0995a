"""LLM judges through lmms-eval's model interface: Gemini (our google-genai model) against a
local fake server, and the lmms judge on a model class built by lmms-eval's registry."""

from __future__ import annotations

import re

import pytest
from fake_gemini import FakeGemini

from c3po_plugin.judges import grade, make_judge
from c3po_plugin.judges.base import NO, YES, JudgeRequest
from c3po_plugin.judges.cache import VerdictCache
from c3po_plugin.judges.prompt import PROMPT_VERSION, SYSTEM

KEY = "judge-key-never-logged"


def fake_judge_reply(texts: list[str]) -> str:
    """YES when the model answer shares a word with the reference answer; chatty on request."""
    text = "\n".join(texts)
    gold = re.search(r"Reference answer: (.*)", text).group(1).lower().split()
    pred = re.search(r"Model answer: (.*)", text).group(1).lower().split()
    if "ramble" in pred:
        return "Well, it depends on how you look at it."
    return "YES" if set(gold) & set(pred) else "NO"


@pytest.fixture
def gemini_judge(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with FakeGemini(reply_text=fake_judge_reply) as server:
        judge = make_judge(f"gemini:gemini-judge,base_url={server.url},max_retries=1,timeout=2,initial_backoff=0.01")
        yield judge, server


def _req(sid, prediction, gold="red box", question="What is on the table?"):
    return JudgeRequest(sid, question, gold, prediction, context="Counterfactual Conflict item, tier 1")


def test_gemini_judge_decides_and_records_failures_without_saying_yes(gemini_judge, tmp_path):
    judge, server = gemini_judge
    requests = [_req("a", "a red crate"), _req("b", "green bottle"), _req("c", "ramble on"),
                _req("d", "red thing", question="[[500]] What is it?"), _req("e", "red", question="[[blocked]] Which?")]
    verdicts = judge.judge(requests)
    assert [v.value for v in verdicts] == [YES, NO, None, None, None]
    assert verdicts[2].error.startswith("unparseable") and "depends" in verdicts[2].raw
    assert verdicts[3].error.startswith("api_failure") and "HTTP 500" in verdicts[3].error
    assert verdicts[4].error.startswith("refusal")
    assert judge.judge_id == "lmms:sceval_gemini:gemini-judge" and judge.prompt_version == PROMPT_VERSION
    body = server.requests[0]["body"]
    assert body["generationConfig"]["temperature"] == 0 and "responseMimeType" not in body["generationConfig"]
    assert SYSTEM[:40] in str(body["systemInstruction"])
    sent = [r["body"]["contents"][0]["parts"][0]["text"] for r in server.requests]
    assert any("Reference answer: red box\nModel answer: a red crate" in t for t in sent)
    assert all(KEY not in str(r["body"]) for r in server.requests)

    cache = VerdictCache(tmp_path / "verdicts.jsonl")
    before = len(server.requests)
    grades = grade(requests[:2], judge, cache)
    assert [g.correct for g in grades] == [True, False]
    grade(requests[:2], judge, cache)  # cached: no new request
    assert len(server.requests) == before + 2


def test_lmms_judge_drives_a_simple_model_too():
    """A simple-interface lmms-eval model gets the joined prompt text and no media."""
    from c3po_plugin.judges.lmms import LmmsJudge

    class EchoSimple:
        is_simple = True

        def generate_until(self, requests):
            self.seen = [r.args for r in requests]
            return ["<think>hmm</think>NO" if "green" in r.args[0] else "yes" for r in requests]

    model = EchoSimple()
    judge = LmmsJudge("echo", "pretrained=tiny-judge", model_instance=model)
    verdicts = judge.judge([_req("a", "red crate"), _req("b", "green bottle")])
    assert [v.value for v in verdicts] == [YES, NO] and judge.judge_id == "lmms:echo:tiny-judge"
    context, gen_kwargs, doc_to_visual, doc_id, task, split = model.seen[0]
    assert context.startswith(SYSTEM) and "Model answer: red crate" in context
    assert gen_kwargs["temperature"] == 0 and doc_to_visual(model.task_dict[task][split][doc_id]) == []


def test_unknown_judge_spec_says_what_is_accepted():
    with pytest.raises(ValueError, match="use embedding, exact, lmms:"):
        make_judge("gpt:4")


@pytest.mark.slow
def test_a_hugging_face_model_through_lmms_eval_as_judge(tmp_path):
    """``lmms:<model>:<args>`` builds the model with lmms-eval's registry (our Qwen2.5-Omni
    adapter on a tiny random checkpoint). Its replies are noise: whatever it says that is not
    exactly YES or NO is a judge error, never a YES."""
    from tiny_qwen_omni import build

    folder = build(tmp_path / "tiny")
    judge = make_judge(f"lmms:faultline_qwen2_5_omni:pretrained={folder},device=cpu,store=none")
    assert judge.judge_id == f"lmms:faultline_qwen2_5_omni:{folder}"
    verdicts = judge.judge([_req("a", "a red crate"), _req("b", "green bottle")])
    assert len(verdicts) == 2
    for v in verdicts:
        assert (v.value in (YES, NO)) != (v.error is not None)
        if v.error:
            assert v.error.startswith(("unparseable", "api_failure", "empty"))
