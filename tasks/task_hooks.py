"""Pieces every lmms-eval task module of the project shares (SCEval, C³PO, wrapped tasks).

lmms-eval hands a task's functions no config, so a module answers ``<function>__<key>`` names
(:func:`functions_by_name`); aggregations count invalid outputs by category
(:func:`invalid_count`); and ``process_docs`` records what it left out in one ledger that the
``excluded_trials`` aggregation reads (:func:`record_exclusions`, :func:`excluded_trials`).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["EXCLUDED", "record_exclusions", "excluded_trials", "functions_by_name", "invalid_count"]

_ledger_lock = threading.Lock()
#: task key (an SCEval condition id, ``c3po:<selector>``) -> Counter of exclusion reasons, read
#: by the excluded_trials aggregation.
EXCLUDED: dict[str, collections.Counter] = {}


def record_exclusions(key: str, reasons: collections.Counter) -> None:
    with _ledger_lock:
        EXCLUDED[key] = reasons


def functions_by_name(
    prefix: str, function: Callable[..., Any], *, factory: bool = False
) -> Callable[[str], Callable[..., Any]]:
    """A module ``__getattr__`` answering ``<prefix><key>`` with ``function(dataset, key)``:
    lmms-eval's process_docs gets no config, so the key travels in the function's name.
    ``factory=True``: ``function(key)`` returns the callable itself, for functions whose
    signature depends on the key (a wrapped task's ``doc_to_visual`` takes its base's arity)."""

    def module_getattr(name: str) -> Callable[..., Any]:
        if not name.startswith(prefix):
            raise AttributeError(name)
        key = name[len(prefix) :]
        if factory:
            bound = function(key)
        else:

            def bound(dataset: Any) -> Any:
                return function(dataset, key)

        bound.__name__ = bound.__qualname__ = name
        return bound

    return module_getattr


def invalid_count(category: str) -> Callable[[list], int]:
    def count(items: list) -> int:
        return sum(it == category for it in items)

    count.__name__ = f"invalid_{category}"
    return count


def excluded_trials(items: list[str]) -> int:
    """Trials the manifest, unreadable media or bad records removed (items are ledger keys)."""
    with _ledger_lock:
        return sum(sum(EXCLUDED.get(k, {}).values()) for k in set(items))
