"""`faultline view` on runs of wrapped lmms-eval tasks (issue 36): the real ``lmms-eval`` CLI runs
the scripted ``modality_oracle`` (answers from one modality) on wrapped tasks of three built-in
adapters' local copies (tests/wrap_datasets.py: worldsense, a video with audio; MME, images;
clotho_aqa, audio), then the real ``sceval report`` and ``faultline view --sceval-report``.

Checked against the logs and the operators, not against the viewer's own code: every number the
report's wrapped tables link recomputes from the trials its page shows (through the base task's
own aggregation), every mark of the audit's item list opens a trial with that outcome, and a
trial's page shows what the model got: the corrupted frames (the condition's operator on the clean
frames, with the trial's seed key), silence for missing audio, a blank picture for missing vision,
the logged prompt and reply. Two CLI runs and the site take about a minute on 2 idle cores
(three at a load of 9). The last test, fast, puts wrapped runs beside SCEval's.
"""

from __future__ import annotations

import html
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pytest
import soundfile
from PIL import Image
from test_viewer import BROWSER_ARGS, CHROMIUM, selected, watched_page

from faultline_eval.tasks import wrap_configs
from sceval_plugin.base_task import aggregate
from sceval_plugin.metrics.modality_audit import CONTROLS
from sceval_plugin.render import BLANK_LEVEL, corrupt
from sceval_plugin.sceval_trial import WrappedTrial

BIN = Path(sys.executable).parent
LIMIT = 4  # docs per task (MME: both questions of two images)
#: The conditions run per base task, and the metric its table reports.
TASKS = {
    "worldsense": (["clean", "single_noise_v70", "missing_audio"], "worldsense_score"),
    "mme": (["clean", "missing_vision"], "mme_perception_score"),
    "clotho_aqa_test": (["clean", "missing_audio"], "exact_match"),
}
MODELS = {"audio": "modality_oracle (modality=audio)", "vision": "modality_oracle (modality=vision)"}


def run(command: list[str], env: dict) -> str:
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done.stdout


@pytest.fixture(scope="module")
def wrapped_site(wrap_copies, tmp_path_factory):
    """Both oracles' runs (one folder each), the report of both, and the site with every trial's media."""
    root = tmp_path_factory.mktemp("wrapped_view")
    env = wrap_copies.subprocess_env()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SCEVAL_CACHE", env["SCEVAL_CACHE"])
        names = []
        for base, (conditions, _) in TASKS.items():
            data = wrap_configs.data_override(base, wrap_copies.copies[base].dataset_path)
            names += wrap_configs.write(base, [wrap_configs.condition_named(c) for c in conditions], data)
    for modality in MODELS:
        command = [sys.executable, "-m", "lmms_eval", "--model", "modality_oracle", "--model_args"]
        command += [f"modality={modality}", "--tasks", ",".join(names), "--limit", str(LIMIT)]
        run([*command, "--log_samples", "--output_path", str(root / "runs" / modality)], env)
    runs = [str(root / "runs" / m) for m in MODELS]
    run([str(BIN / "sceval"), "report", *runs, "-o", str(root / "report"), "--bootstrap", "100"], env)
    view = [str(BIN / "faultline"), "view", *runs, "-o", str(root / "site"), "--sceval-report", str(root / "report")]
    stdout = run([*view, "--html-budget", "per_cell=all"], env)
    return root, stdout


def logged(root: Path) -> dict[tuple, dict]:
    """Every per-sample line by the viewer's trial key (model, ``<base>__<condition>``, sample, variant)."""
    lines = {}
    for modality, label in MODELS.items():
        for path in (root / "runs" / modality).rglob("*_samples_*__*__var*.jsonl"):
            for text in path.read_text().splitlines():
                line = json.loads(text)
                trial = WrappedTrial.from_json(line["faultline_trial"])
                sample = f"{trial.base_task}/{trial.sample_id}"
                sample += f" (doc {trial.doc_id})" if trial.base_task == "mme" else ""  # two questions per image
                lines[(label, f"{trial.base_task}__{trial.condition_id}", sample, trial.variant)] = line
    return lines


