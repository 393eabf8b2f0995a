"""Budgeted SCEval evaluation: ``faultline-eval … --budget N`` or ``--precision PP`` (issue 39).

A driver above the harness. It runs the asked SCEval cells in rounds, each round a real lmms-eval
run (through ``faultline-eval``'s own evaluator) restricted to the trials it chose: the tasks keep
only the trial ids that ``SCEVAL_TRIALS`` names (:func:`faultline_eval.tasks.sceval_task.budgeted_round_trials`).

1. Round 0 runs the clean condition on every item (the pairing partner of every drop, and each
   item's clean difficulty).
2. The items get a seeded order stratified by source and clean correctness
   (:func:`faultline_eval.core.sequential.stratified_order`); a cell's units are (item, variant) in
   that order, variant 0 of every item before variant 1.
3. Each later round gives every unresolved cell its next ``--round-size`` units. A cell is resolved
   when its anytime-valid interval for the drop from clean (:func:`~faultline_eval.core.sequential.drop_sequence`)
   is at most ``--precision`` each side, or its anytime p-value is at most alpha / cells (then Holm
   rejects it too); the run stops when every cell is resolved, the ``--budget`` of requests is spent,
   or every trial has run.

State lives in ``OUTPUT/budget/``: ``rounds.jsonl`` (an append-only journal: a round is done once
its record is there), one folder per round with its trial list and lmms-eval's files, and
``report.json`` / ``report.md``: per cell the requests it rests on, its drop, interval, p-values and
status; a cell never run says "not measured" and has no numbers. A trial that ran in a finished
round is never scheduled again, so a killed run resumes where it stopped and ``--complete`` later
runs only what the full protocol still lacks (a model with a reply store does not even regenerate
an unfinished round's replies). ``sceval report`` refuses the round folders while the run is
partial (:func:`faultline_eval.core.run_logs.find_sample_files`), so budgeted and full numbers never
mix silently.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from faultline_eval.core.run_logs import BUDGET_MARKER, record_from_line
from faultline_eval.core.sequential import drop_sequence, stratified_order
from faultline_eval.core.stats import holm
from faultline_eval.core.store import Journal, write_atomic
from sceval_plugin.conditions import catalogue
from sceval_plugin.sceval_environment import SCEVAL_TRIALS

CLEAN_TASK = "sceval_clean"
#: Blocks a budgeted run covers: the corruption cells whose drop from clean it estimates.
CELL_BLOCKS = ("single", "tv", "ta", "va", "tva")


class BudgetError(ValueError):
    """A budgeted run that cannot start (bad options or tasks); the message names the fix."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a budgeted run (``faultline-eval`` only; lmms-eval never sees them)."""
    parser.add_argument(
        "--budget",
        type=int,
        help="budgeted evaluation: run the SCEval cells of --tasks in rounds and stop after this many "
        "requests (clean included); see docs/explanations/budgeted-evaluation.md",
    )
    parser.add_argument(
        "--precision",
        type=float,
        help="budgeted evaluation: a cell stops once its anytime-valid interval for the drop from clean is "
        "at most this wide each side (drop units: 0.03 = 3 pp) or the drop is significant",
    )
    parser.add_argument(
        "--round-size", type=int, default=8, help="budgeted evaluation: units per unresolved cell per round (8)"
    )
    parser.add_argument(
        "--complete",
        action="store_true",
        help="budgeted evaluation: run every trial the full protocol still lacks, re-using every earlier round",
    )
    parser.add_argument("--order-seed", default="0", help="budgeted evaluation: seed of the stratified item order")


def wanted(options: argparse.Namespace) -> bool:
    return options.budget is not None or options.precision is not None or options.complete


@dataclass
class Cell:
    """One condition's units in order and what the finished rounds say about them."""

    condition_id: str
    variants: int
    units: list[str] = field(default_factory=list)  # trial ids in schedule order
    summary: dict[str, Any] = field(default_factory=dict)


