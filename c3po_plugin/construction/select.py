"""Stage 2 of a C3PO build: base media selection (paper §3.1.3, App. A/B).

For each template, candidates are drawn from a local pool by the template spec's
``selection_filter.match`` (:func:`candidates_for`), the first ``per_template`` of them in a
seeded order are processed by the spec's ``actions`` (:mod:`faultline_eval.core.media_processing`) into
``<build dir>/media/base/<candidate id>/`` and recorded in the ``select`` ledger.

**Pools** (:func:`load_pool`):

- ``demo``: the CC0 demo pool (:mod:`c3po_plugin.construction.demo_pool`), made under the build dir;
- a folder with ``annotations.jsonl`` or ``annotations.csv``, one base item a row:

  ====================  =====================================================================
  ``id``                unique base id (required)
  ``path``              the file, relative to the folder (required)
  ``modality``          ``video`` / ``image`` / ``audio`` (default: from the file's suffix)
  ``tags``              a list, or text separated by ``;`` or ``,`` (what ``tags_any`` /
                        ``tags_all`` match, case-insensitive)
  ``duration_s``        optional; the probed duration is what filters
  ``license``           optional, carried into the item's provenance
  anything else         kept as the item's ``annotations`` (handed to the generator)
  ====================  =====================================================================

- ``hf:<dataset>``: a ``datasets`` dataset (``save_to_disk`` folder or anything
  ``load_dataset`` reads; split ``train`` unless ``hf:<dataset>@<split>``), or a
  :class:`datasets.Dataset` passed directly. The same columns; the media column is an
  ``Image``/``Audio``/``Video`` feature (its bytes are written out under
  ``<build dir>/pool_files/``) or a ``path`` column of absolute paths.

**Match keys** (all must hold): ``tags_any`` (at least one of the tags), ``tags_all`` (every
one), ``min_duration_s`` / ``max_duration_s`` (probed seconds of a video or audio), ``has_audio``
(a video with / without an audio track), ``min_side_px`` (the shorter side of an image or video
frame). A key outside these is an error naming the template.

**Order.** Candidates are ranked by ``blake2b(seed, template id, base id)``: a pure function of
those three (no global RNG, no ``hash()``), so a build selects the same bases on every machine,
a different seed draws a different sample, and adding items to a pool does not reshuffle the
others' relative order.

**Failures.** A base item that matches by its annotations but whose file is missing or cannot
be decoded or processed is a ``failed`` entry naming the file (retried on resume), never a
candidate; selection goes on down the order until ``per_template`` candidates are ``ok``.

Ledger entry (key ``"{template_id}/{base_id}"``)::

    {"candidate_id", "template_id", "base_id", "base_modality", "media": {kind: rel path},
     "frame_times_s"?, "duration_s"?, "annotations", "source": {"pool", "path", "license"?}}
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from c3po_plugin.construction import settings as build_settings
from c3po_plugin.construction import specs as spec_registry
from c3po_plugin.construction.demo_pool import make_demo_pool
from c3po_plugin.construction.ledger import Ledger
from c3po_plugin.construction.selection_filter import actions_for, base_filter, check_spec
from faultline_eval.core import media
from faultline_eval.core import media_processing as processing
from faultline_eval.core.intake import Problem, read_rows
from faultline_eval.core.preflight import PathRule
from faultline_eval.core.store import write_atomic

STAGE = "select"
MODALITIES = ("video", "image", "audio")
DEFAULT_PER_TEMPLATE = (100, 250)  # App. B: "between 100-250 candidate base media files"
_SUFFIX_MODALITY = {
    **dict.fromkeys(media.VIDEO_SUFFIXES, "video"),
    **dict.fromkeys(media.IMAGE_SUFFIXES, "image"),
    **dict.fromkeys(media.AUDIO_SUFFIXES, "audio"),
}
_DEFAULT_SUFFIX = {"video": ".mp4", "image": ".png", "audio": ".wav"}


#: What ``--pool`` must be (checked before a build starts): ``demo``, ``hf:<dataset>``, or a folder
#: with its annotations.
POOL = PathRule(
    "source", holds="annotations.*", what="annotations.jsonl or annotations.csv", names=("demo",), prefixes=("hf:",)
)


class PoolError(ValueError):
    """A pool (or one of its rows) cannot be read; the message names the file, row and field."""


@dataclass(frozen=True)
class BaseMedia:
    """One item of a pool."""

    base_id: str
    modality: str
    path: Path
    listed_path: str  # as the pool lists it (relative to the pool folder / the build dir)
    tags: frozenset[str] = frozenset()
    license: str | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Header:
    """What probing a base file found (None: does not apply)."""

    duration_s: float | None
    has_audio: bool | None
    min_side_px: int | None


@dataclass
class Pool:
    name: str
    items: list[BaseMedia]
    _headers: dict[str, Header | str] = field(default_factory=dict, repr=False)

    def header(self, item: BaseMedia) -> Header | str:
        """The item's :class:`Header`, or the reason its file cannot be used. Cached."""
        if item.base_id not in self._headers:
            try:
                self._headers[item.base_id] = probe_header(item.path, item.modality)
            except (media.MediaError, OSError) as exc:
                self._headers[item.base_id] = problem_with(item, exc)
        return self._headers[item.base_id]


