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
    OUT/media/<key>/                   each shown trial's frames (thumbnail + full), audio, waveform
"""

from __future__ import annotations

import difflib
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

from faultline_eval.viewer.budget import CORRECT, Budget, sample_rank, select
from faultline_eval.viewer.logs import without_paths
from faultline_eval.viewer.media import MediaWriter, Shown, Written

ASSETS = Path(__file__).resolve().parent / "assets"
TABLE_COLUMNS = ["model", "sample_id", "variant", "verdict", "answer", "gold", "confidence", "latency_s"]
#: Columns a benchmark's rows may add, shown when any trial has a value (report links filter on them).
OPTIONAL_COLUMNS = ["judge", "decided_by", "failure_mode", "source", "donor_answer"]


@dataclass
class Section:
    """One benchmark's part of the site. ``rows`` has columns model, cell, sample_id, variant,
    verdict and optionally answer, gold, confidence and :data:`OPTIONAL_COLUMNS`; ``read_records(wanted)``
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


def slug(text: str) -> str:
    """A file name for any id: readable part plus a short keyed hash (ids may collide once cleaned)."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("._")[:60] or "x"
    return f"{clean}-{hashlib.blake2b(str(text).encode(), digest_size=3).hexdigest()}"


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def page(title: str, body: str, depth: int, scripts: tuple[str, ...] = ()) -> str:
    up = "../" * depth
    tags = "".join(f'<script src="{s}"></script>' for s in (*scripts, f"{up}assets/viewer.js"))
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="stylesheet" href="{up}assets/viewer.css"></head>\n<body>'
        f'<nav><a href="{up}index.html">faultline-eval results</a></nav>\n{body}\n{tags}</body></html>\n'
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
    parts = [
        f'<figure><a href="{up}{full}"><img src="{up}{thumb}" alt="{esc(caption)}" loading="lazy"></a>'
        f"<figcaption>{esc(caption)}</figcaption></figure>"
        for caption, thumb, full in written.images
    ]
    if written.audio:
        parts.append(
            f'<figure class="audio"><img src="{up}{written.waveform}" alt="waveform">'
            f'<audio controls preload="metadata" src="{up}{written.audio}"></audio><figcaption>audio'
            f"</figcaption></figure>"
        )
    return f'<div class="media">{"".join(parts) or "<p class=muted>no images or audio</p>"}</div>'


def _table_js(table: dict) -> str:
    """A cell's trial table as a script: appended to ``window.FL_TABLES``, so a page of several
    cells loads each cell's file (the data are written once per cell)."""
    return f"(window.FL_TABLES = window.FL_TABLES || []).push(\n{json.dumps(table, default=str, allow_nan=False)}\n);\n"


