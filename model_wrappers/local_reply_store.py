"""The reply store of the local models (model arg ``store``): which file, and each request's key.

A killed run resumes without generating again the greedy replies it had already finished
(:mod:`faultline_eval.core.request_lifecycle` looks them up and writes them).
"""

from __future__ import annotations

from typing import Any

from faultline_eval.core.identity import doc_identity, fingerprint_of
from faultline_eval.core.store import ReplyStore, open_store, request_key, slug
from faultline_eval.model_wrappers.chat_messages import role_texts, with_system_turn
from faultline_eval.model_wrappers.model_args import flag


def open_reply_store(name: str, pretrained: str, store: str | None) -> ReplyStore | None:
    """The reply store of one adapter and checkpoint: ``store=<file.jsonl>``, by default
    ``$SCEVAL_CACHE/replies/<adapter>-<pretrained, sanitised>.jsonl``; ``store=none`` turns it off."""
    return open_store(store, f"{name}-{slug(pretrained)}", name, "greedy requests among them are not generated again")


def generation_settings(wrapper: Any, gen_kwargs: dict) -> dict:
    """The generation settings that change a reply, as the adapters read them."""
    return {
        "max_new_tokens": int(gen_kwargs.get("max_new_tokens") or getattr(wrapper, "default_max_new_tokens", 0)),
        "temperature": float(gen_kwargs.get("temperature") or 0),
        "do_sample": flag(gen_kwargs.get("do_sample", False), "do_sample"),
        "num_beams": int(gen_kwargs.get("num_beams") or 1),
    }


def store_key(wrapper: Any, name: str, doc: Any, messages: list[dict], gen_kwargs: dict) -> str | None:
    """The reply-store key of one request, or None when its reply must not be stored or restored.

    Only greedy decoding (temperature 0, ``do_sample`` off) is keyed: its reply is a function of
    the inputs, so a stored one is what a new run would generate. With sampling every run must be a
    fresh draw (repeated runs are how sampling variance is measured), so such requests are always
    generated. Docs without a dataset and a row id (lmms-eval's own tasks) are not keyed either;
    a wrapped task's docs carry both (:func:`~faultline_eval.core.identity.doc_identity`).
    """
    settings = generation_settings(wrapper, gen_kwargs)
    if settings["temperature"] > 0 or settings["do_sample"]:
        return None
    dataset, row_id = doc_identity(doc)
    if dataset is None or row_id is None:
        return None
    text = role_texts(with_system_turn(messages, getattr(wrapper, "system_prompt", None)))
    return request_key(
        name,
        getattr(wrapper, "pretrained", None),
        fingerprint_of(dataset),
        row_id,
        "simple" if wrapper.is_simple else "chat",
        text,
        settings["max_new_tokens"],
        settings["temperature"],
        settings["do_sample"],
        settings["num_beams"],
    )
