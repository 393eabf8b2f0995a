"""The static results viewer (`faultline view`, `sceval report --html`): its pages, links,
media and budget, checked with an HTML parser and in a real headless Chromium."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pandas as pd
import pytest
from fixtures import copy_demo, omni_bench_fixture, release_fixture

from faultline_app.viewer.budget import Budget, select
from faultline_app.viewer.logs import public_spec, without_paths
from faultline_app.viewer.sceval import Renderer
from faultline_app.viewer.site import slug, word_diff
from faultline_eval.model_wrappers.reference import answer_messages
from faultline_eval.tasks import c3po_task
from faultline_eval.tasks import sceval_task as task
from sceval_plugin.conditions import catalogue
from sceval_plugin.data.sources import load_source
from sceval_plugin.render import render
from sceval_plugin.report.tables import drop

BIN = Path(sys.executable).parent
CONDITIONS = [
    "clean",
    "single_drop_words_t70",
    "bi_ta_drop_words_mute_t70_a50",
    "missing_audio",
    "probe_mismatch_audio_random",
]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def guesser(doc: dict) -> str:
    return json.dumps({"answer": "ABCD"[len(doc["row_id"]) % 4], "confidence": "low"})


def write_sceval_logs(
    root: Path, models: dict, conditions: list[str] = CONDITIONS, results: dict | None = None
) -> None:
    """lmms-eval-shaped logs of each ``model -> answer(doc)``, written by the task's own functions
    (as tests/test_report.py does), one folder per model; ``results``: more of each results JSON."""
    for model in models:
        (root / model).mkdir(parents=True)
        (root / model / "20261201_120000_results.json").write_text(
            json.dumps({**(results or {}), "config": {**(results or {}).get("config", {}), "model": model}})
        )
    for cid in conditions:
        rows = task.build_rows(catalogue().get(cid))[0][:6]
        for model, answer in models.items():
            lines = []
            for i, doc in enumerate(rows):
                out = task.process_results(doc, [answer(doc)])
                out["sceval_record"]["model"] = model
                lines.append(json.dumps({"doc_id": i, "target": doc["target"], **out}))
            (root / model / f"20261201_120000_samples_sceval_{cid}.jsonl").write_text("\n".join(lines) + "\n")


def write_c3po_logs(folder: Path) -> None:
    rows, _ = c3po_task.build_rows("all")
    lines = []
    for i, doc in enumerate(rows[:8]):
        out = c3po_task.process_results(doc, [doc["target"] if i % 2 else "a purple elephant"])
        out["c3po_record"]["model"] = "sceval_reference"
        lines.append(json.dumps({"doc_id": i, "target": doc["target"], **out, "c3po_record": repr(out["c3po_record"])}))
    (folder / "20261201_120000_samples_c3po_all.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Two models' SCEval logs and one's C3PO logs, then the real `faultline view` CLI."""
    root = tmp_path_factory.mktemp("viewer")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("C3PO_JUDGE", "exact")
        mp.setenv("SCEVAL_CACHE", str(root / "cache"))
        write_sceval_logs(
            root / "logs",
            {"sceval_reference": lambda doc: answer_messages(task.doc_to_messages(doc)), "guesser": guesser},
        )
        write_c3po_logs(root / "logs" / "sceval_reference")
        stdout = faultline_view(root / "logs", root / "site", "--html-budget", "per_cell=3,max_mb=20")
    return root / "site", stdout, root


