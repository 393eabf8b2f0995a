"""The static site: an overview per benchmark, a sample table per cell, a page per sample.

Plain HTML with one CSS and one vanilla JS file; table data travel as ``.js`` files loaded
by ``<script>`` (``fetch()`` of local files is blocked under ``file://``). Every link and
media path is relative, so the folder opens from disk or any static host.

    OUT/index.html                     the benchmarks, the budget's choices, the notes
    OUT/<bench>/index.html             accuracy per model and cell (linked to the trials), the report's
                                       tables (every number linked to its trials) and figures
    OUT/<bench>/cells/<cell>.html      every trial of a cell: sortable, filterable
    OUT/<bench>/cells/group-<h>.html   the trials of several cells (a report number over a block, a tier...)
    OUT/<bench>/samples/<sample>.html  one sample across cells and models: media sent, clean media,
                                       text diff, replies, parsed answers, gold, verdicts, judge
    OUT/media/<digest>.<ext>           the shown trials' frames, audio and waveforms, each content once
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import html
import json
import math
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd

from faultline_eval.core import report_writer
from faultline_eval.core.run_logs import results_for
from faultline_eval.viewer.budget import CORRECT, Budget, media_counts, sample_rank, select
from faultline_eval.viewer.logs import run_info, without_paths
from faultline_eval.viewer.media import MediaWriter, Shown, Written

ASSETS = Path(__file__).resolve().parent / "assets"
#: The top bar's entries, (label, address from the site root): see :attr:`SiteWriter.nav`.
NavEntries = tuple[tuple[str, str], ...] | list[tuple[str, str]]
TABLE_COLUMNS = ["model", "sample_id", "variant", "verdict", "answer", "gold", "confidence", "latency_s"]
#: Columns a benchmark's rows may add, shown when any trial has a value (report links filter on them).
OPTIONAL_COLUMNS = ["judge", "decided_by", "failure_mode", "source", "donor_answer", "score"]


@dataclass
class Section:
    """One benchmark's part of the site. ``rows`` has columns model, cell, sample_id, variant,
    verdict and optionally answer, gold, confidence and :data:`OPTIONAL_COLUMNS` (``score``: the
    task's own per-doc score of a wrapped task); ``read_records(wanted)``
    returns (extras for every trial, full records of the wanted keys); ``details(record)`` the
    labelled fields of one trial's answer card."""

    name: str
    title: str
    cell_label: str
    variant_label: str
    rows: pd.DataFrame
    read_records: Callable[[set], tuple[dict, dict]]
    renderer: Any
    details: Callable[[dict], list[tuple[str, Any]]]
    notes: list[str] = field(default_factory=list)
    report_dir: Path | None = None
    #: The report tables its overview shows first, in this order (a name ending in ``_``: every table it starts).
    headline: tuple[str, ...] = ()


def slug(text: str) -> str:
    """A file name for any id: readable part plus a short keyed hash (ids may collide once cleaned)."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("._")[:60] or "x"
    return f"{clean}-{hashlib.blake2b(str(text).encode(), digest_size=3).hexdigest()}"


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def page(title: str, body: str, depth: int, scripts: tuple[str, ...] = (), nav: NavEntries = ()) -> str:
    """A whole page ``depth`` folders below the site root: the top bar (the site's name, each
    ``nav`` entry and the search box over the whole site), ``body``, then ``scripts`` and the viewer's JS."""
    up = "../" * depth
    tags = "".join(f'<script src="{s}"></script>' for s in (*scripts, f"{up}assets/viewer.js"))
    entries = "".join(f' · <a href="{up}{esc(href)}">{esc(label)}</a>' for label, href in nav)
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="stylesheet" href="{up}assets/viewer.css"></head>\n<body data-root="{up}">'
        f'<nav class="top"><span class="entries"><a href="{up}index.html">faultline-eval results</a>{entries}</span>'
        f'<span class="search"><input id="fl-search" type="search" autocomplete="off" '
        f'placeholder="search sample ids, questions, answers, replies" aria-label="search the site">'
        f'<span id="fl-search-count" class="muted"></span><ol id="fl-results" hidden></ol></span></nav>\n'
        f"{body}\n{tags}</body></html>\n"
    )


def pager(kind: str, previous: str | None, position: str, following: str | None) -> str:
    """Previous/next buttons (``rel`` prev/next: the arrow keys and j/k follow them, see viewer.js)."""
    back = f'<a class="button" rel="prev" href="{esc(previous)}">← previous {kind}</a>' if previous else ""
    ahead = f'<a class="button" rel="next" href="{esc(following)}">next {kind} →</a>' if following else ""
    return (
        f'<p class="pager">{back} <span class="muted">{esc(position)}</span> {ahead} '
        f'<span class="muted keys">(keys ← →{", j k: sections" if kind == "sample" else ", j k"})</span></p>'
    )


def fold(summary: str, content: str, *, key: str, open_: bool = False) -> str:
    """A collapsible part of a page: ``summary`` always shown, ``content`` on a click."""
    return (
        f'<details class="fold" id="{esc(key)}"{" open" if open_ else ""}><summary>{summary}</summary>'
        f"{content}</details>"
    )


