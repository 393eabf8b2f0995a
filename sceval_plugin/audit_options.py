"""The options of the modality-necessity audit's reading (:mod:`sceval_plugin.metrics.modality_audit`),
shared by ``faultline audit`` and ``sceval report`` so both parse them alike. Light: argparse only."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_audit_options", "audit_options"]


def _metric_threshold(text: str) -> tuple[str, float]:
    """``METRIC=VALUE`` of ``--answerable-at``."""
    metric, _, value = text.partition("=")
    try:
        if not metric.strip():
            raise ValueError
        return metric.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give METRIC=VALUE, e.g. wer=50") from None


def add_audit_options(parser: argparse.ArgumentParser) -> None:
    """``--answerable-at METRIC=VALUE`` (repeatable) and ``--per-pair``."""
    parser.add_argument(
        "--answerable-at",
        action="append",
        default=[],
        type=_metric_threshold,
        metavar="METRIC=VALUE",
        help="audit of wrapped tasks, for a graded metric (WER/CER, a non-0/1 score): an item is answerable when "
        "its per-item value is at most VALUE (an error rate) or at least VALUE (a score), in the metric's own units "
        "(wer=50: librispeech's per-item WER at most 50 %%); default: when it is no worse than the same item's in "
        "clean. Repeatable",
    )
    parser.add_argument(
        "--per-pair",
        action="store_true",
        help="audit of wrapped tasks, yes/no pairs (MME's two questions of an image): the pair is the item, "
        "answerable when both its questions are (the task's acc+; chance 1/4); default: each question on its own "
        "(its acc; chance 1/2)",
    )


def audit_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of the audit (``answerable_at``, ``per_pair``) the parsed options give."""
    return {"answerable_at": dict(args.answerable_at), "per_pair": args.per_pair}