def faultline_view(logs: Path, out: Path | None, *options: str) -> str:
    """The real `faultline view` CLI on ``logs`` into ``out`` (None: its default, ``logs/view/``);
    its standard output."""
    done = subprocess.run(
        [str(BIN / "faultline"), "view", str(logs), *(["-o", str(out)] if out else []), *options],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append((tag, value))
            if name == "id":
                self.ids.add(value)


def parsed(path: Path) -> Links:
    p = Links()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def test_every_link_and_media_path_is_relative_and_resolves(site):
    out, stdout, _ = site
    assert "SCEval: 60 trial(s) of 2 model(s)" in stdout and "C3PO: 8 trial(s) of 1 model(s)" in stdout
    pages = sorted(out.rglob("*.html"))
    assert len(list((out / "sceval" / "cells").glob("*.html"))) == len(CONDITIONS)
    assert {p.parent.name for p in pages} >= {"cells", "samples", "sceval", "c3po"}
    targets = 0
    for page in pages:
        links = parsed(page)
        for _tag, link in links.links:
            url = urlparse(link)
            assert not url.scheme and not url.netloc and not link.startswith("/"), f"{page}: {link}"
            target = (page.parent / unquote(url.path)).resolve() if url.path else page
            assert target.is_file() and out.resolve() in target.parents, f"{page.relative_to(out)}: {link}"
            if url.fragment and target.suffix == ".html" and "=" not in url.fragment:
                assert url.fragment in parsed(target).ids, f"{page.relative_to(out)}: {link}"
            targets += 1
    assert targets > 200
    for data in (out / "sceval" / "cells").glob("*.js"):  # the sample tables' links
        table = json.loads(data.read_text().splitlines()[1])  # (window.FL_TABLES ...).push(\n{...}\n);
        linked = [link for link in table["links"] if link]
        assert linked and all((data.parent / link.split("#")[0]).is_file() for link in linked)
        assert len(table["rows"]) == 12  # 6 trials of each of two models, every one listed


def test_no_machine_path_or_home_in_the_output(site):
    out, _, root = site
    needles = [str(root), str(Path.home()), str(Path(__file__).resolve().parents[1])]
    for path in out.rglob("*"):
        if path.suffix in (".html", ".js", ".css"):
            text = path.read_text(encoding="utf-8")
            assert not any(n in text for n in needles), path


def test_a_sample_page_shows_sent_and_clean_media_the_diff_and_every_model(site):
    out, _, _ = site
    page = max((out / "sceval" / "samples").glob("*.html"), key=lambda p: p.read_text().count('class="trial"'))
    text = page.read_text()
    # the clean item's media once, at the top, before the (folded) verdict matrix
    item = text.split('<section class="item"')[1].split("</section>")[0]
    assert "<h2>clean item</h2>" in item and item.count("<audio") == 1 and "<img" in item
    assert text.index('<section class="item"') < text.index('<details class="fold" id="verdicts">')
    section = text.split('id="' + next(i for i in parsed(page).ids if i.startswith("single_drop_words_t70")))[1]
    section = section.split('<section class="trial"')[0]
    assert "<del>" in section and section.count("<audio") == 1  # what was sent; the clean clip is not repeated
    assert section.count('class="card ') == 2 and "raw reply" in section and "parsed answer" in section
    # the cards in the verdict matrix's column order
    matrix = text.split('<table class="matrix">')[1].split("</thead>")[0]
    assert matrix.index("guesser") < matrix.index("sceval_reference")
    assert section.index("<h4>guesser</h4>") < section.index("<h4>sceval_reference</h4>")
    # the system prompt among the text sent
    assert '<summary>system prompt</summary><pre class="system">' in section
    doc = task.build_rows(catalogue().get("single_drop_words_t70"))[0][0]
    [system] = [m["content"][0]["text"] for m in task.doc_to_messages(doc) if m["role"] == "system"]
    assert system and system in html.unescape(section)


def test_media_are_the_trial_the_task_rendered(site):
    """The viewer's regeneration of a logged trial is the task's render of it: the same clip, text."""
    out, _, root = site
    record = next(
        json.loads(line)["sceval_record"]
        for line in next((root / "logs" / "guesser").glob("*_bi_ta_drop_words_mute_t70_a50.jsonl"))
        .read_text()
        .splitlines()
    )
    shown = Renderer().trial(record)
    item = next(i for i in load_source("demo").items if i.sample_id == record["sample_id"])
    trial = render(item, catalogue().get("bi_ta_drop_words_mute_t70_a50"), record["variant"])
    assert np.array_equal(shown.audio, trial.audio) and trial.question in shown.text
    assert not np.array_equal(trial.audio, item.waveform())  # muted in part: not the clean clip


def test_media_are_stored_once_and_link_the_exact_bytes_the_task_sent(site):
    """No two media files hold the same bytes, and a text condition's section shows the clean
    item's own files; a trial's links (a frame's click, "exact samples sent") open what the
    task hands the model for it (lmms-eval's doc_to_visual), bit for bit."""
    import soundfile
    from PIL import Image

    out, _, root = site
    files = [p for p in (out / "media").iterdir() if not p.name.startswith("index.")]
    assert len({p.read_bytes() for p in files}) == len(files) > 0
    cid = "bi_ta_drop_words_mute_t70_a50"
    record = json.loads(next((root / "logs" / "guesser").glob(f"*_{cid}.jsonl")).read_text().splitlines()[0])
    record = record["sceval_record"]
    page = (out / "sceval" / "samples" / f"{slug(record['sample_id'])}.html").read_text()
    item = page.split('<section class="item"')[1].split("</section>")[0]

    def media(part: str) -> tuple[list[str], list[str]]:
        links = re.findall(r'<a href="\.\./\.\./(media/[^"]+)"(?: download)?>', part)
        return links, re.findall(r'src="\.\./\.\./(media/[^"]+)"', part)

    for other in ("single_drop_words_t70", cid):
        anchor = 'id="{}"'.format(slug(f"{other}-{record['variant']}"))
        section = page.split(anchor)[1].split('<section class="trial"')[0]
        same = media(section) == media(item)
        assert same == (other == "single_drop_words_t70"), other  # text alone changed: the clean files
    links, _ = media(section)
    doc = next(d for d in task.build_rows(catalogue().get(cid))[0] if d["sample_id"] == record["sample_id"])
    *pictures, audio = task.doc_to_visual(doc)
    assert [np.asarray(Image.open(out / link)).tolist() for link in links[:-1]] == [
        np.asarray(p).tolist() for p in pictures
    ]
    exact, _ = soundfile.read(out / links[-1], dtype="float32")
    assert np.array_equal(exact, audio["array"]) and exact.any()


def test_budget_per_cell_wrong_only_and_alignment():
    rows = pd.DataFrame(
        [
            {
                "model": m,
                "cell": c,
                "sample_id": f"s{i}",
                "variant": 0,
                "verdict": "correct" if (i + len(m)) % 3 else "wrong",
            }
            for m in ("a", "bb")
            for c in ("x", "y")
            for i in range(20)
        ]
    )
    shown = rows[select(rows, Budget(per_cell=4))]
    assert shown.groupby(["model", "cell"]).size().tolist() == [4, 4, 4, 4]
    assert shown.groupby("cell")["sample_id"].apply(frozenset).nunique() == 1  # the same samples in every cell
    wrong = rows[select(rows, Budget.parse("per_cell=3,wrong_only"))]
    assert set(wrong["verdict"]) == {"wrong"} and len(wrong) == 12
    assert Budget.parse("per_cell=all,max_mb=5") == Budget(per_cell=10**9, max_mb=5.0)
    with pytest.raises(ValueError, match="unknown setting 'per_sample'"):
        Budget.parse("per_sample=3")


@pytest.mark.parametrize("spec", ["per_cell=2,max_mb=0.05", "per_cell=all,max_mb=0.05"])
def test_past_max_mb_trials_are_listed_without_media_and_the_counts_are_of_trials(site, tmp_path, spec):
    """Each trial is counted once (one model: one "sent" section per trial on the sample pages):
    shown with media + without media = all trials; past the cap the trial's page says why."""
    from faultline_app.viewer import write_site

    _, _, root = site
    done = write_site([root / "logs" / "guesser"], tmp_path / "site", budget=Budget.parse(spec), benchmarks=("sceval",))
    (section,) = done["sections"]
    assert done["past_max_mb"] > 0 and done["media_bytes"] < 0.05e6 + 2e6
    pages = [p.read_text() for p in (tmp_path / "site" / "sceval" / "samples").glob("*.html")]
    sent = [part for p in pages for part in p.split("<h3>sent</h3>")[1:]]
    without = sum(part.startswith('<p class="muted">media not written (size budget spent)') for part in sent)
    assert section["media_failed"] == 0 and section["shown"] + section["without_media"] == section["trials"]
    assert (section["shown"], section["past_max_mb"]) == (len(sent) - without, without)
    assert 0 < without < len(sent)  # the first ones have media
    if spec.startswith("per_cell=all"):  # every trial has a page: none is left out by the per-cell count
        assert len(sent) == section["trials"] == section["shown"] + section["past_max_mb"]
    else:
        assert section["without_media"] > section["past_max_mb"]
    assert all('<pre class="text">' in p for p in pages)  # the text sent is shown all the same
    front = (tmp_path / "site" / "index.html").read_text()
    assert f"{without} trial(s) picked for a sample page are shown without media" in front
    assert f"{section['shown']} shown with media on {section['samples']} sample page(s)" in front


@pytest.mark.parametrize("tool", ["sceval", "c3po"])
def test_viewer_options_without_html_are_refused_naming_both_flags(tool, tmp_path, capsys):
    from faultline_app.c3po_cli import main as c3po_main
    from faultline_app.sceval_cli import main as sceval_main

    main = {"sceval": sceval_main, "c3po": c3po_main}[tool]
    with pytest.raises(SystemExit) as exit:
        main(["report", str(tmp_path), "-o", str(tmp_path / "r"), "--html-budget", "per_cell=1"])
    assert exit.value.code == 2
    assert "--html-budget only applies with --html" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["report", str(tmp_path), "-o", str(tmp_path / "r"), f"--{tool}-source", "demo"])
    assert f"--{tool}-source only applies with --html" in capsys.readouterr().err