def word_diff(clean: str, sent: str) -> str:
    """``sent`` with the words not in ``clean`` marked ``<ins>`` and the clean words it lost
    ``<del>``; lines are matched first, so only changed lines are diffed word by word."""
    a_lines, b_lines = clean.split("\n"), sent.split("\n")
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False).get_opcodes():
        if op == "equal":
            out += [esc(line) for line in b_lines[j1:j2]]
        elif op == "replace" and i2 - i1 == j2 - j1:
            out += [_words_diff(a, b) for a, b in zip(a_lines[i1:i2], b_lines[j1:j2])]
        else:
            out.append(_words_diff("\n".join(a_lines[i1:i2]), "\n".join(b_lines[j1:j2])))
    return "\n".join(out)


def _words_diff(clean: str, sent: str) -> str:
    a, b = re.split(r"(\s+)", clean), re.split(r"(\s+)", sent)
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(esc("".join(b[j1:j2])))
            continue
        if i2 > i1 and "".join(a[i1:i2]).strip():
            out.append(f"<del>{esc(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{esc(''.join(b[j1:j2]))}</ins>" if "".join(b[j1:j2]).strip() else esc("".join(b[j1:j2])))
    return "".join(out)


def media_html(written: Written | None, up: str) -> str:
    if written is None:
        return '<p class="muted">media not written (size budget spent)</p>'
    parts = [  # a click opens the exact pixels sent (lossless PNG)
        f'<figure><a href="{up}{exact}"><img src="{up}{display}" alt="{esc(caption)}" loading="lazy"></a>'
        f"<figcaption>{esc(caption)}</figcaption></figure>"
        for caption, display, exact in written.images
    ]
    if written.audio:
        exact = "FLAC, lossless" if written.audio_exact == written.audio else "32-bit float WAV"
        parts.append(
            f'<figure class="audio"><img src="{up}{written.waveform}" alt="waveform">'
            f'<audio controls preload="metadata" src="{up}{written.audio}"></audio><figcaption>audio · '
            f'<a href="{up}{written.audio_exact}" download>exact samples sent</a> ({exact})</figcaption></figure>'
        )
    return f'<div class="media">{"".join(parts) or "<p class=muted>no images or audio</p>"}</div>'


def _table_js(table: dict) -> str:
    """A cell's trial table as a script: appended to ``window.FL_TABLES``, so a page of several
    cells loads each cell's file (the data are written once per cell)."""
    return f"(window.FL_TABLES = window.FL_TABLES || []).push(\n{json.dumps(table, default=str, allow_nan=False)}\n);\n"


def _clean(value: Any) -> Any:
    if type(value) in _PLAIN:  # most values: nothing to convert (and no attribute lookup)
        return value
    value = value.item() if hasattr(value, "item") else value
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else value


_PLAIN = frozenset({str, int, bool})


def values_of(column: pd.Series) -> list:
    """A column's values as Python objects, as iterating it yields them, converted at once
    (iterating a pyarrow-backed column converts one value per call: slow over many trials)."""
    return column.to_numpy(dtype=object).tolist()


def _plain_rows(rows: pd.DataFrame, columns: list[str]) -> list[list]:
    """``rows[columns]`` as lists of :func:`_clean` values, read column by column (row-wise
    iteration builds a pandas row per trial)."""
    return [list(row) for row in zip(*(_clean_all(values_of(rows[c])) for c in columns))]


def _clean_all(values: list) -> list:
    """:func:`_clean` of each value, the plain ones passed through without a call."""
    return [v if type(v) in _PLAIN else _clean(v) for v in values]


def _pipe_table(text: str) -> tuple[str, list[list[str]]]:
    """A report ``.md`` table's caption (its bold first line) and rows (the header first)."""
    lines = [line for line in text.splitlines() if line.strip()]
    caption = lines[0].strip("* ") if lines and not lines[0].startswith("|") else ""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines if line.startswith("|")]
    return caption, [r for r in rows if not all(set(c) <= set("-: ") for c in r)]


def _linked_cell(value: str, selector: Any, href: Callable[[dict], str | None]) -> str:
    """A shown cell as HTML, its number linked to ``href(selector)``; a list of selectors links
    each of the cell's numbers joined by `` / ``."""
    if isinstance(selector, list):
        parts = value.split(" / ")
        if len(parts) == len(selector):
            return " / ".join(_linked_cell(p, sel, href) for p, sel in zip(parts, selector))
        selector = None
    # a cell without a number ("–", "Δs –", "n/a") opens nothing
    target = href(selector) if selector and any(ch.isdigit() for ch in value) else None
    return f'<a href="{esc(target)}">{esc(value)}</a>' if target else esc(value)


def markdown_table(text: str, trials: dict | None = None, href: Callable[[dict], str | None] = lambda _: None) -> str:
    """A report ``.md`` table (bold caption, pipe table) as HTML; with its ``.trials.json``
    sidecar (``trials``: per row and column the trials behind the number, a
    :class:`faultline_eval.core.tables.Table`'s ``trial_links``), each number links to
    ``href(selector)``; a cell of several numbers joined by `` / `` with a list of selectors
    links each number."""
    caption, rows = _pipe_table(text)
    if not rows:
        return ""
    links = (trials or {}).get("rows") or []
    if trials and (trials.get("columns") != rows[0] or len(links) != len(rows) - 1):
        links = []  # the sidecar is not this table's (a hand-edited .md): no links rather than wrong ones
    head = "".join(f"<th>{esc(c)}</th>" for c in rows[0])
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{_linked_cell(c, links[i][j] if links and j < len(links[i]) else None, href)}</td>"
            for j, c in enumerate(r)
        )
        + "</tr>"
        for i, r in enumerate(rows[1:])
    )
    return (  # the caption outside the scroll box: it wraps at the page's width, not the table's
        f'<div class="report-table"><p class="caption">{esc(caption)}</p><div class="scroll"><table class="report">'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div></div>"
    )


