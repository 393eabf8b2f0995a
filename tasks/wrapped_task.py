"""The functions of a wrapped lmms-eval task (issue 27; docs/design/wrap-any-task.md §3-§5).

A YAML written by :mod:`faultline_eval.tasks.wrap_configs` includes the base task and names
``process_docs__<wrapped name>``, ``doc_to_text__...``, ``doc_to_visual__...``,
``process_results__...`` (and ``doc_to_messages__...`` when the base has one) of this module.
lmms-eval hands task functions no config, so each learns its base task, SCEval condition and
variant from its own name (a module ``__getattr__``, :func:`faultline_eval.tasks.task_hooks.functions_by_name`)
and calls the base task's own functions (:func:`sceval_plugin.base_task.base_config`):

* ``process_docs``: the base's own ``process_docs``; then the wrapper's columns, all in the
  ``_faultline_`` namespace (:data:`~faultline_eval.core.identity.WRAPPED_FIELD_PREFIX`; a dataset holding a column there is refused,
  loudly: :class:`WrappedDocsRefused`): ``_faultline_doc_id`` (lmms-eval's row index, which
  ``process_results`` is not given), ``_faultline_doc_key`` (the doc's seed key),
  ``_faultline_row_id`` (``<wrapped name>/<row>``, the id the project's models report failures
  under, :mod:`faultline_eval.core.telemetry`) and ``_faultline_dataset`` (the docs' identity for
  the reply stores, :mod:`faultline_eval.core.identity`); Audio columns decoded without torchcodec
  (:func:`decoded_audio`); and the generic path's inferences on the docs (question field, id
  column, modalities; :class:`DocPlan`). Order and length are kept, so ``doc_id`` pairs the
  conditions of a run with each other and with the base task.
* ``doc_to_text``: the base's, on the doc with its question corrupted by the condition's text
  operators (the adapter's protected spans held out) and the text controls applied; the task's
  prompt template, options and post-prompt stay the base's.
* ``doc_to_visual`` (the base's arity: lmms-eval passes kwargs only to 2-parameter functions):
  the base's items through :func:`faultline_eval.tasks.wrapped_media.corrupt_media`, with the
  condition's vision/audio operators (:func:`sceval_plugin.render.corrupt`, SCEval's own loop and
  seeds), blank frames / silence for the missing-modality controls, no media for the shortcuts.
* ``doc_to_messages``: the base's on the corrupted doc, each media part's url mapped the same way.
* ``process_results``: the base's dict (the base metrics, aggregated by the base's own
  aggregations) plus ``faultline_trial``: a :class:`~sceval_plugin.sceval_trial.WrappedTrial`,
  which lmms-eval writes to the per-sample log and which never becomes a metric of the results
  (``model_wrappers.lmms_plugin.install_log_only_keys`` drops it before aggregation).

Seeds (§4): every operator call is keyed ``<base>/<doc key>``, the doc key being the adapter's
(the benchmark's own id) or a digest of the doc's text and number fields, never the row; the
variant of each operator is ``min(variant, its variants - 1)`` as in SCEval's renderer. So a
corruption is a pure function of (doc, operator, severity, variant) and, for MME, both questions
of an image see the same corrupted image.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib.util
import inspect
import io
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from loguru import logger

from faultline_eval.core import telemetry
from faultline_eval.core.identity import WRAPPED_DATASET_FIELD, WRAPPED_FIELD_PREFIX, WRAPPED_ROW_ID_FIELD
from faultline_eval.tasks.task_hooks import functions_by_name
from faultline_eval.tasks.wrap_configs import (
    SEPARATOR,
    UNWRAPPED,
    WrapNameError,
    base_adapter,
    condition_named,
    frames_of,
    parse_name,
    probe_acts_on,
)
from faultline_eval.tasks.wrapped_media import SOURCE_FRAMES, FrameGrid, MediaCorruption, NotApplied, corrupt_media
from sceval_plugin import operators
from sceval_plugin import probe_conditions as probes
from sceval_plugin.base_task import base_config, metric_specs
from sceval_plugin.conditions import Condition
from sceval_plugin.eval_prompts import GENERIC_INSTRUCTION, GENERIC_OPEN_INSTRUCTION
from sceval_plugin.render import BLANK_LEVEL, NO_MEDIA_CONTROLS, corrupt, corrupts
from sceval_plugin.sceval_trial import WRAPPED_TRIAL_KEY, WrappedTrial
from sceval_plugin.task_adapters import (
    TaskAdapter,
    corrupt_question,
    infer_key_field,
    infer_question_field,
    modalities_of,
    per_doc_score,
    replace_question,
)

__all__ = [
    "DOC_ID_FIELD",
    "KEY_FIELD",
    "ROW_ID_FIELD",
    "TRIAL_KEY",
    "WrappedTaskError",
    "WrappedDocsRefused",
    "Wrapped",
    "DocPlan",
    "wrapped",
    "doc_plan",
    "doc_key",
    "doc_keys",
    "shown_doc",
    "media_corruption",
    "decoded_audio",
]

#: Columns the wrapped ``process_docs`` adds (never part of a doc's key), all in the namespace
#: :data:`~faultline_eval.core.identity.WRAPPED_FIELD_PREFIX`, where a base dataset's column is refused.
DOC_ID_FIELD = f"{WRAPPED_FIELD_PREFIX}doc_id"
KEY_FIELD = f"{WRAPPED_FIELD_PREFIX}doc_key"
ROW_ID_FIELD = WRAPPED_ROW_ID_FIELD
#: The key of the trial in what ``process_results`` returns (Contract C).
TRIAL_KEY = WRAPPED_TRIAL_KEY
_ADDED = (DOC_ID_FIELD, KEY_FIELD, ROW_ID_FIELD, WRAPPED_DATASET_FIELD)
#: Controls that empty the adapter's context fields (G.4, G.5).
_NO_CONTEXT = ("missing_text", "shortcut_visual_audio", "shortcut_question_options", "shortcut_options_only")
#: Controls that remove or replace the question (G.5): a task whose question field is unknown cannot run them.
_NO_QUESTION = ("shortcut_visual_audio", "shortcut_options_only")


class WrappedTaskError(ValueError):
    """A wrapped task cannot do what its condition asks on this task or doc; the message names both."""


class WrappedDocsRefused(SystemExit):
    """A wrapped task cannot take its base task's docs (a column in the wrapper's namespace, a
    question field that is not text, ...); the message names the task and the field.

    Raised from ``process_docs``, where lmms-eval retries any ``Exception`` five times, then logs
    it as a bare ``RetryError`` and exits 0: a ``SystemExit`` passes both, so plain ``lmms-eval``
    and ``faultline-eval`` stop with this message and exit status 1."""


@dataclass(frozen=True)
class Wrapped:
    """What a wrapped task's name says: the base task, the condition, the variant and the adapter;
    and how its folder hands video files over (``frames``, from the manifest)."""

    name: str
    base: str
    condition: Condition
    variant: int
    adapter: TaskAdapter
    frames: str = SOURCE_FRAMES


@functools.cache
def wrapped(name: str) -> Wrapped:
    """The parts of wrapped task ``name`` (``<base>__<condition id>__var<k>``)."""
    parsed = parse_name(name)
    if parsed is None or parsed.variant is None:
        raise WrapNameError(f"{name!r} is not a wrapped task name (<base>__<condition>__var<k>)")
    condition = condition_named(parsed.selector)
    if condition is None:
        raise WrapNameError(f"{name}: no SCEval condition {parsed.selector!r}")
    if not 0 <= parsed.variant < condition.variants:
        raise WrapNameError(f"{name}: condition {condition.id!r} has {condition.variants} variant(s)")
    return Wrapped(name, parsed.base, condition, parsed.variant, base_adapter(parsed.base), frames_of(parsed.base))


@dataclass(frozen=True)
class DocPlan:
    """What a wrapped task knows of its docs: the adapter's declarations, else the generic path's
    inferences on the dataset (made once by ``process_docs``)."""

    question_field: str | None
    key_field: str | None
    modalities: frozenset[str]


_plans: dict[str, DocPlan] = {}
_plans_lock = threading.Lock()


def _specific_kwargs(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The base's ``lmms_eval_specific_kwargs`` for no particular model (its ``default``)."""
    kwargs = config.get("lmms_eval_specific_kwargs")
    if not isinstance(kwargs, dict):
        return None
    return dict(kwargs.get("default", kwargs))