def test_word_diff_marks_dropped_and_inserted_words():
    assert (
        word_diff("which shape moves left", "which moves right")
        == "which<del> shape</del> moves <del>left</del><ins>right</ins>"
    )
    assert word_diff("a <b>", "a <b>") == "a &lt;b&gt;"


def test_public_spec_keeps_no_machine_folder():
    assert public_spec("/home/x/data/items.jsonl#ab") == "items.jsonl"
    assert (
        public_spec("hf:/srv/copy#1") == "hf:copy"
        and public_spec("hf:KZL96/ModalityFaultLines-SCEval#1") == "hf:KZL96/ModalityFaultLines-SCEval"
    )
    assert public_spec("lmms:omni_bench@/srv/omni") == "lmms:omni_bench@omni"
    assert (
        without_paths("sample 's1': field 'visual': /home/x/d/frame_0.png: no such file (see ~/cache/x)")
        == "sample 's1': field 'visual': frame_0.png: no such file (see x)"
    )
    assert (
        without_paths("hf:KZL96/ModalityFaultLines-SCEval, 3/4 trials")
        == "hf:KZL96/ModalityFaultLines-SCEval, 3/4 trials"
    )


@pytest.mark.parametrize("kind", ["local", "release", "omni_bench"])
def test_every_data_source_regenerates_its_media(kind, tmp_path, monkeypatch):
    """Local folder, the authors' release (our operators on its baseline, and its own
    pre-corrupted variants) and lmms-eval's omni_bench: the viewer shows what the task sent."""
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    cases = {
        "local": [(str(copy_demo(tmp_path / "local", 2)), "apply", "single_drop_words_t70")],
        "release": [
            (f"hf:{release_fixture(tmp_path / 'release')}", mode, "single_noise_v70") for mode in ("apply", "released")
        ],
        "omni_bench": [
            (f"lmms:omni_bench@{omni_bench_fixture(tmp_path / 'omni', 2)}", "apply", "bi_tv_drop_words_noise_t30_v70")
        ],
    }[kind]
    for spec, mode, cid in cases:
        monkeypatch.setenv("SCEVAL_SOURCE", spec)
        monkeypatch.setenv("SCEVAL_HF_MODE", mode)
        rows, _ = task.build_rows(catalogue().get(cid))
        doc = rows[-1]
        record = task.process_results(doc, ['{"answer": "A"}'])["sceval_record"]
        monkeypatch.delenv("SCEVAL_SOURCE")  # the viewer reads the source from the record
        shown = Renderer().trial(record)
        _, sent = task.trial_for(doc)
        assert np.array_equal(np.stack([image for _, image in shown.images]), sent.frames), (spec, mode)
        assert sent.question in shown.text and (shown.audio is None) == (sent.audio is None)
        assert tmp_path.as_posix() not in public_spec(record["dataset"])


