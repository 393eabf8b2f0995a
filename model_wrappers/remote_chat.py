"""What the lmms-eval models over remote endpoints (``sceval_gemini``, ``sceval_openai``) share.

A subclass says how to build one request (``_build``: the doc's messages, encoded for its
wire, and its reply-store key) and how to send it (``_send``, through its client, a
:class:`faultline_eval.core.request_lifecycle.RequestLifecycle`: store lookup, the call with
retries, telemetry for the doc's row id, store write); this class runs them through the client
pipeline (:mod:`.request_pipeline`), and reads whether a doc's prompt asks for JSON and which
decoding a request gets.
"""

from __future__ import annotations

from typing import Any

from tqdm import tqdm

from faultline_eval.model_wrappers.lmms_base import HostSideModel, lmms_base, without_padding
from faultline_eval.model_wrappers.request_pipeline import pipelined
from sceval_plugin.conditions import catalogue
from sceval_plugin.eval_prompts import prompt_template


def expects_json(doc: dict) -> bool:
    """SCEval's prompt says whether it wants JSON; other docs (C3PO items, judge requests) may
    say so themselves."""
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


class RemoteChat(HostSideModel, lmms_base()):  # type: ignore[misc]
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

    def send_order(self, requests: list) -> list[int]:
        """The order the requests are built and sent in (indices; replies come back in the
        requests' own order whatever it is): as given, unless a model groups them."""
        return list(range(len(requests)))

    def loglikelihood(self, requests):
        raise NotImplementedError(f"{self.name} only generates")

    def generate_until_multi_round(self, requests):
        raise NotImplementedError(f"{self.name} answers in one round")

    def generate_until(self, requests):
        return without_padding(requests, self._generate)

    def _generate(self, requests: list) -> list[str]:
        order = self.send_order(requests)
        with tqdm(total=len(requests), disable=self.rank != 0, desc=self.name) as bar:
            sent = pipelined(
                [requests[i] for i in order],
                self._build,
                self._send,
                concurrency=self.max_concurrency,
                build_workers=self.build_workers,
                lookahead=self.lookahead,
                progress=bar.update,
            )
        replies = [""] * len(requests)
        for index, reply in zip(order, sent, strict=True):
            replies[index] = reply
        return replies
