"""SCEval's trials: one variant of one condition on one item (:class:`SCEvalTrial`), and one doc
of a wrapped lmms-eval task under one variant of one condition (:class:`WrappedTrial`).

Both are :class:`faultline_eval.core.trial.Trial` entries (schema 2, schema 1 still read), registered
as the trial kinds ``sceval`` (entries under ``sceval_accuracy``) and ``wrapped`` (under
:data:`WRAPPED_TRIAL_KEY`) when this module is imported, which importing :mod:`sceval_plugin` does.

Schema 1's keys of an SCEval trial (besides the shared ``s``, ``v``, ``c``, ``i``): ``a`` original
answer key, ``n`` option count, ``f`` stated confidence, ``o`` item source, and when set ``u`` why a
control or probe did not apply, ``k`` ``"stress_only"``, ``d`` donor id, ``r`` the item key that
follows the donor's gold, ``m`` the donor-to-item key map. Older logs may lack ``f``/``o``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from faultline_eval.core.trial import Trial, register_trial_kind

__all__ = ["STRESS_ONLY", "WRAPPED_TRIAL_KEY", "SCEvalTrial", "WrappedTrial"]

#: The key of a wrapped task's trial entry in what its ``process_results`` returns, and so in each
#: line of its per-sample log (Contract C of issue 27); never a metric of the results.
WRAPPED_TRIAL_KEY = "faultline_trial"
#: The cohort of trials run on stress-only cells (SCEval Appendix D); the only one an entry names.
STRESS_ONLY = "stress_only"


@dataclass(frozen=True)
class SCEvalTrial(Trial):
    """An SCEval trial (paper §2.4): one variant of one condition on one item."""

    #: The answer as the item's original option key (before a reordering control), or None.
    answer_key: str | None
    #: How many options the question had.
    n_options: int
    #: The confidence the reply stated (``low``/``medium``/``high``), or None (also: not logged).
    confidence: str | None = None
    #: The item's source (Table 11's split), or None (also: not logged).
    source: str | None = None
    #: Why the condition's control or probe did not apply to this item (the trial is logged, not scored).
    not_applicable: str | None = None
    #: :data:`STRESS_ONLY` for a trial of a stress-only cell (Appendix D; outside the headline metrics).
    cohort: str | None = None
    #: A probe's donor sample id.
    donor: str | None = None
    #: The item's option key whose text is the donor's gold answer (None: none, or the item's own gold).
    follows_donor_key: str | None = None
    #: Per donor option in key order, the item's key with the same text (``-`` for none).
    donor_key_map: str | None = None

    BENCHMARK: ClassVar[str] = "SCEval"
    WRITTEN_WHEN_SET: ClassVar[frozenset[str]] = frozenset(
        {"not_applicable", "cohort", "donor", "follows_donor_key", "donor_key_map"}
    )
    SCHEMA_1_KEYS: ClassVar[dict[str, str]] = {
        **Trial.SCHEMA_1_KEYS,
        "answer_key": "a",
        "n_options": "n",
        "confidence": "f",
        "source": "o",
        "not_applicable": "u",
        "cohort": "k",
        "donor": "d",
        "follows_donor_key": "r",
        "donor_key_map": "m",
    }

    @classmethod
    def _schema_1_defaults(cls, entry: dict[str, Any]) -> dict[str, Any]:
        # logs from before the entry carried confidence and source; hand-made ones may lack more
        return {"invalid": None, "answer_key": None, "n_options": 4, **entry}

    @property
    def scored(self) -> bool:
        """Whether the headline metrics score it: gold-preserved cohort, control/probe applied."""
        return self.not_applicable is None and self.cohort != STRESS_ONLY

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SCEvalTrial:
        """The trial of a full ``sceval_record`` (the task builds its entry from it; the report
        reads logs without entries through it). A probe's reason it did not apply wins over a
        control's; fields older records lack are None (option count: 4)."""
        probe = record.get("probe") or {}
        not_applicable = probe.get("not_applicable")
        if not_applicable is None:
            not_applicable = record.get("control_not_applicable") or None
        return cls(
            sample_id=record["sample_id"],
            variant=record["variant"],
            correct=record.get("correct"),
            invalid=record.get("invalid"),
            answer_key=record.get("parsed_answer_original_key"),
            n_options=record.get("n_options") or 4,
            confidence=record.get("confidence"),
            source=record.get("source"),
            not_applicable=not_applicable,
            cohort=STRESS_ONLY if record.get("cohort") == STRESS_ONLY else None,
            donor=probe.get("donor"),
            follows_donor_key=probe.get("follows_donor_key"),
            donor_key_map=probe.get("donor_key_map"),
        )


@dataclass(frozen=True)
class WrappedTrial(Trial):
    """A trial of an lmms-eval task wrapped with an SCEval condition (issue 27): one doc of the
    base task under one variant of one condition, scored by the base task's own
    ``process_results``. ``sample_id`` is the adapter's doc key; ``correct`` is 1/0 when the
    per-doc score is 0/1 of a metric where higher is better, else None (:meth:`correct_of`)."""

    #: The lmms-eval task wrapped (``worldsense``).
    base_task: str
    #: The SCEval condition id (``clean``, ``single_noise_v50``, ``missing_audio``).
    condition_id: str
    #: lmms-eval's row index of the doc (pairs the conditions of one run).
    doc_id: int
    #: The bootstrap resample unit (the adapter's; default the sample id).
    unit: str
    #: The adapter's per-doc score (worldsense: ``worldsense_score["score"]``), or None when the task has none (WER).
    score: float | None
    #: The adapter that wrapped the task, with its version (``worldsense@1``, ``generic@1``).
    adapter: str
    #: The operators' seed scheme the corruption was drawn under.
    seed_scheme: str
    #: Why the condition's probe did not apply to the doc (shown unchanged; e.g. ``single_frame``).
    not_applicable: str | None = None
    #: How a video file was handed to the model (the wrap option): ``source`` (every frame at the
    #: source's rate and size) or ``sceval_grid`` (SCEval's frame grid); absent in trials written before it (the grid).
    frames: str | None = None

    BENCHMARK: ClassVar[str] = "wrapped task"
    WRITTEN_WHEN_SET: ClassVar[frozenset[str]] = frozenset({"not_applicable", "frames"})

    @staticmethod
    def correct_of(score: float | None, higher_is_better: bool = True) -> int | None:
        """1/0 for a per-doc score of 1/0 of a metric where higher is better; None for any other
        score (a partial credit), none, or a metric where lower is better: a per-doc error rate
        (ami_test's WER) is graded, its 0 and 1 are no right/wrong verdict (as the audit reads it)."""
        if score is None or not higher_is_better or score not in (0, 1):
            return None
        return int(score)


register_trial_kind("sceval", SCEvalTrial, "sceval_accuracy")
register_trial_kind("wrapped", WrappedTrial, WRAPPED_TRIAL_KEY)
