"""Compare views: two models, or two runs of one model, side by side.

    faultline view RUN_A RUN_B -o OUT --compare     the two folders are the two sides (two runs of one
                                                    model stay two: each folder is read alone)
    faultline view RUNS -o OUT                      a benchmark whose runs hold exactly two models gets
                                                    their compare view without asking

``OUT/<bench>/compare.html`` holds, for the two sides A and B:

- which cells changed, largest change first (|B − A| with its paired bootstrap interval): the
  core's paired comparison of two runs, :func:`faultline_eval.core.stats.compare_two` (paper §2.4:
  exact McNemar on each sample's binary outcome, Holm within each family of model-vs-model
  comparisons), the one ``sceval report`` computes its ``model_vs_model`` rows of
  ``comparisons.csv`` with, on the trials it would use (headline cohort, no-option and
  not-applicable trials out). C³PO is compared the same way per template, paired on items, every
  template in one Holm family (its report has no paired test of its own);
- every pair of trials (cell, sample, variant or run) with both verdicts and answers, filterable to
  "A right, B wrong" and back (``#pair=a_only``, ``#pair=b_only``, ``#cell=...``), with "N of M
  shown"; each row links to the sample page, where A's and B's replies stand side by side (or,
  for trials the budget gave no media, to the cell's table filtered to the sample);
- per sample, in how many cells A alone and B alone was right.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pandas as pd

from faultline_app.viewer.budget import CORRECT
from faultline_app.viewer.site import ASSETS, SiteWriter, esc, slug
from faultline_eval.core.model_names import ModelNames
from faultline_eval.core.run_logs import ReportError
from faultline_eval.core.stats import compare_two, per_sample
from sceval_plugin.metrics.protocol import (
    catalogue_info,
    check_comparable,
    leave_out_incomparable,
    split_not_applicable,
)
from sceval_plugin.report import no_option_section, select_cohort

PAIRS = {
    "a_only": "A right, B wrong",
    "b_only": "A wrong, B right",
    "both_right": "both right",
    "both_wrong": "both wrong",
    "unpaired": "not compared",
}
PAGE = "compare.html"
#: The columns of :func:`paired_tests` the page reads (indexed by cell, ``condition_id``).
TEST_COLUMNS = ["family", "model_a", "model_b", "n", "mean_a", "mean_b", "diff", "ci_low", "ci_high"]
TEST_COLUMNS += ["b", "c", "p_mcnemar", "p_holm"]
#: C³PO's one Holm family: every template.
C3PO_FAMILY = "templates"


def outcome(verdict: str | None) -> bool | None:
    """Right (True), wrong (False: a wrong or invalid answer, as the headline counts it) or neither
    (unscored, not applicable, no trial)."""
    if verdict == CORRECT:
        return True
    if verdict == "wrong" or (isinstance(verdict, str) and verdict.startswith("invalid")):
        return False
    return None


def pair_of(verdict_a: str | None, verdict_b: str | None) -> str:
    """The :data:`PAIRS` key of two trials' verdicts."""
    a, b = outcome(verdict_a), outcome(verdict_b)
    if a is None or b is None:
        return "unpaired"
    return "both_right" if a and b else "a_only" if a else "b_only" if b else "both_wrong"


