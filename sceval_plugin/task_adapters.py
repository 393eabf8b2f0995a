"""Task adapters: where an lmms-eval task's docs keep what SCEval's conditions corrupt (issue 27).

Wrapping an lmms-eval task (``faultline wrap``, ``docs/design/wrap-any-task.md`` §6) needs to
know, per task: which doc field is the question the text operators corrupt, which spans of it
must survive (media tags, fixed suffixes the task's own formatter strips), which fields are
context the no-text control removes, the benchmark's own id of a doc (the corruption key, so a
variant is a pure function of the doc and not of its row), which modalities the task feeds, and
where its ``process_results`` puts a per-doc score. A :class:`TaskAdapter` says so as plain data
plus pure functions of doc dicts; this module imports nothing of lmms-eval.

Tasks without an adapter take the **generic path**, whose inferences are the functions below
(:func:`infer_question_field`, :func:`infer_key_field`, :func:`digest_key`,
:func:`modalities_of`, :func:`per_doc_score`), checked on the first doc when the wrapped task
loads. The twelve built-in adapters (worldsense, av_odyssey, omni_bench, videomme, mvbench_*,
clotho_aqa_*, librispeech_*, mme; video_holmes, av_speakerbench_audiovisual, mmmu_val,
air_bench_foundation_*) are registered through the ``sceval_register_task_adapters``
hook, exactly as third parties register theirs.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from faultline_eval.core.registry import PluginError, Registry
from sceval_plugin.hookspecs import hookimpl
from sceval_plugin.plugins import fill_registry
from sceval_plugin.render import reorder_options
from sceval_plugin.sceval_trial import WRAPPED_TRIAL_KEY

__all__ = [
    "GENERIC",
    "IMAGE_EXTENSIONS",
    "AUDIO_EXTENSIONS",
    "QUESTION_FIELDS",
    "KEY_FIELDS",
    "TaskAdapter",
    "TaskAdapterRegistry",
    "adapters",
    "adapter_for",
    "corrupt_question",
    "digest_key",
    "infer_key_field",
    "infer_question_field",
    "modalities_of",
    "per_doc_score",
    "replace_question",
    "rotated_options",
]

#: lmms-eval's own extension rule for a media path (``ConfigurableMessagesTask._visual_to_content``):
#: these are images, these audio, anything else a video.
IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tiff", ".webp"})
AUDIO_EXTENSIONS = frozenset({".wav", ".mp3", ".m4a", ".aac", ".flac", ".ogg", ".opus", ".webm"})
#: Where the generic path looks for the question, in this order.
QUESTION_FIELDS = ("question", "Question", "query", "instruction")
#: Where the generic path looks for the benchmark's own doc id, in this order.
KEY_FIELDS = ("question_id", "id", "index")


@dataclass(frozen=True)
class TaskAdapter:
    """What SCEval needs to know about one lmms-eval task (or a family of them, by pattern).

    Every field but ``name`` and ``tasks`` has the generic path's answer as its default, so an
    adapter states only what the generic path cannot know.
    """

    #: The adapter's name (``worldsense``); the manifest and trials record ``name@version``.
    name: str
    #: fnmatch patterns over lmms-eval task names (``"mvbench_*"``).
    tasks: tuple[str, ...]
    #: Bump when the adapter changes what a wrapped task shows: generated files then regenerate.
    version: int = 1
    #: The doc field SCEval's text operators corrupt; None: the task has no question (ASR), so no
    #: text conditions. Left unset (:data:`INFER`): inferred on the first doc.
    question_field: str | None = "<infer>"
    #: Regexes of spans held out of the text corruption (media tags, fixed suffixes).
    protected: tuple[str, ...] = ()
    #: Doc fields the no-text control empties (subtitles, captions); none: that control does not apply.
    context_fields: tuple[str, ...] = ()
    #: The doc field holding the options (the options-only shortcut needs one).
    options_field: str | None = None
    #: The benchmark's own id of a doc (the corruption key); None: :func:`infer_key_field`, else :func:`digest_key`.
    doc_key: Callable[[Mapping[str, Any]], str] | None = None
    #: The modalities the task feeds (``text``, ``vision``, ``audio``); None: :func:`modalities_of` on the first doc.
    modalities: frozenset[str] | None = None
    #: ``(metric key pattern, field)`` of the per-doc score in ``process_results``'s dict (field None:
    #: the value itself); None: :func:`per_doc_score`'s generic reading.
    score: tuple[str, str | None] | None = None
    #: The paired bootstrap's resample unit (MME: the image of a question pair); None: the doc key.
    resample_unit: Callable[[Mapping[str, Any]], str] | None = None
    #: ``reorder_options(doc, shift)``: the doc with its options in cyclic order ``shift`` and the
    #: gold re-pointed (the option-order conditions apply only with one).
    reorder_options: Callable[[Mapping[str, Any], int], dict[str, Any]] | None = None
    #: Frames on the video re-encode grid when the task implies a number (its ``frame_num``).
    frame_budget: int | None = None
    #: True when every visual of the task is one still image (MME): the probes of frame order and
    #: frame budget then do not apply to the task (False: unknown or video; decided per doc).
    still_images: bool = False
    #: The plugin that registered it (filled by the registry).
    plugin: str = ""

    @property
    def label(self) -> str:
        """``name@version``, as manifests and trials record it."""
        return f"{self.name}@{self.version}"

    @property
    def infers_question(self) -> bool:
        return self.question_field == INFER

    def serves(self, task: str) -> bool:
        return any(fnmatch.fnmatchcase(task, pattern) for pattern in self.tasks)

    def key_of(self, doc: Mapping[str, Any], key_field: str | None = None) -> str:
        """The doc's key: the adapter's ``doc_key``, else ``doc[key_field]`` (the generic path's
        inferred id column), else :func:`digest_key`."""
        if self.doc_key is not None:
            return str(self.doc_key(doc))
        if key_field is not None:
            return str(doc[key_field])
        return digest_key(doc)

    def unit_of(self, doc: Mapping[str, Any], key: str) -> str:
        """The bootstrap resample unit of a doc whose key is ``key``."""
        return key if self.resample_unit is None else str(self.resample_unit(doc))


#: The ``question_field`` value that asks the generic path to infer it.
INFER = "<infer>"
#: The generic path: an adapter that states nothing (every field inferred).
GENERIC = TaskAdapter("generic", ("*",))


class TaskAdapterRegistry(Registry[TaskAdapter]):
    """Adapter name -> :class:`TaskAdapter`, filled by ``sceval_register_task_adapters`` hooks.
    Each pattern is registered too, so two plugins claiming the same pattern is an error naming
    both; two patterns of different plugins matching one task is named when that task is looked up."""

    def __init__(self) -> None:
        super().__init__("task adapter", clash_hint=" (each lmms-eval task pattern can have one adapter)")

    def add(self, adapter: TaskAdapter) -> TaskAdapter:
        if not isinstance(adapter, TaskAdapter):
            raise PluginError(f"plugin {self.plugin} registered {adapter!r}, not a sceval TaskAdapter")
        if not adapter.tasks or not all(isinstance(p, str) and p for p in adapter.tasks):
            raise PluginError(f"task adapter {adapter.name!r}: tasks must be non-empty fnmatch patterns")
        if "__" in "".join(adapter.tasks):
            raise PluginError(f"task adapter {adapter.name!r}: '__' separates wrapped task names; no pattern holds it")
        aliases = {f"pattern:{p}": "task pattern" for p in adapter.tasks}
        return self.register(adapter.name, replace(adapter, plugin=self.plugin), aliases=aliases)

    def for_task(self, task: str) -> TaskAdapter:
        """The adapter serving ``task``: the one naming it exactly, else the one whose pattern
        matches it, else :data:`GENERIC`. Two at the same level are an error naming both."""
        for exact in (True, False):
            found = [
                a
                for a in self
                if any(
                    (p == task) if exact else (fnmatch.fnmatchcase(task, p) and p != task)
                    for p in a.tasks
                    if exact or _is_pattern(p)
                )
            ]
            if len(found) > 1:
                named = " and ".join(f"{a.name!r} ({a.plugin})" for a in found)
                raise PluginError(f"lmms-eval task {task!r} is claimed by two task adapters: {named}")
            if found:
                return found[0]
        return GENERIC


def _is_pattern(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")


@functools.cache
def adapters() -> TaskAdapterRegistry:
    """Every registered task adapter (built-ins first, then plugins), built once per process."""
    return fill_registry("sceval_register_task_adapters", TaskAdapterRegistry(), "task adapters")


def adapter_for(task: str) -> TaskAdapter:
    """The adapter serving lmms-eval task ``task`` (:data:`GENERIC` when none claims it)."""
    return adapters().for_task(task)


# --- the generic path's inferences (pure functions of docs) ----------------------------------------


def digest_key(doc: Mapping[str, Any]) -> str:
    """BLAKE2b-128 of the canonical JSON of the doc's string and number fields (media and lists
    excluded): a key that follows the doc, not its row, when the benchmark has no id column."""
    fields = {k: v for k, v in doc.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)}
    text = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def infer_key_field(docs: Iterable[Mapping[str, Any]]) -> str | None:
    """The first of :data:`KEY_FIELDS` that every doc has and that is unique over ``docs``;
    None when none is (then :func:`digest_key`)."""
    docs = list(docs)
    for field in KEY_FIELDS:
        values = [d.get(field) for d in docs]
        if docs and all(isinstance(v, (str, int)) for v in values) and len({str(v) for v in values}) == len(values):
            return field
    return None


def infer_question_field(doc: Mapping[str, Any], prompt: str) -> str | None:
    """The one field among :data:`QUESTION_FIELDS` whose (non-empty) string value occurs verbatim
    in ``prompt`` (the base ``doc_to_text`` of ``doc``); None when none or several do."""
    found = [f for f in QUESTION_FIELDS if isinstance(doc.get(f), str) and doc[f].strip() and doc[f] in prompt]
    return found[0] if len(found) == 1 else None


def modalities_of(items: Iterable[Any]) -> frozenset[str]:
    """The modalities of what a task's ``doc_to_visual`` returned, by lmms-eval's own typing:
    PIL images and lists of them are vision, ``{"array", "sampling_rate"}`` dicts (and datasets'
    audio decoders) audio, paths by extension (image, audio, else video: vision, with ``audio``
    only when an adapter declares the track; a path cannot say whether it has one)."""
    out: set[str] = {"text"}
    for item in items:
        if isinstance(item, str):
            ext = os.path.splitext(item)[1].lower()
            out.add("audio" if ext in AUDIO_EXTENSIONS else "vision")
        elif isinstance(item, Mapping) and ("array" in item or item.get("type") == "audio"):
            out.add("audio")
        elif isinstance(item, Mapping):
            out.add("vision")  # a {"type": "video", ...} part
        elif type(item).__name__ == "AudioDecoder":
            out.add("audio")
        else:
            out.add("vision")  # PIL, lists of PIL, arrays of frames
    return frozenset(out)


def per_doc_score(result: Mapping[str, Any], score: tuple[str, str | None] | None = None) -> float | None:
    """The per-doc score in a ``process_results`` dict: the adapter's ``(metric key pattern,
    field)``; generically, the only metric's ``score`` field or its value when it is a number.
    None when there is none (a WER item ``{gt, pred}``)."""
    if score is not None:
        pattern, field = score
        for name, value in result.items():
            if fnmatch.fnmatchcase(name, pattern):
                value = value if field is None else (value.get(field) if isinstance(value, Mapping) else None)
                return _number(value)
        return None
    metrics = [v for k, v in result.items() if k != WRAPPED_TRIAL_KEY]
    if len(metrics) != 1:
        return None
    value = metrics[0]
    return _number(value.get("score") if isinstance(value, Mapping) else value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    return float(value) if isinstance(value, (int, float)) else None


# --- text: corrupt the question, hold protected spans out ------------------------------------------


def corrupt_question(text: str, protected: tuple[str, ...], corrupt: Callable[[str, str], str], key: str) -> str:
    """``text`` with the parts outside ``protected`` spans corrupted by ``corrupt(part, key)``.

    The protected spans split the text into free segments; each is corrupted on its own
    (surrounding whitespace kept), the first under ``key`` and the i-th under ``key#i``, so a
    text without protected spans is corrupted exactly as SCEval corrupts a question stem. Tags
    such as av_odyssey's ``[audio1]`` thus stay in place and in order, and MME's fixed suffix
    ``" Please answer yes or no."`` stays verbatim for the task's formatter to strip."""
    if not protected:
        return corrupt(text, key)
    pieces, cursor = [], 0
    for match in _protected_pattern(protected).finditer(text):
        pieces += [(False, text[cursor : match.start()]), (True, match.group(0))]
        cursor = match.end()
    pieces.append((False, text[cursor:]))
    out, index = [], 0
    for kept, piece in pieces:
        core = piece.strip()
        if kept or not core:
            out.append(piece)
            continue
        lead = piece[: len(piece) - len(piece.lstrip())]
        trail = piece[len(piece.rstrip()) :]
        out.append(lead + corrupt(core, key if index == 0 else f"{key}#{index}") + trail)
        index += 1
    return "".join(out)