def report_rows(overview: Path) -> dict[str, list[tuple[list[str], dict[str, str]]]]:
    """Per report table (its name before the first colon or comma): each row's cells (text) and
    each linked cell's address, by column."""
    found: dict = {}
    for table in overview.read_text().split('<div class="report-table">')[1:]:
        caption = re.search(r'<p class="caption">(.*?)</p>', table).group(1)
        head = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", table)]
        rows = []
        for row in re.findall(r"<tr>(.*?)</tr>", table.split("</table>")[0])[1:]:
            cells = re.findall(r"<td>(.*?)</td>", row)
            texts = [html.unescape(re.sub("<[^>]+>", "", c)) for c in cells]
            links = {
                head[i]: overview.parent.joinpath(html.unescape(m.group(1))).as_posix()
                for i, c in enumerate(cells)
                if (m := re.search(r'<a href="([^"]+)">', c))
            }
            rows.append((dict(zip(head, texts)), links))
        found[re.split(r"[:,]", caption)[0]] = rows
    return found


def drop_text(x: float) -> str:
    """A drop as the report writes it (positive: a loss)."""
    return f"↓{x:.2f}" if x > 0 else (f"↑{-x:.2f}" if x < 0 else "±0")


@pytest.mark.slow
def test_every_linked_number_of_the_wrapped_tables_recomputes_from_the_trials_it_opens(wrapped_site):
    root, stdout = wrapped_site
    n_trials = sum(LIMIT * (3 if c == "single_noise_v70" else 1) for cs, _ in TASKS.values() for c in cs)
    assert f"Wrapped lmms-eval tasks: {2 * n_trials} trial(s) of 2 model(s): {2 * n_trials} shown" in stdout
    lines = logged(root)
    tables = report_rows(root / "site" / "wrapped" / "index.html")
    checked = 0
    for base, (conditions, metric) in TASKS.items():
        rows = tables[base]
        assert len(rows) == len(MODELS) * len(conditions)  # one row per model and condition, all linked

        def values(trials: list[dict], cell: str, base: str = base, metric: str = metric) -> list[float]:
            """The task's own aggregate per variant of ``cell`` over the linked trials' logged items."""
            by_variant: dict[int, list] = {}
            for t in trials:
                if t["cell"] == cell:
                    line = lines[(t["model"], cell, t["sample_id"], t["variant"])]
                    by_variant.setdefault(t["variant"], []).append(line[metric])
            return [aggregate(base, metric, items) for _, items in sorted(by_variant.items())]

        for shown, links in rows:
            model, condition = shown["model"], shown["condition"]
            cell, clean = f"{base}__{condition}", f"{base}__clean"
            trials = selected(links["value"])
            variants = 3 if condition == "single_noise_v70" else 1
            assert {t["model"] for t in trials} == {model} and {t["cell"] for t in trials} == {cell}
            assert len(trials) == LIMIT * variants
            per_variant = values(trials, cell)
            assert shown["value"] == f"{np.mean(per_variant):.2f}"
            assert selected(links["worst variant"]) == trials and shown["worst variant"] == f"{min(per_variant):.2f}"
            replied = [not str(t["verdict"]).startswith(("invalid: empty", "invalid: api_failure")) for t in trials]
            assert (
                selected(links["coverage (%)"]) == trials and shown["coverage (%)"] == f"{100 * np.mean(replied):.1f}"
            )
            paired = selected(links["drop"])
            assert {t["cell"] for t in paired} == {cell, clean} and {t["model"] for t in paired} == {model}
            clean_value = values(paired, clean)[0]
            assert shown["drop"] == drop_text(clean_value - np.mean(values(paired, cell)))
            assert selected(links["worst drop"]) == paired
            assert shown["worst drop"] == drop_text(clean_value - min(values(paired, cell)))
            if "95% CI" in links:
                assert selected(links["95% CI"]) == paired
            checked += 1
    # the audit's shares: per control, the control's trials; among the clean-answerable, both cells'
    for shown, links in tables["Modality-necessity audit"]:
        base, model, control = shown["base task"], shown["model"], shown["control"]
        under = selected(links["answerable (%)"])
        assert {t["cell"] for t in under} == {f"{base}__{control}"} and {t["model"] for t in under} == {model}
        assert shown["items"] == str(len(under)) and selected(links["items"]) == under
        assert shown["answerable (%)"] == f"{100 * np.mean([t['verdict'] == 'correct' for t in under]):.1f}"
        options = [
            len(re.findall(r"^[A-D]\. ", lines[(model, t["cell"], t["sample_id"], 0)]["input"], re.M)) for t in under
        ]
        golds = {str(lines[(model, t["cell"], t["sample_id"], 0)]["target"]).strip().lower() for t in under}
        yes_no = golds <= {"yes", "no"}  # the audit's chance for yes/no golds: 1/2
        chance = f"{100 * np.mean([1 / n for n in options]):.1f}" if all(options) else "50.0" if yes_no else "–"
        assert shown["chance (%)"] == chance
        clean = selected(links["clean-answerable items"])
        answerable = {t["sample_id"] for t in clean if t["verdict"] == "correct"}
        assert {t["cell"] for t in clean} == {f"{base}__clean"} and shown["clean-answerable items"] == str(
            len(answerable)
        )
        both = selected(links["needs it (%)"]) if "needs it (%)" in links else []
        kept = [
            t["verdict"] == "correct" for t in both if t["cell"] != f"{base}__clean" and t["sample_id"] in answerable
        ]
        still = f"{100 * np.mean(kept):.1f}" if kept else "–"
        assert shown["still answerable among them (%)"] == still
        assert shown["needs it (%)"] == (f"{100 - 100 * np.mean(kept):.1f}" if kept else "–")
        checked += 1
    assert checked == len(MODELS) * sum(len(c) for c, _ in TASKS.values()) + len(tables["Modality-necessity audit"])
    # the oracle that hears is right on worldsense whatever the frames, and wrong without audio but on gold "A"
    [(heard, _)] = [
        r for r in tables["worldsense"] if r[0]["model"] == MODELS["audio"] and r[0]["condition"] == "clean"
    ]
    assert heard["value"] == "100.00"


