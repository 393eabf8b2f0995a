"""Run E1/E2/E3 over the docs of lmms-eval tasks and write one JSONL record per (probe, doc).

Tasks are built by name through lmms-eval's ``TaskManager`` (C3PO and SCEval tasks; lmms-eval's
own with ``include_defaults``), each doc's ``doc_to_messages`` gives what the model sees, and
the model is one of our adapters loaded through lmms-eval's registry with the usual
``--model_args``. ``OUT/<probe>.jsonl`` (a :class:`faultline_eval.core.store.Journal`: checksummed
lines, a torn last line cut off) is appended to as each record finishes, and a second run with the
same ``OUT`` skips the (task, doc) pairs already there: a killed run resumes.

Every record has a ``status``: ``ok``; ``error`` (the probe raised on this doc; ``detail`` says
what); ``no_reference`` (E2 without a transcript or image description, E3 without a transcript
and an image). A blocked model (:class:`spans.Blocked`) writes no E1/E2 records; ``run.json``
names the reason and the report's coverage table shows it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from c3po_plugin.mechanistic import spans
from c3po_plugin.mechanistic.attention import MID_LAYERS_DEFAULT, NotEager, probe_attention, require_eager
from c3po_plugin.mechanistic.fidelity import MAX_NEW_TOKENS, describe_messages, probe_fidelity
from c3po_plugin.mechanistic.lemmas import LEMMATIZERS, content_lemmas
from c3po_plugin.mechanistic.logit_lens import probe_logit_lens
from c3po_plugin.mechanistic.spans import MODALITY_NAMES
from c3po_plugin.templates import registry
from faultline_eval.core.store import Journal, write_atomic

PROBES = ("e1", "e2", "e3")
#: What E1 and E2 ask: the description prompt of E3, as the paper's E1 does (App. F.1), or the task's question.
PROMPTS = ("describe", "task")
RUN_FILE = "run.json"


class ProbeError(RuntimeError):
    """A run that cannot start (refused attention kernel, unknown task, bad references file)."""


def load_adapter(model: str, model_args: str) -> Any:
    from lmms_eval.models import get_model

    return get_model(model).create_from_arg_string(model_args or "", {})


def iter_docs(task_names: Sequence[str], limit: int | None, include_defaults: bool = False) -> Iterator[tuple]:
    """(task name, doc index, doc, messages) for the first ``limit`` docs of each task."""
    import lmms_eval.models  # noqa: F401  (our entry point adds the C3PO and SCEval task folders)
    from lmms_eval.tasks import TaskManager, get_task_dict

    manager = TaskManager("ERROR", include_defaults=include_defaults)
    unknown = [name for name in task_names if name not in manager.all_tasks]
    if unknown:
        raise ProbeError(f"unknown task(s) {', '.join(unknown)}")

    def leaves(tree: dict) -> Iterator[tuple[str, Any]]:
        for key, value in tree.items():
            if isinstance(value, dict):
                yield from leaves(value)
            else:
                yield getattr(key, "group_name", key) if not isinstance(key, str) else key, value

    for name, task in leaves(get_task_dict(list(task_names), manager)):
        for index, doc in enumerate(task.eval_docs):
            if limit is not None and index >= limit:
                break
            to_messages = getattr(task, "doc_to_messages", None) or task.config.doc_to_messages
            if not callable(to_messages):
                raise ProbeError(f"task {name} has no doc_to_messages; the probes need chat messages")
            yield task.config.task or name, index, doc, to_messages(doc)


def doc_info(doc: dict) -> dict:
    """Sample id, template, category, tier and the E2/E3 references a doc carries."""
    info: dict[str, Any] = {
        "row_id": doc.get("row_id"),
        "sample_id": doc.get("sample_id") or doc.get("row_id"),
        "template_id": doc.get("template_id"),
        "category": None,
        "tier": None,
        "transcript": None,
        "image_description": None,
    }
    if info["template_id"]:
        if info["template_id"] in registry():
            template = registry().get(info["template_id"])
            info["category"], info["tier"] = template.category, template.tier
    item = doc.get("item")
    hidden = (json.loads(item) if isinstance(item, str) else item or {}).get("hidden") or {}
    if isinstance(hidden, str):
        hidden = json.loads(hidden)
    info["transcript"], info["image_description"] = hidden.get("transcript"), hidden.get("image_description")
    return info


def read_references(path: str | Path | None) -> dict[str, dict]:
    """``sample_id -> {transcript, image_description}`` from a JSONL file (one object a line)."""
    if not path:
        return {}
    out = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out[str(row["sample_id"])] = {k: row.get(k) for k in ("transcript", "image_description")}
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ProbeError(f"{path}:{number}: expected a JSON object with sample_id ({type(exc).__name__})") from None
    return out


def _done(journal: Journal) -> set[tuple[str, int]]:
    """(task, doc id) of the records already written (a damaged line is reported and is not one)."""
    return {(record["task"], record["doc_id"]) for record in journal.records()}


def check_settings(out: Path, model: str, model_args: str, prompt: str, lemmatizer: str, mask: Sequence[str]) -> None:
    """Refuse, before the model loads, settings no doc could run with and an output folder that
    holds another model's records (a resumed run must be the same run)."""
    if prompt not in PROMPTS:
        raise ProbeError(f"--prompt must be one of {', '.join(PROMPTS)}, got {prompt!r}")
    if lemmatizer not in LEMMATIZERS:
        raise ProbeError(f"--lemmatizer must be one of {', '.join(LEMMATIZERS)}, got {lemmatizer!r}")
    try:
        content_lemmas("probe", lemmatizer)
    except ImportError as exc:
        raise ProbeError(f"--lemmatizer {lemmatizer}: {exc}") from None
    unknown = [m for m in mask if m not in MODALITY_NAMES[:3]]
    if unknown:
        raise ProbeError(f"--mask takes text, audio or image, got {', '.join(unknown)}")
    if (out / RUN_FILE).exists():
        earlier = json.loads((out / RUN_FILE).read_text(encoding="utf-8"))
        if (earlier.get("model"), earlier.get("model_args")) != (model, model_args):
            raise ProbeError(
                f"{out} holds probes of {earlier.get('model')} ({earlier.get('model_args')}); "
                "use another --output_path for another model"
            )


