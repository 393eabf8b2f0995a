"""Property tests of the compare view (faultline_app/viewer/compare.py): for random answers of two
sides, every number of the SCEval and C3PO compare tables is the reports' own, recomputed here
from what the reports give: ``sceval report``'s ``comparisons.csv`` (its model-vs-model rows);
``c3po report``'s per-template accuracy (its ``compute``) with McNemar's b and c, exact p and Holm
counted here from the logged trials; the trial-pair and per-sample counts from the logged trials. In both name orders (A's name before and after B's: ``comparisons()`` orders a pair
by name), for two models with one run each and for two runs of one model.

The reports cannot tell two runs of one model apart (they keep one), so their side is written a
second time with each run's answers under the label the compare view gives it.

A few seconds per example (two reports and a site without media, in-process)."""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from test_viewer import CONDITIONS, write_sceval_logs

from c3po_plugin.report import compute
from c3po_plugin.report.reader import read_runs
from faultline_app.sceval_cli import main as sceval_main
from faultline_app.viewer import print_summary, write_site
from faultline_app.viewer.budget import Budget
from faultline_eval.tasks import c3po_task
from faultline_eval.tasks import sceval_task as task
from sceval_plugin.conditions import catalogue
from sceval_plugin.metrics.protocol import comparisons, per_sample

ROWS = 6  # per SCEval condition, as write_sceval_logs writes them
SCEVAL_DOCS = [(cid, i) for cid in CONDITIONS for i in range(ROWS)]
C3PO_DOCS = c3po_task.build_rows("all")[0]
NO_MEDIA = Budget(per_cell=0)  # the compare tables do not depend on the media

#: scenario -> (what the sides are, A's name, B's name, --compare). "runs": two folders of one model
#: "m", named by the folders; the site names them "m (<folder>)".
SCENARIOS = {
    "models, A's name after B's": ("models", "zeta", "alpha", True),
    "models, A's name before B's": ("models", "alpha", "zeta", True),
    "runs of one model, A's folder after B's": ("runs", "run_b", "run_a", True),
    "runs of one model, A's folder before B's": ("runs", "run_a", "run_b", True),
    "models in one folder (compared without asking)": ("models", "alpha", "zeta", False),
}

outcomes = st.sampled_from(["right", "wrong", "invalid"])
side = st.fixed_dictionaries(
    {
        "sceval": st.lists(outcomes, min_size=len(SCEVAL_DOCS), max_size=len(SCEVAL_DOCS)),
        "c3po": st.lists(st.booleans(), min_size=len(C3PO_DOCS), max_size=len(C3PO_DOCS)),
    }
)


def sceval_answers(drawn: list[str]):
    """answer(doc) giving the drawn outcome of each (condition, row) write_sceval_logs writes."""
    by_doc = {}
    for (cid, i), outcome in zip(SCEVAL_DOCS, drawn):
        doc = task.build_rows(catalogue().get(cid))[0][i]
        by_doc[(cid, doc["sample_id"], doc["variant"])] = outcome

    def answer(doc: dict) -> str:
        outcome = by_doc[(doc["condition_id"], doc["sample_id"], doc["variant"])]
        if outcome == "invalid":
            return "???"  # no option letter: a parse failure
        letter = doc["target"] if outcome == "right" else "ABCD"[("ABCD".index(doc["target"]) + 1) % 4]
        return json.dumps({"answer": letter, "confidence": "low"})

    return answer


def write_c3po(folder: Path, model: str, right: list[bool]) -> None:
    lines = []
    for i, (doc, ok) in enumerate(zip(C3PO_DOCS, right)):
        out = c3po_task.process_results(doc, [doc["target"] if ok else "a purple elephant"])
        out["c3po_record"]["model"] = model
        lines.append(json.dumps({"doc_id": i, "target": doc["target"], **out, "c3po_record": repr(out["c3po_record"])}))
    (folder / "20261201_120000_samples_c3po_all.jsonl").write_text("\n".join(lines) + "\n")


def write_side_logs(root: Path, sides: dict[str, dict], model: str | None = None) -> None:
    """Each side's SCEval and C3PO logs in ``root/<name>``; ``model``: the label every side's
    results JSON gives (two runs of one model), else each side's name."""
    write_sceval_logs(root, {name: sceval_answers(drawn["sceval"]) for name, drawn in sides.items()})
    for name, drawn in sides.items():
        label = model or name
        (root / name / "20261201_120000_results.json").write_text(json.dumps({"config": {"model": label}}))
        write_c3po(root / name, label, drawn["c3po"])


