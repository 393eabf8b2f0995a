"""Where C3PO items come from: ``C3PO_SOURCE`` (default: the embedded demo).

``demo``                         the embedded synthetic set (``c3po_plugin/data/demo``)
``/folder`` (items.jsonl|.parquet) or ``/path/items.jsonl|.parquet``
``hf:<repo id or local copy>``   a Hugging Face dataset in the same schema; media paths are
                                 relative to the repository (``C3PO_HF_SPLIT``, default ``test``)

Loading validates every record and probes every media file, and collects *all* problems (bad
fields, unknown templates, missing modalities, unreadable media) by sample id, so a run fails
before any model call with the whole list, or, with ``C3PO_ON_BAD_INPUT=exclude``, runs the
rest and reports the excluded samples and reasons.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from c3po_plugin.data.records import C3POItem, item_from_row
from sceval_plugin import media
from sceval_plugin.data.records import RecordError
from sceval_plugin.data.sources import SourceError, _load_table

SOURCE_ENV = "C3PO_SOURCE"
SPLIT_ENV = "C3PO_HF_SPLIT"
BAD_INPUT_ENV = "C3PO_ON_BAD_INPUT"
DEMO_DIR = Path(__file__).resolve().parent / "demo"


@dataclass(frozen=True)
class Problem:
    sample_id: str
    reason: str  # "record" (schema/template) or "media_unreadable"
    detail: str

    def __str__(self) -> str:
        return self.detail


@dataclass
class Source:
    spec: str
    items: list[C3POItem]
    problems: list[Problem] = field(default_factory=list)

    @property
    def fingerprint(self) -> str:
        """Changes whenever the items change (ids, templates, questions, answers, media)."""
        h = hashlib.blake2b(digest_size=8)
        for it in self.items:
            h.update(repr((it.sample_id, it.template_id, it.question, it.answer, it.context,
                           sorted(it.relative_media().items()))).encode())
        return h.hexdigest()


def current_spec() -> str:
    return os.environ.get(SOURCE_ENV, "").strip() or "demo"


def load_source(spec: str | None = None) -> Source:
    """Every valid item of ``spec`` (default ``$C3PO_SOURCE``) plus the problems found. Cached."""
    return _load_source(spec or current_spec(), os.environ.get(SPLIT_ENV, "test"))


def checked_items(spec: str | None = None) -> tuple[Source, list[C3POItem]]:
    """The items to run, applying ``C3PO_ON_BAD_INPUT`` (``error``, the default, or ``exclude``)."""
    source = load_source(spec)
    policy = os.environ.get(BAD_INPUT_ENV, "error").strip() or "error"
    if policy not in ("error", "exclude"):
        raise SourceError(f"{BAD_INPUT_ENV}={policy!r}: use 'error' or 'exclude'")
    if source.problems and policy == "error":
        shown = "\n  ".join(str(p) for p in source.problems[:50])
        more = f"\n  ... and {len(source.problems) - 50} more" if len(source.problems) > 50 else ""
        raise SourceError(f"{source.spec}: {len(source.problems)} bad record(s), found before any model call "
                          f"(set {BAD_INPUT_ENV}=exclude to run the rest):\n  {shown}{more}")
    if not source.items:
        raise SourceError(f"{source.spec}: no usable items")
    return source, source.items


@functools.lru_cache(maxsize=8)
def _load_source(spec: str, split: str) -> Source:
    if spec == "demo":
        return _from_rows(spec, _load_table(DEMO_DIR / "items.jsonl"), DEMO_DIR)
    if spec.startswith("hf:"):
        return _from_hf(spec, spec[3:], split)
    path = Path(spec).expanduser()
    if path.is_dir():
        for name in ("items.jsonl", "items.parquet"):
            if (path / name).is_file():
                return _from_rows(spec, _load_table(path / name), path)
        raise SourceError(f"{SOURCE_ENV}={spec}: folder has no items.jsonl or items.parquet")
    if path.is_file() and path.suffix in (".jsonl", ".json", ".parquet"):
        return _from_rows(spec, _load_table(path), path.parent)
    raise SourceError(f"{SOURCE_ENV}={spec!r} is not 'demo', an existing folder or .jsonl/.parquet file, "
                      "or 'hf:<repo id or local copy>'")


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
    return _from_rows(spec, table, root)


def _from_rows(spec: str, rows: Iterable[Mapping[str, Any]], root: Path) -> Source:
    items: list[C3POItem] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, row in enumerate(rows):
        try:
            item = item_from_row(row, root, source=root.name)
        except RecordError as exc:
            sample = row.get("sample_id") if isinstance(row.get("sample_id"), str) else f"<row {index}>"
            problems.append(Problem(sample, "record", str(exc)))
            continue
        if item.sample_id in seen:
            problems.append(Problem(item.sample_id, "record", f"sample {item.sample_id!r}: duplicate sample_id"))
            continue
        seen.add(item.sample_id)
        unreadable = probe_media(item)
        if unreadable:
            problems.append(Problem(item.sample_id, "media_unreadable", unreadable))
            continue
        items.append(item)
    return Source(spec, items, problems)


def probe_media(item: C3POItem) -> str | None:
    """Why a media file of the item cannot be used, from its header alone (cheap), or None."""
    for kind in ("video", "image", "audio"):
        path = item.media_path(kind)
        if not path:
            continue
        try:
            _PROBES[kind](Path(path))
        except Exception as exc:  # every decoder error is reported the same way: by sample and file
            return f"sample {item.sample_id!r}: field {kind!r}: {Path(path).name}: {type(exc).__name__}: {exc}"
    return None


def _probe_video(path: Path) -> None:
    import av

    with av.open(str(path)) as container:
        if not container.streams.video:
            raise media.MediaError("no video stream")
        next(container.decode(video=0))


def _probe_image(path: Path) -> None:
    from PIL import Image

    with Image.open(path) as img:
        img.verify()


def _probe_audio(path: Path) -> None:
    import soundfile

    info = soundfile.info(str(path))
    if info.frames == 0:
        raise media.MediaError("audio has no samples")


_PROBES = {"video": _probe_video, "image": _probe_image, "audio": _probe_audio}