def _infer_plan(task: Wrapped, key_field: str | None, first: dict[str, Any]) -> DocPlan:
    adapter, config = task.adapter, base_config(task.base)
    question = adapter.question_field
    if adapter.infers_question:
        question = infer_question_field(first, _base_text(config, first, _specific_kwargs(config)))
    modalities = adapter.modalities
    if modalities is None:
        modalities = modalities_of(_base_visual(config, first, _specific_kwargs(config)))
    plan = DocPlan(question, key_field, modalities)
    where = f"wrapped task {task.name} ({adapter.label})"
    if corrupts(task.condition, "text") and question is None:
        raise WrappedTaskError(
            f"{where}: condition {task.condition.id!r} corrupts the question, but no field among the "
            "question fields occurs in the prompt; register a task adapter naming it"
        )
    if task.condition.control in _NO_QUESTION and question is None:
        raise WrappedTaskError(
            f"{where}: control {task.condition.control!r} removes the question, but no field among the "
            "question fields occurs in the prompt (it would show the question); register a task adapter naming it"
        )
    if task.condition.control in NO_MEDIA_CONTROLS and question is None:
        raise WrappedTaskError(
            f"{where}: control {task.condition.control!r} keeps only the text, but no field among the "
            "question fields occurs in the prompt (the model would see a fixed instruction alone); "
            "register a task adapter naming the question"
        )
    if question is not None and not isinstance(first.get(question), str):
        raise WrappedTaskError(f"{where}: the question field {question!r} is not a string field of the docs")
    for modality in ("vision", "audio"):
        if corrupts(task.condition, modality) and modality not in modalities:
            raise WrappedTaskError(
                f"{where}: condition {task.condition.id!r} corrupts {modality}, but the task's "
                f"doc_to_visual feeds only {sorted(modalities)}"
            )
    return plan