def _option(argv: list[str], name: str) -> str | None:
    for k, arg in enumerate(argv):
        if arg == name and k + 1 < len(argv):
            return argv[k + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _without(argv: list[str], name: str) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == name:
            skip = True
            continue
        if not arg.startswith(name + "="):
            out.append(arg)
    return out


def cell_tasks(argv: list[str]) -> tuple[list[str], Path]:
    """The condition ids of ``--tasks`` (each an SCEval corruption cell) and ``--output_path``."""
    tasks, output = _option(argv, "--tasks"), _option(argv, "--output_path")
    if not tasks or not output:
        raise BudgetError("a budgeted run needs --tasks (SCEval cells) and --output_path (where its rounds go)")
    registry, cells = catalogue(), []
    for task in tasks.split(","):
        task = task.strip()
        if task == CLEAN_TASK or not task:
            continue
        condition_id = task.removeprefix("sceval_")
        try:
            condition = registry.get(condition_id)
        except Exception:
            condition = None
        if not task.startswith("sceval_") or condition is None or condition.block not in CELL_BLOCKS:
            raise BudgetError(
                f"--tasks {task}: a budgeted run covers SCEval corruption cells (sceval_single_*, sceval_bi_*, "
                f"sceval_tri_*) only; run {task} in a run of its own without --budget/--precision"
            )
        cells.append(condition_id)
    if not cells:
        raise BudgetError("--tasks names no SCEval corruption cell: a budgeted run estimates drops from clean")
    return cells, Path(output)


def read_outcomes(folder: Path) -> dict[str, dict[str, Any]]:
    """trial id -> {correct, source} from every per-sample log under ``folder`` (invalid replies count
    as incorrect, as the paper's significance tests count them)."""
    outcomes: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.rglob("*_samples_sceval_*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            record = record_from_line(line, "sceval_record", f"{path}:{number}")
            trial = f"{record['condition_id']}/{record['sample_id']}/{record['variant']}"
            if trial in outcomes:
                raise BudgetError(f"{path}:{number}: trial {trial} ran twice (in two rounds); remove one round folder")
            outcomes[trial] = {"correct": int(bool(record.get("correct"))), "source": record.get("source", "")}
    return outcomes


def schedule(cells: list[Cell], outcomes: dict[str, Any], resolved: set[str], size: int, room: int) -> list[str]:
    """The next round's trial ids: each unresolved cell's next ``size`` units not yet run, cell by
    cell, no more than ``room`` in all."""
    chosen: list[str] = []
    for cell in cells:
        if cell.condition_id in resolved:
            continue
        todo = [u for u in cell.units if u not in outcomes][:size]
        chosen += todo[: max(0, room - len(chosen))]
    return chosen


def summarise(
    cell: Cell, clean: dict[str, int], outcomes: dict[str, Any], args: argparse.Namespace, family: int
) -> dict[str, Any]:
    """A cell's numbers from the prefix of its units that ran (units whose trial the task excluded
    are skipped, as the full run skips them)."""
    done = [u for u in cell.units if u in outcomes]
    population = len(cell.units)
    row: dict[str, Any] = {"condition_id": cell.condition_id, "requests": len(done), "population": population}
    if not done:
        return row | {"status": "not measured", "drop": None, "ci_low": None, "ci_high": None, "p_anytime": None}
    d = np.array([clean[u.split("/")[1]] - outcomes[u]["correct"] for u in done], dtype=float)
    seq = drop_sequence(d[None, :], population, alpha=args.alpha)
    low, high, p = float(seq.low[0, -1]), float(seq.high[0, -1]), float(seq.p_value[0, -1])
    if len(done) == population:
        status = "complete"
    elif p <= args.alpha / family:
        status = "significant"
    elif args.precision is not None and (high - low) / 2 <= args.precision:
        status = "resolved"
    else:
        status = "open"
    return row | {"status": status, "drop": float(d.mean()), "ci_low": low, "ci_high": high, "p_anytime": p}


def _checked_options(options: argparse.Namespace, argv: list[str]) -> list[str]:
    """Check ``--budget``/``--precision``/``--alpha`` before anything runs (``--alpha`` is lmms-eval's own
    flag, its power analysis' level: the same meaning here, read from it and set on ``options``);
    returns lmms-eval's options without it."""
    try:
        options.alpha = float(_option(argv, "--alpha") or 0.05)
    except ValueError:
        raise BudgetError(f"--alpha {_option(argv, '--alpha')}: give a level between 0 and 1, e.g. 0.05") from None
    if options.budget is not None and options.budget < 1:
        raise BudgetError(f"--budget {options.budget}: give a positive number of requests")
    if options.precision is not None and not 0 < options.precision < 1:
        raise BudgetError(f"--precision {options.precision}: give a half-width in drop units, e.g. 0.03 for 3 pp")
    if not 0 < options.alpha < 1:
        raise BudgetError(f"--alpha {options.alpha}: give a level between 0 and 1, e.g. 0.05")
    return _without(argv, "--alpha")


@dataclass
class Rounds:
    """The rounds of one budgeted run: each a real ``faultline-eval`` run of some tasks, restricted to
    the trials it names (``SCEVAL_TRIALS``), journalled once it finished so a resumed run skips it."""

    folder: Path
    base: list[str]  # lmms-eval's options of every round, less --tasks and --output_path
    evaluate: Callable[[list[str]], int]
    journal: Journal = field(init=False)

    def __post_init__(self) -> None:
        self.journal = Journal(self.folder / "rounds.jsonl")

    def finished(self) -> set[int]:
        return {int(r["round"]) for r in self.journal.records() if r.get("done")}

    def attempted(self) -> set[str]:
        """Trials a finished round asked for: never asked again (one the task excluded has no outcome)."""
        return {t for r in self.journal.records() if r.get("done") for t in r.get("trials") or []}

    def run(self, number: int, tasks: list[str], trials: list[str] | None) -> None:
        round_dir = self.folder / f"round-{number:03d}"
        round_dir.mkdir(exist_ok=True)
        saved = os.environ.get(SCEVAL_TRIALS.name)
        if trials is not None:
            write_atomic(round_dir / "trials.json", json.dumps(sorted(trials)))
            os.environ[SCEVAL_TRIALS.name] = str(round_dir / "trials.json")
        else:
            os.environ.pop(SCEVAL_TRIALS.name, None)
        try:
            status = self.evaluate([*self.base, "--tasks", ",".join(tasks), "--output_path", str(round_dir)])
        finally:
            if saved is None:
                os.environ.pop(SCEVAL_TRIALS.name, None)
            else:
                os.environ[SCEVAL_TRIALS.name] = saved
        if status != 0:
            raise BudgetError(
                f"round {number} ({round_dir}) failed (exit {status}); run the same command again to resume"
            )
        self.journal.append({"round": number, "done": True, "trials": trials})


def _cells(condition_ids: list[str], items: list[str]) -> list[Cell]:
    """Each cell's units (condition/item/variant), items in the stratified order, variant by variant."""
    registry = catalogue()
    cells = []
    for condition_id in condition_ids:
        variants = registry.get(condition_id).variants
        units = [f"{condition_id}/{item}/{v}" for v in range(variants) for item in items]
        cells.append(Cell(condition_id, variants, units))
    return cells


def _until_answered(
    rounds: Rounds,
    cells: list[Cell],
    clean: dict[str, int],
    attempted: set[str],
    outcomes: dict[str, dict[str, Any]],
    options: argparse.Namespace,
    number: int,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Run rounds from ``number`` on until every cell is resolved or the budget is spent (with
    ``--complete``: until every trial ran); returns the cells' summaries and the trials' outcomes."""
    while True:
        gone = {t for t in attempted if t not in outcomes}
        for cell in cells:
            cell.units = [u for u in cell.units if u not in gone]
        summaries = [summarise(c, clean, outcomes, options, len(cells)) for c in cells]
        resolved = (
            set()
            if options.complete
            else {s["condition_id"] for s in summaries if s["status"] in ("significant", "resolved", "complete")}
        )
        room = 10**12 if options.complete or options.budget is None else options.budget - len(outcomes)
        size = 10**9 if options.complete else options.round_size
        trials = schedule(cells, outcomes, resolved, size, room)
        if not trials:
            return summaries, outcomes
        rounds.run(number, sorted({f"sceval_{t.split('/')[0]}" for t in trials}), trials)
        outcomes = read_outcomes(rounds.folder)
        attempted.update(trials)
        number += 1


def run(options: argparse.Namespace, argv: Sequence[str], evaluate: Callable[[list[str]], int]) -> int:
    """Run the budgeted evaluation that ``options`` asks for; ``evaluate`` is one ``faultline-eval``
    run of ``argv`` (lmms-eval's options), returning its exit status."""
    argv = _checked_options(options, list(argv))
    condition_ids, output = cell_tasks(argv)
    base = _without(_without(argv, "--tasks"), "--output_path")
    if "--log_samples" not in base:
        base.append("--log_samples")
    folder = output / "budget"
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / BUDGET_MARKER, json.dumps({"complete": False, "cells": condition_ids}))
    rounds = Rounds(folder, base, evaluate)
    finished, attempted = rounds.finished(), rounds.attempted()
    if 0 not in finished:
        rounds.run(0, [CLEAN_TASK], None)  # clean first, on every item
    outcomes = read_outcomes(folder)
    clean = {t.split("/")[1]: o["correct"] for t, o in outcomes.items() if t.startswith("clean/")}
    sources = {t.split("/")[1]: o["source"] for t, o in outcomes.items() if t.startswith("clean/")}
    if not clean:
        raise BudgetError(f"{folder}: the clean round recorded no trial; check the source (SCEVAL_SOURCE)")
    items = stratified_order(sorted(clean), [(sources[i], clean[i]) for i in sorted(clean)], seed=options.order_seed)
    cells = _cells(condition_ids, items)
    summaries, outcomes = _until_answered(rounds, cells, clean, attempted, outcomes, options, max(finished | {0}) + 1)
    complete = all(u in outcomes for c in cells for u in c.units)
    write_report(folder, summaries, options, clean, len(outcomes), complete)
    write_atomic(folder / BUDGET_MARKER, json.dumps({"complete": complete, "cells": condition_ids}))
    return 0


def write_report(
    folder: Path,
    cells: list[dict[str, Any]],
    options: argparse.Namespace,
    clean: dict[str, int],
    spent: int,
    complete: bool,
) -> None:
    """``report.json`` and ``report.md``: every number with the requests it rests on and its interval."""
    measured = [c for c in cells if c["p_anytime"] is not None]
    adjusted = holm([c["p_anytime"] for c in measured]) if measured else np.array([])
    for cell, p in zip(measured, adjusted):
        cell["p_holm"] = float(p)
        cell["significant"] = bool(p <= options.alpha)
    full = len(clean) + sum(c["population"] for c in cells)
    report = {
        "mode": "full protocol (every trial ran)" if complete else "budgeted",
        "method": "anytime-valid empirical-Bernstein confidence sequences (sampling without replacement) "
        "for each cell's paired drop from clean; hedged-betting anytime p-values, Holm over the cells",
        "budget": options.budget,
        "precision": options.precision,
        "alpha": options.alpha,
        "requests": spent,
        "full_protocol_requests": full,
        "clean": {"accuracy": float(np.mean(list(clean.values()))), "requests": len(clean), "population": len(clean)},
        "cells": cells,
    }
    write_atomic(folder / "report.json", json.dumps(report, indent=1))
    lines = [
        f"# Budgeted SCEval run: {spent} of {full} requests ({spent / full:.0%})",
        "",
        f"{report['method']}; {int(100 * (1 - options.alpha))} % intervals valid at every round. Clean accuracy "
        f"{report['clean']['accuracy']:.1%} on all {len(clean)} items. A cell marked *not measured* has no numbers.",
        "",
        "| cell | requests / full | drop (pp) | interval (pp) | p (Holm) | status |",
        "|---|---|---|---|---|---|",
    ]
    for c in cells:
        if c["p_anytime"] is None:
            lines.append(f"| {c['condition_id']} | 0 / {c['population']} | — | — | — | not measured |")
            continue
        lines.append(
            f"| {c['condition_id']} | {c['requests']} / {c['population']} | {100 * c['drop']:.1f} | "
            f"[{100 * c['ci_low']:.1f}, {100 * c['ci_high']:.1f}] | {c['p_holm']:.3g} | {c['status']} |"
        )
    write_atomic(folder / "report.md", "\n".join(lines) + "\n")