def replace_question(text: str, protected: tuple[str, ...], new: str) -> str:
    """``new`` in place of ``text``, keeping ``text``'s protected spans in order: those that end
    the text (MME's fixed suffix ``" Please answer yes or no."``, which the task's formatter
    strips) after ``new``, verbatim; the others (media tags) in front of it, so the visual+audio
    shortcut's generic instruction still places the media."""
    if not new:
        return ""
    matches = list(_protected_pattern(protected).finditer(text)) if protected else []
    end = len(text.rstrip())
    tail: list[str] = []
    while matches and matches[-1].end() == end:  # a run of spans that ends the text
        match = matches.pop()
        end = len(text[: match.start()].rstrip())
        tail.insert(0, text[end : match.end()])  # with the whitespace before it
    return " ".join([*(m.group(0).strip() for m in matches), new]) + "".join(tail)


def _protected_pattern(protected: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in protected))


# --- option orders (SCEval's Latin square, Table 33) -------------------------------------------------

_LETTER_PREFIX = re.compile(r"^\s*([A-Z])\s*[.)]\s*")


def rotated_options(
    options_field: str, answer_field: str | None = None, *, lettered: bool = True
) -> Callable[[Mapping[str, Any], int], dict[str, Any]]:
    """A ``reorder_options`` for options in a list field (or the string of a Python list literal,
    as MMMU and AV-SpeakerBench store them; written back the same way): cyclic order ``shift`` as
    SCEval's :func:`sceval_plugin.render.reorder_options` (shown position j holds original option
    (j + shift) mod n). With ``answer_field`` the answer is a letter: the option texts move under
    fixed letters (``"A. text"`` prefixes kept; with ``lettered=False`` the letters are the
    positions, as the task's prompt adds them) and the answer letter follows its text. Without it
    the answer is the option's text (omni_bench, mvbench) and stays as it is. A doc without
    options (MMMU's open questions) is shown as it is."""

    def reorder(doc: Mapping[str, Any], shift: int) -> dict[str, Any]:
        raw = doc[options_field]
        options = [str(o) for o in (ast.literal_eval(raw) if isinstance(raw, str) else raw)]
        if not options:
            return dict(doc)

        def stored(texts: list[str]) -> Any:
            return repr(texts) if isinstance(raw, str) else texts

        if answer_field is None:
            keyed = tuple((str(k), text) for k, text in enumerate(options))
            shown, _, _ = reorder_options(keyed, "0", shift)
            return {**doc, options_field: stored([text for _, text in shown])}
        if not lettered:
            keyed = tuple((chr(ord("A") + k), text) for k, text in enumerate(options))
            shown, gold = _rotated(keyed, doc.get(answer_field), shift)
            return {**doc, options_field: stored([text for _, text in shown]), answer_field: gold}
        prefixes = [_LETTER_PREFIX.match(o) for o in options]
        if not all(prefixes):
            raise ValueError(f"{options_field!r} options are not all lettered ('A. ...'): {options!r}")
        keyed = tuple((m.group(1), o[m.end() :]) for o, m in zip(options, prefixes))  # type: ignore[union-attr]
        shown, gold = _rotated(keyed, doc.get(answer_field), shift)
        lettered_texts = [m.group(0) + text for m, (_, text) in zip(prefixes, shown)]  # type: ignore[union-attr]
        return {**doc, options_field: stored(lettered_texts), answer_field: gold}

    reorder.__name__ = f"rotated_{options_field}"
    return reorder


