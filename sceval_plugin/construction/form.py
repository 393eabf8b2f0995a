"""The per-item annotation form of SCEval's verification (Appendix D, "Per-item annotation form").

Six fields, in the paper's order:

1. clean-example validity (``valid``: yes/no);
2. tri-modal answerability (``answerable``: yes/no);
3. modality availability and leakage (``availability``: the 3-way field of Table 27, "ok",
   "missing modality" or "text leakage");
4. corrupted-input interpretability, one judgement per (sample x operator x severity x variant)
   cell (``interpretable``: yes/no), for the audio and vision operators only: "text-side
   corruptions are deterministic and human-readable by construction" (§2.3);
5. gold preservation per cell (``gold_preserved``: yes/no) with the stress-test flag
   (``stress_test``: yes/no): "stress-test conditions are allowed to break gold preservation but
   must be labelled as such", so an interpretable cell that does not preserve gold must say
   ``stress_test = yes``;
6. failure reason, exactly one of the seven labels below, verbatim, when the item is rejected.

The blind answer-first audit (Appendix D, G.7) has its own two sheets: ``answer`` (the
annotator's option key from the corrupted input, and whether it could be answered) before the
gold is shown, then ``gold_valid`` (does the original gold remain defensible) once it is.
"""

from __future__ import annotations

from sceval_plugin import operators
from sceval_plugin.construction.sheets import Column
from sceval_plugin.operators import CORRUPTING_SEVERITIES

#: Appendix D, field 6, verbatim and in the paper's order.
FAILURE_REASONS = (
    "broken media",
    "ambiguous answer",
    "missing modality",
    "text leakage",
    "excessive corruption",
    "mismatch between media and question",
    "other",
)
YES_NO = ("yes", "no")
AVAILABILITY = ("ok", "missing modality", "text leakage")

ITEM_FIELDS = ("valid", "answerable", "availability", "failure_reason")
CELL_FIELDS = ("interpretable", "gold_preserved", "stress_test")
BLIND_FIELDS = ("answerable", "answer")
REVEAL_FIELDS = ("gold_valid",)

_ITEM_GIVEN = ("sample_id", "source", "question", "options", "gold", "visual", "audio", "preview")
ITEM_COLUMNS = (
    *(Column(n, given=True) for n in _ITEM_GIVEN),
    Column("valid", YES_NO, required=True),
    Column("answerable", YES_NO, required=True),
    Column("availability", AVAILABILITY, required=True),
    Column("failure_reason", FAILURE_REASONS),
    Column("note"),
)
_CELL_GIVEN = ("sample_id", "modality", "operator", "severity", "variant", "preview")
CELL_COLUMNS = (
    *(Column(n, given=True) for n in _CELL_GIVEN),
    Column("interpretable", YES_NO, required=True),
    Column("gold_preserved", YES_NO),
    Column("stress_test", YES_NO),
    Column("note"),
)
# blind audit: no gold anywhere on the sheet (the answer is locked before it is revealed)
_BLIND_GIVEN = ("sample_id", "modality", "operator", "severity", "variant", "question", "options", "media")
BLIND_COLUMNS = (
    *(Column(n, given=True) for n in _BLIND_GIVEN),
    Column("answerable", YES_NO, required=True),
    Column("answer"),
    Column("note"),
)
REVEAL_COLUMNS = (
    *(Column(n, given=True) for n in (*_BLIND_GIVEN, "locked_answer", "gold")),
    Column("gold_valid", YES_NO, required=True),
    Column("note"),
)
AUDIT_COLUMNS = (
    *(Column(n, given=True) for n in ("sample_id", "source", "decision", "stage", "failure_reason")),
    Column("audit", ("agree", "disagree"), required=True),
    Column("note"),
)


def media_cells(sample_id: str) -> list[tuple[str, int, int]]:
    """The (operator, severity, variant) cells of one sample that annotators judge: every audio
    and vision operator at every corrupting severity, each of its random variants (44 vision and
    28 audio cells per sample with the built-in operators: Table 24's pool sizes per example)."""
    return [
        (name, severity, variant)
        for modality in ("vision", "audio")
        for name in operators.names(modality)
        for severity in CORRUPTING_SEVERITIES
        for variant in range(operators.get(name).variants)
    ]


def item_rejected(labels: dict) -> bool:
    return labels["valid"] == "no" or labels["answerable"] == "no" or labels["availability"] != "ok"


def row_problems(kind: str, row: dict, option_keys: tuple[str, ...] = ()) -> list[str]:
    """Every rule that ties one row's fields together (beyond each column's allowed values)."""
    where, problems = f"row {row['_row']}", []
    if kind in ("items", "adjudication_items"):
        if item_rejected(row) and not row["failure_reason"]:
            problems.append(f"{where}, column 'failure_reason': a rejected item needs exactly one failure reason")
        if not item_rejected(row) and row["failure_reason"]:
            problems.append(
                f"{where}, column 'failure_reason': given for an accepted item (valid, answerable, availability ok)"
            )
    if kind in ("cells", "adjudication_cells") and row["interpretable"] == "yes":
        if not row["gold_preserved"]:
            problems.append(f"{where}, column 'gold_preserved': empty for an interpretable cell")
        if row["gold_preserved"] == "no" and row["stress_test"] != "yes":
            problems.append(
                f"{where}, column 'stress_test': a cell that does not preserve gold must be labelled a "
                "stress test (yes)"
            )
    if kind == "blind" and row["answerable"] == "yes" and row["answer"] not in option_keys:
        problems.append(f"{where}, column 'answer': {row['answer']!r} is not an option key ({', '.join(option_keys)})")
    return problems
