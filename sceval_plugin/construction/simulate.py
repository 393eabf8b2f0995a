"""SIMULATED annotators, for demonstrating and testing the annotation workflow. Not annotation.

``sceval build annotate simulate BUILD --pass P`` fills the exported sheets of pass ``P`` in
place, as if the annotators had: it writes ``SIMULATED`` into the pass folder so the labels can
never pass for human judgements, and every report built from them says so.

The simulation, all seeded (``--seed``; string-seeded generators, no ``hash()``):

- a hidden "truth" per item and cell: an item is invalid with probability 3 %, unanswerable 3 %,
  leaks its answer in the text 3 %; a cell is uninterpretable with the pooled drop rates of
  Table 25 (4.4 / 12.9 / 24.7 / 36.1 % at severity 10 / 30 / 50 / 70); an interpretable cell
  breaks the gold with probability 10 % x severity / 70;
- each annotator reports the truth, except that each field is flipped to another allowed value
  with probability ``--disagreement`` (default 0.08, so two annotators disagree on a binary field
  about 15 % of the time, near Table 27's 7.6-15.2 % adjudicated);
- the adjudicator and the auditor report the truth; in the blind audit an annotator who finds
  the cell gold-preserving answers the gold key, otherwise a seeded other key.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

from faultline_eval.core.preflight import FOLDER_TO_WRITE, path_rules
from faultline_eval.core.store import replacing
from sceval_plugin.construction import form
from sceval_plugin.construction.annotation_files import BUILT_BY, SHEETS, pass_dir, pool_items

MARKER = "SIMULATED"
DROP_RATE = {10: 0.044, 30: 0.129, 50: 0.247, 70: 0.361}  # Table 25, pooled audio + vision


def _rng(seed: int, *parts) -> random.Random:
    return random.Random("/".join(map(str, (seed, *parts))))


def truth(seed: int, sample: str, cell: tuple | None = None) -> dict:
    """The hidden labels the simulated annotators perceive (before their own noise)."""
    if cell is None:
        r = _rng(seed, "truth", sample)
        valid, answerable, leak = r.random() >= 0.03, r.random() >= 0.03, r.random() < 0.03
        labels = {
            "valid": "yes" if valid else "no",
            "answerable": "yes" if answerable else "no",
            "availability": "text leakage" if leak else "ok",
        }
        labels["failure_reason"] = (
            "broken media" if not valid else "ambiguous answer" if not answerable else "text leakage" if leak else ""
        )
        return labels
    op, severity, variant = cell
    r = _rng(seed, "truth", sample, op, severity, variant)
    interpretable = r.random() >= DROP_RATE[severity]
    preserved = r.random() >= 0.1 * severity / 70
    return {
        "interpretable": "yes" if interpretable else "no",
        "gold_preserved": ("yes" if preserved else "no") if interpretable else "",
        "stress_test": ("no" if preserved else "yes") if interpretable else "",
    }


def _noisy(labels: dict, rate: float, r: random.Random) -> dict:
    out = dict(labels)
    choices = {
        "valid": form.YES_NO,
        "answerable": form.YES_NO,
        "availability": form.AVAILABILITY,
        "interpretable": form.YES_NO,
        "gold_preserved": form.YES_NO,
    }
    for name, allowed in choices.items():
        if name in out and out[name] and r.random() < rate:
            out[name] = r.choice([v for v in allowed if v != out[name]])
    # keep the form's own rules, as a careful annotator would
    if "availability" in out:
        rejected = form.item_rejected(out)
        out["failure_reason"] = (labels["failure_reason"] or r.choice(form.FAILURE_REASONS)) if rejected else ""
    if "interpretable" in out:
        if out["interpretable"] == "no":
            out["gold_preserved"] = out["stress_test"] = ""
        else:
            out["gold_preserved"] = out["gold_preserved"] or "yes"
            out["stress_test"] = "yes" if out["gold_preserved"] == "no" else "no"
    return out


def simulate(build: Path, name: str, *, seed: int = 0, disagreement: float = 0.08) -> int:
    """Fill every CSV sheet of pass ``name`` in place; returns the rows filled."""
    folder = pass_dir(build, name)
    items = pool_items(build)
    (folder / MARKER).write_text(
        f"labels filled by sceval build annotate simulate (seed {seed}, disagreement "
        f"{disagreement}); not human annotation\n",
        encoding="utf-8",
    )
    filled = 0
    exact = name in ("adjudication", "audit")
    for sheet_path in sorted(folder.glob("*/*.csv")):
        annotator, sheet = sheet_path.parent.name, sheet_path.stem
        with sheet_path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        for row in rows:
            sample = row["sample_id"]
            r = _rng(
                seed, name, annotator, sample, row.get("operator", ""), row.get("severity", ""), row.get("variant", "")
            )
            cell = (row["operator"], int(row["severity"]), int(row["variant"])) if row.get("operator") else None
            if sheet in ("items", "cells"):
                labels = truth(seed, sample, cell)
                row.update(labels if exact else _noisy(labels, disagreement, r))
            elif sheet == "audit":
                row["audit"] = "agree"
            else:
                keep = truth(seed, sample, cell)["gold_preserved"] != "no"
                if r.random() < disagreement:
                    keep = not keep
                gold = items[sample].gold_key
                if sheet == "blind":
                    row["answerable"] = "yes"
                    row["answer"] = gold if keep else r.choice([k for k in items[sample].option_keys if k != gold])
                else:
                    row["gold_valid"] = "yes" if keep else "no"
            filled += 1
        columns = [c.name for c in SHEETS[name][sheet]]
        with replacing(sheet_path) as temporary, temporary.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows({c: row.get(c, "") for c in columns} for row in rows)
    return filled


def add_parser(actions) -> None:
    sim = actions.add_parser(
        "simulate", help="SIMULATION: fill a pass's sheets with seeded simulated annotators", description=__doc__
    )
    path_rules(
        sim.add_argument("build", type=Path, help="the build folder (BUILD/annotation/PASS holds the exported sheets)"),
        BUILT_BY["annotate export"],
        FOLDER_TO_WRITE,
    )
    sim.add_argument(
        "--pass",
        dest="pass_name",
        required=True,
        choices=tuple(SHEETS),
        help="the pass whose sheets to fill: %(choices)s",
    )
    sim.add_argument("--seed", type=int, default=0, help="seed of the simulated truth and flips (default %(default)s)")
    sim.add_argument(
        "--disagreement",
        type=float,
        default=0.08,
        help="probability each simulated annotator flips a field (default 0.08)",
    )
    sim.set_defaults(func=_cmd_simulate)


def _cmd_simulate(args) -> int:
    n = simulate(args.build, args.pass_name, seed=args.seed, disagreement=args.disagreement)
    print(
        f"SIMULATED {args.pass_name}: filled {n} row(s) under {pass_dir(args.build, args.pass_name)} "
        f"(marked {MARKER}; not human annotation)"
    )
    return 0
