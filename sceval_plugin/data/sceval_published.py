"""SCEVAL's published per-model rows: the paper's tables as data (faultline_eval.core.published)."""

from functools import cache
from importlib.resources import files

from faultline_eval.core.published import PublishedTables, load_packaged

#: The transcription reports pin their comparisons to; a corrected transcription gets a new version.
PUBLISHED_VERSION = "sceval_v1"
#: The default reference of the normalised scores: a published row with every severity (Table 6).
DEFAULT_REFERENCE = "Gemini 3 Flash"


@cache
def published_rows(version: str = PUBLISHED_VERSION) -> PublishedTables:
    return load_packaged(files(__package__), version)