def doc_plan(task: Wrapped, doc: Mapping[str, Any] | None = None) -> DocPlan:
    """The task's :class:`DocPlan` (made by ``process_docs``; else from ``doc`` alone, when a
    caller reaches a function before process_docs ran in this process)."""
    with _plans_lock:
        plan = _plans.get(task.name)
    if plan is None:
        if doc is None:
            raise WrappedTaskError(f"wrapped task {task.name}: its process_docs has not run in this process")
        first = _base_doc(doc)
        plan = _infer_plan(task, None if task.adapter.doc_key else infer_key_field([first]), first)
        with _plans_lock:
            _plans.setdefault(task.name, plan)
    return plan


def _base_doc(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in _ADDED}


def doc_key(task: Wrapped, doc: Mapping[str, Any]) -> str:
    """The doc's key: the ``_faultline_doc_key`` column ``process_docs`` wrote (the adapter's key,
    the inferred id column, else the digest of its fields and media file names), computed once
    from the whole doc, so ``process_results``, which lmms-eval gives the doc without its media
    columns, sees the same key as ``doc_to_visual``."""
    if KEY_FIELD in doc:
        return str(doc[KEY_FIELD])
    return task.adapter.key_of(_base_doc(doc), doc_plan(task, doc).key_field)


def _seed_key(task: Wrapped, key: str) -> str:
    return f"{task.base}/{key}"


# --- the text -------------------------------------------------------------------------------------


def _empty_like(value: Any) -> Any:
    return [] if isinstance(value, (list, tuple)) else ({} if isinstance(value, dict) else "")


def shown_doc(task: Wrapped, doc: Mapping[str, Any]) -> dict[str, Any]:
    """A shallow copy of ``doc`` as the condition shows it: the question corrupted by the text
    operators (protected spans held out), the context fields emptied by the controls that remove
    the context, the question replaced by the generic instruction (visual+audio shortcut) or
    removed (options-only shortcut). Media are not touched here."""
    condition, adapter = task.condition, task.adapter
    field = doc_plan(task, doc).question_field
    shown = _ordered(task, doc)
    if field is not None and corrupts(condition, "text"):
        key = _seed_key(task, doc_key(task, doc))

        def corrupt_text(text: str, seed_key: str) -> str:
            return corrupt(condition, "text", text, task.variant, seed_key)

        shown[field] = corrupt_question(doc[field], adapter.protected, corrupt_text, key)
    control = condition.control
    if control in _NO_CONTEXT:
        for name in adapter.context_fields:
            shown[name] = _empty_like(doc.get(name))
    if field is not None and control == "shortcut_visual_audio":
        instruction = GENERIC_INSTRUCTION if adapter.options_field is not None else GENERIC_OPEN_INSTRUCTION
        shown[field] = replace_question(doc[field], adapter.protected, instruction)
    elif field is not None and control == "shortcut_options_only":
        shown[field] = ""
    return shown


