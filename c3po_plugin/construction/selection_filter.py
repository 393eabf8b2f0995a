"""The selection-filter vocabulary of a generation spec (paper App. B): the ``match`` keys a
base item is chosen by and the ``actions`` that process it (:mod:`faultline_eval.core.media_processing`).

The spec registry (:mod:`.specs`) checks every spec against it when the spec is made, and the
select stage (:mod:`.select`) applies it; so both import it, and neither imports the other
for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faultline_eval.core import media_processing as processing

MATCH_KEYS = ("tags_any", "tags_all", "min_duration_s", "max_duration_s", "has_audio", "min_side_px")


def check_match(match: Mapping[str, Any], where: str) -> None:
    unknown = sorted(set(match) - set(MATCH_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown selection_filter.match key(s) {unknown}; known: {', '.join(MATCH_KEYS)}")


def base_filter(spec: Any) -> tuple[dict, list[str]]:
    """(``match``, ``actions``) of a spec's base modality; errors name the template."""
    where = f"template {spec.template_id}"
    entry = (spec.generation_spec or {}).get(spec.base_modality)
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: generation_spec has no {spec.base_modality!r} entry (its base modality)")
    match = dict((entry.get("selection_filter") or {}).get("match") or {})
    check_match(match, where)
    return match, list(entry.get("actions") or ["keep"])


def check_spec(spec: Any) -> None:
    """``ValueError`` naming the template for an unknown ``match`` key or an action that is
    unknown or does not apply to the base file (a video, too, when its audio is extracted)."""
    _, actions = base_filter(spec)
    for modality in {spec.base_modality, "video"} if "extract_audio" in actions else {spec.base_modality}:
        processing.parse_actions(actions_for(actions, modality), modality, f"template {spec.template_id}")


def actions_for(actions: list[str], modality: str) -> list[str]:
    """``extract_audio`` of an audio file is the file itself."""
    return [a for a in actions if not (modality == "audio" and a == "extract_audio")]