@pytest.mark.parametrize("kind", ["local", "hf"])
def test_c3po_media_come_from_a_local_folder_and_a_hugging_face_copy(kind, tmp_path, monkeypatch):
    """C3PO's sources beside the demo (the site's own): the viewer finds each logged trial's item
    in the source the record names and shows the video frames, picture and audio the task sent."""
    import datasets
    from c3po_fixtures import item, write_items, write_media

    from faultline_app.viewer.c3po import Renderer as C3POMedia

    rows = [item("v1", "CC12", write_media(tmp_path)), item("v2", "IC07", write_media(tmp_path))]
    if kind == "local":
        write_items(tmp_path, rows)
        spec = str(tmp_path)
    else:
        (tmp_path / "data").mkdir()
        datasets.Dataset.from_list(rows).to_parquet(str(tmp_path / "data" / "test-00000-of-00001.parquet"))
        spec = f"hf:{tmp_path}"
    monkeypatch.setenv("C3PO_SOURCE", spec)
    monkeypatch.setenv("C3PO_JUDGE", "exact")
    docs = c3po_task.build_rows("all")[0]
    assert sorted(d["sample_id"] for d in docs) == ["v1", "v2"]
    for doc in docs:
        record = c3po_task.process_results(doc, [doc["target"]])["c3po_record"]
        sent = next(i for i in c3po_task.checked_items()[1] if i.sample_id == record["sample_id"])
        monkeypatch.delenv("C3PO_SOURCE")  # the viewer reads the source from the record
        shown = C3POMedia().trial(record)
        monkeypatch.setenv("C3PO_SOURCE", spec)
        expected = [*(sent.frames() if sent.video else []), *([sent.picture()] if sent.image else [])]
        assert len(shown.images) == len(expected) > 0 and all(
            np.array_equal(a, b) for (_, a), b in zip(shown.images, expected)
        ), record["sample_id"]
        assert np.array_equal(shown.audio, sent.waveform()) and sent.question in shown.text
        assert tmp_path.as_posix() not in public_spec(record["dataset"])


