"""The viewer's controls in a real headless Chromium (Debian's package, as tests/test_viewer.py):
previous/next and the keys, the site-wide search, "N of M shown" after a filter, the folded
sections, the run panel, and layouts without horizontal overflow at 1,280 px and a phone's 390 px.

One small site (two models, two SCEval conditions, C3PO) is written by the real `faultline view`
once for the module (~10 s); each test drives one page of it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_viewer import BROWSER_ARGS, CHROMIUM, faultline_view, guesser, write_c3po_logs, write_sceval_logs

from faultline_eval.model_wrappers.reference import answer_messages
from faultline_eval.tasks import sceval_task as task

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium) for the browser tests"),
]
#: What the run's results JSON says of it (lmms-eval writes these keys), and the versions file beside it.
RESULTS = {
    "config": {"model_args": "pretrained=tiny/ckpt,max_pixels=1024", "random_seed": 0, "numpy_seed": 1234},
    "lmms_eval_version": "0.7.3",
    "date": "20261201_120000",
    "total_evaluation_time_seconds": "12.5",
    "efficiency": {"overall": {"total_input_tokens": 4321.0, "total_output_tokens": 210.0}},
}
VERSIONS = {"faultline-eval": "9.9.9", "torch": "2.14.1"}
#: One model's request totals as our lmms-eval plugin writes them (core.request_lifecycle.Usage.summary).
REQUESTS = {
    "sceval_reference": {
        "sent": 11,
        "restored": 2,
        "generated": 10,
        "failures": {"api_failure": 1},
        "input_tokens": 1200,
        "output_tokens": 40,
        "media_tokens": {"image": 300, "audio": 25},
    }
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("C3PO_JUDGE", "exact")
        mp.setenv("SCEVAL_CACHE", str(root / "cache"))
        models = {"sceval_reference": lambda doc: answer_messages(task.doc_to_messages(doc)), "guesser": guesser}
        write_sceval_logs(root / "logs", models, ["clean", "bi_ta_drop_words_mute_t70_a50"], RESULTS)
        # sceval_reference: the run_info our plugin writes; guesser: an older run's versions file alone
        (root / "logs" / "sceval_reference" / "20261201_120000_run_info.json").write_text(
            json.dumps({"versions": VERSIONS, "requests": REQUESTS})
        )
        (root / "logs" / "guesser" / "20261201_120000_versions.json").write_text(json.dumps(VERSIONS))
        write_c3po_logs(root / "logs" / "sceval_reference")
        faultline_view(root / "logs", None, "--html-budget", "per_cell=3")  # no -o: the site goes to RUN/view/
    return root / "logs" / "view"


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    page.close()
    assert errors == []


def sample_pages(site: Path) -> list[Path]:
    """The SCEval sample pages in the order the pager walks them (each page's position says it)."""
    pages = list((site / "sceval" / "samples").glob("*.html"))
    position = {p: int(re.search(r"sample (\d+) of", p.read_text()).group(1)) for p in pages}
    return sorted(pages, key=position.get)


def test_arrow_keys_j_k_and_buttons_walk_samples_sections_and_cells(site, page):
    walk = sample_pages(site)
    assert len(walk) >= 3
    page.goto(walk[1].as_uri())
    page.keyboard.press("ArrowRight")
    page.wait_for_url(walk[2].as_uri())
    page.keyboard.press("ArrowLeft")
    page.wait_for_url(walk[1].as_uri())
    page.click('.pager a[rel="next"]')
    page.wait_for_url(walk[2].as_uri())
    # j / k: the next / previous condition section of the sample, in the page's order
    sections = page.locator("section.trial").evaluate_all("s => s.map(x => x.id)")
    assert len(sections) >= 2 and sections[0].startswith("clean-")  # one per (condition, variant), clean first
    page.keyboard.press("j")
    assert page.evaluate("location.hash") == f"#{sections[0]}"
    page.keyboard.press("j")
    assert page.evaluate("location.hash") == f"#{sections[1]}"
    page.keyboard.press("k")
    assert page.evaluate("location.hash") == f"#{sections[0]}"
    # keys typed into the search box stay there
    page.focus("#fl-search")
    page.keyboard.press("j")
    assert page.input_value("#fl-search") == "j" and page.url.split("#")[0] == walk[2].as_uri()
    # a cell page: the arrows and j / k walk the conditions (clean first, in the catalogue's order)
    cells = {p.read_text().split("<h1>")[1].split("</h1>")[0]: p for p in (site / "sceval" / "cells").glob("*.html")}
    clean, drop = cells["SCEval: condition clean"], cells["SCEval: condition bi_ta_drop_words_mute_t70_a50"]
    page.goto(clean.as_uri())
    assert page.locator('.pager a[rel="prev"]').count() == 0
    page.keyboard.press("j")
    page.wait_for_url(drop.as_uri())
    page.keyboard.press("ArrowLeft")
    page.wait_for_url(clean.as_uri())


def search_index(site: Path) -> list[list]:
    text = (site / "search.js").read_text()
    return json.loads(text[text.index("{") : text.rindex("}") + 1])["rows"]


@pytest.mark.parametrize("query", ["sample_id", "reply"])
def test_one_search_box_finds_sample_ids_and_replies_across_the_site(site, page, query):
    from playwright.sync_api import expect  # as the browser fixture: only where Chromium runs

    rows = search_index(site)
    record = json.loads(next((site.parent / "guesser").glob("*_bi_ta_drop_words_mute_t70_a50.jsonl")).open().readline())
    words = {
        "sample_id": record["sceval_record"]["sample_id"],
        "reply": "beep(s); looked",  # the reference model's replies, and no other text
    }[query]
    expected = [r for r in rows if words.lower() in " ".join(map(str, r[2:6])).lower()]
    assert expected and {r[0] for r in expected} <= {"SCEval", "C3PO"}
    page.goto((site / "c3po" / "index.html").as_uri())  # any page: the index is the site's
    # the index (search.js) loads on the first keystroke, asynchronously: every check waits for
    # the results (expect retries), none reads the count the moment the text is typed
    page.fill("#fl-search", words)
    expect(page.locator("#fl-search")).to_have_attribute("data-count", str(len(expected)))
    shown = min(50, len(expected))
    expect(page.locator("#fl-results li")).to_have_count(shown)
    expect(page.locator("#fl-search-count")).to_have_text(f"{shown} of {len(expected)} shown")
    if query == "sample_id":  # the sample's own page comes first, and Enter opens it
        page.keyboard.press("Enter")
        page.wait_for_url("**/samples/*")  # the new page, loaded (load state right after a click is the old page's)
        expect(page.locator("h1")).to_have_text(re.compile(f"sample {re.escape(words)}$"))
    else:  # a reply opens its trial's section on a sample page
        page.locator("#fl-results a").first.click()
        page.wait_for_url("**/samples/*")
        target = page.evaluate("decodeURIComponent(location.hash.slice(1))")
        expect(page.locator(f"section.trial[id='{target}'] > details[open]")).to_have_count(1)
    page.fill("#fl-search", "no such text anywhere zzz")  # a new page: its index loads again
    expect(page.locator("#fl-search-count")).to_have_text("no match")
    expect(page.locator("#fl-results")).to_be_hidden()


def test_the_trial_count_says_n_of_m_after_a_filter(site, page):
    cell = next((site / "sceval" / "cells").glob("bi_ta_drop_words_mute_t70_a50-*.html"))
    page.goto(cell.as_uri())
    assert page.inner_text("#shown-count") == "12 of 12 trial(s) shown"
    page.fill('#filters input[data-column="model"]', "guesser")
    assert page.inner_text("#shown-count") == "6 of 12 trial(s) shown"
    wrong = page.locator("#samples tbody tr.bad").count()
    page.fill('#filters input[data-column="verdict"]', "=wrong")
    assert page.inner_text("#shown-count") == f"{wrong} of 12 trial(s) shown"
    page.goto(cell.as_uri() + "#model=sceval_reference")  # a filter from the address counts too
    page.reload()
    assert page.inner_text("#shown-count") == "6 of 12 trial(s) shown"


def test_sample_page_opens_with_media_and_answer_and_folds_the_verdict_table(site, page):
    page.goto(sample_pages(site)[0].as_uri())
    top = page.locator("section.item")
    assert top.locator("img").count() > 0 and top.locator("audio").count() == 1
    assert "gold answer:" in top.inner_text()
    matrix = page.locator("details#verdicts table.matrix")
    assert not matrix.is_visible()  # folded until asked for
    page.click("details#verdicts > summary")
    sections = page.locator("section.trial > details")
    assert matrix.is_visible() and matrix.locator("tbody tr").count() == sections.count() >= 2
    assert all(d.get_attribute("open") is not None for d in sections.all())
    page.click('button[data-fold="close"]')
    assert all(d.get_attribute("open") is None for d in sections.all())
    page.click('button[data-fold="open"]')
    assert all(d.get_attribute("open") is not None for d in sections.all())


def test_c3po_overview_names_templates_in_paper_order(site, page):
    from c3po_plugin.templates import registry

    page.goto((site / "c3po" / "index.html").as_uri())
    shown = page.locator("#cells table.matrix tbody th").all_inner_texts()
    ids = [s.split()[0] for s in shown]
    order = registry().names()
    assert shown and ids == sorted(ids, key=order.index)
    assert all(s == f"{i} {registry().get(i).name}" for s, i in zip(shown, ids))


def test_run_panel_shows_each_runs_model_versions_seeds_tokens_and_failures(site, page):
    page.goto((site / "sceval" / "index.html").as_uri())
    panel = page.locator("details#runs")
    assert panel.get_attribute("open") is not None
    rows = panel.locator("table.runs tbody tr")
    assert rows.count() == 2  # one run per model folder
    for row in rows.all():
        text = row.inner_text()
        model = "guesser" if "guesser" in text else "sceval_reference"
        assert "pretrained=tiny/ckpt,max_pixels=1024" in text and "lmms-eval 0.7.3" in text
        assert "faultline-eval 9.9.9" in text and "torch 2.14.1" in text
        assert "20261201_120000" in text and "12.5 s" in text and "input 4,321" in text and "output 210" in text
        scheme = json.loads(next((site.parent / model).glob("*_clean.jsonl")).open().readline())["sceval_record"][
            "seed_scheme"
        ]
        assert f"scheme {scheme}" in text and "random 0" in text and "numpy 1234" in text
        totals = (  # the request totals of _run_info.json, tokens by kind and requests by outcome
            "sceval_reference: tokens input 1,200, audio 25, image 300, output 40; "
            "requests generated 10, restored 2, failed: api_failure 1"
        )
        assert (totals in text) == (model == "sceval_reference")
        # failures by category: the run's trials not correct, counted from its logs
        verdicts: dict[str, int] = {}
        for log in (site.parent / model).glob("*_samples_sceval_*.jsonl"):
            for line in log.read_text().splitlines():
                r = json.loads(line)["sceval_record"]
                v = f"invalid: {r['invalid']}" if r["invalid"] else "correct" if r["correct"] == 1 else "wrong"
                verdicts[v] = verdicts.get(v, 0) + 1
        assert f"{sum(verdicts.values())} trial(s)" in text
        for v, n in verdicts.items():
            if v != "correct":
                assert f"{v}: {n}" in text
    assert "/" not in "".join(panel.locator("td:first-child").all_inner_texts())  # no folder of this machine


@pytest.mark.parametrize("width", [1280, 390])
def test_no_page_overflows_sideways_at_desktop_or_phone_width(site, browser, width):
    page = browser.new_page(viewport={"width": width, "height": 800})
    for address in [
        site / "index.html",
        site / "sceval" / "index.html",
        site / "c3po" / "index.html",
        *(site / "sceval" / "cells").glob("*.html"),  # the longest condition id in a heading
        sample_pages(site)[0],
        next((site / "c3po" / "samples").glob("*.html")),
        site / "sceval" / "compare.html",  # two models: their compare view, its wide tables in their own boxes
    ]:
        page.goto(address.as_uri())
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")  # the folded parts too
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, (address.relative_to(site).as_posix(), width, overflow)
    page.close()


# -- issue 38: the front page's headline, the cell page's number, its controls and grid, the search ------


def test_front_page_carries_each_models_headline_linked_to_its_trials(site, page):
    page.goto((site / "index.html").as_uri())
    rows = page.locator("#headline-sceval table.headline-models tbody tr")
    assert rows.count() == 2  # both models, by name
    labels = [r.get_attribute("data-model") for r in rows.all()]
    assert [label.split(":")[0] for label in labels] == ["guesser", "sceval_reference"]  # by name
    for row in rows.all():
        clean = row.locator("td.clean a")
        assert re.fullmatch(r"\d+\.\d", clean.inner_text())
        worst = row.locator("td.worst a")
        assert worst.inner_text() == "bi_ta_drop_words_mute_t70_a50"  # the one other condition
        assert re.fullmatch(r"[↓↑]\d+\.\d|0\.0", row.locator("td.drop").inner_text())
    # the heatmap: the drop per condition and model, the condition linked to its trials
    heat = page.locator("#headline-sceval table.heatmap tbody tr")
    assert heat.count() == 1 and heat.locator("td").count() == 2
    rows.first.locator("td.worst a").click()
    page.wait_for_url("**/cells/bi_ta_drop_words_mute_t70_a50-*.html#model=*")
    assert page.inner_text("#shown-count") == "6 of 12 trial(s) shown"


def test_cell_page_states_its_number_what_the_condition_does_and_toggles_only_wrong_and_failures_first(site, page):
    cell = next((site / "sceval" / "cells").glob("bi_ta_drop_words_mute_t70_a50-*.html"))
    page.goto(cell.as_uri())
    about = page.inner_text(".about")
    assert "text drop_words at severity 70" in about and "audio mute at severity 50" in about
    for row in page.locator("table.numbers tbody tr").all():  # no report here: counted from the trials
        k, n = map(int, re.search(r"(\d+) correct of (\d+) scored", row.inner_text()).groups())
        assert row.locator("td.accuracy").inner_text() == f"{100 * k / n:.1f}"
    # the reply column: each trial's reply beside its verdict
    head = page.locator("#samples thead th").all_inner_texts()
    assert "reply" in head
    correct = page.locator("#samples tbody tr.ok").count()
    assert correct > 0
    page.check("#only-wrong")
    assert page.inner_text("#shown-count") == f"{12 - correct} of 12 trial(s) shown"
    assert page.locator("#samples tbody tr.ok").count() == 0
    assert page.input_value('#filters input[data-column="verdict"]') == "!correct"
    page.uncheck("#only-wrong")
    page.check("#failures-first")
    verdicts = page.locator("#samples tbody tr").evaluate_all("rs => rs.map(r => r.className)")
    assert verdicts == sorted(verdicts, key=lambda c: c == "ok")  # every failure before the first correct trial
    # the sample x variant grid: one row per sample, each mark opening its trial
    grid = page.locator("#grid")
    samples = set(page.locator("#samples tbody td:nth-child(2)").all_inner_texts())
    assert grid.get_attribute("data-samples") == str(len(samples)) and len(samples) > 1
    marks = grid.locator("tbody td a")
    assert marks.count() == 12
    failures = grid.locator("tbody tr").evaluate_all("rs => rs.map(r => r.querySelectorAll('td.bad, td.odd').length)")
    assert failures == sorted(failures, reverse=True)
    marks.first.click()
    page.wait_for_load_state()
    # a trial with a sample page opens its section there; one without filters this table to its row
    assert "/samples/" in page.url or page.inner_text("#shown-count") == "1 of 12 trial(s) shown"


def test_search_finds_every_samples_text_and_shows_condition_variant_and_verdict(site, page):
    from playwright.sync_api import expect

    rows = search_index(site)
    samples = {r[2] for r in rows if r[0] == "SCEval" and r[1] == "trial"}
    indexed = {r[2] for r in rows if r[0] == "SCEval" and r[1] == "sample"}
    assert indexed == samples  # every sample, with or without a page
    page.goto((site / "index.html").as_uri())
    page.fill("#fl-search", "beeps")
    beeps = [r for r in rows if r[1] == "sample" and "beeps" in r[5].lower()]
    assert beeps  # the count-the-beeps questions
    expect(page.locator("#fl-search")).to_have_attribute("data-count", re.compile(r"\d+"))
    assert int(page.get_attribute("#fl-search", "data-count")) >= len(beeps)
    page.fill("#fl-search", "beep(s); looked")  # replies: each result names its condition, variant and verdict
    first = page.locator("#fl-results li").first
    expect(first).to_contain_text("variant")
    verdict = first.locator(".verdict").inner_text()
    assert verdict in {"correct", "wrong", "not applicable"} or verdict.startswith("invalid"), verdict


@pytest.fixture(scope="module")
def demo_site(request, tmp_path_factory):
    """The demo run's site as `faultline view RUN` builds it, the reports found in RUN/report and
    RUN/c3po-report (the run is shared and read-only here: -o names a temporary folder)."""
    from test_docs_assets import demo_run

    run = demo_run(request.config)
    out = tmp_path_factory.mktemp("demo-view") / "site"
    stdout = faultline_view(run, out, "--html-budget", "per_cell=1")
    return run, out, stdout


def test_demo_site_opens_on_the_reports_headline_and_finds_every_beeps_question(demo_site, page):
    from playwright.sync_api import expect

    run, site, stdout = demo_site
    assert f"using the sceval report found in {run / 'report'}" in stdout
    report = json.loads((run / "report" / "report.json").read_text())
    page.goto((site / "index.html").as_uri())
    for panel in report["panel"]:  # the report's fault-line score, per model
        row = page.locator(f'#headline-sceval tr[data-model="{panel["model"]}"]')
        assert row.locator("td.fault").inner_text() == f"↓{100 * panel['panel_fault']:.1f}"
    assert page.locator("#headline-sceval img[src$='drop_heatmap.png']").count() == 1
    # a cell page states the report's accuracy and interval for it
    worst = page.locator("#headline-sceval td.worst a").first
    cell = worst.inner_text()
    worst.click()
    page.wait_for_url("**/cells/*")
    model = page.locator("table.numbers tbody tr").first.get_attribute("data-model")
    row = next(r for r in report["conditions"] if r["model"] == model and r["condition_id"] == cell)
    numbers = page.locator("table.numbers tbody tr").first.inner_text()
    assert (
        f"{100 * row['accuracy']:.1f}" in numbers
        and f"[{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}]" in numbers
    )
    # the search finds every sample whose logged question asks to count beeps, media or not
    asked = set()
    for log in run.glob("*_samples_sceval_clean.jsonl"):
        for line in log.read_text().splitlines():
            record = json.loads(line)
            if "beeps" in record["input"].lower():
                asked.add(record["sceval_record"]["sample_id"])
    assert asked
    page.fill("#fl-search", "beeps")
    expect(page.locator("#fl-search")).to_have_attribute("data-count", re.compile(r"\d+"))
    found = page.locator("#fl-results li").all_inner_texts()
    assert {t.split("sample ", 1)[1].split()[0] for t in found if t.startswith("SCEval sample ")} == asked