def section(page: Path, anchor: str) -> str:
    text = page.read_text()
    start = text.index(f'<section class="trial" id="{anchor}">')
    return text[start : text.index("</section>", start)]


@pytest.mark.slow
def test_the_audit_items_open_their_trials_with_that_outcome(wrapped_site):
    import pandas as pd

    root, _ = wrapped_site
    items = pd.read_csv(root / "report" / "audit_per_item.csv")
    page = root / "site" / "wrapped" / "audit.html"
    text = page.read_text()
    assert 'href="audit.html"' in (root / "site" / "wrapped" / "index.html").read_text()
    rows = re.findall(r"<tr>(.*?)</tr>", text.split("<tbody>")[1])
    assert len(rows) == len(items)
    conditions = [c for c in ("clean", *CONTROLS) if c in items.columns]
    marks = 0
    for row, item in zip(rows, items.to_dict("records")):
        cells = re.findall(r"<td>(.*?)</td>", row)
        model = html.unescape(cells[1])
        for condition, cell in zip(conditions, cells[4:]):
            if pd.isna(item[condition]):
                assert "<a " not in cell
                continue
            href, mark = re.search(r'<a href="([^"]+)"[^>]*>(\d)</a>', cell).groups()
            assert int(mark) == int(item[condition])
            target, _, anchor = html.unescape(href).partition("#")
            assert target.startswith("samples/") and anchor  # every trial has its page here (per_cell=all)
            card = re.search(
                rf'<div class="card (\w+)"><h4>{re.escape(html.escape(model))}</h4>',
                section(page.parent / target, unquote(anchor)),
            )
            assert card and (card.group(1) == "ok") == (int(mark) == 1), (item, condition)
            marks += 1
    assert marks == int(items[conditions].notna().sum().sum()) > 0


def shown_media(page: Path, anchor: str) -> tuple[list[np.ndarray], np.ndarray | None, str]:
    """The frames (full size), the audio and the text sent of one trial section of a sample page."""
    part = section(page, anchor)
    site = page.parents[2]
    frames = [
        np.asarray(Image.open(site / unquote(h))) for h in re.findall(r'<a href="\.\./\.\./(media/[^"]+\.png)">', part)
    ]
    audio = re.search(r'<audio controls preload="metadata" src="\.\./\.\./([^"]+)"', part)
    wave = soundfile.read(io.BytesIO((site / audio.group(1)).read_bytes()), dtype="float32")[0] if audio else None
    sent = re.search(r'<pre class="text">(.*?)</pre>', part, re.S)
    return frames, wave, html.unescape(re.sub("<[^>]+>", "", sent.group(1))) if sent else ""


