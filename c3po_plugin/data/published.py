"""C3PO's published per-model rows (the paper's tables as data; see faultline_eval.core.published)."""

from functools import cache
from importlib.resources import files

from faultline_eval.core.published import PublishedTables, load_published

#: The transcription reports pin their comparisons to; a corrected transcription gets a new version.
PUBLISHED_VERSION = "c3po_v1"


@cache
def published_rows(version: str = PUBLISHED_VERSION) -> PublishedTables:
    path = files(__package__) / "published" / f"{version}.json"
    if not path.is_file():
        raise FileNotFoundError(f"no published-rows file {version}.json in {__package__}/published/")
    return load_published(path)
