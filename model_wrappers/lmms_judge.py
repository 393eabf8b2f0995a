"""A judge backed by any lmms-eval model (``qwen3_omni``, ``sceval_gemini``, ...).

The model is built with lmms-eval's own registry and ``create_from_arg_string``, exactly as the
CLI builds it, and asked through its ``generate_until``. What it is shown follows the paper's
judge (§3.2, App. D and I): the full sample (question, gold answer, template logic, text
evidence) and, by default, the sample's media, passed exactly as the evaluated models get them
(:func:`faultline_eval.tasks.c3po_task.media_content` for chat models, the same attachment list
and legend for simple ones), greedy at temperature 0.

Judge settings, given among the model arguments and removed before lmms-eval sees them:

``judge_media=true|false``   show the sample's media (default true; false: text only)
``judge_max_new_tokens=N``   the token budget (default 4096, room for a thinking model to finish)
``judge_thinking=auto|true|false``
                             a reasoning model, whose verdict follows ``</think>`` (auto: the
                             model id contains "thinking", as Qwen3-Omni-30B-A3B-Thinking does)

:func:`load_model` and :func:`generate` (one ``generate_until`` batch of docs, failures
included) also serve the build stages' ``lmms:`` models (:mod:`c3po_plugin.construction.client`).

Failures the model reports through :mod:`faultline_eval.core.telemetry` (API errors after retries,
refusals), replies cut mid-thought and replies that are not a label of the request's scale (YES/NO,
or the graded scale's CORRECT/PARTIAL/INCORRECT/UNANSWERABLE) become judge errors
(:func:`~faultline_eval.judges.judge_prompt.parse_reply`), never YES.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from faultline_eval.core import telemetry
from faultline_eval.judges.base import JudgeRequest, Verdict
from faultline_eval.judges.judge_prompt import PROMPT_VERSION, parse_reply, system_prompt, user_text
from faultline_eval.model_wrappers.model_args import flag
from faultline_eval.tasks import c3po_task

TASK, SPLIT = "c3po_judge", "test"
DEFAULT_MAX_NEW_TOKENS = 4096
ID_ARGS = ("pretrained", "model_version", "model", "model_name")


# A doc holds the C3POItem itself (its list of docs never leaves this process), or None, and
# the system text (the judge's, or a build stage's prompt).
def doc_to_messages(doc: dict) -> list[dict]:
    media = c3po_task.media_content(doc["item"]) if doc["item"] is not None else []
    return [
        {"role": "system", "content": [{"type": "text", "text": doc["system"]}]},
        {"role": "user", "content": media + [{"type": "text", "text": doc["text"]}]},
    ]


def doc_to_visual(doc: dict) -> list:
    return c3po_task.media_list(doc["item"]) if doc["item"] is not None else []


def split_judge_settings(model_args: str) -> tuple[str, dict[str, str]]:
    """``model_args`` without the ``judge_*`` settings, and those settings."""
    kept, settings = [], {}
    for part in filter(None, (p.strip() for p in (model_args or "").split(","))):
        key, _, value = part.partition("=")
        if key.strip().startswith("judge_"):
            settings[key.strip()] = value.strip()
        else:
            kept.append(part)
    unknown = sorted(set(settings) - {"judge_media", "judge_max_new_tokens", "judge_thinking"})
    if unknown:
        raise ValueError(f"unknown judge setting(s) {unknown}: use judge_media, judge_max_new_tokens, judge_thinking")
    return ",".join(kept), settings


def load_model(model: str, model_args: str = "") -> Any:
    """An lmms-eval model built by its registry name, exactly as the CLI builds it."""
    from lmms_eval.api.model import lmms  # noqa: F401  (lmms-eval must be importable)
    from lmms_eval.models import get_model

    return get_model(model).create_from_arg_string(model_args, {"batch_size": 1})


def generate(model: Any, docs: list[dict], gen_kwargs: dict, task: str = TASK) -> list[tuple[str | None, str | None]]:
    """Ask an lmms-eval model one ``generate_until`` batch: ``(reply text, error)`` per doc.

    A doc is ``{"row_id", "dataset", "system", "text", "item" (a C3POItem or None),
    "expects_json"}``; chat models get :func:`doc_to_messages`, simple ones the system text, the
    attachment legend and the text with :func:`doc_to_visual`. The error is the failure the model
    reported through telemetry (``"<category>: <detail>"``), or ``api_failure: ...`` with no
    text when the whole batch raised. ``gen_kwargs`` (temperature, ``max_new_tokens``) bind
    every model, the remote ``sceval_gemini`` / ``sceval_openai`` too, which otherwise decode
    at their own settings (:func:`faultline_eval.model_wrappers.remote_chat.decoding`)."""
    from lmms_eval.api.instance import Instance

    for doc in docs:  # our remote wrappers follow these gen_kwargs only when the doc says so
        doc["binding_gen_kwargs"] = True
    model.task_dict = {task: {SPLIT: docs}}
    simple = bool(getattr(model, "is_simple", True))
    instances = []
    for doc_id, doc in enumerate(docs):
        legend = c3po_task.attachment_legend(doc["item"]) + "\n" if doc["item"] is not None else ""
        context = f"{doc['system']}\n\n{legend}{doc['text']}"
        args = (
            (context, dict(gen_kwargs), doc_to_visual, doc_id, task, SPLIT)
            if simple
            else (context, doc_to_messages, dict(gen_kwargs), doc_id, task, SPLIT)
        )
        metadata = {"task": task, "doc_id": doc_id, "repeats": 1}
        instances.append(Instance("generate_until", args, idx=0, metadata=metadata))
    try:
        replies = model.generate_until(instances)
    except Exception as exc:  # the whole batch failed: every request gets the error
        return [(None, f"api_failure: {type(exc).__name__}: {exc}")] * len(docs)
    out = []
    for doc, reply in zip(docs, replies):
        text = getattr(reply, "text", reply)
        text = text if isinstance(text, str) else str(text)
        call = telemetry.take(doc["row_id"])
        out.append((text, f"{call.failure}: {call.detail}" if call is not None and call.failure else None))
    return out


class LmmsJudge:
    def __init__(
        self,
        model: str,
        model_args: str = "",
        model_instance: Any = None,
        *,
        media: bool = True,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        thinking: bool | None = None,
    ) -> None:
        from lmms_eval.utils import simple_parse_args_string

        args = simple_parse_args_string(model_args) if model_args else {}
        named = next((str(args[k]) for k in ID_ARGS if args.get(k)), "")
        self.judge_id = f"lmms:{model}" + (f":{named}" if named else "")
        self.sees_media = bool(media)
        self.prompt_version = f"{PROMPT_VERSION}+{'media' if media else 'text'}"
        self.max_new_tokens = int(max_new_tokens)
        self.thinking = "thinking" in self.judge_id.lower() if thinking is None else bool(thinking)
        self.model = model_instance or load_model(model, model_args)
        self._counter = 0

    @classmethod
    def gemini(cls, args: str) -> LmmsJudge:
        """The ``gemini:<model>[,<model args>]`` judge: ``sceval_gemini`` with no reply store (the
        verdict cache does the caching) and the verdict budget as a model argument."""
        if args and "=" not in args.split(",")[0]:
            args = f"model_version={args}"
        model_args, settings = split_judge_settings(args)
        extra = ["store=none"]  # our verdict cache does the caching; the model's reply store would duplicate it
        if "max_output_tokens=" not in model_args:  # Gemini's budget is a model argument, not a gen kwarg
            extra.append(f"max_output_tokens={settings.get('judge_max_new_tokens', DEFAULT_MAX_NEW_TOKENS)}")
        return cls.from_spec("sceval_gemini", ",".join(a for a in (args, *extra) if a))

    @classmethod
    def from_spec(cls, model: str, model_args: str = "") -> LmmsJudge:
        """Build from a spec's model name and arguments, ``judge_*`` settings included."""
        args, settings = split_judge_settings(model_args)
        thinking = settings.get("judge_thinking", "auto")
        return cls(
            model,
            args,
            media=flag(settings.get("judge_media", "true"), "judge setting judge_media"),
            max_new_tokens=int(settings.get("judge_max_new_tokens", DEFAULT_MAX_NEW_TOKENS)),
            thinking=None if thinking.lower() == "auto" else flag(thinking, "judge setting judge_thinking"),
        )

    def judge(self, requests: Sequence[JudgeRequest]) -> list[Verdict]:
        verdicts: list[Verdict | None] = [None] * len(requests)
        docs, asked = [], []
        for i, request in enumerate(requests):
            if self.sees_media and request.item is None:
                verdicts[i] = Verdict(
                    None,
                    self.judge_id,
                    error=f"media_unavailable: sample {request.sample_id!r}: "
                    "the judge shows media but the request carries no item",
                )
                continue
            self._counter += 1
            docs.append(
                {
                    "row_id": f"{TASK}/{request.sample_id}/{self._counter}",
                    "dataset": TASK,
                    "text": user_text(request, with_media=self.sees_media),
                    "expects_json": False,
                    "system": system_prompt(request.scale),
                    "scale": request.scale,
                    "item": request.item if self.sees_media else None,
                }
            )
            asked.append(i)
        if not docs:
            return verdicts  # type: ignore[return-value]
        gen_kwargs = {"max_new_tokens": self.max_new_tokens, "temperature": 0, "do_sample": False, "until": []}
        for i, doc, (text, error) in zip(asked, docs, generate(self.model, docs, gen_kwargs)):
            if text is None or error:
                verdicts[i] = Verdict(None, self.judge_id, raw=text or "", error=error)
                continue
            value, error = parse_reply(text, thinking=self.thinking, scale=doc["scale"])
            verdicts[i] = Verdict(value, self.judge_id, raw=text.strip(), error=error)
        return verdicts  # type: ignore[return-value]