@dataclass
class Sides:
    """Where a site's two sides come from. ``split`` (``--compare``): ``run_dirs`` are exactly two
    folders, each read alone and its one model relabelled to its side's label (so two runs of one
    model stay two; the labels gain the folder names when the models' are equal); otherwise the
    folders are read together and a benchmark with exactly two models is compared."""

    run_dirs: Sequence[str | Path]
    split: bool = False
    labels: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # benchmark -> per side: log label -> shown
    side_rows: dict[str, list[pd.DataFrame]] = field(default_factory=dict)  # benchmark -> per side: rows as read

    def __post_init__(self) -> None:
        if self.split and len(self.run_dirs) != 2:
            raise ReportError(f"--compare takes two run folders (A and B), got {len(self.run_dirs)}")

    def read_rows(self, benchmark: str, read: Callable[[list], tuple[pd.DataFrame, list[str]]]):
        """``read(folders)`` -> (rows, notes) of the whole site, each side's model relabelled."""
        if not self.split:
            return read(list(self.run_dirs))
        parts = [read([folder]) for folder in self.run_dirs]
        found = [self._only_model(benchmark, folder, rows) for folder, (rows, _) in zip(self.run_dirs, parts)]
        shown = self._side_names(found)
        self.labels[benchmark] = [{model: label} for model, label in zip(found, shown)]
        self.side_rows[benchmark] = [rows for rows, _ in parts]
        rows = pd.concat(
            [rows.assign(model=rows["model"].map(m)) for (rows, _), m in zip(parts, self.labels[benchmark])],
            ignore_index=True,
        )
        notes = [
            f"compared: A = {shown[0]} ({Path(self.run_dirs[0]).name}), B = {shown[1]} ({Path(self.run_dirs[1]).name})"
        ]
        return rows, notes + [n for _, side_notes in parts for n in side_notes]

    @staticmethod
    def _only_model(benchmark: str, folder: str | Path, rows: pd.DataFrame) -> str:
        """The one model a side's folder holds; refuses a folder with several (or none)."""
        models = sorted(set(rows["model"]))
        if len(models) != 1:
            raise ReportError(
                f"--compare: {Path(folder).name} holds {len(models)} {benchmark} models ({', '.join(models)}); "
                "give one folder per model or run, or leave out --compare"
            )
        return models[0]

    def _side_names(self, models: list[str]) -> list[str]:
        """The two sides' shown names: the models', told apart when they are equal."""
        shown = list(models)
        if shown[0] == shown[1]:  # one name read alone: the names the two folders get read together
            together = ModelNames.under(self.run_dirs)
            apart = [together.under_folder(folder) for folder in self.run_dirs]
            if all(len(names) == 1 for names in apart) and apart[0] != apart[1]:
                shown = [names.pop() for names in apart]
        if shown[0] == shown[1]:  # two runs of one model: name them by their folders
            names = [Path(folder).resolve().name for folder in self.run_dirs]
            names = names if names[0] != names[1] else ["A", "B"]
            shown = [f"{label} ({name})" for label, name in zip(shown, names)]
        return shown

    def read_records(self, benchmark: str, read: Callable, wanted: set[tuple]) -> tuple[dict, dict]:
        """``read(folders, rows, wanted)`` -> (extras, records) keyed (model, cell, sample, variant),
        per side with the side's own labels and rows."""
        if not self.split:
            return read(list(self.run_dirs), None, wanted)
        extras: dict = {}
        records: dict = {}
        for folder, labels, rows in zip(self.run_dirs, self.labels[benchmark], self.side_rows[benchmark]):
            back = {shown: logged for logged, shown in labels.items()}
            side_extras, side_records = read([folder], rows, {(back[k[0]], *k[1:]) for k in wanted if k[0] in back})
            extras.update({(labels[k[0]], *k[1:]): v for k, v in side_extras.items()})
            records.update({(labels[k[0]], *k[1:]): v for k, v in side_records.items()})
        return extras, records

    def read_trials(self, benchmark: str, read: Callable[[list], tuple[pd.DataFrame, list[str]]]) -> pd.DataFrame:
        """A report's trial table (``read(folders)``, column ``model``) over both sides, relabelled."""
        if not self.split:
            return read(list(self.run_dirs))[0]
        parts = []
        for folder, labels in zip(self.run_dirs, self.labels[benchmark]):
            trials = read([folder])[0]
            parts.append(trials.assign(model=trials["model"].astype(str).map(labels)))
        return pd.concat(parts, ignore_index=True)

    def pair(self, benchmark: str, rows: pd.DataFrame) -> tuple[str, str] | None:
        """(A, B) of a benchmark's site, or None when it has no two sides."""
        if self.split:
            return tuple(next(iter(m.values())) for m in self.labels[benchmark])
        models = sorted(set(rows["model"]))
        return (models[0], models[1]) if len(models) == 2 else None