#: The report tables a benchmark overview shows first (in this order, those the report has): the
#: headline numbers (SCEval's Tables 8 and 20 and its controls; C3PO's overall and per-tier accuracy).
HEADLINE_TABLES = ("panel", "diagnostics", "controls", "overall", "tier_table")
#: The story's order of the report figures on an overview (curves first, then where and how models
#: break); their captions are the report's own (``report.json`` ``figure_captions``).
FIGURE_ORDER = (
    "severity_curves",
    "drop_heatmap",
    "joint_scatter",
    "probe_desync",
    "probe_frame_budget",
    "probe_key_frame",
    "template_accuracy",
    "tier_accuracy",
    "failure_modes",
    "dominance_split",
    "difficulty",
)


class SiteWriter:
    """Writes the site: :meth:`write_section` per benchmark, then :meth:`finish` (front page,
    assets, search index). ``nav``: the top bar's entries (label, address from the site root) on
    every page; a writer of further pages (e.g. a compare view) appends its entry *before* the
    sections are written, so every page links it."""

    def __init__(self, out: Path, budget: Budget, nav: NavEntries = (), notes: list[str] | None = None):
        self.out, self.budget = Path(out), budget
        self.notes = list(notes or [])  # about the whole site (e.g. a benchmark left out): atop its front page
        self.media = MediaWriter(self.out, budget.max_mb * 1e6)
        self.summaries: list[dict] = []
        self.rows: dict[str, pd.DataFrame] = {}  # section -> its trials, each with its sample-page link
        self.overview_links: dict[str, list[tuple[str, str]]] = {}  # section -> (href, text) atop its overview
        self.nav: list[tuple[str, str]] = list(nav)
        # the search index: [benchmark, kind, sample, cell, model, text, address from the root]
        self.search: list[list] = []

    def page(self, title: str, body: str, depth: int, scripts: tuple[str, ...] = ()) -> str:
        return page(title, body, depth, scripts, self.nav)

    def write_section(self, s: Section) -> dict:
        root = self.out / s.name
        for sub in ("cells", "samples", "figures"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        rows = s.rows.reset_index(drop=True)
        shown = select(rows, self.budget)
        keys = list(zip(*(values_of(rows[c]) for c in ("model", "cell", "sample_id", "variant"))))
        extras, records = s.read_records({k for k, on in zip(keys, shown) if on})
        by_key = [extras.get(k, {}) for k in keys]
        for column in ("answer", "gold", "latency_s"):
            logged = [e.get(column) for e in by_key]
            rows[column] = (
                rows[column].where(rows[column].notna(), pd.Series(logged, dtype=object)) if column in rows else logged
            )
        rows["latency_s"] = [None if v is None else round(float(v), 3) for v in rows["latency_s"]]
        if "confidence" not in rows:
            rows["confidence"] = None
        has_page = shown & pd.Series([k in records for k in keys])
        notes = [without_paths(n) for n in s.notes]
        models = model_order(rows)
        trial_media: dict[str, int] = {}  # trials with a sample page by their media: "written", "budget", "failed"
        sample_pages = self._sample_pages(s, rows[has_page], records, notes, models, trial_media)
        links = [
            f"../samples/{sample_pages[sample]}#{slug(f'{cell}-{variant}')}" if on else None
            for (_, cell, sample, variant), on in zip(keys, has_page)
        ]
        rows["link"] = links
        # a column no trial has a value in is left out (wrapped tasks log no confidence or latency)
        empty = [*OPTIONAL_COLUMNS, "confidence", "latency_s"]
        rows = rows.drop(columns=[c for c in empty if c in rows and rows[c].isna().all()])
        self.rows[s.name] = rows
        cells = s.renderer.order(list(rows["cell"].unique()))
        cell_pages = {c: slug(c) for c in cells}
        groups = dict(tuple(rows.groupby("cell", sort=False)))
        for i, cell in enumerate(cells):
            around = (cell_pages[cells[i - 1]] if i else None, cell_pages[cells[i + 1]] if i + 1 < len(cells) else None)
            self._cell_page(s, cell, groups[cell], cell_pages[cell], around, f"{i + 1} of {len(cells)}")
        self._index_trials(s, rows, keys, extras, cell_pages)
        runs = self._runs(s, rows, keys, extras)
        self._overview(s, rows, cells, cell_pages, notes, models, runs)
        with_media, failed = trial_media.get("written", 0), trial_media.get("failed", 0)
        summary = {
            "name": s.name,
            "title": s.title,
            "trials": len(rows),
            # each trial counted once: with media + without (not picked, or past max_mb) + failed = trials
            "shown": with_media,
            "without_media": len(rows) - with_media - failed,
            "past_max_mb": trial_media.get("budget", 0),
            "media_failed": failed,
            "samples": len(sample_pages),
            "models": sorted(rows["model"].unique()),
            "notes": notes,
        }
        self.summaries.append(summary)
        return summary

    # -- search and runs ----------------------------------------------------------------------------------
    def _index_trials(self, s: Section, rows: pd.DataFrame, keys: list, extras: dict, cell_pages: dict) -> None:
        """Every trial into the search index (its answer and the start of its reply): linked to its
        section of the sample page when it has one, else to its row of the cell's table."""
        quoted = functools.cache(lambda text: quote("=" + text, safe=""))  # ids and models repeat across trials
        for key, answer, link in zip(keys, values_of(rows["answer"]), values_of(rows["link"])):
            model, cell, sample, _ = key
            reply = str(extras.get(key, {}).get("reply") or "")[:SEARCH_REPLY_CHARS]
            answer = "" if answer is None else str(answer)
            where = (
                f"{s.name}/samples/{link[len('../samples/') :]}"
                if isinstance(link, str)
                else f"{s.name}/cells/{cell_pages[cell]}.html#sample_id={quoted(sample)}&model={quoted(model)}"
            )
            self.search.append([s.title, "trial", sample, cell, model, f"{answer} | {reply}", where])

    def _runs(self, s: Section, rows: pd.DataFrame, keys: list, extras: dict) -> list[dict]:
        """One panel per run (a results JSON and its per-sample logs): :func:`run_info`, the seed
        scheme its records name, and its trials' verdicts counted by category."""
        by_file: dict[Path, list[int]] = {}
        for i, key in enumerate(keys):
            file = extras.get(key, {}).get("run_file")  # a Path (made once per log, not per trial)
            if file is not None:
                by_file.setdefault(file, []).append(i)
        by_results: dict[Path | None, list[Path]] = {}
        for file in by_file:
            by_results.setdefault(results_for(file), []).append(file)
        runs = []
        for results, files in by_results.items():
            at = [i for f in files for i in by_file[f]]
            verdicts = rows["verdict"].iloc[at].value_counts()
            schemes = {extras[keys[i]].get("seed_scheme") for i in at} - {None}
            runs.append(
                {
                    **run_info(results, files),
                    "models": sorted(rows["model"].iloc[at].unique()),
                    "trials": len(at),
                    "verdicts": {str(k): int(v) for k, v in verdicts.items()},
                    "seed_scheme": ", ".join(map(str, sorted(schemes))) or None,
                }
            )
        return sorted(runs, key=lambda r: (r["models"], r.get("date") or "", r["run"]))

    # -- per sample ---------------------------------------------------------------------------------------
    def _sample_pages(
        self, s: Section, rows: pd.DataFrame, records: dict, notes: list[str], models: list[str], trial_media: dict
    ) -> dict[str, str]:
        """The sample pages of ``rows`` (the trials given one); ``trial_media`` counts those trials by
        what their media came to ("written", "budget": past max_mb, "failed")."""
        order = rows.assign(_rank=sample_rank(rows["sample_id"])).sort_values(["_rank", "sample_id"], kind="stable")
        grouped = list(order.groupby("sample_id", sort=False))
        pages = {sample: slug(sample) + ".html" for sample, _ in grouped}
        failures: dict[str, int] = {}
        for i, (sample, trials) in enumerate(grouped):
            around = (
                pages[grouped[i - 1][0]] if i else None,
                pages[grouped[i + 1][0]] if i + 1 < len(grouped) else None,
            )
            body = self._sample_body(
                s,
                sample,
                trials,
                records,
                failures,
                models,
                pager("sample", *around[:1], f"sample {i + 1} of {len(grouped)}", around[1]),
                trial_media,
            )
            (self.out / s.name / "samples" / pages[sample]).write_text(
                self.page(f"{s.title}: {sample}", body, 2), encoding="utf-8"
            )
        notes += [f"media of {n} trial(s) not regenerated: {reason}" for reason, n in failures.items()]
        return pages

    def _render(self, key: str, make, failures: dict, reference: int | None = None) -> tuple[Shown | None, str, str]:
        """(what was sent, its media's HTML, how they came out: "written", "budget" or "failed")."""
        try:
            shown, written = self.media.write(key, make, reference)
        except (LookupError, ValueError, OSError, RuntimeError) as exc:
            reason = without_paths(exc)
            failures[reason] = failures.get(reason, 0) + 1
            return None, f'<p class="error">media not regenerated: {esc(reason)}</p>', "failed"
        return shown, media_html(written, "../../"), "budget" if written is None else "written"

    def _sample_body(
        self,
        s: Section,
        sample: str,
        trials: pd.DataFrame,
        records: dict,
        failures: dict,
        models: list[str],
        nav: str,
        trial_media: dict,
    ) -> str:
        """One sample: its media and question first (the clean item, or for a benchmark that
        sends every trial the same media, those media: written once), the gold answer, the
        verdict matrix collapsed, then one collapsible section per (cell, variant) with what was
        sent (media only where they differ from the top's), the text sent with its system prompt,
        and one card per model in the matrix's order."""
        # the sample's trials by (cell, variant), each group's rows in table order: one pass over
        # the rows (a pandas group and row tuple class per (cell, variant) cost more than the page)
        by_group: dict[tuple, list] = {}
        for r in trials.itertuples():
            by_group.setdefault((r.cell, r.variant), []).append(r)
        first_row = next(iter(by_group.values()))[0]
        first = records[(first_row.model, first_row.cell, first_row.sample_id, first_row.variant)]
        order = {c: i for i, c in enumerate(s.renderer.order(list(dict.fromkeys(c for c, _ in by_group))))}
        groups = sorted(by_group.items(), key=lambda g: (order[g[0][0]], g[0][1]))
        present = [m for m in models if m in {r.model for g in by_group.values() for r in g}]
        head = "".join(f"<th>{esc(m)}</th>" for m in present)
        matrix, correct = [], 0
        for (cell, variant), g in groups:
            by_model = {r.model: r.verdict for r in g}
            correct += sum(v == CORRECT for v in by_model.values())
            cells = "".join(
                f'<td class="{verdict_class(by_model.get(m))}">{esc(by_model.get(m, ""))}</td>' for m in present
            )
            matrix.append(
                f'<tr><th><a href="#{slug(f"{cell}-{variant}")}">{esc(s.renderer.name(cell))} / {esc(variant)}</a>'
                f"</th>{cells}</tr>"
            )
        # the media every section would repeat, shown once at the top
        if s.renderer.clean is not None:
            top_label, make_top = "clean item", (lambda: s.renderer.clean(first))
            top_key = f"{s.name}|{first.get('dataset')}|clean|{sample}|0"
        else:  # every trial of the sample was sent the same media (the item's own)
            top_label, make_top = "sent in every trial", (lambda: s.renderer.trial(first))
            top_key = f"{s.name}|{first.get('dataset')}|item|{sample}"
        top_shown, top_media, top_outcome = self._render(top_key, make_top, failures)
        gold = trials["gold"].dropna().astype(str).unique() if "gold" in trials else []
        question = "" if top_shown is None else top_shown.text
        self.search.append(
            [
                s.title,
                "sample",
                sample,
                "",
                "",
                question[:SEARCH_QUESTION_CHARS],
                f"{s.name}/samples/{slug(sample)}.html",
            ]
        )
        parts = [
            f"<h1>{esc(s.title)}: sample {esc(sample)}</h1>",
            nav,
            f'<section class="item" id="item"><h2>{esc(top_label)}</h2>{top_media}'
            + (f"<p><b>gold answer:</b> {esc(' / '.join(gold))}</p>" if len(gold) else "")
            + (f'<h3>text</h3><pre class="text">{esc(question)}</pre>' if question else "")
            + "</section>",
            fold(
                f"verdicts: {correct} of {len(trials)} shown trial(s) correct, by {esc(s.cell_label)} and model",
                f'<div class="scroll"><table class="matrix"><thead><tr><th>{esc(s.cell_label)} / '
                f"{esc(s.variant_label)}</th>{head}</tr></thead><tbody>{''.join(matrix)}</tbody></table></div>",
                key="verdicts",
            ),
            '<p class="fold-all"><button type="button" data-fold="open">expand all</button> <button type="button" '
            'data-fold="close">collapse all</button> <span class="muted">(j / k: next / previous section)</span></p>',
        ]
        reference = None if top_shown is None or top_shown.audio is None else len(top_shown.audio)
        for (cell, variant), g in groups:
            record = records[(g[0].model, cell, sample, variant)]
            if s.renderer.clean is not None:
                shown, media, outcome = self._render(
                    f"{s.name}|{record.get('dataset')}|{cell}|{sample}|{variant}",
                    lambda record=record: s.renderer.trial(record),
                    failures,
                    reference,
                )
                media = f"<h3>sent</h3>{media}"
            else:
                shown, media, outcome = top_shown, "", top_outcome
            # each model's trial of this (cell, variant) was sent these media: counted per trial, not per file
            trial_media[outcome] = trial_media.get(outcome, 0) + len(g)
            text, diffed = "", " (against clean: inserted, deleted)" if s.renderer.clean and top_shown else ""
            if shown is not None and top_shown is not None and shown.text == top_shown.text:
                text, diffed = "", ": the same as above"  # not repeated
            elif shown is not None:
                text = word_diff(top_shown.text, shown.text) if diffed else esc(shown.text)
            system = (
                f'<details class="system"><summary>system prompt</summary><pre class="system">{esc(shown.system)}'
                f"</pre></details>"
                if shown is not None and shown.system
                else ""
            )
            notes = "; ".join(shown.notes) if shown is not None and shown.notes else ""
            about = s.renderer.describe(cell)
            sent_text = f'<pre class="text">{text}</pre>' if text else ""
            by_model = {r.model: r for r in g}
            cards = "".join(
                self._card(s, by_model[m], records[(m, cell, sample, variant)]) for m in present if m in by_model
            )
            verdicts = " ".join(
                f'<span class="dot {verdict_class(by_model[m].verdict)}" title="{esc(m)}: '
                f'{esc(by_model[m].verdict)}"></span>'
                for m in present
                if m in by_model
            )
            parts.append(
                f'<section class="trial" id="{slug(f"{cell}-{variant}")}"><details open><summary><h2>'
                f"{esc(s.cell_label)} {esc(s.renderer.name(cell))}, {esc(s.variant_label)} {esc(variant)} {verdicts}"
                f'</h2></summary><p class="muted"><a href="../cells/{slug(cell)}.html">all trials of this '
                f"{esc(s.cell_label)}</a>{' · ' + esc(about) if about else ''}{' — ' + esc(notes) if notes else ''}"
                f"</p>{media}<h3>text sent{diffed}</h3>{system}{sent_text}"
                f'<div class="cards">{cards}</div></details></section>'
            )
        return "\n".join(parts)

    def _card(self, s: Section, row, record: dict) -> str:
        fields = [("verdict", row.verdict), *s.details(record)]
        items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in fields if v not in (None, ""))
        return (
            f'<div class="card {verdict_class(row.verdict)}"><h4>{esc(row.model)}</h4><dl>{items}</dl>'
            f"<details open><summary>raw reply</summary><pre>{esc(record.get('raw_response'))}</pre></details></div>"
        )

    # -- per cell -----------------------------------------------------------------------------------------
    def _cell_page(self, s: Section, cell: str, rows: pd.DataFrame, name: str, around: tuple, position: str) -> None:
        columns = [c for c in TABLE_COLUMNS if c in rows] + [c for c in OPTIONAL_COLUMNS if c in rows]
        data = {
            "cell": cell,
            "columns": [s.variant_label if c == "variant" else c for c in columns],
            "rows": _plain_rows(rows, columns),
            "links": _clean_all(values_of(rows["link"])),
        }
        (self.out / s.name / "cells" / f"{name}.js").write_text(_table_js(data), encoding="utf-8")
        previous, following = (None if a is None else f"{a}.html" for a in around)
        body = (
            f"<h1>{esc(s.title)}: {esc(s.cell_label)} {esc(s.renderer.name(cell))}</h1>"
            f"{pager(s.cell_label, previous, f'{s.cell_label} {position}', following)}"
            f"<p class=muted>{esc(s.renderer.describe(cell))}</p>"
            f'<p><a href="../index.html">overview</a> · {_count(len(rows), "trial")}; a linked sample id opens the '
            f"trial with its media. Click a column to sort; filter below (<code>#model=...&amp;verdict=...</code> in "
            f'the address does the same).</p><div id="filters"></div><div class="scroll">'
            f'<table id="samples" class="samples"></table></div>'
        )
        (self.out / s.name / "cells" / f"{name}.html").write_text(
            self.page(f"{s.title}: {cell}", body, 2, scripts=(f"{name}.js",)), encoding="utf-8"
        )

    # -- overview -----------------------------------------------------------------------------------------
    def _overview(
        self,
        s: Section,
        rows: pd.DataFrame,
        cells: list[str],
        cell_pages: dict,
        notes: list[str],
        models: list[str],
        runs: list[dict],
    ) -> None:
        """The story first: the report's figures (captioned), its headline tables, the run panels;
        then, collapsed, the accuracy of every model and cell, every other report table, the notes."""
        scored = rows["verdict"].isin([CORRECT, "wrong"]) | rows["verdict"].str.startswith("invalid")
        table = rows.assign(k=rows["verdict"].eq(CORRECT), n=scored).groupby(["cell", "model"])[["k", "n"]].sum()
        counts = {key: (int(k), int(n)) for key, k, n in zip(table.index, table["k"], table["n"])}
        head = "".join(f"<th>{esc(m)}</th>" for m in models)
        lines = []
        for cell in cells:
            tds = []
            for model in models:
                if (cell, model) not in counts:
                    tds.append("<td></td>")
                    continue
                k, n = counts[(cell, model)]
                bad = n - k
                link = f"cells/{cell_pages[cell]}.html#model={_hash_value('=' + model)}"
                wrong = f'<a href="{link}&amp;verdict=!correct">{bad} not correct</a>' if bad else "0 not correct"
                tds.append(
                    f'<td><a href="{link}">{100 * k / n:.1f}</a> <span class="muted">({k}/{n}, {wrong})</span></td>'
                    if n
                    else f'<td><a href="{link}">unscored</a></td>'
                )
            lines.append(
                f'<tr><th><a href="cells/{cell_pages[cell]}.html">{esc(s.renderer.name(cell))}</a></th>'
                f"{''.join(tds)}</tr>"
            )
        matrix = (
            f'<p class="caption">Correct trials per model and {esc(s.cell_label)} (% of scored trials, '
            f"invalid answers counted as not correct): each number opens its trials</p><div class=scroll><table "
            f"class=matrix><thead><tr><th>{esc(s.cell_label)}</th>{head}</tr></thead><tbody>{''.join(lines)}"
            f"</tbody></table></div>"
        )
        parts = [
            f"<h1>{esc(s.title)}</h1>",
            f"<p>{len(rows)} trial(s) of {len(models)} model(s) in {len(cells)} {esc(s.cell_label)}(s). "
            f"Budget: {esc(self.budget.describe())}</p>",
            *(f'<p><a href="{esc(href)}">{esc(text)}</a></p>' for href, text in self.overview_links.get(s.name, ())),
        ]
        if s.report_dir is not None:
            figures, headline, rest = self._report_parts(s, cell_pages)
            parts += [*figures, *headline]
        else:
            rest = []
        parts.append(fold(f"runs ({len(runs)})", runs_html(runs), key="runs", open_=True))
        parts.append(
            fold(
                f"accuracy per model and {esc(s.cell_label)} ({len(cells)} {esc(s.cell_label)}s)",
                matrix,
                key="cells",
                open_=s.report_dir is None,
            )
        )
        if rest:
            parts.append(fold(f"every other report table ({len(rest)})", "".join(rest), key="tables"))
        if notes:
            parts.append(
                fold(
                    f"notes ({len(notes)})",
                    "<ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>",
                    key="notes",
                )
            )
        (self.out / s.name / "index.html").write_text(self.page(s.title, "\n".join(parts), 1), encoding="utf-8")

    def _report_parts(self, s: Section, cell_pages: dict[str, str]) -> tuple[list[str], list[str], list[str]]:
        """The report's figures (copied, captioned), its headline tables and its other tables,
        each number linked to the trials it was computed from."""
        groups: dict[tuple, str] = {}

        def href(selector: dict) -> str | None:
            cells = [c for c in selector.get("cells", ()) if c in cell_pages]
            if not cells:
                return None
            name = cell_pages[cells[0]] if len(cells) == 1 else self._group_page(s, cells, cell_pages, groups)
            where = "&".join(
                f"{quote(k, safe='')}={quote(str(v), safe='')}" for k, v in selector.items() if k != "cells"
            )
            return f"cells/{name}.html" + (f"#{where}" if where else "")

        tables = {}
        for md in sorted(s.report_dir.glob("*.md")):
            if md.name == report_writer.INDEX:  # the report's own guide to its files, not a table
                continue
            side = md.with_name(f"{md.stem}.trials.json")
            links = json.loads(side.read_text(encoding="utf-8")) if side.is_file() else None
            tables[md.stem] = markdown_table(md.read_text(encoding="utf-8"), links, href)
        tables = {k: v for k, v in tables.items() if v}
        first = [
            k
            for name in s.headline or HEADLINE_TABLES
            for k in tables
            if k == name or (name.endswith("_") and k.startswith(name))
        ]
        headline = [tables[k] for k in first]
        rest = [v for k, v in tables.items() if k not in first]
        linked = (
            '<p class="muted">Each number links to the trials it was computed from (a number over several '
            "conditions or templates to a page of all their trials); docs/how-to/browse.md lists the numbers that "
            "are not trial aggregates and stay unlinked.</p>"
        )
        report_json = s.report_dir / "report.json"
        head = json.loads(report_json.read_text(encoding="utf-8")) if report_json.is_file() else {}
        captions = head.get("figure_captions") if isinstance(head.get("figure_captions"), dict) else {}
        conventions = head.get("conventions") if isinstance(head.get("conventions"), dict) else {}
        figures = []
        order = FIGURE_ORDER

        def story(png: Path) -> tuple:
            """A figure's place: by base task (a wrapped report's ``<base>__<metric>__<figure>``), then ``order``."""
            prefix, _, name = png.stem.rpartition("__")
            return (prefix, order.index(name) if name in order else len(order), png.stem)

        for png in sorted(s.report_dir.glob("*.png"), key=story):
            shutil.copyfile(png, self.out / s.name / "figures" / png.name)
            figures.append(
                f'<figure class="figure"><a href="figures/{esc(png.name)}"><img src="figures/{esc(png.name)}"'
                f' alt="{esc(captions.get(png.stem, png.stem))}" loading="lazy"></a><figcaption><b>'
                f"{esc(png.stem.replace('_', ' '))}</b>: {esc(captions.get(png.stem, ''))}</figcaption></figure>"
            )
        figure_part = (
            ["<h2>the fault lines at a glance</h2>", '<div class="figures">', *figures, "</div>"] if figures else []
        )
        headline_part = ["<h2>headline tables</h2>", linked, *headline] if headline else []
        if conventions:  # the report's one units-and-signs legend, stated once beside its tables
            legend = "".join(f"<dt>{esc(topic)}</dt><dd>{esc(text)}</dd>" for topic, text in conventions.items())
            headline_part.insert(0, fold("units and signs", f'<dl class="legend">{legend}</dl>', key="units"))
        return figure_part, headline_part, ([linked, *rest] if rest else [])

    def _group_page(self, s: Section, cells: list[str], cell_pages: dict[str, str], groups: dict[tuple, str]) -> str:
        """The page of every trial of several cells (written once per set of cells): it loads each
        cell's table script, so the trials' data are not written again."""
        key = tuple(s.renderer.order(list(cells)))
        if key not in groups:
            groups[key] = f"group-{hashlib.blake2b('|'.join(key).encode(), digest_size=6).hexdigest()}"
            listed = ", ".join(f'<a href="{cell_pages[c]}.html">{esc(s.renderer.name(c))}</a>' for c in key)
            body = (
                f"<h1>{esc(s.title)}: {len(key)} {esc(s.cell_label)}s</h1><p>{listed}</p>"
                f'<p><a href="../index.html">overview</a> · the trials of these {esc(s.cell_label)}s together '
                f"({_count(None, 'trial')}); a linked sample id opens the trial with its media. Click a column to "
                f'sort; filter below.</p><div id="filters"></div><div class="scroll"><table id="samples" '
                f'class="samples" data-cell-column="{esc(s.cell_label)}"></table></div>'
            )
            (self.out / s.name / "cells" / f"{groups[key]}.html").write_text(
                self.page(
                    f"{s.title}: {len(key)} {s.cell_label}s", body, 2, scripts=tuple(f"{cell_pages[c]}.js" for c in key)
                ),
                encoding="utf-8",
            )
        return groups[key]

    def finish(self) -> dict:
        (self.out / "assets").mkdir(parents=True, exist_ok=True)
        for asset in ("viewer.js", "viewer.css"):
            shutil.copyfile(ASSETS / asset, self.out / "assets" / asset)
        index = {"fields": ["benchmark", "kind", "sample", "cell", "model", "text", "href"], "rows": self.search}
        (self.out / "search.js").write_text(
            f"window.FL_SEARCH = {json.dumps(index, default=str, allow_nan=False)};\n", encoding="utf-8"
        )
        items = "".join(
            f'<li><a href="{x["name"]}/index.html">{esc(x["title"])}</a>: {esc(media_counts(x))}</li>'
            for x in self.summaries
        )
        past_cap = sum(x["past_max_mb"] for x in self.summaries)
        skipped = (
            f"<p>{past_cap} trial(s) picked for a sample page are shown without media: the {self.budget.max_mb:g} "
            "MB budget was spent.</p>"
            if past_cap
            else ""
        )
        notes = "".join(f'<p class="note">{esc(n)}</p>' for n in self.notes)
        body = (
            f"<h1>faultline-eval results</h1>{notes}<ul>{items}</ul><p>Each benchmark's page opens with the report's "
            f"figures and headline tables, then the runs; every number links to its trials, every shown trial to "
            f"its sample page. The search box above looks through sample ids, questions, answers and replies.</p>"
            f"<h2>what is shown</h2><p>{esc(self.budget.describe())}"
            f"</p>{skipped}<p>Media are regenerated from the logged records (item, condition, variant) by the "
            f"benchmarks' own renderers, not stored at run time.</p>"
        )
        (self.out / "index.html").write_text(self.page("faultline-eval results", body, 0), encoding="utf-8")
        size = sum(p.stat().st_size for p in self.out.rglob("*") if p.is_file())
        return {
            "out": str(self.out),
            "sections": self.summaries,
            "bytes": size,
            "media_bytes": self.media.bytes,
            "without_media": sum(x["without_media"] for x in self.summaries),
            "past_max_mb": sum(x["past_max_mb"] for x in self.summaries),
            "notes": self.notes,
        }