def problem_with(item: BaseMedia, exc: BaseException) -> str:
    """The ledger reason for a base file that cannot be used: it names the file."""
    text = str(exc)
    return text if str(item.path) in text else f"base file {item.path}: {text}"


# --- pools ------------------------------------------------------------------------------------------


def pool_location(spec: str | Path) -> str:
    """Where the pool ``spec`` is from any working folder: a local folder (``hf:`` one too) made
    absolute; ``demo`` and a Hub dataset as they are. ``settings.json`` keeps it for a resume."""
    spec = str(spec)
    name, at, split = spec[3:].partition("@") if spec.startswith("hf:") else (spec, "", "")
    local = Path(name).expanduser()
    if spec == "demo" or not local.exists():
        return spec
    return ("hf:" if spec.startswith("hf:") else "") + str(local.resolve()) + at + split


def load_pool(pool: str | Path | Any, build_dir: Path, name: str | None = None) -> Pool:
    """A :class:`Pool` from ``demo``, a folder, ``hf:<dataset>[@split]`` or a ``datasets.Dataset``;
    ``name`` (default: ``pool`` as given) is what the ledger and messages call it."""
    if not isinstance(pool, (str, Path)):
        return _from_dataset(pool, "dataset", build_dir)
    spec = str(pool)
    if spec == "demo":
        return _from_folder(make_demo_pool(build_dir / "demo_pool"), "demo")
    label = name or spec
    if spec.startswith("hf:"):
        import datasets

        dataset, _, split = spec[3:].partition("@")
        local = Path(dataset).expanduser()
        try:
            table = (
                datasets.load_from_disk(str(local))
                if (local / "dataset_info.json").is_file() or (local / "dataset_dict.json").is_file()
                else datasets.load_dataset(dataset, split=split or "train")
            )
        except Exception as exc:
            raise PoolError(f"pool {label}: cannot load: {type(exc).__name__}: {exc}") from exc
        if isinstance(table, datasets.DatasetDict):
            table = table[split or "train"]
        return _from_dataset(table, label, build_dir)
    folder = Path(spec).expanduser()
    if not folder.is_dir():
        raise PoolError(f"pool {spec!r} is not 'demo', a folder with annotations.jsonl/.csv or 'hf:<dataset>'")
    return _from_folder(folder, label)