def rotated_option_dict(options_field: str, answer_field: str) -> Callable[[Mapping[str, Any], int], dict[str, Any]]:
    """A ``reorder_options`` for options in a dict letter -> text (Video-Holmes' ``Options``) and
    a letter answer: the texts move under the fixed letters (in letter order), the answer follows."""

    def reorder(doc: Mapping[str, Any], shift: int) -> dict[str, Any]:
        keyed = tuple(sorted((str(k), str(v)) for k, v in doc[options_field].items()))
        shown, gold = _rotated(keyed, doc.get(answer_field), shift)
        return {**doc, options_field: dict(shown), answer_field: gold}

    reorder.__name__ = f"rotated_{options_field}"
    return reorder


def rotated_option_fields(fields: tuple[str, ...]) -> Callable[[Mapping[str, Any], int], dict[str, Any]]:
    """A ``reorder_options`` for options kept one per field (AIR-Bench's ``choice_a`` ...
    ``choice_d``) whose answer is the right option's text: the texts of the fields that hold one
    rotate among them; the answer stays, and the task finds its new letter by its text."""

    def reorder(doc: Mapping[str, Any], shift: int) -> dict[str, Any]:
        present = [f for f in fields if isinstance(doc.get(f), str) and doc[f].strip()]
        keyed = tuple((f, doc[f]) for f in present)
        shown, _, _ = reorder_options(keyed, present[0], shift) if keyed else ((), None, None)
        return {**doc, **dict(shown)}

    reorder.__name__ = f"rotated_{fields[0]}"
    return reorder