def _ordered(task: Wrapped, doc: Mapping[str, Any]) -> dict[str, Any]:
    """The doc with its options in the condition's order (option-order conditions; the adapter
    re-points the gold, so the base's own process_results scores the order shown)."""
    reorder = task.adapter.reorder_options
    if task.condition.block == "option_order" and reorder is not None:
        try:
            return dict(reorder(doc, task.condition.option_order))
        except (KeyError, ValueError) as exc:
            raise WrappedTaskError(f"{task.name} doc {doc_key(task, doc)}: cannot reorder the options: {exc}") from exc
    return dict(doc)


def _base_text(config: Mapping[str, Any], doc: Mapping[str, Any], kwargs: dict[str, Any] | None) -> str:
    """The base ``doc_to_text`` as lmms-eval calls it (a function, a field name or a template)."""
    function = config.get("doc_to_text")
    if callable(function):
        return function(doc) if kwargs is None else function(doc, kwargs)
    if isinstance(function, str):
        if function in doc:
            return str(doc[function])
        # heavy: lmms-eval's template renderer (jinja), only for template prompts
        from lmms_eval.utils import apply_template

        return apply_template(function, dict(doc))
    raise WrappedTaskError(f"base doc_to_text {function!r} is neither a function, a field nor a template")


def _make_doc_to_text(name: str) -> Callable[..., str]:
    task = wrapped(name)

    def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
        return _base_text(base_config(task.base), shown_doc(task, doc), lmms_eval_specific_kwargs)

    return doc_to_text


# --- the media ------------------------------------------------------------------------------------


def media_corruption(task: Wrapped, key: str) -> MediaCorruption:
    """What the condition does to the media of the doc keyed ``key``: its vision and audio
    operators (SCEval's loop, seeded ``<base>/<key>``), blank frames at
    :data:`~sceval_plugin.render.BLANK_LEVEL` / silence for the missing-modality controls, no
    media for the shortcut controls. A condition that changes no media has the identity
    ``unchanged``, so its files (video re-encodes) are shared by every such condition."""
    condition, variant, seed_key = task.condition, task.variant, _seed_key(task, key)
    if condition.probe is not None:
        return _probe_corruption(task, key)
    vision: Callable[[np.ndarray], np.ndarray] | None = None
    audio: Callable[[np.ndarray, int], np.ndarray] | None = None
    if corrupts(condition, "vision"):

        def vision(frames: np.ndarray) -> np.ndarray:
            return corrupt(condition, "vision", frames, variant, seed_key)

    elif condition.control == "missing_vision":

        def vision(frames: np.ndarray) -> np.ndarray:
            return np.full_like(frames, BLANK_LEVEL)

    if corrupts(condition, "audio"):

        def audio(wave: np.ndarray, rate: int) -> np.ndarray:  # fractions and amplitude: any rate
            return corrupt(condition, "audio", wave, variant, seed_key)

    elif condition.control == "missing_audio":

        def audio(wave: np.ndarray, rate: int) -> np.ndarray:
            return np.zeros_like(wave)

    drop = condition.control in NO_MEDIA_CONTROLS
    changed = vision is not None or audio is not None
    identity = f"{condition.id}/var{variant}/{seed_key}/seed{operators.seed_scheme()}" if changed else "unchanged"
    return MediaCorruption(vision=vision, audio=audio, drop_media=drop, identity=identity)


#: (wrapped task, doc key) -> why the condition's probe did not apply to that doc's media, as far
#: as this process has run it (``process_results`` records it in the trial).
_probe_not_applicable: dict[tuple[str, str], str] = {}