def test_a_changed_source_is_refused_not_shown(tmp_path, monkeypatch):
    record = task.process_results(task.build_rows(catalogue().get("clean"))[0][0], ['{"answer": "A"}'])["sceval_record"]
    record["dataset"] = record["dataset"].split("#")[0] + "#0000000000000000"
    with pytest.raises(LookupError, match="holds other items than the run's"):
        Renderer().trial(record)


def test_a_moved_source_is_found_by_content_and_legacy_logs_are_read_with_a_note(tmp_path, monkeypatch):
    """Issue 24: the fingerprint is the items' content. A record whose logged folder is gone is
    shown from the copy SCEVAL_SOURCE names; a record with the legacy (absolute-path)
    fingerprint is shown from the source it names, with a note."""
    from sceval_plugin.data.sources import load_source

    here = copy_demo(tmp_path / "here", 2)
    monkeypatch.setenv("SCEVAL_SOURCE", str(here))
    record = task.process_results(task.build_rows(catalogue().get("clean"))[0][0], ['{"answer": "A"}'])["sceval_record"]
    legacy = {**record, "dataset": f"{here}#{load_source(str(here)).legacy_fingerprint}"}
    notes = []
    assert Renderer(notes=notes).trial(legacy).images
    assert len(notes) == 1 and "legacy fingerprint" in notes[0]

    there = tmp_path / "there"
    shutil.copytree(here, there)
    shutil.rmtree(here)
    assert load_source(str(there)).fingerprint == record["dataset"].rpartition("#")[2]
    monkeypatch.setenv("SCEVAL_SOURCE", str(there))
    assert Renderer().trial(record).images