def _peak_memory(device: Any) -> Callable[[], int | None]:
    """Starts a per-sample peak: returns the reader of CUDA's peak allocated bytes (None on CPU)."""
    import torch

    if getattr(device, "type", str(device)) == "cuda" and torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
        return lambda: int(torch.cuda.max_memory_allocated())
    return lambda: None


def run_one(probe: str, adapter: Any, family: Any, messages: list[dict], info: dict, settings: dict) -> dict:
    if probe in ("e1", "e2") and settings["prompt"] == "describe":
        messages = describe_messages(messages)
    roles = spans.image_part_roles(messages)
    if probe == "e1":
        return probe_attention(
            adapter,
            family,
            messages,
            roles,
            max_new_tokens=settings["max_new_tokens"],
            mask_modalities=settings["mask"],
            mid_layers=settings["mid_layers"],
        )
    if probe == "e2":
        text = " ".join(t for t in (info["transcript"], info["image_description"]) if t)
        if not text:
            return {"status": "no_reference", "detail": "no transcript or image description for this sample"}
        return probe_logit_lens(
            adapter,
            family,
            messages,
            roles,
            text,
            lemmatizer=settings["lemmatizer"],
            include_video=settings["lens_video"],
        )
    record = probe_fidelity(
        adapter,
        messages,
        info["transcript"],
        lemmatizer=settings["lemmatizer"],
        max_new_tokens=settings["max_new_tokens"],
    )
    if record["audio_fidelity"] is None and record["image_fidelity"] is None:
        record.update(
            status="no_reference",
            detail="nothing to score against: no audio transcript, and no image or an "
            "image-only description without a content word",
        )
    return record