def table_rows(page: str) -> dict[str, list[str]]:
    """The "which cells changed" table: cell -> the text of its cells after the first."""
    table = page.split('<table class="matrix compare-tests">', 1)[1].split("</table>", 1)[0]
    rows = {}
    for cell, row in re.findall(r'<tr data-cell="([^"]+)"[^>]*>(.*?)</tr>', table):
        rows[html.unescape(cell)] = [
            html.unescape(re.sub(r"<[^>]+>", "", td)) for td in re.findall(r"<td[^>]*>(.*?)</td>", row)
        ]
    return rows


def per_sample_rows(page: str) -> dict[str, tuple[int, int]]:
    """The "per sample" table: sample -> (A right B wrong, A wrong B right)."""
    table = page.rsplit('<table class="matrix">', 1)[1].split("</table>", 1)[0]
    return {
        html.unescape(s): (int(a), int(b))
        for s, a, b in re.findall(r'<tr><th><a href="[^"]*">([^<]*)</a></th><td>(\d+)</td><td>(\d+)</td></tr>', table)
    }


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def pp(x: float) -> str:
    return f"{round(100 * x, 1) + 0.0:+.1f}"


def p3(x: float) -> str:
    return f"{x:.3g}"


def holm(p: dict[str, float]) -> dict[str, float]:
    """Holm's step-down adjustment, written out: the k-th smallest p times (m - k), running maximum."""
    order = sorted(p, key=p.get)
    adjusted, running = {}, 0.0
    for k, key in enumerate(order):
        running = max(running, min(1.0, (len(order) - k) * p[key]))
        adjusted[key] = running
    return adjusted


def expected_row(test: dict, a: str, n_pairs: tuple[int, int]) -> list[str]:
    """A table row from one of the report's comparisons (its model_a/model_b in name order),
    turned to the page's A/B order: B − A, its interval, McNemar's b = A right and B wrong."""
    flip = test["model_a"] != a
    mean_a, mean_b = (test["mean_b"], test["mean_a"]) if flip else (test["mean_a"], test["mean_b"])
    b, c = (test["c"], test["b"]) if flip else (test["b"], test["c"])
    diff = mean_b - mean_a  # the report's diff is model_a minus model_b
    low, high = (test["ci_low"], test["ci_high"]) if flip else (-test["ci_high"], -test["ci_low"])
    return [
        pct(mean_a),
        pct(mean_b),
        f"{pp(diff)} [{pp(low)}, {pp(high)}]",
        str(int(test["n"])),
        str(int(b)),
        str(int(c)),
        p3(test["p_mcnemar"]),
        p3(test["p_holm"]),
        "yes" if test["p_holm"] < 0.05 else "no",
        str(n_pairs[0]),
        str(n_pairs[1]),
    ]


def same_row(shown: list[str], expected: list[str]) -> bool:
    """Equal, the interval allowed one step of the last digit: the report bootstraps B − A, the
    page A − B (the same resamples, the interval's ends mirrored up to rounding)."""
    if shown[:2] + shown[3:] != expected[:2] + expected[3:]:
        return False
    numbers = [re.findall(r"[-+]?\d+\.\d", text) for text in (shown[2], expected[2])]
    return len(numbers[0]) == len(numbers[1]) == 3 and all(
        abs(float(x) - float(y)) <= 0.1 + 1e-9 for x, y in zip(*numbers)
    )


def sceval_pairs(folder_a: Path, folder_b: Path) -> list[tuple[str, str, str]]:
    """(condition, sample, pair) per logged trial pair: "a_only" (A right, B wrong: an invalid
    answer is wrong), "b_only", or another word (both right or wrong, or one not scored)."""

    def outcomes(folder: Path) -> dict:
        found = {}
        for path in folder.glob("*_samples_sceval_*.jsonl"):
            for line in path.read_text().splitlines():
                r = json.loads(line)["sceval_record"]
                right = None if r.get("not_applicable") else bool(r["invalid"] is None and r["correct"] == 1)
                found[(r["condition_id"], r["sample_id"], r["variant"])] = right
        return found

    a, b = outcomes(folder_a), outcomes(folder_b)
    word = {(True, False): "a_only", (False, True): "b_only"}
    return [(k[0], k[1], word.get((a.get(k), b.get(k)), "other")) for k in sorted(set(a) | set(b))]


