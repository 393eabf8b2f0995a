"""LLM judges through lmms-eval's model interface: Gemini (our google-genai model) against a
local fake server, scripted judge replies of every shape, the media the judge is shown, and the
lmms judge on a Hugging Face model class built by lmms-eval's registry."""

from __future__ import annotations

import json
import re

import pytest
from fake_gemini import FakeGemini

from c3po_plugin.data.sources import load_source
from c3po_plugin.templates import registry
from faultline_eval.judges import grade, make_judge
from faultline_eval.judges.base import NO, YES, JudgeRequest
from faultline_eval.judges.cache import VerdictCache
from faultline_eval.judges.judge_prompt import MEDIA_NOTE, PROMPT_VERSION, SYSTEM

KEY = "judge-key-never-logged"


def fake_judge_reply(texts: list[str]) -> str:
    """YES when the model answer shares a word with the reference answer; chatty on request."""
    text = "\n".join(texts)
    gold = re.search(r"Reference answer: (.*)", text).group(1).lower().split()
    pred = re.search(r"Model answer: (.*)", text).group(1).lower().split()
    if "ramble" in pred:
        return "Well, it depends on how you look at it."
    return "YES" if set(gold) & set(pred) else "NO"


def demo_item(sample_id: str = "c3po-demo-28-measurement-chain"):
    return next(it for it in load_source("demo").items if it.sample_id == sample_id)


def _req(sid, prediction, gold="red box", question="What is on the table?", item=None):
    return JudgeRequest(sid, question, gold, prediction, context="Counterfactual Conflict item, tier 1", item=item)


def _spec(server, extra: str = "") -> str:
    return f"gemini:gemini-judge,base_url={server.url},max_retries=1,timeout=2,initial_backoff=0.01{extra}"


def _parts(request: dict) -> list[str]:
    """What one request to the fake server held, in order: mime types and text openings."""
    out = []
    for p in request["body"]["contents"][0]["parts"]:
        inline = p.get("inlineData") or p.get("inline_data")
        out.append((inline.get("mimeType") or inline.get("mime_type")) if inline else "text:" + p["text"][:12])
    return out


def test_gemini_judge_sees_the_media_decides_and_records_failures_without_saying_yes(monkeypatch, tmp_path):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    item = demo_item()  # video, image and audio
    with FakeGemini(reply_text=fake_judge_reply) as server:
        judge = make_judge(_spec(server))
        requests = [
            _req("a", "a red crate", item=item),
            _req("b", "green bottle", item=item),
            _req("c", "ramble on", item=item),
            _req("d", "red thing", question="[[500]] What is it?", item=item),
            _req("e", "red", question="[[blocked]] Which?", item=item),
            _req("f", "red box"),
        ]
        verdicts = judge.judge(requests)
        sent = list(server.requests)
    assert [v.value for v in verdicts] == [YES, NO, None, None, None, None]
    assert verdicts[2].error.startswith("unparseable") and "depends" in verdicts[2].raw
    assert verdicts[3].error.startswith("api_failure") and "HTTP 500" in verdicts[3].error
    assert verdicts[4].error.startswith("refusal")
    assert verdicts[5].error.startswith("media_unavailable")  # no item: not judged blind
    assert judge.judge_id == "lmms:sceval_gemini:gemini-judge" and judge.sees_media
    assert judge.prompt_version == f"{PROMPT_VERSION}+media"
    body = sent[0]["body"]
    assert body["generationConfig"]["temperature"] == 0 and "responseMimeType" not in body["generationConfig"]
    assert body["generationConfig"]["maxOutputTokens"] == 4096  # room to think
    assert SYSTEM[:40] in str(body["systemInstruction"])
    # The media exactly as the evaluated models get them: labelled frames, picture, audio, then the text.
    n_frames = len(item.frames())
    for request in sent:
        assert _parts(request) == (
            ["text:Video (5 fra"]
            + ["image/png"] * n_frames
            + ["text:Image:", "image/png", "text:Audio:", "audio/wav", "text:" + MEDIA_NOTE[:12]]
        )
    texts = [r["body"]["contents"][0]["parts"][-1]["text"] for r in sent]
    assert any("Reference answer: red box\nModel answer: a red crate" in t for t in texts)
    assert all(KEY not in str(r["body"]) for r in sent)

    cache = VerdictCache(tmp_path / "verdicts.jsonl")
    with FakeGemini(reply_text=fake_judge_reply) as server:
        judge = make_judge(_spec(server))
        grades = grade(requests[:2], judge, cache)
        grade(requests[:2], judge, cache)  # cached: no new request
        assert [g.correct for g in grades] == [True, False] and len(server.requests) == 2


