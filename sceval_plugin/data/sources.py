"""Where SCEval items come from, switched by one setting: ``SCEVAL_SOURCE``.

======================================  =====================================================
``SCEVAL_SOURCE``                       items
======================================  =====================================================
``demo`` (default)                      the embedded synthetic set (``sceval_plugin/data/demo``)
``/path/to/folder``                     ``items.jsonl`` or ``items.parquet`` in that folder,
``/path/items.jsonl|.parquet``          unified schema (see :mod:`.records`)
``hf:KZL96/ModalityFaultLines-SCEval``  the authors' release on the hub, or ``hf:/local/copy``
``lmms:omni_bench[@/local/copy]``       an existing lmms-eval benchmark, through an adapter
======================================  =====================================================

For the authors' release, ``SCEVAL_HF_MODE`` picks ``apply`` (default: our operators on the
baseline items) or ``released`` (their pre-corrupted variants as they are, mapped to our
condition ids). Tables and hub datasets go through :mod:`datasets` (JSON lines are read line
by line, see :mod:`faultline_eval.core.intake`); offline settings are respected.

Every row is validated and every media file probed when the source is loaded; the problems
found are kept in :attr:`Source.problems` (``sceval check`` prints them) and the task builder
refuses to run on any unless ``SCEVAL_ON_BAD_INPUT=exclude``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faultline_eval.core.identity import content_fingerprint, relative_media
from faultline_eval.core.intake import Problem, Row, SourceError, collect, items_table, numbered, read_rows
from faultline_eval.core.paths import CACHE_ENV, cache_dir  # noqa: F401  (part of this module's API)
from faultline_eval.core.store import replacing
from sceval_plugin.conditions import joint_id, single_id
from sceval_plugin.data.records import OmniItem, RecordError, item_from_row
from sceval_plugin.sceval_environment import SCEVAL_HF_MODE, SCEVAL_ON_BAD_INPUT, SCEVAL_SOURCE

SOURCE_ENV = SCEVAL_SOURCE.name
BAD_INPUT_ENV = SCEVAL_ON_BAD_INPUT.name
DEMO_DIR = Path(__file__).resolve().parent / "demo"
RELEASE_REPO = "KZL96/ModalityFaultLines-SCEval"
OTHER_FORMS = "'demo', 'hf:<repo or local copy>', 'lmms:<task>'"


@dataclass(frozen=True)
class ReleasedRow:
    """One pre-corrupted variant from the authors' release."""

    item: OmniItem
    condition_id: str
    variant: int


@dataclass
class Source:
    spec: str
    items: list[OmniItem]
    released: list[ReleasedRow] | None = None  # set in the release's "released" mode
    problems: list[Problem] = field(default_factory=list)  # rows that are not usable items

    @property
    def fingerprint(self) -> str:
        """The items' content (:mod:`faultline_eval.core.identity`): ids, questions, options, gold keys, context,
        category, key frame, media paths relative to the dataset root and media content hashes
        (released pre-corrupted rows too). Not where the dataset lies."""

        def record(item: OmniItem, *extra) -> tuple:
            return (
                item.sample_id,
                item.question,
                item.options,
                item.gold_key,
                item.context,
                item.category,
                item.key_frame_index,
                relative_media(item.root, [*item.visual, item.audio]),
                *extra,
            )

        return content_fingerprint(
            [
                *(record(it) for it in self.items),
                *(record(r.item, r.condition_id, r.variant) for r in self.released or ()),
            ]
        )

    @property
    def legacy_fingerprint(self) -> str:
        """The fingerprint logs carried before :attr:`fingerprint` (absolute media paths), for
        reading them (:func:`faultline_eval.core.identity.matching_source`)."""
        h = hashlib.blake2b(digest_size=8)
        for item in self.items:
            h.update(
                repr((item.sample_id, item.question, item.options, item.gold_key, item.visual, item.audio)).encode()
            )
        return h.hexdigest()


def current_spec() -> str:
    return SCEVAL_SOURCE.get()


def load_source(spec: str | None = None, hf_mode: str | None = None) -> Source:
    """Read the items of ``spec`` (default: ``$SCEVAL_SOURCE``, else the demo). Cached per process."""
    return _load_source(spec or current_spec(), (hf_mode or SCEVAL_HF_MODE.get()).strip())


@functools.lru_cache(maxsize=8)
def _load_source(spec: str, hf_mode: str) -> Source:
    if spec == "demo":
        return _from_table(spec, DEMO_DIR / "items.jsonl", DEMO_DIR)
    if spec.startswith("hf:"):
        return _from_release(spec, spec[3:], hf_mode)
    if spec.startswith("lmms:"):
        return _from_lmms_task(spec, spec[5:])
    table = items_table(spec, SOURCE_ENV, OTHER_FORMS)
    return _from_table(spec, table, table.parent)


