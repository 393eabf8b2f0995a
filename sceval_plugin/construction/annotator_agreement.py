"""Inter-annotator agreement of the annotation rounds (Appendix D, "Inter-annotator agreement"; Table 27).

Per annotation field, from the labels *before* adjudication: the items judged, the annotators
per item, % full agreement (every annotator gave the same label), Cohen's kappa when every item
has exactly two annotators, Fleiss' kappa when more contributed to the field on the same items
(the one implementation of both: :mod:`faultline_eval.core.agreement`), and % adjudicated, the
share of items whose disagreement went to the senior annotator (or, in the blind audit, which has
none, was settled by majority) -- 100 minus % full agreement, as in Table 27. Cohen's kappa pairs
each item's two labels in annotator-name order (the raters of a rotating assignment are
positions, not people). The headline row weighs each field by its item count, as the paper does.

Fields: validity, answerability, availability / leakage (3-way), failure reason (7-way, on the
items every annotator rejected), interpretability per cell, gold preservation and the stress-test
flag (on the cells every annotator found interpretable), and the blind audit's human answerability
and original-gold-remains-valid. The same table is given per source (the paper releases those
with the manifest). ``sceval build agreement BUILD`` writes ``BUILD/agreement.md``, ``.csv`` and
``.json`` (``--pass pilot``: ``BUILD/agreement_pilot.*``).
"""

from __future__ import annotations

import json
from pathlib import Path

from faultline_eval.core.agreement import fleiss_kappa, label_kappa
from faultline_eval.core.preflight import FOLDER_TO_WRITE, path_rules
from faultline_eval.core.store import write_atomic
from sceval_plugin.construction.annotation_files import BUILT_BY, group_labels, read_labels
from sceval_plugin.construction.manifest import _simulated, write_table

#: (pass, sheet, field, scale, which items: all / all-rejected / all-interpretable)
FIELDS = (
    ("items", "valid", "clean-example validity", "binary", None),
    ("items", "answerable", "tri-modal answerability", "binary", None),
    ("items", "availability", "modality availability / leakage", "3-way", None),
    ("items", "failure_reason", "failure reason (rejected items)", "7-way", "failure_reason"),
    ("cells", "interpretable", "corrupted-input interpretability", "binary", None),
    ("cells", "gold_preserved", "gold-answer preservation", "binary", "gold_preserved"),
    ("cells", "stress_test", "stress-test vs. robustness flag", "binary", "gold_preserved"),
)
BLIND_FIELDS = (
    ("blind", "answerable", "human answerability (blind audit)", "binary", None),
    ("reveal", "gold_valid", "original gold remains valid (blind audit)", "binary", None),
)


def field_agreement(ratings: list[list[str]]) -> dict:
    """n_items, n_annot, % full agree, Cohen's / Fleiss' kappa and % adjudicated of one field."""
    ratings = [r for r in ratings if len(r) >= 2]
    if not ratings:
        return {
            "n_items": 0,
            "n_annot": None,
            "full_agree_pct": None,
            "cohen_kappa": None,
            "fleiss_kappa": None,
            "adjudicated_pct": None,
        }
    sizes = {len(r) for r in ratings}
    agree = 100 * sum(len(set(r)) == 1 for r in ratings) / len(ratings)
    cohen = label_kappa([r[0] for r in ratings], [r[1] for r in ratings]) if sizes == {2} else None
    fleiss = fleiss_kappa(ratings) if len(sizes) == 1 and max(sizes) > 2 else None
    return {
        "n_items": len(ratings),
        "n_annot": max(sizes),
        "full_agree_pct": round(agree, 1),
        "cohen_kappa": None if cohen is None else round(cohen, 3),
        "fleiss_kappa": None if fleiss is None else round(fleiss, 3),
        "adjudicated_pct": round(100 - agree, 1),
    }