def test_a_text_only_judge_is_a_setting_and_sends_no_media(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with FakeGemini(reply_text=fake_judge_reply) as server:
        judge = make_judge(_spec(server, ",judge_media=false,judge_max_new_tokens=64"))
        (verdict,) = judge.judge([_req("a", "a red crate", item=demo_item())])
        sent = list(server.requests)
    assert verdict.value == YES and not judge.sees_media and judge.prompt_version == f"{PROMPT_VERSION}+text"
    assert _parts(sent[0]) == ["text:Sample: Coun"]
    assert sent[0]["body"]["generationConfig"]["maxOutputTokens"] == 64
    with pytest.raises(ValueError, match="unknown judge setting"):
        make_judge(_spec(server, ",judge_colour=red"))


#: Scripted replies of a reasoning judge, keyed by the model answer they grade.
SHAPES = {
    "think-yes": ("<think>The reference says red box; a red crate is the same object.</think>\nYES", YES, None),
    "closed-only": ("The crate is the box, same colour.\n</think>\n\nYES", YES, None),
    "think-no": ("<think>Green is not red.</think> NO", NO, None),
    "cut": ("<think>First, the reference answer names a red box. The model says", None, "cut_mid_thought"),
    "cut-no-tag": ("Yes, the first thing to check is whether the crate", None, "cut_mid_thought"),
    "bare": ("NO", NO, None),
    "chinese-yes": ("<think>相同</think>是", YES, None),
    "chinese-no": ("</think>否。", NO, None),
    "undecided": ("</think>I cannot tell from the media.", None, "unparseable"),
    "empty-after": ("<think>hmm</think>", None, "empty"),
    "both": ("</think>YES... or rather NO", None, "unparseable"),
}


def test_a_thinking_judge_is_read_after_its_reasoning_and_never_guessed(monkeypatch):
    """Scripted replies of every shape through the real Gemini model path (fake server)."""
    monkeypatch.setenv("GEMINI_API_KEY", KEY)

    def reply(texts):
        shape = re.search(r"Model answer: (\S+)", "\n".join(texts)).group(1)
        return SHAPES[shape][0]

    with FakeGemini(reply_text=reply) as server:
        # "thinking" in the model id turns reasoning-aware parsing on, as for Qwen3-Omni-...-Thinking
        judge = make_judge(f"gemini:qwen3-omni-thinking-fake,base_url={server.url},max_retries=0,judge_media=false")
        verdicts = judge.judge([_req(shape, shape) for shape in SHAPES])
    assert judge.thinking
    for (shape, (_, value, error)), verdict in zip(SHAPES.items(), verdicts):
        assert verdict.value == value, shape
        assert (verdict.error or "").split(":")[0] == (error or ""), (shape, verdict.error)


@pytest.mark.parametrize(
    "reply, value",
    [
        ("Yes. The crate is the box.", YES),
        ("No, it is green.", NO),
        ("Yes, they match", YES),
        ("是的", YES),
        ("不是", NO),
        ("Yes and no", None),
        ("The answer is yes", None),
    ],
)
def test_a_plain_judge_accepts_one_clear_word_with_trailing_text(monkeypatch, reply, value):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with FakeGemini(reply_text=lambda texts: reply) as server:
        judge = make_judge(_spec(server, ",judge_media=false"))
        (verdict,) = judge.judge([_req("a", "a red crate")])
    assert not judge.thinking and verdict.value == value and (verdict.error is None) == (value is not None)


def test_lmms_judge_drives_a_simple_model_with_the_attachment_list():
    """A simple-interface lmms-eval model gets the joined prompt text with the attachment legend
    and the sample's media as its visual list (frames, picture, audio)."""
    from faultline_eval.model_wrappers.lmms_judge import LmmsJudge

    class EchoSimple:
        is_simple = True

        def generate_until(self, requests):
            self.seen = [r.args for r in requests]
            return ["<think>hmm</think>NO" if "green" in r.args[0] else "yes" for r in requests]

    item = demo_item()
    model = EchoSimple()
    judge = LmmsJudge("echo", "pretrained=tiny-judge", model_instance=model)
    verdicts = judge.judge([_req("a", "red crate", item=item), _req("b", "green bottle", item=item)])
    assert [v.value for v in verdicts] == [YES, NO] and judge.judge_id == "lmms:echo:tiny-judge"
    context, gen_kwargs, doc_to_visual, doc_id, task, split = model.seen[0]
    assert context.startswith(SYSTEM) and "Model answer: red crate" in context
    assert "Attached, in this order: 5 video frame(s)" in context
    assert gen_kwargs["temperature"] == 0 and gen_kwargs["max_new_tokens"] == 4096
    visuals = doc_to_visual(model.task_dict[task][split][doc_id])
    assert len(visuals) == len(item.frames()) + 2 and visuals[-1]["sampling_rate"] == 16000


def test_unknown_judge_spec_says_what_is_accepted():
    with pytest.raises(ValueError, match="use embedding, exact, lmms:"):
        make_judge("gpt:4")


@pytest.mark.slow
def test_a_hugging_face_model_through_lmms_eval_as_judge_sees_the_media(tmp_path, monkeypatch):
    """``lmms:<model>:<args>`` builds the model with lmms-eval's registry (our Qwen2.5-Omni
    adapter on a tiny random checkpoint) and shows it the sample's frames, picture and audio
    (the adapter's media-token log counts them). Its replies are noise: whatever it says that is
    not exactly YES or NO is a judge error, never a YES."""
    from faultline_eval.model_wrappers.tiny_checkpoints import build_qwen2_5_omni as build

    log = tmp_path / "media.jsonl"
    monkeypatch.setenv("FAULTLINE_MEDIA_TOKEN_LOG", str(log))
    folder = build(tmp_path / "tiny")
    judge = make_judge(f"lmms:faultline_qwen2_5_omni:pretrained={folder},device=cpu,store=none,judge_max_new_tokens=8")
    assert judge.judge_id == f"lmms:faultline_qwen2_5_omni:{folder}" and judge.max_new_tokens == 8
    item = demo_item("c3po-demo-12-reference-side")
    verdicts = judge.judge([_req("a", "a red crate", item=item), _req("b", "green bottle", item=item)])
    assert len(verdicts) == 2
    for v in verdicts:
        assert (v.value in (YES, NO)) != (v.error is not None)
        if v.error:
            assert v.error.startswith(("unparseable", "api_failure", "empty"))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(lines) == 2 and all(line["task"] == "c3po_judge" and line["failure"] is None for line in lines)
    assert all(line["n_images"] == len(item.frames()) + 1 and line["n_audios"] == 1 for line in lines)
    assert registry().get(item.template_id).modalities >= {"video", "image", "audio"}