def _clean(value: Any) -> Any:
    value = value.item() if hasattr(value, "item") else value
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else value


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
    return (
        f'<table class="report"><caption>{esc(caption)}</caption><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


class SiteWriter:
    def __init__(self, out: Path, budget: Budget):
        self.out, self.budget = Path(out), budget
        self.media = MediaWriter(self.out, budget.max_mb * 1e6)
        self.summaries: list[dict] = []
        self.rows: dict[str, pd.DataFrame] = {}  # section -> its trials, each with its sample-page link
        self.overview_links: dict[str, list[tuple[str, str]]] = {}  # section -> (href, text) atop its overview

    def write_section(self, s: Section) -> dict:
        root = self.out / s.name
        for sub in ("cells", "samples", "figures"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        rows = s.rows.reset_index(drop=True)
        shown = select(rows, self.budget)
        keys = list(zip(rows["model"], rows["cell"], rows["sample_id"], rows["variant"]))
        extras, records = s.read_records({k for k, on in zip(keys, shown) if on})
        for column in ("answer", "gold", "latency_s"):
            logged = [extras.get(k, {}).get(column) for k in keys]
            rows[column] = (
                rows[column].where(rows[column].notna(), pd.Series(logged, dtype=object)) if column in rows else logged
            )
        rows["latency_s"] = [None if v is None else round(float(v), 3) for v in rows["latency_s"]]
        if "confidence" not in rows:
            rows["confidence"] = None
        has_page = shown & pd.Series([k in records for k in keys])
        notes = [without_paths(n) for n in s.notes]
        sample_pages = self._sample_pages(s, rows[has_page], records, notes)
        links = [
            f"../samples/{sample_pages[r.sample_id]}#{slug(f'{r.cell}-{r.variant}')}" if on else None
            for r, on in zip(rows.itertuples(), has_page)
        ]
        rows["link"] = links
        rows = rows.drop(columns=[c for c in OPTIONAL_COLUMNS if c in rows and rows[c].isna().all()])
        self.rows[s.name] = rows
        cells = sorted(rows["cell"].unique(), key=lambda c: (c != "clean", c))
        cell_pages = {c: slug(c) for c in cells}
        for cell, group in rows.groupby("cell", sort=False):
            self._cell_page(s, cell, group, cell_pages[cell])
        self._overview(s, rows, cells, cell_pages, notes)
        summary = {
            "name": s.name,
            "title": s.title,
            "trials": len(rows),
            "shown": int(has_page.sum()),
            "samples": len(sample_pages),
            "models": sorted(rows["model"].unique()),
            "notes": notes,
        }
        self.summaries.append(summary)
        return summary

    # -- per sample ---------------------------------------------------------------------------------------
    def _sample_pages(self, s: Section, rows: pd.DataFrame, records: dict, notes: list[str]) -> dict[str, str]:
        pages: dict[str, str] = {}
        failures: dict[str, int] = {}
        order = rows.assign(_rank=sample_rank(rows["sample_id"])).sort_values(["_rank", "sample_id"], kind="stable")
        for sample, trials in order.groupby("sample_id", sort=False):
            pages[sample] = slug(sample) + ".html"
            body = self._sample_body(s, sample, trials, records, failures)
            (self.out / s.name / "samples" / pages[sample]).write_text(
                page(f"{s.title}: {sample}", body, 2), encoding="utf-8"
            )
        notes += [f"media of {n} trial(s) not regenerated: {reason}" for reason, n in failures.items()]
        return pages

    def _render(self, key: str, make, failures: dict, reference: int | None = None) -> tuple[Shown | None, str]:
        try:
            shown, written = self.media.write(key, make, reference)
        except (LookupError, ValueError, OSError, RuntimeError) as exc:
            reason = without_paths(exc)
            failures[reason] = failures.get(reason, 0) + 1
            return None, f'<p class="error">media not regenerated: {esc(reason)}</p>'
        return shown, media_html(written, "../../")

    def _sample_body(self, s: Section, sample: str, trials: pd.DataFrame, records: dict, failures: dict) -> str:
        first = records[next(iter(zip(trials["model"], trials["cell"], trials["sample_id"], trials["variant"])))]
        groups = sorted(trials.groupby(["cell", "variant"], sort=False), key=lambda g: (g[0][0] != "clean", g[0]))
        models = sorted(trials["model"].unique())
        # the matrix: every shown trial of this sample at a glance, linked to its section
        head = "".join(f"<th>{esc(m)}</th>" for m in models)
        matrix = []
        for (cell, variant), g in groups:
            by_model = dict(zip(g["model"], g["verdict"]))
            cells = "".join(
                f'<td class="{verdict_class(by_model.get(m))}">{esc(by_model.get(m, ""))}</td>' for m in models
            )
            matrix.append(
                f'<tr><th><a href="#{slug(f"{cell}-{variant}")}">{esc(cell)} / {esc(variant)}</a></th>{cells}</tr>'
            )
        parts = [
            f"<h1>{esc(s.title)}: sample {esc(sample)}</h1>",
            f'<table class="matrix"><thead><tr><th>{esc(s.cell_label)} / {esc(s.variant_label)}</th>{head}'
            f"</tr></thead><tbody>{''.join(matrix)}</tbody></table>",
        ]
        clean_shown, clean_media = None, ""
        if s.renderer.clean is not None:
            clean_shown, clean_media = self._render(
                f"{s.name}|{first.get('dataset')}|clean|{sample}|0", lambda: s.renderer.clean(first), failures
            )
            clean_media = f"<div><h3>clean</h3>{clean_media}</div>"
        reference = None if clean_shown is None or clean_shown.audio is None else len(clean_shown.audio)
        for (cell, variant), g in groups:
            record = records[(g["model"].iloc[0], cell, sample, variant)]
            shown, media = self._render(
                f"{s.name}|{record.get('dataset')}|{cell}|{sample}|{variant}",
                lambda record=record: s.renderer.trial(record),
                failures,
                reference,
            )
            text = ""
            if shown is not None:
                text = word_diff(clean_shown.text, shown.text) if clean_shown is not None else esc(shown.text)
            notes = "; ".join(shown.notes) if shown is not None and shown.notes else ""
            cards = "".join(self._card(s, r, records[(r.model, cell, sample, variant)]) for r in g.itertuples())
            parts.append(
                f'<section class="trial" id="{slug(f"{cell}-{variant}")}"><h2>{esc(s.cell_label)} '
                f'<a href="../cells/{slug(cell)}.html">{esc(cell)}</a>, {esc(s.variant_label)} {esc(variant)}'
                f'</h2><p class="muted">{esc(s.renderer.describe(cell))}{" — " + esc(notes) if notes else ""}'
                f'</p><div class="sent"><div><h3>sent</h3>{media}</div>{clean_media}</div>'
                f"<h3>text sent{' (against clean: inserted, deleted)' if clean_shown else ''}</h3>"
                f'<pre class="text">{text}</pre><div class="cards">{cards}</div></section>'
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
    def _cell_page(self, s: Section, cell: str, rows: pd.DataFrame, name: str) -> None:
        columns = [c for c in TABLE_COLUMNS if c in rows] + [c for c in OPTIONAL_COLUMNS if c in rows]
        data = {
            "cell": cell,
            "columns": [s.variant_label if c == "variant" else c for c in columns],
            "rows": [[_clean(v) for v in values] for values in rows[columns].itertuples(index=False)],
            "links": [_clean(v) for v in rows["link"]],
        }
        (self.out / s.name / "cells" / f"{name}.js").write_text(_table_js(data), encoding="utf-8")
        body = (
            f"<h1>{esc(s.title)}: {esc(s.cell_label)} {esc(cell)}</h1><p class=muted>{esc(s.renderer.describe(cell))}</p>"
            f'<p><a href="../index.html">overview</a> · {len(rows)} trial(s); a linked sample id opens the trial '
            f"with its media. Click a column to sort; filter below (<code>#model=...&amp;verdict=...</code> in the "
            f'address does the same).</p><div id="filters"></div><table id="samples" class="samples"></table>'
        )
        (self.out / s.name / "cells" / f"{name}.html").write_text(
            page(f"{s.title}: {cell}", body, 2, scripts=(f"{name}.js",)), encoding="utf-8"
        )

    # -- overview -----------------------------------------------------------------------------------------
    def _overview(self, s: Section, rows: pd.DataFrame, cells: list[str], cell_pages: dict, notes: list[str]) -> None:
        models = sorted(rows["model"].unique())
        scored = rows["verdict"].isin([CORRECT, "wrong"]) | rows["verdict"].str.startswith("invalid")
        counts = rows.assign(k=rows["verdict"].eq(CORRECT), n=scored).groupby(["cell", "model"])[["k", "n"]].sum()
        head = "".join(f"<th>{esc(m)}</th>" for m in models)
        lines = []
        for cell in cells:
            tds = []
            for model in models:
                if (cell, model) not in counts.index:
                    tds.append("<td></td>")
                    continue
                k, n = map(int, counts.loc[(cell, model)])
                bad = n - k
                link = f"cells/{cell_pages[cell]}.html#model={_hash_value('=' + model)}"
                wrong = f'<a href="{link}&amp;verdict=!correct">{bad} not correct</a>' if bad else "0 not correct"
                tds.append(
                    f'<td><a href="{link}">{100 * k / n:.1f}</a> <span class="muted">({k}/{n}, {wrong})</span></td>'
                    if n
                    else f'<td><a href="{link}">unscored</a></td>'
                )
            lines.append(f'<tr><th><a href="cells/{cell_pages[cell]}.html">{esc(cell)}</a></th>{"".join(tds)}</tr>')
        parts = [
            f"<h1>{esc(s.title)}</h1>",
            f"<p>{len(rows)} trial(s) of {len(models)} model(s) in {len(cells)} {esc(s.cell_label)}(s). "
            f"Budget: {esc(self.budget.describe())}</p>",
            *(f'<p><a href="{esc(href)}">{esc(text)}</a></p>' for href, text in self.overview_links.get(s.name, ())),
            f'<p class="caption">Correct trials per model and {esc(s.cell_label)} (% of scored trials, '
            f"invalid answers counted as not correct): each number opens its trials</p><table class=matrix>"
            f"<thead><tr><th>{esc(s.cell_label)}</th>{head}</tr></thead><tbody>{''.join(lines)}</tbody></table>",
        ]
        if s.report_dir is not None:
            parts += self._report_parts(s, cell_pages)
        if notes:
            parts.append("<h2>notes</h2><ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
        (self.out / s.name / "index.html").write_text(page(s.title, "\n".join(parts), 1), encoding="utf-8")

    def _report_parts(self, s: Section, cell_pages: dict[str, str]) -> list[str]:
        parts = [
            "<h2>report tables</h2>",
            '<p class="muted">Each number links to the trials it was computed '
            "from (a number over several conditions or templates to a page of all their trials); see the "
            "README for the numbers that are not trial aggregates and stay unlinked.</p>",
        ]
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

        for md in sorted(s.report_dir.glob("*.md")):
            side = md.with_name(f"{md.stem}.trials.json")
            links = json.loads(side.read_text(encoding="utf-8")) if side.is_file() else None
            parts.append(markdown_table(md.read_text(encoding="utf-8"), links, href))
        figures = sorted(s.report_dir.glob("*.png"))
        if figures:
            parts.append("<h2>report figures</h2>")
        for png in figures:
            shutil.copyfile(png, self.out / s.name / "figures" / png.name)
            parts.append(
                f'<figure class="figure"><a href="figures/{esc(png.name)}"><img src="figures/{esc(png.name)}"'
                f' alt="{esc(png.stem)}"></a><figcaption>{esc(png.stem)}</figcaption></figure>'
            )
        return parts

    def _group_page(self, s: Section, cells: list[str], cell_pages: dict[str, str], groups: dict[tuple, str]) -> str:
        """The page of every trial of several cells (written once per set of cells): it loads each
        cell's table script, so the trials' data are not written again."""
        key = tuple(sorted(cells, key=lambda c: (c != "clean", c)))
        if key not in groups:
            groups[key] = f"group-{hashlib.blake2b('|'.join(key).encode(), digest_size=6).hexdigest()}"
            listed = ", ".join(f'<a href="{cell_pages[c]}.html">{esc(c)}</a>' for c in key)
            body = (
                f"<h1>{esc(s.title)}: {len(key)} {esc(s.cell_label)}s</h1><p>{listed}</p>"
                f'<p><a href="../index.html">overview</a> · the trials of these {esc(s.cell_label)}s together; a '
                f"linked sample id opens the trial with its media. Click a column to sort; filter below.</p>"
                f'<div id="filters"></div><table id="samples" class="samples" data-cell-column="{esc(s.cell_label)}">'
                f"</table>"
            )
            (self.out / s.name / "cells" / f"{groups[key]}.html").write_text(
                page(
                    f"{s.title}: {len(key)} {s.cell_label}s", body, 2, scripts=tuple(f"{cell_pages[c]}.js" for c in key)
                ),
                encoding="utf-8",
            )
        return groups[key]

    def finish(self) -> dict:
        (self.out / "assets").mkdir(parents=True, exist_ok=True)
        for asset in ("viewer.js", "viewer.css"):
            shutil.copyfile(ASSETS / asset, self.out / "assets" / asset)
        items = "".join(
            f'<li><a href="{x["name"]}/index.html">{esc(x["title"])}</a>: {x["trials"]} trial(s) of '
            f"{len(x['models'])} model(s); {x['shown']} shown with media on {x['samples']} sample page(s)"
            f"</li>"
            for x in self.summaries
        )
        skipped = (
            f"<p>{self.media.skipped} trial(s) are shown without media: the {self.budget.max_mb:g} MB budget "
            "was spent.</p>"
            if self.media.skipped
            else ""
        )
        body = (
            f"<h1>faultline-eval results</h1><ul>{items}</ul><h2>what is shown</h2><p>{esc(self.budget.describe())}"
            f"</p>{skipped}<p>Media are regenerated from the logged records (item, condition, variant) by the "
            f"benchmarks' own renderers, not stored at run time.</p>"
        )
        (self.out / "index.html").write_text(page("faultline-eval results", body, 0), encoding="utf-8")
        size = sum(p.stat().st_size for p in self.out.rglob("*") if p.is_file())
        return {
            "out": str(self.out),
            "sections": self.summaries,
            "bytes": size,
            "media_bytes": self.media.bytes,
            "media_skipped": self.media.skipped,
        }


def _hash_value(text: str) -> str:
    return html.escape(quote(str(text), safe=""))


def verdict_class(verdict: str | None) -> str:
    if verdict is None:
        return ""
    return "ok" if verdict == CORRECT else "bad" if verdict == "wrong" else "odd"