def check_spec(spec: str | None = None) -> None:
    """Refuse a ``spec`` (default ``$SCEVAL_SOURCE``) naming a path that is not an items table,
    without reading a row: what a run checks before anything loads (a SourceError)."""
    spec = spec or current_spec()
    if spec != "demo" and not spec.startswith(("hf:", "lmms:")):
        items_table(spec, SOURCE_ENV, OTHER_FORMS)


def media_paths(item: OmniItem) -> list[tuple[str, str]]:
    return [("visual", p) for p in item.visual] + [("audio", item.audio)]


def _items(rows: Iterable[Row], root: Path, source: str) -> tuple[list[OmniItem], list[Problem]]:
    items, problems = collect(rows, lambda row: item_from_row(row, root, source=source), media_paths)
    if not items and not problems:
        raise SourceError(f"{source}: no items")
    return items, problems


def _from_table(spec: str, path: Path, root: Path) -> Source:
    items, problems = _items(read_rows(path), root, source=path.parent.name)
    return Source(spec, items, problems=problems)


# --- the authors' release -----------------------------------------------------------------------

_URL_PREFIX = re.compile(r"^https?://[^/]+/datasets/[^/]+/[^/]+/resolve/[^/]+/")
_OPTION_PREFIX = re.compile(r"^\(?([A-D])[).:]\s*")


def _release_path(value: Any) -> list[str]:
    """Release media references (paths, hub URLs, JSON lists) as paths inside the repo."""
    if isinstance(value, str) and value.strip().startswith("["):
        value = json.loads(value)
    values = value if isinstance(value, (list, tuple)) else [value]
    return [_URL_PREFIX.sub("", str(v)) for v in values if v not in (None, "")]