# -- the paired test -----------------------------------------------------------------------------------------


def paired_tests(trials: pd.DataFrame, families: dict[str, str], a: str, b: str, other: str) -> pd.DataFrame:
    """Models ``a`` and ``b`` of a trial table (columns model, condition_id, sample_id, variant,
    correct) compared on each cell both have, ``a`` on the A side (``diff`` is A − B), indexed by
    cell: :func:`faultline_eval.core.stats.compare_two`, Holm within each family of ``families``
    (a cell not in it is in the family ``other``)."""
    samples = per_sample(trials[trials["model"].isin([a, b])])
    return compare_two(samples, a, b, families=families, other_family=other)


def sceval_tests(trials: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """:func:`paired_tests` on the trials ``sceval report`` tests: the headline cohort, without the
    no-option and not-applicable trials, and without the trials the report leaves out (a probe's
    earlier reading, a condition the catalogue does not know), as
    :func:`sceval_plugin.report.build_report`. Raises ``ValueError`` naming what clashes for runs
    the report would not compare (other prompts, dataset versions or seed schemes)."""
    info = catalogue_info()
    trials, _ = leave_out_incomparable(trials, info)
    check_comparable(trials, info)
    trials = select_cohort(trials, "gold_preserved", [])
    trials, _ = no_option_section.split_trials(trials, info)
    trials, _ = split_not_applicable(trials)
    return paired_tests(trials, {cid: c.family for cid, c in info.items()}, a, b, "controls")


def c3po_tests(rows: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """:func:`paired_tests` on the viewer's C³PO rows (the report's grading, verdicts applied), per
    template, paired on items: correct 1, wrong 0, invalid or ungradable unscored (counted wrong by
    McNemar, as SCEval's headline); the repeated runs of an item are averaged as SCEval's variants.
    The C³PO report has no paired test of its own: every template is in one Holm family."""
    correct = rows["verdict"].map(lambda v: {True: 1.0, False: 0.0}.get(outcome(v), np.nan))
    scored = rows["verdict"].map(lambda v: outcome(v) is not None or str(v).startswith("ungradable"))
    trials = rows[scored].assign(condition_id=rows["cell"], correct=correct[scored])
    return paired_tests(trials[["model", "condition_id", "sample_id", "variant", "correct"]], {}, a, b, C3PO_FAMILY)


def changed_cells(cells: list[str], tested: pd.DataFrame, pair_counts: pd.DataFrame) -> pd.DataFrame:
    """The page's changed-cells table, one row per cell, largest change first: ``change`` (B − A,
    accuracy over samples) with its 95 % paired bootstrap interval (``change_low``,
    ``change_high``), the test's columns (A's and B's accuracy, samples, McNemar's b and c, p,
    Holm's p, ``significant``), and the trial pairs A alone and B alone got right (``pair_counts``:
    cell x pair key). Cells the test left out (no change to order by) follow, in ``cells``' order."""
    table = pd.DataFrame({"cell": cells, "_order": range(len(cells))}).set_index("cell")
    table = table.join(tested.reindex(columns=TEST_COLUMNS))
    table["tested"] = table.index.isin(tested.index)
    table["change"], table["change_low"], table["change_high"] = -table["diff"], -table["ci_high"], -table["ci_low"]
    table["significant"] = table["p_holm"] < 0.05
    counts = pair_counts.reindex(index=table.index, columns=["a_only", "b_only"], fill_value=0)
    table = table.join(counts.fillna(0).astype(int))
    size = table["change"].abs().where(table["tested"])
    table = table.assign(_size=size.fillna(-1.0)).sort_values(["_size", "_order"], ascending=[False, True])
    return table.drop(columns=["_order", "_size"])


# -- the page ----------------------------------------------------------------------------------------------------


def _pp(x: float) -> str:
    return "–" if not np.isfinite(x) else f"{round(100 * x, 1) + 0.0:+.1f}"  # + 0.0: no "-0.0"


def _p(x: float) -> str:
    return "–" if not np.isfinite(x) else f"{x:.3g}"


def _pair_link(row) -> str:
    """Where a pair of trials opens: the sample page (its link is relative to a cell page; the
    compare page sits beside the overview), else, for trials the budget gave no media, the cell's
    table filtered to the sample (both replies as text)."""
    for link in (row.link_a, row.link_b):
        if isinstance(link, str):
            return link.removeprefix("../")
    return f"cells/{slug(row.cell)}.html#sample_id={quote('=' + str(row.sample_id), safe='')}"


def write_compare(writer: SiteWriter, name: str, title: str, cell_label: str, variant_label: str, ab, tests) -> None:
    """``OUT/<name>/compare.html`` from the site's trial table (``writer.rows[name]``, with each
    trial's sample-page link) and ``tests(a, b)``, the paired tests of the pair ``ab`` in A/B
    order (:func:`paired_tests`; a ``ValueError`` it raises is shown as the reason there are none)."""
    a, b = ab
    rows = writer.rows[name]
    rows = rows[rows["model"].isin([a, b])]
    key = ["cell", "sample_id", "variant"]
    side = {m: g.set_index(key) for m, g in rows.groupby("model")}
    columns = ["verdict", "answer", "gold", "link"]
    joined = side[a][columns].merge(
        side[b][columns], how="outer", left_index=True, right_index=True, suffixes=("_a", "_b")
    )
    joined = joined.reset_index()
    joined = joined.assign(_not_clean=joined["cell"] != "clean").sort_values(["_not_clean", *key], kind="stable")
    joined["pair"] = [pair_of(x, y) for x, y in zip(joined["verdict_a"], joined["verdict_b"])]
    cells = sorted(joined["cell"].unique(), key=lambda c: (c != "clean", c))
    try:
        tested, untested = tests(a, b), "not tested (outside the report's headline trials)"
    except ValueError as exc:
        tested, untested = pd.DataFrame(columns=TEST_COLUMNS), f"not tested: {exc}"
    folder = writer.out / name
    # the trial pairs, for compare.js
    data = {
        "a": a,
        "b": b,
        "columns": [cell_label, "sample_id", variant_label, "A verdict", "B verdict", "A answer", "B answer", "gold"],
        "pairs": PAIRS,
        "rows": [
            [
                r.cell,
                r.sample_id,
                int(r.variant),
                r.verdict_a,
                r.verdict_b,
                r.answer_a,
                r.answer_b,
                r.gold_a if isinstance(r.gold_a, str) else r.gold_b,
                r.pair,
                _pair_link(r),
            ]
            for r in joined.itertuples()
        ],
    }
    data["rows"] = [[None if isinstance(v, float) and not np.isfinite(v) else v for v in row] for row in data["rows"]]
    (folder / "compare-data.js").write_text(
        f"window.FL_COMPARE = {json.dumps(data, default=str, allow_nan=False)};\n", encoding="utf-8"
    )
    # which cells changed: the paired test, largest change first
    counts = joined.groupby("cell")["pair"].value_counts().unstack(fill_value=0)
    lines = []
    for cell, t in changed_cells(cells, tested, counts).iterrows():
        trial_counts = "".join(
            f'<td><a href="#cell={esc(cell)}&amp;pair={p}">{int(t[p])}</a></td>' for p in ("a_only", "b_only")
        )
        if t["tested"]:
            test = (
                f"<td>{100 * t['mean_a']:.1f}</td><td>{100 * t['mean_b']:.1f}</td>"
                f"<td>{_pp(t['change'])} [{_pp(t['change_low'])}, {_pp(t['change_high'])}]</td><td>{int(t['n'])}</td>"
                f"<td>{int(t['b'])}</td><td>{int(t['c'])}</td><td>{_p(t['p_mcnemar'])}</td>"
                f"<td>{_p(t['p_holm'])}</td><td>{'yes' if t['significant'] else 'no'}</td>"
            )
            attrs = (
                f' data-p-holm="{float(t["p_holm"])!r}" data-b="{int(t["b"])}" data-c="{int(t["c"])}"'
                f' data-family="{esc(t["family"])}" class="{"changed" if t["significant"] else ""}"'
            )
        else:
            test = f'<td colspan="9" class="muted">{esc(untested)}</td>'
            attrs = ""
        lines.append(
            f'<tr data-cell="{esc(cell)}"{attrs}><th><a href="cells/{slug(cell)}.html">{esc(cell)}</a></th>'
            f"{test}{trial_counts}</tr>"
        )
    changed = int((tested["p_holm"] < 0.05).sum()) if len(tested) else 0
    by_sample = (
        joined[joined["pair"].isin(["a_only", "b_only"])]
        .groupby("sample_id")["pair"]
        .value_counts()
        .unstack(fill_value=0)
    )
    by_sample = by_sample.reindex(columns=["a_only", "b_only"], fill_value=0)
    by_sample = by_sample.assign(total=by_sample.sum(axis=1)).sort_values(["total", "a_only"], ascending=False)
    samples = "".join(
        f'<tr><th><a href="#sample=={esc(s)}">{esc(s)}</a></th><td>{int(r.a_only)}</td><td>{int(r.b_only)}</td></tr>'
        for s, r in by_sample.iterrows()
    )
    notes = "".join(f'<p class="note">{esc(n)}</p>' for n in writer.notes)  # e.g. a benchmark left out
    body = f"""<h1>{esc(title)}: A = {esc(a)}, B = {esc(b)}</h1>{notes}
<p><a href="index.html">overview</a> · {len(cells)} {esc(cell_label)}(s), {len(joined)} pair(s) of trials.</p>
<h2>which {esc(cell_label)}s changed</h2>
<p class="muted">{changed} of {len(tested)} tested {esc(cell_label)}(s) differ significantly (Holm-adjusted p &lt; .05),
largest change (|B − A|) first, with its 95% paired bootstrap interval over samples.
The test is the report's paired test (paper §2.4): exact McNemar on each sample's outcome (its mean over
{esc(variant_label)}s, invalid answers wrong, right at ≥ 0.5), Holm within each family of model-vs-model
comparisons{"" if name == "sceval" else " (C³PO: all templates are one family)"}; accuracy is over samples.
"A right, B wrong" there counts samples; the last two columns count trial pairs (click to list them).</p>
<table class="matrix compare-tests"><thead><tr><th>{esc(cell_label)}</th><th>A (%)</th><th>B (%)</th>
<th>B − A (pp) [95% CI]</th><th>samples</th><th>A right, B wrong</th><th>A wrong, B right</th><th>p McNemar</th>
<th>p Holm</th><th>changed</th><th>trials A right, B wrong</th><th>trials A wrong, B right</th></tr></thead>
<tbody>{"".join(lines)}</tbody></table>
<h2>trial pairs</h2>
<div id="compare-filters"></div><p id="compare-count" class="caption"></p>
<table id="compare" class="samples"></table>
<h2>per sample</h2>
<p class="muted">Samples where A and B disagree: in how many trial pairs A alone and B alone was right.</p>
<table class="matrix"><thead><tr><th>sample</th><th>A right, B wrong</th><th>A wrong, B right</th></tr></thead>
<tbody>{samples}</tbody></table>"""
    (folder / PAGE).write_text(
        writer.page(f"{title}: {a} vs {b}", body, 1, scripts=("compare-data.js", "../assets/compare.js")),
        encoding="utf-8",
    )
    assets = writer.out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    (assets / "compare.js").write_bytes((ASSETS / "compare.js").read_bytes())