@pytest.mark.slow
def test_a_trial_page_shows_the_media_the_model_got_its_prompt_and_reply(wrapped_site, wrap_copies):
    from faultline_app.viewer.site import slug
    from faultline_eval.core.media import read_source_video

    root, _ = wrapped_site
    # faithful video: the operator acts on every source frame; the site shows some of them
    source, _ = read_source_video(wrap_copies.copies["worldsense"].hf_home / "WorldSense" / "videos" / "ws_001.mp4")
    source = np.stack(source.frames)
    lines = logged(root)
    samples = root / "site" / "wrapped" / "samples"
    page = samples / f"{slug('worldsense/1')}.html"
    clean, clean_wave, _ = shown_media(page, slug("worldsense__clean-0"))
    assert len(clean) >= 2 and clean_wave is not None and np.abs(clean_wave).max() > 0.05
    noise = wrap_configs.condition_named("single_noise_v70")
    for variant in range(3):
        frames, wave, _ = shown_media(page, slug(f"worldsense__single_noise_v70-{variant}"))
        # the condition's own operator on the clean frames, keyed as the wrapper keys the doc
        shown_at = [next(i for i, f in enumerate(source) if np.array_equal(f, c)) for c in clean]
        expected = corrupt(noise, "vision", source, variant, "worldsense/1")[shown_at]
        assert np.array_equal(np.stack(frames), expected), variant
        assert np.abs(wave - clean_wave).max() < 1e-3  # the audio untouched (16-bit in the site)
    _, silent, _ = shown_media(page, slug("worldsense__missing_audio-0"))
    assert silent is not None and len(silent) == len(clean_wave) and not silent.any()
    # the text sent and the reply are the run's own (the card's raw reply)
    for label in MODELS.values():
        line = lines[(label, "worldsense__missing_audio", "worldsense/1", 0)]
        part = section(page, slug("worldsense__missing_audio-0"))
        assert html.escape(line["input"], quote=False).strip() in part or "the same as above" in part
        card = part.split(f"<h4>{html.escape(label)}</h4>")[1].split("</div>")[0]
        assert f"<pre>{html.escape(line['filtered_resps'])}</pre>" in card
    # MME: the picture blanked without vision; clotho_aqa: silence without audio
    mme = samples / f"{slug('mme/color/0000.png (doc 0)')}.html"
    [blank], _, _ = shown_media(mme, slug("mme__missing_vision-0"))
    [picture], _, _ = shown_media(mme, slug("mme__clean-0"))
    assert (blank == BLANK_LEVEL).all() and blank.shape == picture.shape and not (picture == BLANK_LEVEL).all()
    clotho = next(p for p in samples.glob("clotho_aqa_test_*.html"))
    _, heard, _ = shown_media(clotho, slug("clotho_aqa_test__clean-0"))
    _, muted, _ = shown_media(clotho, slug("clotho_aqa_test__missing_audio-0"))
    assert heard.any() and not muted.any() and len(heard) == len(muted)


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium) for the browser test")
def test_the_wrapped_pages_in_a_headless_browser(wrapped_site, tmp_path):
    """A number of the report table opens its filtered trials; a trial page's pictures decode and
    its audio plays; nothing leaves the machine; no script error."""
    from playwright.sync_api import sync_playwright

    root, _ = wrapped_site
    out = root / "site"
    overview = out / "wrapped" / "index.html"
    [(_, links)] = [
        r
        for r in report_rows(overview)["worldsense"]
        if r[0]["condition"] == "single_noise_v70" and r[0]["model"] == MODELS["vision"]
    ]
    errors, requests = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = watched_page(browser, requests, errors)
        page.goto(overview.as_uri())
        page.screenshot(path=tmp_path / "overview.png", full_page=True)
        path, _, fragment = links["value"].partition("#")
        page.goto(Path(path).as_uri() + "#" + fragment)
        rows = page.locator("#samples tbody tr")
        assert rows.count() == len(selected(links["value"])) == 3 * LIMIT
        assert set(page.locator("#samples tbody td:nth-child(1)").all_inner_texts()) == {MODELS["vision"]}
        page.locator("#samples tbody a").first.click()
        page.wait_for_load_state("load")
        assert "/samples/" in page.url
        for img in page.locator("img").all():
            img.scroll_into_view_if_needed()
        page.wait_for_function("Array.from(document.images).every(i => i.complete)")
        assert page.evaluate("Array.from(document.images).every(i => i.naturalWidth > 0)")
        durations = page.evaluate("""Promise.all(Array.from(document.querySelectorAll('audio')).map(a =>
            a.readyState >= 1 ? a.duration : new Promise(r => { a.onloadedmetadata = () => r(a.duration);
            a.onerror = () => r(-1); a.load(); })))""")
        assert durations and min(durations) > 0.5
        page.screenshot(path=tmp_path / "sample.png", full_page=True)
        page.goto((out / "wrapped" / "audit.html").as_uri())
        page.locator("tbody td:nth-child(5) a").first.click()  # clean's mark of the first item: its trial
        page.wait_for_load_state("load")
        assert "/samples/" in page.url and "__clean-" in page.url
        browser.close()
    assert errors == [] and all(url.startswith("file://") for url in requests)


