"""The viewer's compare views (faultline_app/viewer/compare.py) and its media reuse: the
"A right, B wrong" filter in headless Chromium against counts taken from the logged trials, the
changed-cells table against ``sceval report``'s own paired tests, two runs of one model kept
apart by ``--compare``, and a second ``faultline view`` that writes no media file again.

About 25 s of CPU (three `faultline view` runs, one `sceval report`); minutes of wall time on a loaded machine."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from test_viewer import BIN, BROWSER_ARGS, CHROMIUM, answer_messages, task, write_c3po_logs, write_sceval_logs

from faultline_app.viewer import write_site
from faultline_app.viewer.compare import pair_of
from faultline_app.viewer.logs import verdict_of
from faultline_eval.core.run_logs import ReportError

BUDGET = ["--html-budget", "per_cell=1,max_mb=5"]


def reference(doc: dict) -> str:
    return answer_messages(task.doc_to_messages(doc))


def contrarian(doc: dict) -> str:
    """Never right on clean (so clean changes significantly against the reference model), right on
    the even samples of the corrupted cells (so it is sometimes right where the reference is not)."""
    right = doc["condition_id"] != "clean" and int(doc["sample_id"][-2:]) % 2 == 0
    answer = doc["target"] if right else "ABCD"[("ABCD".index(doc["target"]) + 1) % 4]
    return json.dumps({"answer": answer, "confidence": "low"})


def view(*args: str, env: dict) -> None:
    done = subprocess.run(
        [str(BIN / "faultline"), "view", *args, *BUDGET], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """Two models in one folder (compared without asking) and the same answers as two runs of one
    model, "m", in two folders (compared with --compare)."""
    root = tmp_path_factory.mktemp("compare")
    env = {**os.environ, "C3PO_JUDGE": "exact", "SCEVAL_CACHE": str(root / "cache")}
    write_sceval_logs(root / "logs", {"contrarian": contrarian, "sceval_reference": reference})
    for model in ("contrarian", "sceval_reference"):  # C3PO: the same answers, so nothing changes
        write_c3po_logs(root / "logs" / model)
    write_sceval_logs(root / "runs", {"run_a": reference, "run_b": contrarian})
    for run in ("run_a", "run_b"):  # one model label: the runs differ by folder only
        (root / "runs" / run / "20261201_120000_results.json").write_text(json.dumps({"config": {"model": "m"}}))
    view(str(root / "logs"), "-o", str(root / "auto"), env=env)
    view(str(root / "runs" / "run_a"), str(root / "runs" / "run_b"), "--compare", "-o", str(root / "split"), env=env)
    return root, env


def logged_pairs(folder_a: Path, folder_b: Path) -> list[tuple[str, str]]:
    """Per (condition, sample, variant) the cell and the pair key, from the logged records."""

    def verdicts(folder: Path) -> dict:
        found = {}
        for path in folder.glob("*_samples_sceval_*.jsonl"):
            for line in path.read_text().splitlines():
                r = json.loads(line)["sceval_record"]
                found[(r["condition_id"], r["sample_id"], r["variant"])] = verdict_of(r["correct"], r["invalid"])
        return found

    a, b = verdicts(folder_a), verdicts(folder_b)
    return [(key[0], pair_of(a.get(key), b.get(key))) for key in sorted(set(a) | set(b))]


def changed_cells(page: Path) -> dict[str, dict]:
    """The changed-cells table's rows: cell -> Holm p, McNemar's b and c, marked changed."""
    rows = re.findall(
        r'<tr data-cell="([^"]+)" data-p-holm="([^"]+)" data-b="(\d+)" data-c="(\d+)"[^>]*class="(\w*)"',
        page.read_text(),
    )
    return {
        cell: {"p_holm": float(p), "b": int(b), "c": int(c), "changed": cls == "changed"} for cell, p, b, c, cls in rows
    }


@pytest.mark.slow
def test_changed_cells_are_the_reports_own_paired_test(compared):
    """The table is ``sceval report``'s model-vs-model McNemar/Holm, cell by cell; with --compare
    on two runs of one model (A = the reference's answers) the same tests, A and B swapped."""
    root, env = compared
    done = subprocess.run(
        [str(BIN / "sceval"), "report", str(root / "logs"), "-o", str(root / "report"), "--quiet", "--no-figures"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = [
        c
        for c in json.loads((root / "report" / "report.json").read_text())["comparisons"]
        if c["kind"] == "model_vs_model"
    ]
    assert {(c["model_a"], c["model_b"]) for c in report} == {("contrarian", "sceval_reference")}
    auto, split = (
        changed_cells(root / "auto" / "sceval" / "compare.html"),
        changed_cells(root / "split" / "sceval" / "compare.html"),
    )
    assert set(auto) == set(split) == {c["condition_a"] for c in report}
    for c in report:
        assert auto[c["condition_a"]] == {"p_holm": c["p_holm"], "b": c["b"], "c": c["c"], "changed": c["significant"]}
        assert split[c["condition_a"]] == {**auto[c["condition_a"]], "b": c["c"], "c": c["b"]}
    assert auto["clean"]["changed"] and not all(t["changed"] for t in auto.values())  # the test could fail either way
    page = (root / "split" / "sceval" / "compare.html").read_text()
    assert "A = m (run_a), B = m (run_b)" in page
    c3po = changed_cells(root / "auto" / "c3po" / "compare.html")
    assert c3po and all(t == {"p_holm": 1.0, "b": 0, "c": 0, "changed": False} for t in c3po.values())


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium) for the browser test")
def test_a_right_b_wrong_filter_in_a_browser(compared, tmp_path):
    """From file:// in Chromium: the address's filter, the select and a cell's count link each show
    the trial pairs counted from the logs, with "N of M shown"; a pair opens its sample page, or
    (no media within the budget) its cell's table filtered to the sample."""
    from playwright.sync_api import expect, sync_playwright

    root, _ = compared
    sites = {
        "auto": (root / "auto", logged_pairs(root / "logs" / "contrarian", root / "logs" / "sceval_reference")),
        "split": (root / "split", logged_pairs(root / "runs" / "run_a", root / "runs" / "run_b")),
    }
    assert sum(p == "a_only" for _, p in sites["auto"][1]) > 0 and sum(p == "b_only" for _, p in sites["auto"][1]) > 0
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        for name, (site, pairs) in sites.items():
            address = (site / "sceval" / "compare.html").as_uri()
            rows = page.locator("#compare tbody tr")
            page.goto(address + "#pair=a_only")
            expected = sum(p == "a_only" for _, p in pairs)
            assert rows.count() == int(page.locator("#compare").get_attribute("data-shown")) == expected, name
            assert page.locator("#compare-count").inner_text().startswith(f"{expected} of {len(pairs)} pair(s) shown")
            page.select_option("#compare-filters select >> nth=0", "b_only")  # and back
            expect(rows).to_have_count(sum(p == "b_only" for _, p in pairs))
            cell = "single_drop_words_t70"
            in_cell = sum(c == cell and p == "b_only" for c, p in pairs)
            assert in_cell > 0, name
            # a link within the page: the filter follows the hashchange event, after the click returns
            page.click(f'tr[data-cell="{cell}"] a[href*="pair=b_only"]')
            expect(rows).to_have_count(in_cell)
            page.screenshot(path=tmp_path / f"compare-{name}.png", full_page=True)
        page.goto((root / "auto" / "sceval" / "compare.html").as_uri())
        page.locator('#compare tbody a[href^="samples/"]').first.click()
        page.wait_for_load_state("load")
        assert "/sceval/samples/" in page.url and page.locator("section.trial").count() >= 1
        page.goto((root / "auto" / "sceval" / "compare.html").as_uri())
        without_media = page.locator('#compare tbody a[href^="cells/"]').first  # the budget gave it no page
        sample = without_media.inner_text()
        without_media.click()
        page.wait_for_load_state("load")
        shown = page.locator("#samples tbody td:nth-child(2)").all_inner_texts()
        assert "/sceval/cells/" in page.url and shown == [sample, sample]  # A's and B's trial
        page.goto((root / "auto" / "sceval" / "index.html").as_uri())
        page.click("text=compare A = contrarian with B = sceval_reference")
        assert page.url.endswith("/sceval/compare.html")
        browser.close()
    assert errors == []


@pytest.mark.slow
def test_a_second_site_writes_no_media_file_again(compared):
    """Writing the site again into its folder reuses every trial's media folder: no media file is
    rewritten (mtimes kept), the pages are the same."""
    root, env = compared
    site = root / "auto"
    media = {p: p.stat().st_mtime_ns for p in (site / "media").rglob("*") if p.is_file()}
    pages = {p: p.read_bytes() for p in site.rglob("*.html")}
    assert len(media) > 10
    view(str(root / "logs"), "-o", str(site), env=env)
    assert {p: p.stat().st_mtime_ns for p in (site / "media").rglob("*") if p.is_file()} == media
    assert {p: p.read_bytes() for p in site.rglob("*.html")} == pages


def test_compare_takes_two_folders_of_one_model_each(compared, tmp_path):
    """--compare names what is wrong: a side of two models, or not two folders."""
    root, _ = compared
    with pytest.raises(ReportError, match=r"--compare: logs holds 2 sceval models \(contrarian, sceval_reference\)"):
        write_site([root / "logs", root / "runs" / "run_a"], tmp_path / "site", compare=True)
    with pytest.raises(ReportError, match="--compare takes two run folders"):
        write_site([root / "runs" / "run_a"], tmp_path / "site", compare=True)
