"""The model client every LLM build stage (generate, classify, audit) asks through.

A model spec names the backend, as judge specs do (:mod:`faultline_eval.judges`):

``gemini:<model>[,base_url=...,max_retries=...,timeout=...,initial_backoff=...,max_backoff=...]``
    Gemini through google-genai (:class:`faultline_eval.model_wrappers.gemini_client.GeminiClient`:
    retries with backoff on 408/429/5xx/timeouts, failure categories, token counts). The key
    comes only from ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``. The JSON response schema and the
    stage's temperature are sent with each request; media go inline (video frames, picture, audio).
``lmms:<model>,<model_args>`` (or ``lmms:<model>:<model_args>``, the judge's spelling)
    any lmms-eval model, built by the judge's loader (:func:`faultline_eval.model_wrappers.lmms_judge.load_model`)
    and asked by :func:`faultline_eval.model_wrappers.lmms_judge.generate`, shown the media the way evaluated
    models are. It gets no schema (lmms-eval has none); its reply is parsed as JSON all the same.

Every stage request is an :class:`Ask`. Each stage has one
:class:`~faultline_eval.core.request_lifecycle.RequestLifecycle` (:attr:`BuildClient.lifecycle`)
over one reply store, ``<build dir>/replies/<stage>.jsonl``, keyed by the model, the prompt
version, the stage, the sample, the attempt, the prompt text, the media paths and the decoding
settings: its store lookup (``restored``) answers a finished request without sending it, so a
build killed with ``kill -9`` resumes without re-sending; its ``settle`` counts a reply and
stores it (API failures are not stored; they are retried). For Gemini the lifecycle is the
:class:`~faultline_eval.model_wrappers.gemini_client.GeminiClient` itself (it also retries);
for an lmms-eval model the client hands each batch to ``generate_until`` between the two steps.
``concurrency`` bounds the requests in flight (Gemini: threads; lmms-eval models: the batch
handed to ``generate_until``). The lifecycle's
:class:`~faultline_eval.core.request_lifecycle.Usage` adds up what the stage cost.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from c3po_plugin.construction import settings as build_settings
from c3po_plugin.construction.model_specs import parse_spec, spec_arguments
from c3po_plugin.construction.stage_prompts import PROMPT_VERSION
from c3po_plugin.data.records import C3POItem, check_media
from faultline_eval.core.registry import did_you_mean
from faultline_eval.core.request_lifecycle import Reply, RequestLifecycle, Usage
from faultline_eval.core.store import ReplyStore, request_key
from faultline_eval.model_wrappers.gemini_client import GeminiClient, message_parts
from faultline_eval.model_wrappers.lmms_judge import generate, load_model

#: Reply failures a resumed run asks again (recorded ``failed``); others are the content's fault.
RETRYABLE = ("api_failure", "media_unavailable")
GEMINI_ARGS = ("model_version", "base_url", "max_retries", "timeout", "initial_backoff", "max_backoff")


@dataclass(frozen=True)
class Ask:
    """One request of a stage: ``key`` is the ledger key (the sample id), ``media`` maps
    video/image/audio to absolute paths, ``attempt`` counts re-asks after a malformed reply."""

    key: str
    template_id: str
    system: str
    text: str
    media: dict[str, str] = field(default_factory=dict)
    schema: dict | None = None
    attempt: int = 0

    def again(self) -> Ask:
        return replace(self, attempt=self.attempt + 1)


def parse_json_reply(text: str) -> tuple[dict | None, str | None]:
    """The JSON object in a reply, and None; or None and why not. Text up to a closing
    ``</think>`` (a reasoning model's thoughts) and Markdown fences are ignored."""
    body = text.rsplit("</think>", 1)[-1].strip()
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", body)
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        return None, "malformed reply: no JSON object"
    try:
        value = json.loads(body[start : end + 1])
    except json.JSONDecodeError as exc:
        return None, f"malformed reply: {exc.msg} at character {exc.pos}"
    if not isinstance(value, dict):
        return None, "malformed reply: not a JSON object"
    return value, None


def media_item(ask: Ask, build_dir: Path):
    """A :class:`~c3po_plugin.data.records.C3POItem` carrying only the ask's media, so stage
    requests load and label media exactly as the C3PO tasks and the judge do."""
    return C3POItem(
        sample_id=ask.key,
        template_id=ask.template_id,
        question="",
        answer="",
        root=str(build_dir),
        video=ask.media.get("video"),
        image=ask.media.get("image"),
        audio=ask.media.get("audio"),
    )


def _messages(ask: Ask, build_dir: Path) -> list[dict]:
    # heavy: the C3PO task module loads the metrics (pandas, scipy); `c3po --help` and the build CLI start without them
    from faultline_eval.tasks.c3po_task import media_content

    media = media_content(media_item(ask, build_dir)) if ask.media else []
    return [
        {"role": "system", "content": [{"type": "text", "text": ask.system}]},
        {"role": "user", "content": media + [{"type": "text", "text": ask.text}]},
    ]


class BuildClient:
    """A stage's model: :meth:`ask_many` answers asks as they finish, from the store when it can
    (through :attr:`lifecycle`, the stage's one request lifecycle and reply store)."""

    model_id: str
    lifecycle: RequestLifecycle

    def __init__(
        self, build_dir: Path, stage: str, *, temperature: float, max_output_tokens: int, concurrency: int
    ) -> None:
        self.build_dir = Path(build_dir)
        self.stage = stage
        self.temperature = float(temperature)
        self.max_output_tokens = int(max_output_tokens)
        self.concurrency = max(1, int(concurrency))
        self.lifecycle = RequestLifecycle(store=ReplyStore(self.build_dir / "replies" / f"{stage}.jsonl"))
        self._version = PROMPT_VERSION

    @property
    def store(self) -> ReplyStore:
        """The stage's reply store (the lifecycle's)."""
        return self.lifecycle.store

    @property
    def usage(self) -> Usage:
        """What the stage's requests cost (the lifecycle's count)."""
        return self.lifecycle.usage

    def store_key(self, ask: Ask) -> str:
        media = sorted(
            (k, str(Path(v).relative_to(self.build_dir)) if Path(v).is_relative_to(self.build_dir) else v)
            for k, v in ask.media.items()
        )
        return request_key(
            self.model_id,
            self._version,
            self.stage,
            ask.key,
            ask.attempt,
            ask.system,
            ask.text,
            media,
            self.temperature,
            self.max_output_tokens,
            json.dumps(ask.schema, sort_keys=True),
        )

    def ask_many(self, asks: list[Ask]) -> Iterator[tuple[Ask, Reply]]:
        raise NotImplementedError


class GeminiBuildClient(BuildClient):
    def __init__(self, args: dict[str, str], build_dir: Path, stage: str, **settings: Any) -> None:
        super().__init__(build_dir, stage, **settings)
        unknown = sorted(set(args) - set(GEMINI_ARGS))
        if unknown:
            hints = ((name, did_you_mean(name, GEMINI_ARGS)) for name in unknown)
            named = ", ".join(f"{name!r}" + (f" ({hint})" if hint else "") for name, hint in hints)
            raise ValueError(f"gemini model spec: unknown argument(s) {named}; use {', '.join(GEMINI_ARGS)}")
        model = args.pop("model_version")
        numbers = {k: float(v) for k, v in args.items() if k != "base_url"}
        self.model_id = f"gemini:{model}"
        # the Gemini client is a request lifecycle: it becomes the stage's, over the stage's store
        self._client = GeminiClient(
            model, base_url=args.get("base_url"), store=self.store, who=f"c3po build {stage}", **numbers
        )
        self.lifecycle = self._client

    def _ask(self, ask: Ask) -> Reply:
        key = self.store_key(ask)
        restored = self.lifecycle.restored(key)
        if restored is not None:  # without decoding any media
            return restored
        try:
            contents, system = message_parts(_messages(ask, self.build_dir))
        except (OSError, ValueError) as exc:
            return Reply("", failure="media_unavailable", detail=f"{type(exc).__name__}: {exc}")
        return self._client.generate(
            contents,
            system=system,
            temperature=self.temperature,
            max_output_tokens=self.max_output_tokens,
            response_schema=ask.schema,
            store_key=key,
        )

    def ask_many(self, asks: list[Ask]) -> Iterator[tuple[Ask, Reply]]:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {pool.submit(self._ask, ask): ask for ask in asks}
            for future in as_completed(futures):
                yield futures[future], future.result()


class LmmsBuildClient(BuildClient):
    def __init__(
        self, model: str, model_args: str, build_dir: Path, stage: str, model_instance: Any = None, **settings: Any
    ) -> None:
        super().__init__(build_dir, stage, **settings)
        self.model_id = f"lmms:{model}" + (f",{model_args}" if model_args else "")
        self.model = model_instance or load_model(model, model_args)
        self._counter = 0

    def ask_many(self, asks: list[Ask]) -> Iterator[tuple[Ask, Reply]]:
        pending = []
        for ask in asks:
            restored = self.lifecycle.restored(self.store_key(ask))
            if restored is not None:
                yield ask, restored
                continue
            try:  # one unreadable file must not fail the whole batch
                check_media(media_item(ask, self.build_dir))
            except ValueError as exc:
                yield ask, Reply("", failure="media_unavailable", detail=str(exc))
                continue
            pending.append(ask)
        gen_kwargs = {
            "max_new_tokens": self.max_output_tokens,
            "temperature": self.temperature,
            "do_sample": self.temperature > 0,
            "until": [],
        }
        for start in range(0, len(pending), self.concurrency):
            batch = pending[start : start + self.concurrency]
            docs = []
            for ask in batch:
                self._counter += 1
                docs.append(
                    {
                        "row_id": f"c3po_build_{self.stage}/{ask.key}/{self._counter}",
                        "dataset": f"c3po_build_{self.stage}",
                        "system": ask.system,
                        "text": ask.text,
                        "expects_json": True,
                        "item": media_item(ask, self.build_dir) if ask.media else None,
                    }
                )
            began = time.perf_counter()
            answers = generate(self.model, docs, gen_kwargs, task=f"c3po_build_{self.stage}")
            latency = (time.perf_counter() - began) / max(1, len(batch))
            for ask, (text, error) in zip(batch, answers):
                failure, _, detail = (error or "").partition(": ")
                reply = Reply(text or "", failure=failure or None, detail=detail, latency_s=latency)
                yield ask, self.lifecycle.settle(reply, self.store_key(ask))


def make_client(
    spec: str,
    build_dir: str | Path,
    stage: str,
    *,
    temperature: float,
    max_output_tokens: int = 8192,
    concurrency: int = 4,
    model_instance: Any = None,
) -> BuildClient:
    """The client a model spec names, for one stage of one build. lmms-eval is imported only
    for an ``lmms:`` spec."""
    backend, model, args = parse_spec(spec)
    settings = dict(temperature=temperature, max_output_tokens=max_output_tokens, concurrency=concurrency)
    if backend == "gemini":
        parsed = spec_arguments(spec, args)
        if "api_key" in parsed:
            raise ValueError(f"{spec}: pass the API key in the environment (GEMINI_API_KEY), not in the spec")
        return GeminiBuildClient({"model_version": model, **parsed}, Path(build_dir), stage, **settings)
    return LmmsBuildClient(model, args, Path(build_dir), stage, model_instance=model_instance, **settings)


def drive(client: BuildClient, asks: Iterable[Ask], settle: Callable[[Ask, Reply], Ask | None], *, desc: str) -> None:
    """Send every ask and hand each reply to ``settle`` (which writes the ledger); an ask that
    ``settle`` returns is sent in the next round (a re-ask after a malformed reply)."""
    from tqdm import tqdm

    pending = list(asks)
    with tqdm(total=len(pending), desc=desc, unit="item") as bar:
        while pending:
            again = []
            for ask, reply in client.ask_many(pending):
                follow = settle(ask, reply)
                if follow is not None:
                    again.append(follow)
                else:
                    bar.update(1)
            pending = again


# --- a stage's replies into its ledger -------------------------------------------------------


def settle_reply(ledger, ask: Ask, reply: Reply, config: dict, *, finish: Callable[[dict], str | None]) -> Ask | None:
    """The shared fate of a stage reply. A transient failure is ``failed``. Otherwise the reply's
    JSON goes to ``finish``, which writes the ledger and returns None, or returns why the answer
    is unusable; an unusable, malformed, empty or refused reply is asked again (the returned ask)
    up to ``malformed_retries`` times, then ``rejected`` with the reason."""
    if reply.failure in RETRYABLE:
        ledger.record(ask.key, "failed", reason=f"{reply.failure}: {reply.detail}")
        return None
    if reply.failure:
        parsed, why = None, ("refusal" if reply.failure == "refusal" else f"{reply.failure} reply")
        why = f"{why}: {reply.detail}" if reply.detail else why
    else:
        parsed, why = parse_json_reply(reply.text)
    if parsed is not None:
        unusable = finish(parsed)
        if unusable is None:
            return None
        why = f"malformed reply: {unusable}"
    if ask.attempt < int(config["malformed_retries"]):
        return ask.again()
    ledger.record(ask.key, "rejected", reason=f"{why} (after {ask.attempt + 1} attempts)")
    return None


def run_stage_asks(
    build_dir: str | Path,
    stage: str,
    model: str,
    asks: list[Ask],
    ledger,
    config: dict,
    *,
    temperature: float,
    finish: Callable[[Ask, dict], str | None],
    model_instance: Any = None,
) -> None:
    """Ask ``model`` every ask of a stage, settle each reply into ``ledger`` (:func:`settle_reply`;
    ``finish(ask, parsed JSON)`` writes the entry or says why the answer is unusable) and add the
    run's cost to the stage's usage file."""
    if not asks:
        return
    client = make_client(
        model,
        build_dir,
        stage,
        temperature=temperature,
        concurrency=config["concurrency"],
        max_output_tokens=config["max_output_tokens"],
        model_instance=model_instance,
    )
    drive(
        client,
        asks,
        lambda ask, reply: settle_reply(ledger, ask, reply, config, finish=lambda parsed: finish(ask, parsed)),
        desc=f"c3po build {stage}",
    )
    build_settings.add_usage(build_dir, stage, client.model_id, client.usage.summary())


def stage_counts(ledger, specs: list, skipped: int) -> dict:
    """The ledger's ok / rejected / failed counts for these templates' samples (keys
    ``{paper id}_{idx}``) and ``skipped``."""
    prefixes = {s.paper_id for s in specs}
    counts = {"ok": 0, "rejected": 0, "failed": 0, "skipped": skipped}
    for entry in ledger.entries():
        if entry["key"].rsplit("_", 1)[0] in prefixes:
            counts[entry["status"]] += 1
    return counts