def _from_folder(folder: Path, name: str) -> Pool:
    if (folder / "annotations.jsonl").is_file():
        path = folder / "annotations.jsonl"
        rows = []
        for where, row in read_rows(path):
            if isinstance(row, Problem):
                raise PoolError(f"pool {name}: {row.detail}")
            rows.append((where, row))
    elif (folder / "annotations.csv").is_file():
        path = folder / "annotations.csv"
        with path.open(newline="", encoding="utf-8") as handle:
            rows = [(f"annotations.csv row {n}", row) for n, row in enumerate(csv.DictReader(handle), start=2)]
    else:
        raise PoolError(f"pool {name}: folder {folder} has no annotations.jsonl or annotations.csv")
    return Pool(name, _items(((where, row, lambda rel: folder / rel) for where, row in rows), name))


def _from_dataset(table: Any, name: str, build_dir: Path) -> Pool:
    """Rows of a ``datasets.Dataset``; media features are read undecoded and their bytes written
    under ``<build dir>/pool_files/`` (a path column is used as it is)."""
    import datasets

    media_columns = [c for c, f in table.features.items() if isinstance(f, _media_features(datasets))]
    for column in media_columns:
        table = table.cast_column(column, type(table.features[column])(decode=False))

    def rows() -> Iterator[tuple[str, dict, Any]]:
        for number, row in enumerate(table):
            where = f"{name} row {number}"
            row = dict(row)
            for column in media_columns:
                value = row.pop(column)
                if value is None:
                    continue
                row["modality"] = row.get("modality") or _FEATURE_MODALITY[type(table.features[column]).__name__]
                row["path"] = _materialise(value, build_dir, str(row.get("id", number)), row["modality"], where)
            yield where, row, lambda rel: build_dir / rel  # an absolute path column stays absolute

    return Pool(name, _items(rows(), name))


_FEATURE_MODALITY = {"Image": "image", "Audio": "audio", "Video": "video"}


def _media_features(datasets) -> tuple[type, ...]:
    return tuple(getattr(datasets, n) for n in _FEATURE_MODALITY if hasattr(datasets, n))


def _materialise(value: Mapping[str, Any], build_dir: Path, base_id: str, modality: str, where: str) -> str:
    """The file of an undecoded media cell: its bytes written to ``pool_files/`` (the returned
    path is relative to the build dir), or the path it names."""
    source = value.get("path")
    if value.get("bytes") is None:
        if not source:
            raise PoolError(f"{where}: media column has neither bytes nor a path")
        return source
    suffix = Path(source or "").suffix.lower() or _DEFAULT_SUFFIX[modality]
    target = Path("pool_files") / f"{_file_safe(base_id)}{suffix}"
    write_atomic(build_dir / target, value["bytes"])
    return target.as_posix()


def _items(rows: Iterable[tuple[str, Mapping[str, Any], Any]], name: str) -> list[BaseMedia]:
    items, seen = [], {}
    for where, row, resolve in rows:
        base_id = str(row.get("id") or "").strip()
        if not base_id:
            raise PoolError(f"pool {name}: {where}: field 'id' is missing or empty")
        if base_id in seen:
            raise PoolError(f"pool {name}: {where}: id {base_id!r} repeats {seen[base_id]}")
        seen[base_id] = where
        rel = str(row.get("path") or "").strip()
        if not rel:
            raise PoolError(f"pool {name}: {where} (id {base_id!r}): field 'path' is missing or empty")
        path = Path(resolve(rel))
        modality = str(row.get("modality") or _SUFFIX_MODALITY.get(path.suffix.lower(), "")).strip().lower()
        if modality not in MODALITIES:
            raise PoolError(
                f"pool {name}: {where} (id {base_id!r}): field 'modality' must be one of "
                f"{', '.join(MODALITIES)} (got {row.get('modality')!r} for {rel!r})"
            )
        tags = row.get("tags") or []
        if isinstance(tags, str):
            tags = re.split(r"[;,]", tags)
        extra = {k: v for k, v in row.items() if k not in ("id", "path", "modality", "tags", "license")}
        items.append(
            BaseMedia(
                base_id,
                modality,
                path,
                rel,
                frozenset(str(t).strip().lower() for t in tags if str(t).strip()),
                str(row["license"]) if row.get("license") else None,
                extra,
            )
        )
    return items