def _timed_probe(
    probe: str, adapter: Any, family: Any, messages: Any, info: dict, settings: dict, *, where: str
) -> dict[str, Any]:
    """One probe on one doc: its result with ``status`` ("ok", or "error" with the exception in
    ``detail``: one doc's failure does not stop the run), latency and peak memory."""
    from loguru import logger

    peak = _peak_memory(getattr(adapter, "device", "cpu"))
    start = time.perf_counter()
    try:
        result = {"status": "ok", **run_one(probe, adapter, family, messages, info, settings)}
    except NotEager:
        raise
    except Exception as exc:
        logger.opt(exception=exc).error(f"probe {probe}: {where}: {exc}")
        result = {"status": "error", "detail": f"{type(exc).__name__}: {str(exc)[:300]}"}
    return {"latency_s": time.perf_counter() - start, "peak_memory_bytes": peak(), **result}


def run_probes(
    probes: Sequence[str],
    model: str,
    model_args: str,
    tasks: Sequence[str],
    output_path: str | Path,
    *,
    limit: int | None = None,
    references: str | Path | None = None,
    max_new_tokens: int = MAX_NEW_TOKENS,
    mid_layers: tuple[float, float] = MID_LAYERS_DEFAULT,
    lemmatizer: str = "simplemma",
    mask: Sequence[str] = (),
    lens_video: bool = False,
    prompt: str = "describe",
    include_defaults: bool = False,
    adapter: Any = None,
) -> dict:
    """Probe every doc; returns the summary written to ``OUT/run.json``."""
    from loguru import logger

    out = Path(output_path)
    check_settings(out, model, model_args, prompt, lemmatizer, mask)
    out.mkdir(parents=True, exist_ok=True)
    known = read_references(references)
    adapter = adapter if adapter is not None else load_adapter(model, model_args)
    settings = {
        "max_new_tokens": int(max_new_tokens),
        "mid_layers": tuple(mid_layers),
        "lemmatizer": lemmatizer,
        "mask": list(mask),
        "lens_video": bool(lens_video),
        "prompt": prompt,
    }
    summary: dict[str, Any] = {
        "model": model,
        "model_args": model_args,
        "pretrained": getattr(adapter, "pretrained", None),
        "tasks": list(tasks),
        "settings": settings,
        "blocked": None,
        "family": None,
        "counts": {},
    }
    try:
        family = spans.family_of(adapter)
        summary["family"] = family.name
    except spans.Blocked as blocked:
        family, summary["blocked"] = None, blocked.reason
        logger.warning(str(blocked))
    runnable = [p for p in probes if family is not None or p == "e3"]
    if "e1" in runnable:  # refused before any doc, not once per doc
        require_eager(family.language_model(adapter), model)
    write_atomic(out / RUN_FILE, json.dumps(summary, indent=2) + "\n")  # a killed run has one too
    journals = {p: Journal(out / f"{p}.jsonl") for p in runnable}
    done = {p: _done(journals[p]) for p in runnable}
    counts = {p: {"ok": 0, "error": 0, "no_reference": 0, "skipped": 0} for p in runnable}
    for task, doc_id, doc, messages in iter_docs(tasks, limit, include_defaults):
        info = doc_info(doc)
        if info["sample_id"] in known:
            info.update({k: v for k, v in known[info["sample_id"]].items() if v})
        for probe in runnable:
            if (task, doc_id) in done[probe]:
                counts[probe]["skipped"] += 1
                continue
            record = {
                "probe": probe,
                "model": model,
                "pretrained": summary["pretrained"],
                "task": task,
                "doc_id": doc_id,
                **{k: info[k] for k in ("row_id", "sample_id", "template_id", "category", "tier")},
                **_timed_probe(probe, adapter, family, messages, info, settings, where=f"{task} doc {doc_id}"),
            }
            counts[probe][record["status"]] += 1
            journals[probe].append(record)
    summary["counts"] = counts
    summary["not_run"] = {p: summary["blocked"] for p in probes if p not in runnable}
    write_atomic(out / RUN_FILE, json.dumps(summary, indent=2) + "\n")
    return summary