def _probe_corruption(task: Wrapped, key: str) -> MediaCorruption:
    """The probe of ``task``'s condition on the doc keyed ``key`` (G.10; only the probes of
    :data:`~faultline_eval.tasks.wrap_configs.DOC_PROBES` reach here): the probe's own function
    through :func:`sceval_plugin.probe_conditions.apply`, seeded as ``apply`` seeds every probe
    with the doc's seed key ``<base>/<key>`` as sample id, on the decoded frames (an image: one
    frame, then ``"image"``; else ``"frames"``) or the audio at its own rate (the probe's seconds
    measured at that rate), whichever it changes
    (:func:`~faultline_eval.tasks.wrap_configs.probe_acts_on`). Frame times are not stated, as for
    a frame list. A doc the probe does not apply to (one frame where order is probed, audio too
    short) is shown unchanged and its reason recorded in its trial, as SCEval does (also when its
    file is reused from the wrapped media cache, which keeps the reason beside the file).
    The frame budget of a video file is its grid instead (``exactly`` N frames over the duration,
    G.10's rule, the one :meth:`~sceval_plugin.data.records.OmniItem.frames_at_budget` decodes
    with); ``"default"`` is the task's grid, so it equals clean."""
    call, seed_key = task.condition.probe, _seed_key(task, key)

    def run(frames: np.ndarray | None, wave: np.ndarray | None, rate: int = operators.SAMPLE_RATE) -> probes.Evidence:
        kind = None if frames is None else ("image" if len(frames) == 1 else "frames")
        shown_kind = None if kind is None else ("image" if kind == "image" else "video frames")
        evidence = probes.Evidence(probes.BareItem(seed_key, kind), "", "", frames, wave, None, shown_kind, rate)
        shown, _, reason = probes.apply(call, evidence, variant=task.variant)
        if reason is not None:
            raise NotApplied(reason)
        return shown

    def not_applied(reason: str) -> None:
        logger.warning(f"{task.name} doc {key}: probe {call.id} does not apply: {probes.NOT_APPLICABLE[reason]}")
        with _plans_lock:
            _probe_not_applicable[(task.name, key)] = reason

    vision: Callable[[np.ndarray], np.ndarray] | None = None
    audio: Callable[[np.ndarray, int], np.ndarray] | None = None
    if probe_acts_on(call) == "audio":

        def audio(wave: np.ndarray, rate: int) -> np.ndarray:
            return run(None, wave, rate).audio

    else:

        def vision(frames: np.ndarray) -> np.ndarray:
            return run(frames, None).frames

    grid = None
    if call.name == "frame_budget" and call.parameter != "default":
        grid = FrameGrid(exactly=call.parameter)
    identity = f"{task.condition.id}/var{task.variant}/{seed_key}/seed{operators.seed_scheme()}"
    # the budget (of a frame list), the middle drop and the gaps change how many frames or samples there are
    keeps_length = call.name != "frame_budget" and not str(call.parameter).startswith(("middle_drop", "audio_gaps"))
    return MediaCorruption(
        vision=vision, audio=audio, identity=identity, keeps_length=keeps_length, grid=grid, not_applied=not_applied
    )


def _frame_grid(task: Wrapped) -> FrameGrid | None:
    """The grid a video file is re-encoded on; None: every source frame (``frames=source``)."""
    if task.frames == SOURCE_FRAMES:
        return None
    return FrameGrid() if task.adapter.frame_budget is None else FrameGrid(max_frames=task.adapter.frame_budget)


def _base_visual(config: Mapping[str, Any], doc: Mapping[str, Any], kwargs: dict[str, Any] | None) -> list[Any]:
    """The base ``doc_to_visual`` as lmms-eval calls it (kwargs only to 2-parameter functions)."""
    function = config.get("doc_to_visual")
    if function is None:
        return []
    if isinstance(function, str):
        return [doc[function]]
    if kwargs is not None and len(inspect.signature(function).parameters) == 2:
        return list(function(doc, kwargs))
    return list(function(doc))