@pytest.mark.slow
def test_sceval_report_html_writes_the_site_beside_the_report(site, tmp_path):
    _, _, root = site
    env = {**os.environ, "SCEVAL_CACHE": str(root / "cache")}
    done = subprocess.run(
        [
            str(BIN / "sceval"),
            "report",
            str(root / "logs"),
            "-o",
            str(tmp_path / "report"),
            "--html",
            "--bootstrap",
            "20",
            "--quiet",
            "--no-figures",
            "--html-budget",
            "per_cell=1,wrong_only",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    overview = (tmp_path / "report" / "html" / "sceval" / "index.html").read_text()
    assert "headline tables" in overview and "Missing-modality" in overview and "not correct (wrong" in overview
    # the story first: the headline tables (Table 8 first), then the runs, then the folded rest
    assert overview.index("Lightweight panel (Table 8)") < overview.index('id="runs"') < overview.index('id="cells"')
    assert overview.index('id="cells"') < overview.index('<details class="fold" id="tables">')
    # the report's units-and-signs legend, once, before the headline tables
    assert overview.count('id="units"') == 1 and overview.index('id="units"') < overview.index("Lightweight panel")
    assert "<dt>drop</dt>" in overview and "positive when accuracy fell" in overview
    assert not (tmp_path / "report" / "html" / "c3po").exists()
    tables = report_links(tmp_path / "report" / "html" / "sceval" / "index.html")
    assert (tmp_path / "report" / "controls.trials.json").is_file()
    # the missing-audio control of each model: the linked trials are that model's, and give its number
    for model in ("guesser", "sceval_reference"):
        [(text, href)] = [(t, h) for t, h in tables["Missing-modality"][model] if "missing_audio" in h]
        trials = selected(href)
        assert {t["model"] for t in trials} == {model} and len(trials) == 6
        assert text == f"{100 * sum(t['verdict'] == 'correct' for t in trials) / len(trials):.1f}"
    # the trust bias T_a over every donor tier: the determinable mismatch trials, T_a recomputed from them
    for model in ("guesser", "sceval_reference"):
        [(tm, href), _, _, (determinable, _), *undetermined] = tables["Trust bias T_m (G.9; reading donor_gold)"][model]
        trials = selected(href)
        assert "probe_mismatch_audio_random" in href and {t["model"] for t in trials} == {model}
        assert int(determinable) == len(trials) > 0 and all(t["donor_answer"] for t in trials)
        assert tm.split(" [")[0] == f"{100 * sum(t['answer'] == t['donor_answer'] for t in trials) / len(trials):.1f}"
        assert all(
            t["donor_answer"] is None and t["verdict"] in ("correct", "wrong")
            for _, h in undetermined
            for t in selected(h)
        )
        [(summary, same)] = [(t, h) for t, h in tables["Mechanism probes (Table 17)"][model] if "donor_answer" in h]
        assert summary == tm.split(" [")[0] and selected(same) == trials
    # Table 8's strongest fault line is a drop from clean: its link selects the cell and clean, and the
    # drop recomputes from those trials (valid answers only, as every accuracy)
    for model in ("guesser", "sceval_reference"):
        [(text, href)] = [(t, h) for t, h in tables["Lightweight panel (Table 8)"][model] if t.startswith("bi_")]
        trials = selected(href)
        cell = text.split(" (")[0]
        assert {t["cell"] for t in trials} == {cell, "clean"} and {t["model"] for t in trials} == {model}

        def valid_accuracy(cid):
            verdicts = [t["verdict"] for t in trials if t["cell"] == cid and t["verdict"] in ("correct", "wrong")]  # noqa: B023
            return sum(v == "correct" for v in verdicts) / len(verdicts)

        assert text == f"{cell} ({drop(valid_accuracy('clean') - valid_accuracy(cell))})"
        # so does a probe's drop (its table's second link: the probe's trials with clean's)
        _, (text, href), *_ = tables["Cross-modal mismatch (G.9)"][model]
        trials = selected(href)
        assert {t["cell"] for t in trials} == {"probe_mismatch_audio_random", "clean"}
        applied = {t["sample_id"] for t in trials if t["cell"] != "clean" and t["verdict"] != "not applicable"}
        trials = [t for t in trials if t["sample_id"] in applied]  # the drop is on the items the probe applied to
        assert text.rstrip("*") == drop(valid_accuracy("clean") - valid_accuracy("probe_mismatch_audio_random"))
    # a number over several cells (M_a: the missing-audio control against the severity-70 audio cells)
    # opens a page of all their trials; each link of every table selects trials
    assert all(selected(h) for rows in tables.values() for links in rows.values() for _, h in links)
    group = next(h for rows in tables.values() for links in rows.values() for _, h in links if "/group-" in h)
    if CHROMIUM is not None:  # the page of several cells in a browser: every cell's trials, filtered
        from playwright.sync_api import sync_playwright

        path, _, fragment = group.partition("#")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(Path(path).as_uri() + "#" + fragment)
            assert page.locator("#samples th").first.inner_text() == "condition"
            assert page.locator("#samples tbody tr").count() == len(selected(group)) > 6
            page.screenshot(path=tmp_path / "group.png", full_page=True)
            page.goto((tmp_path / "report" / "html" / "sceval" / "index.html").as_uri())
            page.screenshot(path=tmp_path / "overview.png", full_page=True)
            browser.close()


def test_c3po_report_numbers_link_their_trials_and_two_folders_stay_two_runs(site, tmp_path, monkeypatch):
    """Two folders of one model (``c3po report`` counts them as two runs, trial key model, folder,
    sample, run): the viewer lists both runs' trials, and the report's numbers link them."""
    from c3po_plugin.report import build_report
    from faultline_app.viewer import write_site

    _, _, root = site
    monkeypatch.setenv("SCEVAL_CACHE", str(root / "cache"))
    logs = root / "logs" / "sceval_reference"
    for folder in ("run_a", "run_b"):
        (tmp_path / folder).mkdir()
        for path in [*logs.glob("*_samples_c3po_*.jsonl"), *logs.glob("*_results.json")]:
            shutil.copy(path, tmp_path / folder)
    runs = [tmp_path / "run_a", tmp_path / "run_b"]
    # the judge decided the non-matching answers; a re-grading (in both folders) accepts one and
    # calls another an exact match: no longer a judge decision
    answers = [
        json.loads(line)["c3po_accuracy"] for line in next(logs.glob("*_samples_c3po_*.jsonl")).read_text().splitlines()
    ]
    yes, exact, *judged = [a["sample_id"] for a in answers if a["judge_decided"]]
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(
        "".join(
            json.dumps(
                {
                    "model": "sceval_reference",
                    "sample_id": s,
                    "run": 0,
                    "judge_id": "test",
                    "verdict": "YES",
                    "exact_match": s == exact,
                }
            )
            + "\n"
            for s in (yes, exact)
        )
    )
    build_report(runs, tmp_path / "report", b=20, verdicts=verdicts)
    done = write_site(
        runs,
        tmp_path / "site",
        benchmarks=("c3po",),
        c3po_report=tmp_path / "report",
        budget=Budget(per_cell=1),
        verdicts=verdicts,
    )
    assert done["sections"][0]["trials"] == 16  # 8 per folder, none lost to a shared (model, sample, run 0)
    tables = report_links(tmp_path / "site" / "c3po" / "index.html")
    overall = tables["Overall accuracy (%) as #YES/#Total and with ungradable trials as missing"]["sceval_reference"]
    (text, href), *_ = overall
    trials = selected(href)
    assert (
        len(trials) == 16
        and {t["run"] for t in trials} == {0, 1}
        and {t["model"] for t in trials} == {"sceval_reference"}
    )
    assert text.split(" [")[0] == f"{100 * sum(t['verdict'] == 'correct' for t in trials) / 16:.1f}"
    wrong = [h for rows in tables.values() for links in rows.values() for t, h in links if "verdict=%3Dwrong" in h]
    assert wrong and all(selected(h) and {t["verdict"] for t in selected(h)} == {"wrong"} for h in wrong)
    # the judge decisions link the trials the report counted: both folders' judged trials, re-graded
    [(count, href)] = [(t, h) for t, h in overall if "decided_by" in h]
    trials = selected(href)
    assert judged and int(count) == len(trials) == 2 * (1 + len(judged))
    assert {t["sample_id"] for t in trials} == {yes, *judged}
    assert {t["verdict"] for t in trials if t["sample_id"] == yes} == {"correct"}


def report_links(overview: Path) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """Per report table (caption start) and row (first cell): each linked number and its address."""
    found: dict = {}
    for table in overview.read_text().split('<div class="report-table">')[1:]:
        caption = re.search(r'<p class="caption">(.*?)</p>', table).group(1)
        for row in re.findall(r"<tr>(.*?)</tr>", table.split("</table>")[0])[1:]:
            cells = re.findall(r"<td>(.*?)</td>", row)
            links = [
                (html.unescape(t), overview.parent.joinpath(html.unescape(h)).as_posix())
                for c in cells
                for h, t in re.findall(r'<a href="([^"]+)">([^<]*)</a>', c)
            ]
            found.setdefault(caption.split(",")[0].split(":")[0], {})[re.sub("<[^>]+>", "", cells[0])] = links
    return found


def selected(address: str) -> list[dict]:
    """The trials a viewer address shows, filtered as viewer.js filters them: the rows of every
    table script of the page (each with its script's ``cell``), then each ``#column=value``
    (``=``: whole, ``!``: not, else within; ``a|b``: either)."""
    path, _, fragment = address.partition("#")
    page = Path(unquote(path))
    rows = []
    for src in re.findall(r'<script src="([^"/]+\.js)"', page.read_text()):
        table = json.loads((page.parent / src).read_text().splitlines()[1])
        rows += [{"cell": table.get("cell"), **dict(zip(table["columns"], r))} for r in table["rows"]]

    def keep(value, wanted: str) -> bool:
        value = "" if value is None else str(value)
        if "|" in wanted:
            return any(keep(value, alternative) for alternative in wanted.split("|"))
        if wanted[:1] in ("=", "!"):
            return (value == wanted[1:]) == (wanted[0] == "=")
        return wanted.lower() in value.lower()

    for part in filter(None, fragment.split("&")):
        column, _, wanted = part.partition("=")
        rows = [r for r in rows if keep(r.get(unquote(column)), unquote(wanted))]
    return rows


def watched_page(browser, requests: list[str], errors: list[str]):
    """A 1,280 px page of ``browser`` that lets only ``file://`` requests through (each address
    into ``requests``, so a test sees what tried to leave the machine) and collects script errors."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.route(
        "**/*",
        lambda route: (
            requests.append(route.request.url),
            route.continue_() if route.request.url.startswith("file://") else route.abort(),
        ),
    )
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium) for the browser test")
def test_the_site_in_a_headless_browser(site, tmp_path):
    """From file:// in Chromium: pages render, the sample table filters from the address, links
    lead to the trial, every image decodes, every audio element loads a clip, and no request
    leaves the machine. The screenshots are kept in the test's folder."""
    from playwright.sync_api import sync_playwright

    out, _, _ = site
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        errors: list[str] = []
        page = watched_page(browser, requests, errors)
        page.goto((out / "index.html").as_uri())
        page.screenshot(path=tmp_path / "index.png")
        page.click("text=SCEval")
        assert page.locator("table.matrix a").count() >= 2 * len(CONDITIONS)
        cell = next((out / "sceval" / "cells").glob("single_drop_words_t70-*.html"))
        page.goto(cell.as_uri() + "#model=guesser&verdict=!correct")
        rows = page.locator("#samples tbody tr")
        assert rows.count() == int(page.locator("#samples").get_attribute("data-shown")) > 0
        assert set(page.locator("#samples tbody td:nth-child(1)").all_inner_texts()) == {"guesser"}
        assert "correct" not in page.locator("#samples tbody td:nth-child(4)").all_inner_texts()
        page.fill('#filters input[data-column="model"]', "")
        page.fill('#filters input[data-column="verdict"]', "")
        assert rows.count() == 12
        page.click("#samples th:nth-child(2)")  # sort by sample
        samples = page.locator("#samples tbody td:nth-child(2)").all_inner_texts()
        assert samples == sorted(samples)
        page.screenshot(path=tmp_path / "cell.png", full_page=True)
        page.locator("#samples tbody a").first.click()
        page.wait_for_load_state("load")
        assert "/samples/" in page.url and page.locator("section.trial").count() >= 1
        for sample_page in [
            page.url.split("#")[0],
            *[p.as_uri() for p in (out / "c3po" / "samples").glob("*.html")][:2],
        ]:
            page.goto(sample_page)
            page.wait_for_load_state("load")
            for img in page.locator("img").all():
                img.scroll_into_view_if_needed()
            page.wait_for_function("Array.from(document.images).every(i => i.complete)")
            assert page.evaluate("Array.from(document.images).every(i => i.naturalWidth > 0)"), sample_page
            durations = page.evaluate("""Promise.all(Array.from(document.querySelectorAll('audio')).map(a =>
                a.readyState >= 1 ? a.duration : new Promise(r => { a.onloadedmetadata = () => r(a.duration);
                a.onerror = () => r(-1); a.load(); })))""")
            assert durations and min(durations) > 0.5, (sample_page, durations)
        page.screenshot(path=tmp_path / "sample.png", full_page=True)
        browser.close()
    assert errors == []
    assert requests and all(url.startswith("file://") for url in requests), [
        u for u in requests if not u.startswith("file://")
    ]
    assert any(url.endswith("/assets/viewer.js") for url in requests)


SCREENSHOTS = Path(__file__).resolve().parents[1] / "benchmarks" / "viewer_screenshots.py"


def test_screenshot_pages_of_a_relative_site_folder_are_file_addresses(site, monkeypatch):
    """benchmarks/viewer_screenshots.py as docs/how-to/browse.md runs it (a relative SITE): every
    page's address is a file:// URI of a page that exists (Path.as_uri() refuses relative paths)."""
    import importlib.util

    monkeypatch.syspath_prepend(str(SCREENSHOTS.parent))  # as `python benchmarks/...` has it (its provenance helper)
    spec = importlib.util.spec_from_file_location("viewer_screenshots", SCREENSHOTS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folder, _, _ = site
    monkeypatch.chdir(folder.parent)
    found = module.pages(Path(folder.name))
    assert {name for name, _ in found} >= {"index", "sceval-overview", "sceval-cell", "sceval-sample", "c3po-sample"}
    for _, address in found:
        assert address.startswith("file:///")
        assert Path(unquote(urlparse(address).path)).is_file()


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium) for the browser test")
def test_screenshot_script_as_the_docs_run_it(site):
    """`python benchmarks/viewer_screenshots.py SITE -o shots/` with relative folders: a PNG per
    page and width, and the search's; a folder without a site is refused naming it."""
    folder, _, _ = site
    run = [sys.executable, str(SCREENSHOTS)]
    done = subprocess.run([*run, folder.name, "-o", "shots/"], cwd=folder.parent, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    shots = sorted(p.name for p in (folder.parent / "shots").glob("*.png"))
    assert "index-desktop.png" in shots and "search-phone.png" in shots and len(shots) >= 12
    assert all((folder.parent / "shots" / name).stat().st_size > 1000 for name in shots)
    refused = subprocess.run([*run, "no/such/site", "-o", "shots/"], cwd=folder.parent, capture_output=True, text=True)
    assert refused.returncode == 2 and "no/such/site: no index.html there" in refused.stderr