# --- filtering ----------------------------------------------------------------------------------------


def probe_header(path: Path, modality: str) -> Header:
    """Duration, audio track and shorter side of a base file, checked with
    :func:`faultline_eval.core.media.probe` first (missing, unreadable or over the media limits raise)."""
    media.probe(path)
    if modality == "image":
        from PIL import Image

        with Image.open(path) as img:
            return Header(None, None, min(img.size))
    if modality == "audio":
        import soundfile

        return Header(soundfile.info(str(path)).duration, True, None)
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        side = min(stream.codec_context.width, stream.codec_context.height)
        return Header(media.declared_duration(container, stream), bool(container.streams.audio), side)


def tags_match(match: Mapping[str, Any], item: BaseMedia) -> bool:
    any_of = {t.lower() for t in match.get("tags_any") or ()}
    all_of = {t.lower() for t in match.get("tags_all") or ()}
    return (not any_of or bool(any_of & item.tags)) and all_of <= item.tags


def header_match(match: Mapping[str, Any], header: Header) -> bool:
    duration, side = header.duration_s, header.min_side_px
    checks = [
        ("min_duration_s", lambda v: duration is not None and duration + 1e-6 >= float(v)),
        ("max_duration_s", lambda v: duration is not None and duration - 1e-6 <= float(v)),
        ("has_audio", lambda v: header.has_audio is bool(v)),
        ("min_side_px", lambda v: side is not None and side >= int(v)),
    ]
    return all(check(match[key]) for key, check in checks if match.get(key) is not None)


def rank(seed: int, template_id: str, base_id: str) -> str:
    """The candidate order: a digest of (seed, template, base id)."""
    return hashlib.blake2b(json.dumps([seed, template_id, base_id]).encode(), digest_size=8).hexdigest()


def _compatible(item: BaseMedia, base_modality: str, actions: list[str]) -> bool:
    """A base of the same modality, or a video whose audio track is extracted for an audio base."""
    return item.modality == base_modality or (
        base_modality == "audio" and item.modality == "video" and "extract_audio" in actions
    )


def candidates_for(spec: Any, pool: Pool, *, seed: int = 0) -> Iterator[tuple[BaseMedia, str | None]]:
    """The pool's items that fit ``spec``'s selection filter, best-ranked first, as
    ``(item, None)``; an item whose annotations fit but whose file is broken comes as
    ``(item, reason)``. Lazy: files are probed only as far as the caller reads."""
    match, actions = base_filter(spec)
    fitting = [it for it in pool.items if _compatible(it, spec.base_modality, actions) and tags_match(match, it)]
    for item in sorted(fitting, key=lambda it: rank(seed, spec.template_id, it.base_id)):
        header = pool.header(item)
        if isinstance(header, str):
            yield item, header
        elif header_match(match, header) and (item.modality == spec.base_modality or header.has_audio):
            yield item, None


# --- the stage ------------------------------------------------------------------------------------------


def _file_safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "item"


def candidate_id(template_id: str, base_id: str) -> str:
    return f"{_file_safe(template_id)}__{_file_safe(base_id)}"


def resolve_specs(templates: list[str] | None, specs: Iterable[Any] | None = None) -> list[Any]:
    """The specs to work on: ``specs`` if given (filtered by ``templates``), else the registry's."""
    if specs is not None:
        chosen = list(specs)
        if templates is not None:
            wanted = set(templates)
            chosen = [s for s in chosen if s.template_id in wanted or wanted & set(getattr(s, "aliases", ()))]
        return chosen

    found, skipped = spec_registry.resolve(templates)
    for template_id in skipped:
        print(f"select: template {template_id} has no generation spec; skipped")
    return found