def c3po_outcomes(folder: Path) -> dict[tuple[str, str], bool]:
    """(template, sample) -> graded right, from the logged C3PO records (exact matching)."""
    found = {}
    for line in (folder / "20261201_120000_samples_c3po_all.jsonl").read_text().splitlines():
        # lmms-eval logs the record with repr(): a Python literal (nan for a missing number)
        record = eval(json.loads(line)["c3po_record"], {"nan": float("nan")})
        found[(record["template_id"], str(record["sample_id"]))] = bool(record["correct"])
    return found


@pytest.mark.slow
@pytest.mark.parametrize("scenario", list(SCENARIOS))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn_a=side, drawn_b=side)
def test_every_number_of_the_compare_tables_is_the_reports(scenario, drawn_a, drawn_b, tmp_path_factory, monkeypatch):
    kind, name_a, name_b, compare = SCENARIOS[scenario]
    root = tmp_path_factory.mktemp("cmp")
    monkeypatch.setenv("C3PO_JUDGE", "exact")
    monkeypatch.setenv("SCEVAL_CACHE", str(root / "cache"))
    drawn = {name_a: drawn_a, name_b: drawn_b}
    write_side_logs(root / "logs", drawn, "m" if kind == "runs" else None)
    if kind == "runs":  # the reports' side: each run's answers under the label the site gives it
        a, b = f"m ({name_a})", f"m ({name_b})"
        write_side_logs(root / "labelled", {a: drawn_a, b: drawn_b})
        reported = [root / "labelled" / a, root / "labelled" / b]
    else:
        a, b = name_a, name_b
        reported = [root / "logs" / a, root / "logs" / b]
    runs = [root / "logs" / name_a, root / "logs" / name_b] if compare else [root / "logs"]
    write_site(runs, root / "site", budget=NO_MEDIA, compare=compare)
    assert sceval_main(["report", *map(str, reported), "-o", str(root / "sr"), "--quiet", "--no-figures"]) in (0, None)

    # SCEval: the report's model-vs-model comparisons, row by row
    page = (root / "site" / "sceval" / "compare.html").read_text()
    assert f"A = {html.escape(a)}, B = {html.escape(b)}" in page
    with open(root / "sr" / "comparisons.csv", newline="") as f:
        report = [r for r in csv.DictReader(f) if r["kind"] == "model_vs_model"]
    assert {(r["model_a"], r["model_b"]) for r in report} == {tuple(sorted((a, b)))}
    pairs = sceval_pairs(root / "logs" / name_a, root / "logs" / name_b)
    trial_pairs = {
        cell: tuple(sum((c, w) == (cell, which) for c, _, w in pairs) for which in ("a_only", "b_only"))
        for cell, _, _ in pairs
    }
    shown = table_rows(page)
    assert set(shown) == {cell for cell, _, _ in pairs}
    tested = {r["condition_a"] for r in report}
    for r in report:
        numbers = {k: float(v) for k, v in r.items() if k in ("n", "mean_a", "mean_b", "ci_low", "ci_high", "b", "c")}
        test = {**numbers, "p_mcnemar": float(r["p_mcnemar"]), "p_holm": float(r["p_holm"]), "model_a": r["model_a"]}
        expected = expected_row(test, a, trial_pairs[r["condition_a"]])
        assert same_row(shown[r["condition_a"]], expected), (r["condition_a"], shown[r["condition_a"]], expected)
    for cell in set(shown) - tested:  # outside the report's headline trials: no numbers but the trial pairs
        assert shown[cell][1:] == [str(n) for n in trial_pairs[cell]] and shown[cell][0].startswith("not tested")
    by_sample: dict[str, tuple[int, int]] = {}
    for _, sample, pair in pairs:
        if pair in ("a_only", "b_only"):
            a_only, b_only = by_sample.get(sample, (0, 0))
            by_sample[sample] = (a_only + (pair == "a_only"), b_only + (pair == "b_only"))
    assert per_sample_rows(page) == by_sample
    changed = sum(float(r["p_holm"]) < 0.05 for r in report)
    assert f"{changed} of {len(report)} tested condition(s) differ significantly" in page
    assert f"{len(shown)} condition(s), {len(pairs)} pair(s) of trials." in page

    # C3PO: accuracy per template from the report; n, b, c, exact p and Holm counted from the logs
    page = (root / "site" / "c3po" / "compare.html").read_text()
    report_accuracy = compute(read_runs(reported)[0])["accuracy"]
    report_accuracy = report_accuracy[report_accuracy["level"] == "template"]
    accuracy = dict(zip(zip(report_accuracy["model"], report_accuracy["group"]), report_accuracy["accuracy"]))
    right_a, right_b = c3po_outcomes(root / "logs" / name_a), c3po_outcomes(root / "logs" / name_b)
    templates = sorted({t for t, _ in right_a})
    counts = {
        t: (
            sum(right_a[k] and not right_b[k] for k in right_a if k[0] == t),
            sum(right_b[k] and not right_a[k] for k in right_a if k[0] == t),
            sum(k[0] == t for k in right_a),
        )
        for t in templates
    }
    p = {t: 1.0 if b_ + c_ == 0 else binomtest(b_, b_ + c_, 0.5).pvalue for t, (b_, c_, _) in counts.items()}
    adjusted = holm(p)
    # the interval: the report's paired bootstrap (the one SCEval's comparisons use) on the logged outcomes
    trials = pd.DataFrame(
        [
            {"model": m, "condition_id": t, "sample_id": s, "variant": 0, "correct": float(ok)}
            for m, right in ((a, right_a), (b, right_b))
            for (t, s), ok in right.items()
        ]
    )
    boot = comparisons(per_sample(trials), pd.DataFrame(), {}, model_pairs=True).set_index("condition_a")
    shown = table_rows(page)
    assert set(shown) == set(templates)
    for t in templates:
        b_, c_, n = counts[t]
        test = {
            "model_a": a,
            "mean_a": accuracy[(a, t)],
            "mean_b": accuracy[(b, t)],
            "n": n,
            "b": b_,
            "c": c_,
            "p_mcnemar": p[t],
            "p_holm": adjusted[t],
        }
        flip = boot.loc[t, "model_a"] != a
        low, high = boot.loc[t, "ci_low"], boot.loc[t, "ci_high"]
        test["ci_low"], test["ci_high"] = (-high, -low) if flip else (low, high)  # A − B, as test's model_a = A
        c3po_pairs = (b_, c_)  # one run per side: a trial pair per sample
        expected = expected_row(test, a, c3po_pairs)
        assert same_row(shown[t], expected), (t, shown[t], expected)
        assert np.isclose(p[t], boot.loc[t, "p_mcnemar"])  # scipy's exact test and the report's agree
    changed = sum(adjusted[t] < 0.05 for t in templates)
    assert f"{changed} of {len(templates)} tested template(s) differ significantly" in page
    assert f"{len(templates)} template(s), {len(right_a)} pair(s) of trials." in page


def test_a_benchmark_one_side_lacks_is_named_not_dropped(tmp_path, monkeypatch, capsys):
    """--compare with C3PO logs on A's side only: the site says why C3PO is not there (front page,
    compare page, the printed summary)."""
    monkeypatch.setenv("C3PO_JUDGE", "exact")
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    drawn = {"right": ["right"] * len(SCEVAL_DOCS), "wrong": ["wrong"] * len(SCEVAL_DOCS)}
    write_sceval_logs(tmp_path / "logs", {name: sceval_answers(d) for name, d in drawn.items()})
    write_c3po(tmp_path / "logs" / "right", "right", [True] * len(C3PO_DOCS))
    done = write_site(
        [tmp_path / "logs" / "right", tmp_path / "logs" / "wrong"], tmp_path / "site", budget=NO_MEDIA, compare=True
    )
    note = "C3PO left out: --compare shows a benchmark both folders hold, and B (wrong) holds no C3PO per-sample logs"
    assert [s["name"] for s in done["sections"]] == ["sceval"] and done["notes"][0].startswith(note)
    for page in ("index.html", "sceval/compare.html"):
        assert note in html.unescape((tmp_path / "site" / page).read_text())
    print_summary(done)
    assert f"note: {note}" in capsys.readouterr().out