#: How much of each reply and question the search index holds (it is loaded whole by the browser).
SEARCH_REPLY_CHARS = 200
SEARCH_QUESTION_CHARS = 400


def model_order(rows: pd.DataFrame) -> list[str]:
    """The models in the order every table and card list shows them (by name)."""
    return sorted(rows["model"].unique())


def _count(n: int | None, noun: str) -> str:
    """The "N of M shown" header a filter updates (viewer.js): all ``n`` shown until one applies."""
    total = "" if n is None else f"{n} {noun}(s)"
    return f'<span id="shown-count" class="count">{total}</span>'


def request_totals_html(requests: dict[str, dict]) -> str:
    """Each model's request totals from the run's ``_run_info.json``: tokens in (text, then media
    by kind) and out, then requests by outcome (generated, restored from the store, failed by
    category). No price table exists in the project, so no cost is shown."""
    lines = []
    for label, usage in requests.items():
        tokens = [("input", usage.get("input_tokens", 0))]
        tokens += [(kind, n) for kind, n in sorted((usage.get("media_tokens") or {}).items())]
        tokens.append(("output", usage.get("output_tokens", 0)))
        outcomes = [("generated", usage.get("generated", 0)), ("restored", usage.get("restored", 0))]
        outcomes += [(f"failed: {k}", n) for k, n in sorted((usage.get("failures") or {}).items())]
        lines.append(
            f"<b>{esc(label)}</b>: tokens "
            + ", ".join(f"{esc(k)} {int(n):,}" for k, n in tokens)
            + "; requests "
            + ", ".join(f"{esc(k)} {int(n):,}" for k, n in outcomes)
        )
    return "<br>".join(lines)


