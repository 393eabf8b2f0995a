"""What the lmms-eval models over remote endpoints (``sceval_gemini``, ``sceval_openai``) share.

A subclass says how to build one request (``_build``: the doc's messages, encoded for its
wire, and its reply-store key) and how to send it (``_send``, through its client's
:class:`~.request_loop.RequestLoop`); this class runs them through the client pipeline
(:mod:`.request_pipeline`), hands the task each request's latency, retries and failure category
(:mod:`faultline_eval.core.telemetry`), and reads whether a doc's prompt asks for JSON.
"""

from __future__ import annotations

from typing import Any

from faultline_eval.model_wrappers.model_args import flag  # noqa: F401  (the models' boolean parser)
from faultline_eval.model_wrappers.reference import _lmms_base
from faultline_eval.model_wrappers.request_loop import Reply
from faultline_eval.model_wrappers.request_pipeline import pipelined


def expects_json(doc: dict) -> bool:
    """SCEval's prompt says whether it wants JSON; other docs (C3PO items, judge requests) may
    say so themselves."""
    from sceval_plugin.conditions import catalogue
    from sceval_plugin.eval_prompts import prompt_template

    if "condition_id" in doc:
        return prompt_template(catalogue().get(doc["condition_id"]).prompt).expects_json
    return bool(doc.get("expects_json", False))


def decoding(request: Any, doc: dict, max_tokens: int) -> tuple[float, int, tuple]:
    """(temperature, token budget, extra reply-store key parts) of one request.

    Task docs get the wrapper's own decoding, as documented: temperature 0 and its
    ``max_output_tokens`` / ``max_tokens`` argument, whatever the task's generation_kwargs say
    (no key parts: stored replies of evaluation runs keep their keys). A doc that says its
    request's gen_kwargs bind (``binding_gen_kwargs``: the C3PO build stages and judges,
    :func:`faultline_eval.model_wrappers.lmms_judge.generate`) gets their ``temperature`` and
    ``max_new_tokens``, which then are part of the key."""
    if not doc.get("binding_gen_kwargs"):
        return 0.0, max_tokens, ()
    gen_kwargs = request.args[2]  # a chat request: (context, doc_to_messages, gen_kwargs, doc_id, task, split)
    temperature = float(gen_kwargs.get("temperature") or 0)
    budget = int(gen_kwargs.get("max_new_tokens") or max_tokens)
    return temperature, budget, (temperature, budget)


def record(row_id: str, reply: Reply) -> None:
    """Tell the task what this request cost and how it failed (a restored reply: as stored)."""
    from faultline_eval.core import telemetry
    from faultline_eval.core.store import restored_call

    telemetry.record(row_id, restored_call(reply.stored()) if reply.restored else telemetry.Call(
        latency_s=reply.latency_s, retries=reply.retries, failure=reply.failure, detail=reply.detail))


class RemoteChat(_lmms_base()):  # type: ignore[misc]
    is_simple = False
    name = "remote"
    max_concurrency, build_workers, lookahead = 4, None, None

    def set_pipeline(self, max_concurrency: Any, build_workers: Any, lookahead: Any) -> None:
        self.max_concurrency = max(1, int(max_concurrency))
        self.build_workers = int(build_workers) if build_workers else None
        self.lookahead = int(lookahead) if lookahead is not None else None

    def doc(self, request: Any) -> dict:
        _, _, _, doc_id, task, split = request.args
        return self.task_dict[task][split][doc_id]

    def _build(self, request: Any) -> Any:
        raise NotImplementedError

    def _send(self, built: Any) -> str:
        raise NotImplementedError

    def loglikelihood(self, requests):
        raise NotImplementedError(f"{self.name} only generates")

    def generate_until_multi_round(self, requests):
        raise NotImplementedError(f"{self.name} answers in one round")

    def generate_until(self, requests):
        from tqdm import tqdm

        with tqdm(total=len(requests), disable=self.rank != 0, desc=self.name) as bar:
            return pipelined(requests, self._build, self._send, concurrency=self.max_concurrency,
                             build_workers=self.build_workers, lookahead=self.lookahead, progress=bar.update)