def _ratings(labels: list[dict], sheet: str, name: str, condition: str | None, source: str | None) -> list[list[str]]:
    out = []
    for (kind, _), by_annotator in group_labels(labels).items():
        if kind != sheet:
            continue
        mine = [by_annotator[a] for a in sorted(by_annotator)]
        if source is not None and mine[0]["source"] != source:
            continue
        if condition == "failure_reason" and not all(l["failure_reason"] for l in mine):
            continue
        if condition == "gold_preserved" and not all(l["interpretable"] == "yes" for l in mine):
            continue
        out.append([l[name] for l in mine])
    return out


def agreement_rows(build: Path, pass_name: str = "full") -> list[dict]:
    """One row per (source or "all", field), then the weighted headline row."""
    passes = {
        "items": read_labels(build, pass_name),
        "blind": read_labels(build, "blind", required=False),
        "reveal": read_labels(build, "reveal", required=False),
    }
    passes["cells"] = passes["items"]
    fields = FIELDS + (BLIND_FIELDS if passes["blind"] and passes["reveal"] else ())
    sources = sorted({l["source"] for l in passes["items"]})
    rows = []
    for source in [None, *sources]:
        for sheet, name, title, scale, condition in fields:
            ratings = _ratings(passes[sheet], sheet, name, condition, source)
            rows.append({"source": source or "all", "field": title, "scale": scale, **field_agreement(ratings)})
    headline = [r for r in rows if r["source"] == "all" and r["n_items"]]
    weight = sum(r["n_items"] for r in headline)

    def weighted(column: str):
        used = [r for r in headline if r[column] is not None]
        total = sum(r["n_items"] for r in used)
        return round(sum(r[column] * r["n_items"] for r in used) / total, 3) if total else None

    rows.append(
        {
            "source": "all",
            "field": "headline aggregate (weighted by n_items)",
            "scale": None,
            "n_items": weight,
            "n_annot": None,
            "full_agree_pct": weighted("full_agree_pct"),
            "cohen_kappa": weighted("cohen_kappa"),
            "fleiss_kappa": weighted("fleiss_kappa"),
            "adjudicated_pct": weighted("adjudicated_pct"),
        }
    )
    return rows


def add_parser(stages) -> None:
    parser = stages.add_parser(
        "agreement", help="inter-annotator agreement per field and source (Table 27)", description=__doc__
    )
    path_rules(
        parser.add_argument("build", type=Path, help="the build folder (with the imported labels)"),
        BUILT_BY["annotate import"],
        FOLDER_TO_WRITE,
    )
    parser.add_argument(
        "--pass",
        dest="pass_name",
        choices=("full", "pilot"),
        default="full",
        help="which pass's pre-adjudication labels (default full)",
    )
    parser.set_defaults(func=_cmd_agreement)


def _cmd_agreement(args) -> int:
    rows = agreement_rows(args.build, args.pass_name)
    simulated = _simulated(Path(args.build))
    warning = (
        f"**SIMULATED annotation** in pass(es) {', '.join(simulated)}: not human judgements.\n\n" if simulated else ""
    )
    out = Path(args.build) / ("agreement" if args.pass_name == "full" else f"agreement_{args.pass_name}")
    write_table(out, rows, f"Inter-annotator agreement, {args.pass_name} pass (Table 27)", warning)
    write_atomic(out.with_suffix(".json"), json.dumps({"simulated": simulated, "rows": rows}, indent=1) + "\n")
    for r in rows:
        if r["source"] == "all" and r["n_items"]:
            kappa = r["cohen_kappa"] if r["cohen_kappa"] is not None else r["fleiss_kappa"]
            print(
                f"  {r['field']:45s} n={r['n_items']:6d}  agree {r['full_agree_pct']:5.1f}%  "
                f"kappa {'—' if kappa is None else f'{kappa:.2f}'}  adjudicated {r['adjudicated_pct']:5.1f}%"
            )
    print(f"wrote {out}.md, .csv, .json" + ("  (SIMULATED labels)" if simulated else ""))
    return 0