def run_select(
    build_dir: str | Path,
    *,
    pool: str | Path | Any,
    templates: list[str] | None = None,
    per_template: int | tuple[int, int] = DEFAULT_PER_TEMPLATE,
    seed: int = 0,
    specs: Iterable[Any] | None = None,
    pool_name: str | None = None,
) -> dict:
    """Select and process up to ``per_template`` candidates per template (``(min, max)``: take up
    to max; a template with fewer than min is listed under ``"below_minimum"``). Resumable: an
    ``ok`` key is kept, a ``failed`` one retried. ``specs`` overrides the spec registry.
    ``pool_name``: what the ledger calls the pool (default ``pool`` as given; a resume passes the
    name the build started with). The pool (as given and where it is), ``per_template`` and
    ``seed`` go to ``settings.json``, so ``c3po build all`` resumes with them
    (:func:`~c3po_plugin.construction.pipeline.run_all`)."""
    from tqdm import tqdm

    build_dir = Path(build_dir)
    low, high = (per_template, per_template) if isinstance(per_template, int) else per_template
    chosen = resolve_specs(templates, specs)
    for spec in chosen:  # every spec's filter and actions are checked before any work
        check_spec(spec)
    the_pool = load_pool(pool, build_dir, pool_name)
    if isinstance(pool, (str, Path)):
        build_settings.resolve(
            build_dir, pool=pool_name or str(pool), pool_path=pool_location(pool), per_template=[low, high], seed=seed
        )
    ledger = Ledger(build_dir, STAGE)
    counts = {"ok": 0, "rejected": 0, "failed": 0, "skipped": 0}
    below: dict[str, int] = {}
    with tqdm(desc="select", unit="candidate") as bar:
        for spec in chosen:
            _, actions = base_filter(spec)
            taken = 0
            for item, problem in candidates_for(spec, the_pool, seed=seed):
                if taken >= high:
                    break
                key = f"{spec.template_id}/{item.base_id}"
                if ledger.settled(key):
                    counts["skipped"] += 1
                    taken += ledger.get(key)["status"] == "ok"
                    bar.update()
                    continue
                if problem is None:
                    try:
                        data = _select_one(build_dir, spec, item, actions, the_pool.name)
                    except (media.MediaError, OSError) as exc:
                        problem = problem_with(item, exc)
                if problem is not None:
                    ledger.record(
                        key,
                        "failed",
                        {"template_id": spec.template_id, "base_id": item.base_id, "path": item.listed_path},
                        reason=problem,
                    )
                    counts["failed"] += 1
                    continue
                ledger.record(key, "ok", data)
                counts["ok"] += 1
                taken += 1
                bar.update()
            if taken < low:
                below[spec.template_id] = taken
    if below:
        counts["below_minimum"] = below
    return counts


def _select_one(build_dir: Path, spec: Any, item: BaseMedia, actions: list[str], pool_name: str) -> dict:
    cid = candidate_id(spec.template_id, item.base_id)
    out_dir = build_dir / "media" / "base" / cid
    if out_dir.exists():  # a half-written attempt before a kill
        shutil.rmtree(out_dir)
    plan = processing.parse_actions(actions_for(actions, item.modality), item.modality, f"template {spec.template_id}")
    done = processing.process(item.path, item.modality, spec.base_modality, plan, out_dir)
    data: dict[str, Any] = {
        "candidate_id": cid,
        "template_id": spec.template_id,
        "base_id": item.base_id,
        "base_modality": spec.base_modality,
        "media": {kind: str(path.relative_to(build_dir)) for kind, path in sorted(done.media.items())},
        "annotations": {"tags": sorted(item.tags), **dict(item.annotations)},
        "source": {"pool": pool_name, "path": item.listed_path, **({"license": item.license} if item.license else {})},
    }
    if done.frame_times_s is not None:
        data["frame_times_s"] = list(done.frame_times_s)
    if done.duration_s is not None:
        data["duration_s"] = done.duration_s
    return data
