"""A judge backed by any lmms-eval model (``qwen3_omni``, ``sceval_gemini``, ...).

The model is built with lmms-eval's own registry and ``create_from_arg_string``, exactly as the
CLI builds it, and asked through its ``generate_until`` with the judge prompt as the only
content (chat models get system + user messages, simple models the joined text and no media).
Failures the model reports through :mod:`sceval_plugin.telemetry` (API errors after retries,
refusals) and replies that are neither YES nor NO become judge errors, never YES.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from c3po_plugin.judges.base import JudgeRequest, Verdict
from c3po_plugin.judges.prompt import PROMPT_VERSION, SYSTEM, parse_verdict, user_text

TASK, SPLIT = "c3po_judge", "test"
GEN_KWARGS = {"max_new_tokens": 32, "temperature": 0, "do_sample": False, "until": []}
_THINK = re.compile(r"<think>.*?</think>", flags=re.DOTALL | re.IGNORECASE)
_ID_ARGS = ("pretrained", "model_version", "model", "model_name")


def doc_to_messages(doc: dict) -> list[dict]:
    return [{"role": "system", "content": [{"type": "text", "text": SYSTEM}]},
            {"role": "user", "content": [{"type": "text", "text": doc["text"]}]}]


def doc_to_visual(doc: dict) -> list:
    return []


class LmmsJudge:
    prompt_version = PROMPT_VERSION

    def __init__(self, model: str, model_args: str = "", model_instance: Any = None) -> None:
        from lmms_eval.api.model import lmms  # noqa: F401  (lmms-eval must be importable)
        from lmms_eval.models import get_model
        from lmms_eval.utils import simple_parse_args_string

        args = simple_parse_args_string(model_args) if model_args else {}
        named = next((str(args[k]) for k in _ID_ARGS if args.get(k)), "")
        self.judge_id = f"lmms:{model}" + (f":{named}" if named else "")
        self.model = model_instance or get_model(model).create_from_arg_string(model_args, {"batch_size": 1})
        self._counter = 0

    def judge(self, requests: Sequence[JudgeRequest]) -> list[Verdict]:
        from lmms_eval.api.instance import Instance

        from sceval_plugin import telemetry

        if not requests:
            return []
        docs = []
        for request in requests:
            self._counter += 1
            docs.append({"row_id": f"{TASK}/{request.sample_id}/{self._counter}", "dataset": TASK,
                         "text": user_text(request), "expects_json": False})
        self.model.task_dict = {TASK: {SPLIT: docs}}
        simple = bool(getattr(self.model, "is_simple", True))
        instances = []
        for doc_id, doc in enumerate(docs):
            context = f"{SYSTEM}\n\n{doc['text']}"
            args = ((context, dict(GEN_KWARGS), doc_to_visual, doc_id, TASK, SPLIT) if simple
                    else (context, doc_to_messages, dict(GEN_KWARGS), doc_id, TASK, SPLIT))
            instances.append(Instance("generate_until", args, idx=0,
                                      metadata={"task": TASK, "doc_id": doc_id, "repeats": 1}))
        try:
            replies = self.model.generate_until(instances)
        except Exception as exc:  # the whole batch failed: every request gets the error
            return [Verdict(None, self.judge_id, error=f"api_failure: {type(exc).__name__}: {exc}") for _ in requests]
        verdicts = []
        for doc, reply in zip(docs, replies):
            text = getattr(reply, "text", reply)
            text = _THINK.sub("", text if isinstance(text, str) else str(text)).strip()
            call = telemetry.take(doc["row_id"])
            if call is not None and call.failure:
                verdicts.append(Verdict(None, self.judge_id, raw=text, error=f"{call.failure}: {call.detail}"))
                continue
            value = parse_verdict(text)
            error = None if value else f"unparseable: judge replied {text[:80]!r}"
            verdicts.append(Verdict(value, self.judge_id, raw=text, error=error))
        return verdicts