def test_wrapped_runs_beside_sceval_runs_get_their_own_section_with_the_reports_subfolder(tmp_path):
    """SCEval logs and wrapped logs (tests/test_wrap_report.py's, from the real base task's
    process_results) in one site: `sceval report` puts the wrapped report in ``wrapped/``, and
    `faultline view --sceval-report` shows it on the wrapped section, its numbers linked to the
    condition's table (no media picked: ``per_cell=0``)."""
    from fixtures import guesser, write_logs
    from test_wrap_report import CONDITIONS, listener, worldsense_doc, write_run

    docs = [worldsense_doc(i) for i in range(8)]
    write_run(tmp_path / "runs" / "wrapped", "listener", "worldsense", docs, listener, CONDITIONS, date="20261207_1")
    write_logs(tmp_path / "runs" / "sceval" / "guesser", "guesser", guesser, ["clean", "single_noise_v70"])
    env = dict(os.environ)
    run(
        [str(BIN / "sceval"), "report", str(tmp_path / "runs"), "-o", str(tmp_path / "r"), "--no-figures", "--quiet"],
        env,
    )
    assert (tmp_path / "r" / "wrapped" / "task_metrics_worldsense.trials.json").is_file()
    stdout = run(
        [str(BIN / "faultline"), "view", str(tmp_path / "runs"), "-o", str(tmp_path / "site")]
        + ["--sceval-report", str(tmp_path / "r"), "--html-budget", "per_cell=0"],
        env,
    )
    assert "SCEval: " in stdout and f"Wrapped lmms-eval tasks: {8 * 18} trial(s) of 1 model(s): 0 shown" in stdout
    tables = report_rows(tmp_path / "site" / "wrapped" / "index.html")
    rows = {shown["condition"]: links for shown, links in tables["worldsense"]}
    noise = selected(rows["single_noise_v70"]["value"])
    assert {t["cell"] for t in noise} == {"worldsense__single_noise_v70"} and len(noise) == 3 * len(docs)
    assert {t["sample_id"] for t in noise} == {f"worldsense/{i}" for i in range(len(docs))}
    # the score column is the task's own per-doc score: the value recomputes from it
    [value] = [s["value"] for s, _ in tables["worldsense"] if s["condition"] == "single_noise_v70"]
    assert value == f"{100 * np.mean([t['score'] for t in noise]):.2f}"
    assert "Lightweight panel" not in (tmp_path / "site" / "wrapped" / "index.html").read_text()
    assert (tmp_path / "site" / "sceval" / "index.html").is_file()


@pytest.mark.slow
def test_a_doc_that_changed_since_the_run_is_refused_naming_it(wrapped_site):
    """The media are made again only for the run's doc: a trial whose key the dataset's row no
    longer holds is refused with both keys named (the site lists it without media, with the reason)."""
    from faultline_app.viewer import wrapped

    root, _ = wrapped_site
    logs = wrapped.Logs([root / "runs" / "audio"])
    key = next(k for k in logs.keys if k[1] == "mme__missing_vision")
    record = logs.records({key})[1][key]
    renderer = wrapped.Renderer()
    try:
        [(_, picture)] = renderer.trial(record).images  # the run's doc: its picture, blanked
        assert (picture == BLANK_LEVEL).all()
        record["faultline_trial"] = {**record["faultline_trial"], "sample_id": "another.png"}
        with pytest.raises(
            LookupError,
            match=r"mme__missing_vision__var0: doc \d of the dataset is 'color/.+', the run's trial 'another.png': the dataset changed",
        ):
            renderer.trial(record)
    finally:
        renderer.close()