def _rotated(keyed: tuple[tuple[str, str], ...], answer: Any, shift: int) -> tuple[tuple[tuple[str, str], ...], str]:
    """SCEval's cyclic order ``shift`` of lettered options and the letter the answer moved to."""
    if not isinstance(answer, str) or answer.strip() not in dict(keyed):
        raise ValueError(f"answer {answer!r} is not one of the option letters {[k for k, _ in keyed]}")
    shown, gold, _ = reorder_options(keyed, answer.strip(), shift)
    return shown, gold


# --- the built-in adapters ------------------------------------------------------------------------


def _field(name: str) -> Callable[[Mapping[str, Any]], str]:
    def read(doc: Mapping[str, Any]) -> str:
        return str(doc[name])

    read.__name__ = f"field_{name}"
    return read


def _speakerbench_id(doc: Mapping[str, Any]) -> str:
    """AV-SpeakerBench's id, as its process_results reads it: ``question_id``, else ``id``."""
    return str(doc.get("question_id", doc.get("id")))


AUDIO_VISUAL = frozenset({"text", "vision", "audio"})
VISUAL = frozenset({"text", "vision"})
AUDIO = frozenset({"text", "audio"})

BUILTIN_ADAPTERS = (
    # audio-visual: a video path whose audio track is the audio (worldsense/utils.py)
    TaskAdapter(
        "worldsense",
        ("worldsense",),
        question_field="question",
        options_field="candidates",
        reorder_options=rotated_options("candidates", "answer"),
        doc_key=_field("index"),
        modalities=AUDIO_VISUAL,
        score=("worldsense_score", "score"),
    ),
    # audio-visual, interleaved: [imgN]/[audioN]/[videoN] tags place the media; a dropped or
    # shuffled tag would shift every media index, so the tags are held out
    TaskAdapter(
        "av_odyssey",
        ("av_odyssey",),
        question_field="question",
        protected=(r"\[(?:audio|video|img)\d+\]",),
        options_field="options",
        reorder_options=rotated_options("options", "answer"),
        doc_key=_field("question_id"),
        modalities=AUDIO_VISUAL,
        score=("av_odyssey_score", "score"),
    ),
    # audio + image in the row; the per-doc item is {"overall": 0/1, <task type>: 0/1}
    TaskAdapter(
        "omni_bench",
        ("omni_bench",),
        question_field="question",
        options_field="options",
        reorder_options=rotated_options("options"),
        modalities=AUDIO_VISUAL,
        score=("accuracy", "overall"),
    ),
    # a video path (its audio track rides along); the questions of one video are correlated
    TaskAdapter(
        "videomme",
        ("videomme", "videomme_long"),
        question_field="question",
        options_field="options",
        reorder_options=rotated_options("options", "answer"),
        doc_key=_field("question_id"),
        modalities=AUDIO_VISUAL,
        score=("videomme_perception_score", "score"),
        resample_unit=_field("videoID"),
    ),
    # 20 sub-tasks, silent clips, no id column (the key is the digest)
    TaskAdapter(
        "mvbench",
        ("mvbench_*",),
        question_field="question",
        options_field="candidates",
        reorder_options=rotated_options("candidates"),
        modalities=VISUAL,
        score=("mvbench_accuracy", "score"),
    ),
    # audio in the row, exact match per doc, no id column
    TaskAdapter(
        "clotho_aqa",
        ("clotho_aqa_*",),
        question_field="question",
        modalities=AUDIO,
        score=("exact_match", None),
    ),
    # ASR: the prompt is a fixed instruction, so no text conditions; WER has no per-doc score
    TaskAdapter(
        "librispeech",
        ("librispeech_*",),
        question_field=None,
        modalities=AUDIO,
        score=None,
    ),
    # two questions per image share question_id: both must see the same corrupted image (acc+);
    # mme_doc_to_text strips the exact suffix, which a dropped word would otherwise leak
    TaskAdapter(
        "mme",
        ("mme",),
        question_field="question",
        protected=(r" Please answer yes or no\.$",),
        doc_key=_field("question_id"),
        modalities=VISUAL,
        still_images=True,
        score=("mme_*_score", "score"),
        resample_unit=_field("question_id"),
    ),
    # --- issue 36: one more of each kind (video, audio-visual, image + text, audio) ------------------
    # video, through the task's own doc_to_messages (video_holmes/_default_template_yaml l.11-13;
    # utils.py l.105-112 builds the messages from doc_to_visual l.63-71 and doc_to_text l.87-94,
    # so the wrapper maps the message parts' urls). The question is "Question" (l.91), the options a
    # dict letter -> text "Options" (l.79-84) with a letter "Answer" (l.214); the per-doc item is
    # {score, question_type} under every one of the eight metrics (l.206-225; YAML l.21-45).
    # No id column: the key is the digest; a film's questions share "video ID", the resample unit.
    # Vision only: the benchmark reasons over "the provided video frames" (l.116-119).
    TaskAdapter(
        "video_holmes",
        ("video_holmes", "video_holmes_test", "video_holmes_reasoning"),
        question_field="Question",
        options_field="Options",
        reorder_options=rotated_option_dict("Options", "Answer"),
        modalities=VISUAL,
        score=("video_holmes_accuracy", "score"),
        resample_unit=_field("video ID"),
    ),
    # audio-visual: one clip path with its audio track (av_speakerbench_audiovisual.yaml l.10-11;
    # utils.py l.92-99, under $AV_SPEAKERBENCH_CACHE or $HF_HOME/AV-SpeakerBench, l.14-15). The
    # prompt is instruction + "question" + the lettered "choices" (l.51-77; a list, or the string
    # of one, l.18-43), the answer a letter (l.46-48); the item {question_id, task_id, score}
    # (l.174-197; YAML l.19-23). The sibling tasks _audio and _visual take the generic path.
    TaskAdapter(
        "av_speakerbench",
        ("av_speakerbench_audiovisual",),
        question_field="question",
        options_field="choices",
        reorder_options=rotated_options("choices", "answer"),
        doc_key=_speakerbench_id,
        modalities=AUDIO_VISUAL,
        score=("av_speakerbench_score", "score"),
    ),
    # image + text, interleaved: "<image N>" tags in the question (and options) name the Image
    # columns image_1..image_7 that doc_to_visual reads (mmmu/utils.py l.172-178), and
    # doc_to_messages (l.133-169; mmmu_val.yaml l.10) splits the text at them, so they are held
    # out. "options" is the string of a list of bare texts, lettered by the prompt (l.68-84), the
    # answer a letter, or a text for open questions (l.193-206, l.341-386); "id" is the key
    # (l.204). The item holds the parsed reply, not a score: correctness is decided inside the
    # aggregation (l.249-284, evaluate_mmmu l.388-415), so there is no per-doc score (score None).
    TaskAdapter(
        "mmmu",
        ("mmmu_val",),
        question_field="question",
        protected=(r"<image \d+>",),
        options_field="options",
        reorder_options=rotated_options("options", "answer", lettered=False),
        doc_key=_field("id"),
        modalities=VISUAL,
        still_images=True,
        score=None,
    ),
    # audio in the row (air_bench/utils.py l.15-16); the prompt is "question" + choice_a..choice_d
    # (l.152-158), the answer the right option's text "answer_gt", which get_gt turns into its
    # letter (l.259-267); the item {score, task} under "accuracy" (l.173-184;
    # air_bench_foundation_sound.yaml l.16-24), "uniq_id" the submission's key. options_field names
    # the first of the four fields: it says the task shows options beside its question.
    TaskAdapter(
        "air_bench",
        ("air_bench_foundation_*",),
        question_field="question",
        options_field="choice_a",
        reorder_options=rotated_option_fields(("choice_a", "choice_b", "choice_c", "choice_d")),
        doc_key=_field("uniq_id"),
        modalities=AUDIO,
        score=("accuracy", "score"),
    ),
)


@hookimpl
def sceval_register_task_adapters(registry: TaskAdapterRegistry) -> None:
    for adapter in BUILTIN_ADAPTERS:
        registry.add(adapter)
