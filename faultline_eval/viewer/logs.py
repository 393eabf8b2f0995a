"""What both benchmarks' viewer readers share: model labels, verdict words, data sources."""

from __future__ import annotations

import math
import re
from pathlib import Path

from faultline_eval.viewer.budget import CORRECT
from sceval_plugin.report.reader import model_label, results_for


def label_for(samples_file: Path, record_model: str | None) -> str:
    """The model label the reports give this log's trials (results JSON first, then the record)."""
    label = model_label(results_for(samples_file), None)
    return label if label != "unknown" else (record_model or "unknown")


def verdict_of(correct, invalid, not_applicable=None) -> str:
    """One word per trial: correct, wrong, ``invalid: <category>``, not applicable or unscored."""
    if isinstance(not_applicable, str) and not_applicable:
        return "not applicable"
    if isinstance(invalid, str) and invalid:
        return f"invalid: {invalid}"
    if correct is None or (isinstance(correct, float) and math.isnan(correct)):
        return "unscored"
    return CORRECT if correct == 1 else "wrong"


def public_spec(dataset: str) -> str:
    """A logged data source as the site may name it: no folder of this machine (an absolute
    folder or file, also after ``hf:`` or ``lmms:<task>@``, is named by its last component)."""
    def name(part: str) -> str:
        return Path(part).name if part.startswith(("/", "~", "\\")) or Path(part).is_absolute() else part

    spec = str(dataset).rsplit("#", 1)[0]
    prefix, colon, rest = spec.partition(":") if spec.startswith(("hf:", "lmms:")) else ("", "", spec)
    head, at, tail = rest.partition("@") if prefix == "lmms" else (rest, "", "")
    return f"{prefix}{colon}{name(head)}{at}{name(tail) if at else ''}"


_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])(?:/|~/)[^\s:'\"()]+")


def without_paths(text: str) -> str:
    """``text`` (an error message, a note) with every absolute path cut to its last component."""
    return _ABSOLUTE_PATH.sub(lambda m: Path(m.group()).name or m.group(), str(text))


class SourceCache:
    """The data source of each logged ``dataset`` (``spec#fingerprint``), loaded once. A source
    whose items changed since the run (another fingerprint) is refused, so the viewer never
    shows media the model did not receive; ``override`` names the source to use instead (the
    same items moved to another folder or machine)."""

    def __init__(self, load, override: str | None = None):
        self.load, self.override, self.loaded = load, override, {}

    def get(self, dataset: str):
        spec, _, fingerprint = str(dataset).rpartition("#")
        spec = self.override or spec
        if spec not in self.loaded:
            self.loaded[spec] = self.load(spec)
        source = self.loaded[spec]
        if fingerprint and source.fingerprint != fingerprint:
            raise LookupError(f"the data source {public_spec(spec)} holds other items than the run's "
                              f"(fingerprint {source.fingerprint}, logged {fingerprint}); give the run's items")
        return source