def runs_html(runs: list[dict]) -> str:
    """The run panels: one row per run (a results JSON), what it ran with and what it cost."""
    if not runs:
        return '<p class="muted">no results JSON beside the logs: nothing known of the runs</p>'

    def cell(run: dict) -> list[str]:
        verdicts = run.get("verdicts", {})
        failures = {k: v for k, v in verdicts.items() if k != CORRECT}
        tokens = run.get("tokens") or {}
        return [
            esc(run.get("run")),
            esc(", ".join(run.get("models", ()))),
            f"{esc(run.get('model'))}<br><code>{esc(run.get('model_args'))}</code><br>"
            f"<span class=muted>{esc(run.get('backend') or '')}</span>",
            "<br>".join(f"{esc(k)} {esc(v)}" for k, v in (run.get("versions") or {}).items())
            or '<span class="muted">not recorded</span>',
            f"scheme {esc(run.get('seed_scheme') or 'not recorded')}<br>"
            + esc(", ".join(f"{k.replace('_seed', '')} {v}" for k, v in (run.get("seeds") or {}).items())),
            esc(run.get("date")),
            "" if run.get("wall_s") is None else f"{float(run['wall_s']):.1f} s",
            (
                "<br>".join(
                    part
                    for part in (
                        ", ".join(f"{k} {int(v):,}" for k, v in tokens.items()),  # lmms-eval's efficiency
                        request_totals_html(run.get("requests") or {}),  # our models' (_run_info.json)
                    )
                    if part
                )
                or '<span class="muted">not counted</span>'
            )
            + ("<br>" + esc(json.dumps(run["usage"])) if run.get("usage") else ""),
            f"{run.get('trials')} trial(s)<br>" + "<br>".join(f"{esc(k)}: {v}" for k, v in sorted(failures.items()))
            or "none",
        ]

    head = [
        "run",
        "models",
        "model and arguments",
        "versions",
        "seeds",
        "date",
        "wall time",
        "tokens / cost",
        "verdicts not correct",
    ]
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in cell(run)) + "</tr>" for run in runs)
    extra = [
        f"<li>{esc(r['run'])}: system instruction <code>{esc(r['system_instruction'])}</code></li>"
        for r in runs
        if r.get("system_instruction")
    ]
    return (
        f'<div class="scroll"><table class="runs"><thead><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>" + (f"<ul>{''.join(extra)}</ul>" if extra else "")
    )


def _hash_value(text: str) -> str:
    return html.escape(quote(str(text), safe=""))


def verdict_class(verdict: str | None) -> str:
    if verdict is None:
        return ""
    return "ok" if verdict == CORRECT else "bad" if verdict == "wrong" else "odd"