def _release_options(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            value = [line for line in value.splitlines() if line.strip()]
    if isinstance(value, (list, tuple)) and all(_OPTION_PREFIX.match(str(v)) for v in value):
        value = {_OPTION_PREFIX.match(v).group(1): _OPTION_PREFIX.sub("", v) for v in value}
    return value


def _split_field(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value]
    return [v.strip() for v in re.split(r"[+,&|]", str(value)) if v.strip()]


def _release_row(row: Mapping[str, Any], root: Path) -> dict:
    visual = _release_path(row.get("visual_url"))
    return {
        "sample_id": row.get("sample_id"),
        "source": row.get("source") or "sceval-release",
        "question": row.get("question"),
        "options": _release_options(row.get("options")),
        "gold_key": row.get("gold_key"),
        "visual": visual if len(visual) != 1 else visual[0],
        "audio": (_release_path(row.get("audio_url")) or [None])[0],
        "hidden": {
            k: row[k]
            for k in ("corruption_modality", "corruption_type", "severity_base", "severity_variant")
            if k in row
        },
    }


def _release_condition(row: Mapping[str, Any]) -> tuple[str, int]:
    """Our condition id and variant index for a released pre-corrupted row."""
    ops = _split_field(row.get("corruption_type"))
    raw = row.get("severity_base")
    severities = [
        int(v) for v in re.findall(r"\d+", " ".join(map(str, raw)) if isinstance(raw, (list, tuple)) else str(raw))
    ]
    if len(severities) == 1 and len(ops) > 1:
        severities *= len(ops)
    if len(ops) != len(severities) or not ops:
        raise RecordError(
            f"sample {row.get('sample_id')!r}: cannot map corruption_type={row.get('corruption_type')!r} "
            f"severity_base={row.get('severity_base')!r} to a condition"
        )
    variant = int(row.get("severity_variant") or 0)
    condition = single_id(ops[0], severities[0]) if len(ops) == 1 else joint_id(*zip(ops, severities))
    return condition, variant


def _from_release(spec: str, repo: str, mode: str) -> Source:
    import datasets

    if mode not in ("apply", "released"):
        raise SourceError(f"{SCEVAL_HF_MODE.name}={mode!r}: use 'apply' or 'released'")
    local = Path(repo).expanduser()
    root = local if local.is_dir() else None

    def load(config: str):
        try:
            return datasets.load_dataset(str(local) if root else repo, config, split="train" if root else None)
        except Exception as exc:
            raise SourceError(f"{spec}: cannot load config {config!r}: {type(exc).__name__}: {exc}") from exc

    if root is None:  # a hub copy: media paths are relative to the downloaded snapshot
        from huggingface_hub import snapshot_download

        try:
            root = Path(snapshot_download(repo, repo_type="dataset"))
        except Exception as exc:
            raise SourceError(f"{spec}: cannot fetch the release (offline? set HF_HUB_OFFLINE=0): {exc}") from exc
    baseline = load("baseline")
    if isinstance(baseline, datasets.DatasetDict):
        baseline = baseline[next(iter(baseline))]
    items, problems = _items(
        ((w, _release_row(r, root)) for w, r in numbered(baseline, "baseline row")), root, source="sceval-release"
    )
    if mode == "apply":
        return Source(spec, items, problems=problems)
    released: list[ReleasedRow] = []
    for config in ("single", "combined"):
        table = load(config)
        if isinstance(table, datasets.DatasetDict):
            table = table[next(iter(table))]
        for where, row in numbered(table, f"{config} row"):
            try:
                condition, variant = _release_condition(row)
                released.append(ReleasedRow(item_from_row(_release_row(row, root), root), condition, variant))
            except RecordError as exc:
                problems.append(Problem(str(row.get("sample_id") or f"<{where}>"), "record", f"{where}: {exc}"))
    return Source(spec, items, released, problems)


# --- existing lmms-eval benchmarks ---------------------------------------------------------------


def _omni_bench_row(index: int, doc: Mapping[str, Any], out: Path) -> dict:
    """lmms-eval's omni_bench doc -> unified row (media written once under ``out``)."""
    import io

    import soundfile
    from PIL import Image

    sample_id = f"omni_bench-{index:05d}"
    folder = out / sample_id
    image_path, audio_path = folder / "image.png", folder / "audio.wav"
    if not (image_path.is_file() and audio_path.is_file()):
        folder.mkdir(parents=True, exist_ok=True)
        image, audio = doc.get("image") or {}, doc.get("audio") or {}
        if not image.get("bytes") or not audio.get("bytes"):
            raise RecordError(f"sample {sample_id!r}: omni_bench doc lacks image or audio bytes")
        try:
            # atomically: a file cut short by a kill must not pass the is_file() check above
            with replacing(image_path) as temporary:
                Image.open(io.BytesIO(image["bytes"])).convert("RGB").save(temporary, format="PNG")
            wave, rate = soundfile.read(io.BytesIO(audio["bytes"]), dtype="float32", always_2d=True)
            with replacing(audio_path) as temporary:
                soundfile.write(temporary, wave, rate, subtype="FLOAT", format="WAV")
        except Exception as exc:
            raise RecordError(f"sample {sample_id!r}: unreadable omni_bench media: {exc}") from exc
    options = list(doc["options"])
    if doc.get("answer") not in options:
        raise RecordError(f"sample {sample_id!r}: answer {doc.get('answer')!r} is not one of its options")
    return {
        "sample_id": sample_id,
        "source": "omni_bench",
        "question": doc["question"],
        "options": options,
        "gold_key": "ABCD"[options.index(doc["answer"])],
        "visual": f"{sample_id}/image.png",
        "audio": f"{sample_id}/audio.wav",
        "hidden": {"task_type": doc.get("task type", ""), "omni_bench_index": index},
    }


#: lmms-eval task -> converter of one of its docs into a unified row.
ADAPTERS = {"omni_bench": _omni_bench_row}


def undecoded_media(table):
    """``table`` (a :class:`datasets.Dataset`) with its Audio and Image columns kept as
    ``{"bytes", "path"}``: no torchcodec needed, and the bytes are the source's own."""
    import datasets

    for column, feature in table.features.items():
        if isinstance(feature, (datasets.Audio, datasets.Image)):
            table = table.cast_column(column, type(feature)(decode=False))
    return table


def _from_lmms_task(spec: str, target: str) -> Source:
    import datasets
    import yaml

    task, _, local = target.partition("@")
    if task not in ADAPTERS:
        raise SourceError(f"{spec}: no adapter for lmms-eval task {task!r}; available: {sorted(ADAPTERS)}")
    import lmms_eval

    template = Path(lmms_eval.__file__).parent / "tasks" / task / "_default_template_yaml"
    config = yaml.safe_load(template.read_text().replace("!function", ""))
    path, split = local or config["dataset_path"], config.get("test_split", "train")
    try:
        table = datasets.load_dataset(path, split=split)
    except Exception as exc:
        raise SourceError(f"{spec}: cannot load {path!r} split {split!r}: {type(exc).__name__}: {exc}") from exc
    table = undecoded_media(table)
    out = cache_dir() / "adapters" / task / hashlib.blake2b(f"{path}:{split}".encode(), digest_size=6).hexdigest()
    items, problems = _items(numbered(_adapted(ADAPTERS[task], table, out), f"{task} doc"), out, source=task)
    return Source(spec, items, problems=problems)


def _adapted(adapter, table, out: Path) -> Iterable[Mapping[str, Any] | Problem]:
    """Each doc converted to a unified row, or the Problem that stopped its conversion."""
    for index, doc in enumerate(table):
        try:
            yield adapter(index, doc, out)
        except RecordError as exc:
            yield Problem(f"<doc {index}>", "record", str(exc))