def _visuals(task: Wrapped, doc: dict[str, Any], kwargs: dict[str, Any] | None) -> list[Any]:
    key = doc_key(task, doc)
    corruption = media_corruption(task, key)
    if corruption.drop_media:
        return []
    # the base reads its media from the doc as given: the text conditions keep av_odyssey's
    # tags in place, so the media are the same, and a replaced question would lose them
    items = _base_visual(base_config(task.base), doc, kwargs)
    if not items and doc_plan(task, doc).modalities == {"text"}:
        return []
    return corrupt_media(items, corruption, where=f"{task.name} doc {key}", grid=_frame_grid(task))


def _make_doc_to_visual(name: str) -> Callable[..., list[Any]]:
    task = wrapped(name)
    base = base_config(task.base).get("doc_to_visual")
    if callable(base) and len(inspect.signature(base).parameters) == 2:

        def doc_to_visual_with_kwargs(doc: dict[str, Any], lmms_eval_specific_kwargs: Any) -> list[Any]:
            return _visuals(task, doc, lmms_eval_specific_kwargs)

        return doc_to_visual_with_kwargs

    def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
        return _visuals(task, doc, None)

    return doc_to_visual


_MEDIA_PARTS = ("image", "video", "audio")


def _make_doc_to_messages(name: str) -> Callable[..., list[dict[str, Any]]]:
    task = wrapped(name)

    def doc_to_messages(doc: dict[str, Any], lmms_eval_specific_kwargs: Any = None) -> list[dict[str, Any]]:
        function = base_config(task.base)["doc_to_messages"]
        params = inspect.signature(function).parameters
        shown = shown_doc(task, doc)
        passes_kwargs = "lmms_eval_specific_kwargs" in params or len(params) == 2
        messages = (
            function(shown, lmms_eval_specific_kwargs=lmms_eval_specific_kwargs) if passes_kwargs else function(shown)
        )
        key = doc_key(task, doc)
        corruption = media_corruption(task, key)
        out = []
        for message in messages:
            content = message.get("content")
            if not isinstance(content, list):
                out.append(message)
                continue
            parts = []
            for index, part in enumerate(content):
                if isinstance(part, dict) and part.get("type") in _MEDIA_PARTS:
                    if corruption.drop_media:
                        continue
                    where = f"{task.name} doc {key} message part {index}"
                    (url,) = corrupt_media([part["url"]], corruption, where=where, grid=_frame_grid(task))
                    part = {**part, "url": url}
                parts.append(part)
            out.append({**message, "content": parts})
        return out

    return doc_to_messages


# --- the docs -------------------------------------------------------------------------------------


def decoded_audio(dataset: Any) -> Any:
    """``dataset`` with its Audio columns read undecoded and decoded with soundfile on access into
    ``{"array", "sampling_rate", "path"}`` (what datasets<4 gave and the audio models expect),
    when torchcodec is absent: datasets>=4 decodes Audio through torchcodec, and lmms-eval
    touches the first doc when it builds a task. With torchcodec installed, ``dataset`` as is."""
    # heavy: datasets and soundfile load only for a wrapped task's docs
    import datasets
    import soundfile

    columns = [name for name, feature in dataset.features.items() if isinstance(feature, datasets.Audio)]
    if not columns or importlib.util.find_spec("torchcodec") is not None:
        return dataset
    for name in columns:
        dataset = dataset.cast_column(name, datasets.Audio(decode=False))

    def decode(batch: dict[str, Any]) -> dict[str, Any]:
        for name in columns:
            if name in batch:
                decoded = []
                for value in batch[name]:
                    wave, rate = soundfile.read(io.BytesIO(value["bytes"]), dtype="float32")
                    decoded.append({"array": wave, "sampling_rate": rate, "path": value.get("path")})
                batch[name] = decoded
        return batch

    return dataset.with_transform(decode)


