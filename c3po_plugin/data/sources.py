"""Where C3PO items come from: ``C3PO_SOURCE`` (default: the embedded demo).

``demo``                         the embedded synthetic set (``c3po_plugin/data/demo``)
``/folder`` (items.jsonl|.parquet) or ``/path/items.jsonl|.parquet``
``hf:<repo id or local copy>``   a Hugging Face dataset in the same schema; media paths are
                                 relative to the repository (``C3PO_HF_SPLIT``, default ``test``)

Loading validates every record and probes every media file, and collects *all* problems (bad
fields, unknown templates, missing modalities, unreadable or oversized media, lines that are
not UTF-8 or JSON) by sample id, with SCEval's reader (:mod:`faultline_eval.core.intake`), so
a run fails before any model call with the whole list, or, with ``C3PO_ON_BAD_INPUT=exclude``,
runs the rest and reports the excluded samples and reasons.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from c3po_plugin.c3po_environment import C3PO_HF_SPLIT, C3PO_ON_BAD_INPUT, C3PO_SOURCE
from c3po_plugin.data.records import MEDIA_FIELDS, C3POItem, check_media, item_from_row
from faultline_eval.core.identity import content_fingerprint, media_digest
from faultline_eval.core.intake import (
    Problem,
    Row,
    SourceError,
    bad_input_policy,
    collect,
    decoding_problems,
    items_table,
    numbered,
    read_rows,
    refuse,
)

SOURCE_ENV = C3PO_SOURCE.name
SPLIT_ENV = C3PO_HF_SPLIT.name
BAD_INPUT_ENV = C3PO_ON_BAD_INPUT.name
DEMO_DIR = Path(__file__).resolve().parent / "demo"
OTHER_FORMS = "'demo', 'hf:<repo id or local copy>'"


@dataclass
class Source:
    spec: str
    items: list[C3POItem]
    problems: list[Problem] = field(default_factory=list)

    @property
    def fingerprint(self) -> str:
        """The items' content (:mod:`faultline_eval.core.identity`): ids, templates, questions,
        answers, context, media paths relative to the dataset root and media content hashes."""
        return content_fingerprint(
            (
                it.sample_id,
                it.template_id,
                it.question,
                it.answer,
                it.context,
                sorted((kind, rel, media_digest(Path(it.root) / rel)) for kind, rel in it.relative_media().items()),
            )
            for it in self.items
        )

    @property
    def legacy_fingerprint(self) -> str:
        """The fingerprint logs carried before :attr:`fingerprint` (no media content)."""
        h = hashlib.blake2b(digest_size=8)
        for it in self.items:
            h.update(
                repr(
                    (
                        it.sample_id,
                        it.template_id,
                        it.question,
                        it.answer,
                        it.context,
                        sorted(it.relative_media().items()),
                    )
                ).encode()
            )
        return h.hexdigest()


def current_spec() -> str:
    return C3PO_SOURCE.get()


def load_source(spec: str | None = None) -> Source:
    """Every valid item of ``spec`` (default ``$C3PO_SOURCE``) plus the problems found. Cached."""
    return _load_source(spec or current_spec(), C3PO_HF_SPLIT.get())


def checked_items(spec: str | None = None) -> tuple[Source, list[C3POItem], list[Problem]]:
    """The items to run and every problem of the source (each item's media decoded in full
    once), applying ``C3PO_ON_BAD_INPUT``: ``error`` (the default) refuses any problem,
    ``exclude`` leaves those items out."""
    source = load_source(spec)
    decoding = decoding_problems(source.items, check_media, media_paths)
    problems = [*source.problems, *decoding]
    if problems and bad_input_policy(C3PO_ON_BAD_INPUT) == "error":
        raise refuse(source.spec, problems, BAD_INPUT_ENV)
    unusable = {p.sample_id for p in decoding}
    items = [item for item in source.items if item.sample_id not in unusable]
    if not items:
        raise SourceError(f"{source.spec}: no usable items")
    return source, items, problems


@functools.lru_cache(maxsize=8)
def _load_source(spec: str, split: str) -> Source:
    if spec == "demo":
        return _from_rows(spec, read_rows(DEMO_DIR / "items.jsonl"), DEMO_DIR)
    if spec.startswith("hf:"):
        return _from_hf(spec, spec[3:], split)
    table = items_table(spec, SOURCE_ENV, OTHER_FORMS)
    return _from_rows(spec, read_rows(table), table.parent)


def check_spec(spec: str | None = None) -> None:
    """Refuse a ``spec`` (default ``$C3PO_SOURCE``) naming a path that is not an items table,
    without reading a row: what a run checks before anything loads (a SourceError)."""
    spec = spec or current_spec()
    if spec != "demo" and not spec.startswith("hf:"):
        items_table(spec, SOURCE_ENV, OTHER_FORMS)


def _from_hf(spec: str, repo: str, split: str) -> Source:
    import datasets

    local = Path(repo).expanduser()
    root = local if local.is_dir() else None
    if root is None:  # a hub dataset: media paths are relative to the downloaded snapshot
        from huggingface_hub import snapshot_download

        try:
            root = Path(snapshot_download(repo, repo_type="dataset"))
        except Exception as exc:
            raise SourceError(f"{spec}: cannot fetch the dataset (offline? set HF_HUB_OFFLINE=0): {exc}") from exc
    try:
        table = datasets.load_dataset(str(root), split=split)
    except Exception as exc:
        raise SourceError(f"{spec}: cannot load split {split!r} ({SPLIT_ENV}): {type(exc).__name__}: {exc}") from exc
    return _from_rows(spec, numbered(table), root)


def media_paths(item: C3POItem) -> list[tuple[str, str]]:
    return [(kind, path) for kind in MEDIA_FIELDS if (path := item.media_path(kind))]


def _from_rows(spec: str, rows: Iterable[Row], root: Path) -> Source:
    items, problems = collect(rows, lambda row: item_from_row(row, root, source=root.name), media_paths)
    return Source(spec, items, problems)