def _process_docs(dataset: Any, name: str) -> Any:
    task = wrapped(name)
    base = base_config(task.base).get("process_docs")
    if callable(base):
        dataset = base(dataset)
    taken = [column for column in dataset.column_names if column.startswith(WRAPPED_FIELD_PREFIX)]
    if taken:
        raise WrappedDocsRefused(
            f"wrapped task {name}: the docs of {task.base} have the column(s) {', '.join(map(repr, taken))}, in the "
            f"namespace {WRAPPED_FIELD_PREFIX!r} the wrapper adds its own fields in; rename them in the dataset"
        )
    rows = len(dataset)
    if not rows:
        return decoded_audio(dataset)
    # The docs' identity for the models' reply stores (a killed run resumes from its replies): the
    # base docs' content fingerprint (datasets derives it from the files and every transform) and
    # the seed scheme, which decides the corrupted bytes.
    identity = f"{task.base}#{dataset._fingerprint}-seed{operators.seed_scheme()}"
    keys, key_field = doc_keys(task, dataset)
    dataset = dataset.add_column(DOC_ID_FIELD, list(range(rows)))
    dataset = dataset.add_column(KEY_FIELD, keys)
    dataset = dataset.add_column(ROW_ID_FIELD, [f"{name}/{row}" for row in range(rows)])
    dataset = dataset.add_column(WRAPPED_DATASET_FIELD, [identity] * rows)
    dataset = decoded_audio(dataset)
    try:
        plan = _infer_plan(task, key_field, _base_doc(dataset[0]))
    except WrappedTaskError as exc:
        raise WrappedDocsRefused(str(exc)) from None
    with _plans_lock:
        _plans[name] = plan
    logger.debug(f"{name}: {task.adapter.label}, {plan}")
    return dataset


def doc_keys(task: Wrapped, dataset: Any) -> tuple[list[str], str | None]:
    """The key of every doc of ``dataset`` (a ``datasets.Dataset`` as the base's process_docs
    left it), and the id column the generic path found (None: the adapter's key, or digests)."""
    docs = _docs_for_keys(dataset)
    key_field = None if task.adapter.doc_key is not None else infer_key_field(docs)
    return [task.adapter.key_of(doc, key_field) for doc in docs], key_field


def _docs_for_keys(dataset: Any) -> list[dict[str, Any]]:
    """Every doc without decoding its media: the plain columns, plus ``<column>.path`` for each
    image/audio column whose stored file name is known (so two docs that differ only by their
    recording, e.g. two utterances with the same transcript, still get different digests)."""
    import datasets  # heavy: as in decoded_audio

    media = [n for n, f in dataset.features.items() if isinstance(f, (datasets.Audio, datasets.Image))]
    docs = dataset.remove_columns(media).to_list() if media else dataset.to_list()
    for name in media:
        stored = dataset.cast_column(name, type(dataset.features[name])(decode=False))[name]
        for doc, value in zip(docs, stored):
            path = value.get("path") if isinstance(value, dict) else None
            if path:
                doc[f"{name}.path"] = path
    return docs


def _make_process_docs(name: str) -> Callable[[Any], Any]:
    wrapped(name)  # a bad name fails when lmms-eval reads the YAML, not at the first doc

    def process_docs(dataset: Any) -> Any:
        return _process_docs(dataset, name)

    return process_docs


# --- the results ----------------------------------------------------------------------------------


def _metric_items(task: Wrapped, doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    """What lmms-eval's ``ConfigurableTask.process_results`` gives a ``generate_until`` task
    without a ``process_results`` of its own (clotho_aqa): each ``metric_list`` metric from
    lmms-eval's registry on (``doc_to_target``, reply), with the entry's options."""
    # heavy: lmms-eval's metric registry, filled by its metrics module
    import lmms_eval.api.metrics  # noqa: F401
    from lmms_eval.api.registry import METRIC_REGISTRY

    config = base_config(task.base)
    if config.get("output_type", "generate_until") != "generate_until" or config.get("doc_to_choice") is not None:
        raise WrappedTaskError(
            f"wrapped task {task.name}: the base has no process_results and is not a plain generate_until "
            "task; wrapping it needs a process_results"
        )
    target = config.get("doc_to_target")
    if callable(target):
        gold = target(doc)
    elif isinstance(target, str) and target in doc:
        gold = doc[target]
    elif isinstance(target, str):
        from lmms_eval.utils import apply_template  # heavy: as above

        gold = apply_template(target, dict(doc))
    else:
        gold = target
    golds = list(gold) if isinstance(gold, list) else [gold]
    reply = [str(r).strip() if r is not None else "" for r in results]
    out = {}
    for entry in config.get("metric_list") or []:
        metric = entry["metric"]
        options = {k: v for k, v in entry.items() if k not in ("metric", "aggregation", "higher_is_better")}
        scores = []
        for one in golds:
            value = METRIC_REGISTRY[metric](references=[one], predictions=reply, **options)
            scores.append(value[metric] if isinstance(value, dict) else value)
        out[metric] = scores[0] if len(scores) == 1 else float(any(scores))
    return out


def _unit(task: Wrapped, doc: Mapping[str, Any], key: str) -> str:
    """The bootstrap resample unit: the adapter's; generically the base's ``cluster_key`` field
    (videomme: ``videoID``) when the doc has it, else the doc key."""
    if task.adapter.resample_unit is None:
        cluster = base_config(task.base).get("cluster_key")
        if isinstance(cluster, str) and cluster in doc:
            return str(doc[cluster])
    return task.adapter.unit_of(_base_doc(doc), key)


@functools.cache
def _score_higher_is_better(base: str, pattern: str) -> bool:
    """Whether every base metric the per-doc score may be read from (the adapter's pattern; ``*``
    generically) counts higher as better, as lmms-eval resolves the direction."""
    return all(spec.higher_is_better for spec in metric_specs(base) if fnmatch.fnmatchcase(spec.name, pattern))


def _make_process_results(name: str) -> Callable[..., dict[str, Any]]:
    task = wrapped(name)

    def process_results(doc: dict[str, Any], results: list[Any], **kwargs: Any) -> dict[str, Any]:
        base = base_config(task.base).get("process_results")
        scored = _ordered(task, doc)
        out = dict(base(scored, results, **kwargs)) if callable(base) else _metric_items(task, scored, results)
        reply = results[0] if results else ""
        call = telemetry.take(str(doc.get(ROW_ID_FIELD, "")))
        invalid = call.failure if call is not None and call.failure else None
        if invalid is None and not str(reply or "").strip():
            invalid = "empty"
        key = doc_key(task, doc)
        score = per_doc_score(out, task.adapter.score)
        with _plans_lock:
            not_applicable = _probe_not_applicable.get((task.name, key))
        trial = WrappedTrial(
            sample_id=key,
            variant=task.variant,
            correct=WrappedTrial.correct_of(
                score, _score_higher_is_better(task.base, task.adapter.score[0] if task.adapter.score else "*")
            ),
            invalid=invalid,
            base_task=task.base,
            condition_id=task.condition.id,
            doc_id=int(doc.get(DOC_ID_FIELD, -1)),
            unit=_unit(task, doc, key),
            score=score,
            adapter=task.adapter.label,
            seed_scheme=str(operators.seed_scheme()),
            not_applicable=not_applicable,
            frames=task.frames,
        )
        out[TRIAL_KEY] = trial.to_json()
        return out

    return process_results


def _make_unwrapped_docs(name: str) -> Callable[[Any], Any]:
    """``process_docs`` of ``<base>__unwrapped`` (the base task on the wrapped tasks' data): the
    base's own, then :func:`decoded_audio` (a no-op with torchcodec or without Audio columns)."""
    parsed = parse_name(name)
    if parsed is None or parsed.selector != UNWRAPPED or parsed.variant is not None:
        raise WrapNameError(f"{name!r} is not an unwrapped base task name (<base>__{UNWRAPPED})")

    def process_docs(dataset: Any) -> Any:
        base = base_config(parsed.base).get("process_docs")
        return decoded_audio(base(dataset) if callable(base) else dataset)

    return process_docs


_FACTORIES: dict[str, Callable[[str], Callable[..., Any]]] = {
    "process_docs": _make_process_docs,
    "doc_to_text": _make_doc_to_text,
    "doc_to_visual": _make_doc_to_visual,
    "doc_to_messages": _make_doc_to_messages,
    "process_results": _make_process_results,
    "unwrapped_docs": _make_unwrapped_docs,
}
_GETTERS = [functions_by_name(f"{fn}{SEPARATOR}", make, factory=True) for fn, make in _FACTORIES.items()]


def __getattr__(name: str) -> Callable[..., Any]:
    """``<function>__<wrapped task name>``, as the generated YAMLs name them."""
    for getter in _GETTERS:
        try:
            return getter(name)
        except AttributeError:
            continue
    raise AttributeError(name)
