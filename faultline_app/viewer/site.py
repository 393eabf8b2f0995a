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

import jinja2
import pandas as pd
from markupsafe import Markup

from faultline_app.viewer.budget import CORRECT, Budget, media_counts, sample_rank, select
from faultline_app.viewer.logs import run_info, without_paths
from faultline_app.viewer.media import MediaWriter, Shown
from faultline_eval.core import report_writer
from faultline_eval.core.request_lifecycle import media_reuse_text
from faultline_eval.core.run_logs import results_for

ASSETS = Path(__file__).resolve().parent / "assets"
#: The top bar's entries, (label, address from the site root): see :attr:`SiteWriter.nav`.
NavEntries = tuple[tuple[str, str], ...] | list[tuple[str, str]]
TABLE_COLUMNS = ["model", "sample_id", "variant", "verdict", "answer", "gold", "reply", "confidence", "latency_s"]
#: How much of a reply the trial tables show (the whole reply is on the trial's sample page).
TABLE_REPLY_CHARS = 160
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
    """``value`` escaped for HTML written outside the templates (e.g. the compare view's)."""
    return html.escape("" if value is None else str(value))


#: The page templates (``templates/``: ``base.html`` the layout, one template per page kind,
#: ``macros.html`` the pieces they share), autoescaped: a value is text unless marked ``Markup``.
TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).resolve().parent / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    finalize=lambda value: "" if value is None else value,  # a missing value shows as nothing, not "None"
)


def render(template: str, depth: int, *, nav: NavEntries = (), scripts: tuple[str, ...] = (), **values: Any) -> str:
    """The page of ``template`` ``depth`` folders below the site root, in the layout of ``base.html``."""
    return TEMPLATES.get_template(template).render(up="../" * depth, nav=nav, scripts=scripts, **values)


def page(title: str, body: str, depth: int, scripts: tuple[str, ...] = (), nav: NavEntries = ()) -> str:
    """A page whose body is HTML made elsewhere (``body``, already escaped), in the site's layout."""
    return render("base.html", depth, nav=nav, scripts=scripts, title=title, body=Markup(body))


def word_diff(clean: str, sent: str) -> Markup:
    """``sent`` as HTML with the words not in ``clean`` marked ``<ins>`` and the clean words it
    lost ``<del>`` (``macros.html``'s ``diff``); lines are matched first, so only changed lines
    are diffed word by word."""
    a_lines, b_lines = clean.split("\n"), sent.split("\n")
    lines: list[list[tuple[str, str]]] = []  # the pieces of each line (or run of lines) of the result
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False).get_opcodes():
        if op == "equal":
            lines += [[("", line)] for line in b_lines[j1:j2]]
        elif op == "replace" and i2 - i1 == j2 - j1:
            lines += [_words_diff(a, b) for a, b in zip(a_lines[i1:i2], b_lines[j1:j2])]
        else:
            lines.append(_words_diff("\n".join(a_lines[i1:i2]), "\n".join(b_lines[j1:j2])))
    pieces = [piece for i, line in enumerate(lines) for piece in ([("", "\n")] if i else []) + line]
    return Markup(_macros().diff(pieces))


@functools.cache
def _macros() -> Any:
    """``macros.html`` as a module, made once (making it evaluates the template)."""
    return TEMPLATES.get_template("macros.html").module


def _words_diff(clean: str, sent: str) -> list[tuple[str, str]]:
    a, b = re.split(r"(\s+)", clean), re.split(r"(\s+)", sent)
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("", "".join(b[j1:j2])))
            continue
        if i2 > i1 and "".join(a[i1:i2]).strip():
            out.append(("del", "".join(a[i1:i2])))
        if j2 > j1:
            out.append(("ins" if "".join(b[j1:j2]).strip() else "", "".join(b[j1:j2])))
    return out


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


def _linked_cell(value: str, selector: Any, href: Callable[[dict], str | None]) -> list[tuple[str, str | None]]:
    """A shown cell as (text, address) pieces, its number linked to ``href(selector)``; a list of
    selectors links each of the cell's numbers joined by `` / ``."""
    if isinstance(selector, list):
        parts = value.split(" / ")
        if len(parts) == len(selector):
            return [piece for p, sel in zip(parts, selector) for piece in _linked_cell(p, sel, href)]
        selector = None
    # a cell without a number ("–", "Δs –", "n/a") opens nothing
    return [(value, href(selector) if selector and any(ch.isdigit() for ch in value) else None)]


def markdown_table(text: str, trials: dict | None = None, href: Callable[[dict], str | None] = lambda _: None) -> dict:
    """A report ``.md`` table (bold caption, pipe table) for ``macros.html``'s ``report_table``:
    caption, head and rows of cells, each a list of (text, address) pieces. With its
    ``.trials.json`` sidecar (``trials``: per row and column the trials behind the number, a
    :class:`faultline_eval.core.tables.Table`'s ``trial_links``), each number links to
    ``href(selector)``; a cell of several numbers joined by `` / `` with a list of selectors
    links each number. An empty dict for a file without a table."""
    caption, rows = _pipe_table(text)
    if not rows:
        return {}
    links = (trials or {}).get("rows") or []
    if trials and (trials.get("columns") != rows[0] or len(links) != len(rows) - 1):
        links = []  # the sidecar is not this table's (a hand-edited .md): no links rather than wrong ones
    body = [
        [_linked_cell(c, links[i][j] if links and j < len(links[i]) else None, href) for j, c in enumerate(r)]
        for i, r in enumerate(rows[1:])
    ]
    return {"caption": caption, "head": rows[0], "rows": body}


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


class CellNumbers:
    """The accuracy of each (model, cell) a page states: the report's (``report.json``: accuracy
    over samples with its 95 % bootstrap interval, the drop from clean) where the report has the
    cell, else counted from the trials (correct of scored trials, invalid answers not correct; no
    interval). One source for the cell pages and the front page, so both say the same number."""

    def __init__(self, rows: pd.DataFrame, report_dir: Path | None):
        scored = rows["verdict"].isin([CORRECT, "wrong"]) | rows["verdict"].str.startswith("invalid")
        table = rows.assign(k=rows["verdict"].eq(CORRECT), n=scored).groupby(["cell", "model"])[["k", "n"]].sum()
        #: (cell, model) -> (correct, scored) trials
        self.counts = {key: (int(k), int(n)) for key, k, n in zip(table.index, table["k"], table["n"])}
        self.report = report_cells(report_dir)
        head = _report_json(report_dir)
        self.panel = {p.get("model"): p for p in head.get("panel") or () if isinstance(p, dict)}

    def accuracy(self, model: str, cell: str) -> tuple[float | None, float | None, float | None, bool]:
        """(accuracy, interval low, high, from the report) as fractions; None where unknown."""
        found = self.report.get((model, cell))
        if found is not None and _finite(found.get("accuracy")):
            return found["accuracy"], found.get("ci_low"), found.get("ci_high"), True
        k, n = self.counts.get((cell, model), (0, 0))
        return (k / n if n else None), None, None, False

    def drop(self, model: str, cell: str) -> float | None:
        """Clean's accuracy minus the cell's (positive: accuracy fell), the report's Δbase where it has it."""
        found = self.report.get((model, cell)) or {}
        if _finite(found.get("delta_base")):
            return found["delta_base"]
        acc, clean = self.accuracy(model, cell)[0], self.accuracy(model, "clean")[0]
        return None if acc is None or clean is None else clean - acc


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _report_json(report_dir: Path | None) -> dict:
    path = None if report_dir is None else report_dir / "report.json"
    if path is None or not path.is_file():
        return {}
    head = json.loads(path.read_text(encoding="utf-8"))
    return head if isinstance(head, dict) else {}


def report_cells(report_dir: Path | None) -> dict[tuple[str, str], dict]:
    """(model, cell) -> the report's numbers of the cell: SCEval's ``conditions`` (accuracy,
    ci_low, ci_high, delta_base) or C³PO's template rows of ``accuracy``."""
    head = _report_json(report_dir)
    found: dict[tuple[str, str], dict] = {}
    for row in head.get("conditions") or ():
        if isinstance(row, dict) and "condition_id" in row:
            found[(str(row.get("model")), str(row["condition_id"]))] = row
    for row in head.get("accuracy") or ():
        if isinstance(row, dict) and row.get("level") == "template":
            found[(str(row.get("model")), str(row.get("group")))] = row
    return found


def pct(value: float | None) -> str:
    return "–" if value is None or not _finite(value) else f"{100 * value:.1f}"


def drop_text(value: float | None) -> str:
    """A drop as the report's tables write it: ↓x when accuracy fell, ↑x when it rose (pp)."""
    if value is None or not _finite(value):
        return "–"
    points = round(100 * value, 1) + 0.0
    return f"↓{points:.1f}" if points > 0 else f"↑{-points:.1f}" if points < 0 else "0.0"


def heat_class(value: float | None) -> str:
    """A drop's shade on the front page's heatmap (``heat-0`` none, then one shade per 20 pp)."""
    if value is None or not _finite(value) or value <= 0:
        return "heat-0"
    return f"heat-{min(5, 1 + int(value * 5))}"


def _verdict_matrix(s: Section, groups: list[tuple[tuple, list]], models: list[str]) -> list[dict]:
    """A sample page's verdict matrix: one row per (cell, variant) group of its trials, one verdict
    per model (empty where the model has no trial there)."""
    matrix = []
    for (cell, variant), g in groups:
        by_model = {r.model: r.verdict for r in g}
        matrix.append(
            {
                "anchor": slug(f"{cell}-{variant}"),
                "name": s.renderer.name(cell),
                "variant": variant,
                "verdicts": [(verdict_class(by_model.get(m)), by_model.get(m, "")) for m in models],
            }
        )
    return matrix


def _with_logged_columns(rows: pd.DataFrame, logged: list[dict]) -> pd.DataFrame:
    """The trial table with what only the per-sample logs hold (one dict per row, ``{}`` for a trial
    not read): answer, gold and latency where the table has none, the start of the reply, and a
    confidence column (empty when no trial has one)."""
    for column in ("answer", "gold", "latency_s"):
        values = [e.get(column) for e in logged]
        rows[column] = (
            rows[column].where(rows[column].notna(), pd.Series(values, dtype=object)) if column in rows else values
        )
    rows["latency_s"] = [None if v is None else round(float(v), 3) for v in rows["latency_s"]]
    rows["reply"] = [_shortened(e.get("reply"), TABLE_REPLY_CHARS) for e in logged]
    if "confidence" not in rows:
        rows["confidence"] = None
    return rows


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
        self.headlines: list[dict] = []  # per section: the front page's headline
        # the search index: [benchmark, kind, sample, cell, model, text, address from the root, variant, verdict]
        self.search: list[list] = []

    def page(self, title: str, body: str, depth: int, scripts: tuple[str, ...] = ()) -> str:
        return page(title, body, depth, scripts, self.nav)

    def render(self, path: Path, template: str, depth: int, **values: Any) -> None:
        """``path`` from ``template`` in the site's layout (its top bar: :attr:`nav`)."""
        path.write_text(render(template, depth, nav=self.nav, **values), encoding="utf-8")

    def write_section(self, s: Section) -> dict:
        root = self.out / s.name
        for sub in ("cells", "samples", "figures"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        rows = s.rows.reset_index(drop=True)
        shown = select(rows, self.budget)
        keys = list(zip(*(values_of(rows[c]) for c in ("model", "cell", "sample_id", "variant"))))
        extras, records = s.read_records({k for k, on in zip(keys, shown) if on})
        rows = _with_logged_columns(rows, [extras.get(k, {}) for k in keys])
        has_page = shown & pd.Series([k in records for k in keys])
        notes = [without_paths(n) for n in s.notes]
        models = model_order(rows)
        trial_media: dict[str, int] = {}  # trials with a sample page by their media: "written", "budget", "failed"
        sample_pages = self._sample_pages(s, rows[has_page], records, notes, models, trial_media)
        rows["link"] = [
            f"../samples/{sample_pages[sample]}#{slug(f'{cell}-{variant}')}" if on else None
            for (_, cell, sample, variant), on in zip(keys, has_page)
        ]
        # a column no trial has a value in is left out (wrapped tasks log no confidence or latency)
        empty = [*OPTIONAL_COLUMNS, "confidence", "latency_s", "reply"]
        rows = rows.drop(columns=[c for c in empty if c in rows and rows[c].isna().all()])
        self.rows[s.name] = rows
        cells = s.renderer.order(list(rows["cell"].unique()))
        cell_pages = {c: slug(c) for c in cells}
        numbers = CellNumbers(rows, s.report_dir)
        self._cell_pages(s, rows, cells, cell_pages, numbers)
        self._index_trials(s, rows, keys, extras, cell_pages)
        self._index_samples(s, rows, extras, sample_pages, cells, cell_pages)
        runs = self._runs(s, rows, keys, extras)
        self._overview(s, rows, cells, cell_pages, notes, models, runs, numbers)
        self.headlines.append(self._headline(s, cells, cell_pages, models, numbers))
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

    def _cell_pages(
        self, s: Section, rows: pd.DataFrame, cells: list[str], cell_pages: dict[str, str], numbers: CellNumbers
    ) -> None:
        """One page per cell, in the renderer's order, each linking the cells before and after it."""
        groups = dict(tuple(rows.groupby("cell", sort=False)))
        for i, cell in enumerate(cells):
            around = (cell_pages[cells[i - 1]] if i else None, cell_pages[cells[i + 1]] if i + 1 < len(cells) else None)
            self._cell_page(s, cell, groups[cell], cell_pages, around, f"{i + 1} of {len(cells)}", numbers)

    # -- search and runs ----------------------------------------------------------------------------------
    def _index_trials(self, s: Section, rows: pd.DataFrame, keys: list, extras: dict, cell_pages: dict) -> None:
        """Every trial into the search index (its answer and the start of its reply, its variant and
        verdict): linked to its section of the sample page when it has one, else to its row of the
        cell's table."""
        quoted = functools.cache(lambda text: quote("=" + text, safe=""))  # ids and models repeat across trials
        columns = (values_of(rows[c]) for c in ("answer", "link", "verdict"))
        for key, answer, link, verdict in zip(keys, *columns):
            model, cell, sample, variant = key
            reply = str(extras.get(key, {}).get("reply") or "")[:SEARCH_REPLY_CHARS]
            answer = "" if answer is None else str(answer)
            where = (
                f"{s.name}/samples/{link[len('../samples/') :]}"
                if isinstance(link, str)
                else f"{s.name}/cells/{cell_pages[cell]}.html#sample_id={quoted(sample)}&model={quoted(model)}"
            )
            self.search.append(
                [s.title, "trial", sample, cell, model, f"{answer} | {reply}", where, _clean(variant), verdict]
            )

    def _index_samples(
        self, s: Section, rows: pd.DataFrame, extras: dict, pages: dict, cells: list[str], cell_pages: dict
    ) -> None:
        """Every sample's text into the search index, those without a sample page too: the text its
        log holds (the prompt lmms-eval logged, less the part every sample shares: the system prompt
        and instructions); a sample without a page links to its rows of its first cell's table."""
        texts: dict[str, str] = {}
        for (_, cell, sample, _), e in extras.items():  # clean's text where there is one (see read_records)
            if e.get("text") and (sample not in texts or cell == "clean"):
                texts[sample] = str(e["text"])
        common = _common_prefix(list(texts.values())) if len(texts) > 1 else ""
        first_cell = {}
        for sample, cell in zip(values_of(rows["sample_id"]), values_of(rows["cell"])):
            if cells.index(cell) < cells.index(first_cell.get(sample, cell)) or sample not in first_cell:
                first_cell[sample] = cell
        for sample, cell in first_cell.items():
            if sample in pages:
                continue  # indexed with the text its page shows (_sample_body)
            text = texts.get(sample, "")[len(common) :]
            where = f"{s.name}/cells/{cell_pages[cell]}.html#sample_id={quote('=' + sample, safe='')}"
            self.search.append([s.title, "sample", sample, "", "", text[:SEARCH_QUESTION_CHARS], where, None, None])

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
        return [run_panel(r) for r in sorted(runs, key=lambda r: (r["models"], r.get("date") or "", r["run"]))]

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
            values = self._sample_values(s, sample, trials, records, failures, models, trial_media)
            self.render(
                self.out / s.name / "samples" / pages[sample],
                "sample.html",
                2,
                title=f"{s.title}: {sample}",
                s=s,
                sample=sample,
                previous=pages[grouped[i - 1][0]] if i else None,
                following=pages[grouped[i + 1][0]] if i + 1 < len(grouped) else None,
                position=f"sample {i + 1} of {len(grouped)}",
                **values,
            )
        notes += [f"media of {n} trial(s) not regenerated: {reason}" for reason, n in failures.items()]
        return pages

    def _render(self, key: str, make, failures: dict, reference: int | None = None) -> tuple[Shown | None, dict, str]:
        """(what was sent, its media for ``macros.html``: ``written`` or an ``error``, how they came
        out: "written", "budget" or "failed")."""
        try:
            shown, written = self.media.write(key, make, reference)
        except (LookupError, ValueError, OSError, RuntimeError) as exc:
            reason = without_paths(exc)
            failures[reason] = failures.get(reason, 0) + 1
            return None, {"error": reason}, "failed"
        return shown, {"written": written, "error": None}, "budget" if written is None else "written"

    def _sample_values(
        self,
        s: Section,
        sample: str,
        trials: pd.DataFrame,
        records: dict,
        failures: dict,
        models: list[str],
        trial_media: dict,
    ) -> dict:
        """What ``sample.html`` shows of one sample: the top (the clean item, or for a benchmark that
        sends every trial the same media, those media: written once), the verdict matrix, and per
        (cell, variant) what was sent (media only where they differ from the top's), the text sent
        marked against the top's, and one card per model in the matrix's order."""
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
        matrix = _verdict_matrix(s, groups, present)
        # the media every section would repeat, shown once at the top
        if s.renderer.clean is not None:
            top_label, make_top = "clean item", (lambda: s.renderer.clean(first))
            top_key = f"{s.name}|{first.get('dataset')}|clean|{sample}|0"
        else:  # every trial of the sample was sent the same media (the item's own)
            top_label, make_top = "sent in every trial", (lambda: s.renderer.trial(first))
            top_key = f"{s.name}|{first.get('dataset')}|item|{sample}"
        top_shown, top_media, top_outcome = self._render(top_key, make_top, failures)
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
            + [None, None]
        )
        reference = None if top_shown is None or top_shown.audio is None else len(top_shown.audio)
        sections = [
            self._trial_section(s, sample, cell, variant, g, records, present, top_shown, top_media, top_outcome)
            for (cell, variant), g in groups
        ]
        sections = [self._trial_media(s, section, failures, reference) for section in sections]
        for section in sections:  # each model's trial was sent these media: counted per trial, not per file
            trial_media[section["outcome"]] = trial_media.get(section["outcome"], 0) + section["trials"]
        return {
            "top": {"label": top_label, "media": top_media, "text": question},
            "gold": list(trials["gold"].dropna().astype(str).unique()) if "gold" in trials else [],
            "models": present,
            "matrix": matrix,
            "correct": int(sum(r.verdict == CORRECT for g in by_group.values() for r in g)),
            "total": len(trials),
            "sections": sections,
        }

    def _trial_section(self, s, sample, cell, variant, g, records, present, top_shown, top_media, top_outcome) -> dict:
        """One (cell, variant) of a sample page, its media still to write (:meth:`_trial_media`)."""
        record = records[(g[0].model, cell, sample, variant)]
        by_model = {r.model: r for r in g}
        return {
            "anchor": slug(f"{cell}-{variant}"),
            "cell": cell,
            "sample": sample,
            "cell_page": slug(cell),
            "name": s.renderer.name(cell),
            "variant": variant,
            "about": s.renderer.describe(cell),
            "record": record,
            "top": (top_shown, top_media, top_outcome),
            "trials": len(g),
            "dots": [
                (verdict_class(by_model[m].verdict), f"{m}: {by_model[m].verdict}") for m in present if m in by_model
            ],
            "cards": [
                self._card(s, by_model[m], records[(m, cell, sample, variant)]) for m in present if m in by_model
            ],
        }

    def _trial_media(self, s: Section, section: dict, failures: dict, reference: int | None) -> dict:
        """A section's media (for a benchmark with a clean item: what this trial was sent) and text."""
        top_shown, top_media, top_outcome = section.pop("top")
        record = section.pop("record")
        if s.renderer.clean is not None:
            shown, media, outcome = self._render(
                f"{s.name}|{record.get('dataset')}|{section['cell']}|{section['sample']}|{section['variant']}",
                lambda: s.renderer.trial(record),
                failures,
                reference,
            )
        else:
            shown, media, outcome = top_shown, None, top_outcome
        section["outcome"] = outcome
        diffed = " (against clean: inserted, deleted)" if s.renderer.clean and top_shown else ""
        text: Any = ""
        if shown is not None and top_shown is not None and shown.text == top_shown.text:
            diffed = ": the same as above"  # not repeated
        elif shown is not None:
            text = word_diff(top_shown.text, shown.text) if diffed else shown.text
        return {
            **section,
            "media": media,
            "diffed": diffed,
            "text": text,
            "system": shown.system if shown is not None else "",
            "notes": "; ".join(shown.notes) if shown is not None and shown.notes else "",
        }

    def _card(self, s: Section, row, record: dict) -> dict:
        fields = [("verdict", row.verdict), *s.details(record)]
        return {
            "cls": verdict_class(row.verdict),
            "model": row.model,
            "fields": [(k, v) for k, v in fields if v not in (None, "")],
            "reply": record.get("raw_response"),
        }

    # -- per cell -----------------------------------------------------------------------------------------
    def _cell_page(
        self,
        s: Section,
        cell: str,
        rows: pd.DataFrame,
        cell_pages: dict[str, str],
        around: tuple,
        position: str,
        numbers: CellNumbers,
    ) -> None:
        """A cell's page: the number it explains per model (accuracy with its interval, clean, the
        drop), what the cell does, and every trial (its data script, written once per cell)."""
        name = cell_pages[cell]
        columns = [c for c in TABLE_COLUMNS if c in rows] + [c for c in OPTIONAL_COLUMNS if c in rows]
        data = {
            "cell": cell,
            "columns": [s.variant_label if c == "variant" else c for c in columns],
            "rows": _plain_rows(rows, columns),
            "links": _clean_all(values_of(rows["link"])),
        }
        (self.out / s.name / "cells" / f"{name}.js").write_text(_table_js(data), encoding="utf-8")
        stated = [_stated_numbers(model, cell, cell_pages, numbers) for model in model_order(rows)]
        previous, following = (None if a is None else f"{a}.html" for a in around)
        self.render(
            self.out / s.name / "cells" / f"{name}.html",
            "cell.html",
            2,
            title=f"{s.title}: {cell}",
            scripts=(f"{name}.js",),
            s=s,
            cells=None,
            name=s.renderer.name(cell),
            previous=previous,
            following=following,
            position=position,
            about=s.renderer.describe(cell),
            numbers=stated,
            from_report=any(n["reported"] for n in stated),
            trials=len(rows),
        )

    def _group_page(self, s: Section, cells: list[str], cell_pages: dict[str, str], groups: dict[tuple, str]) -> str:
        """The page of every trial of several cells (written once per set of cells): it loads each
        cell's table script, so the trials' data are not written again."""
        key = tuple(s.renderer.order(list(cells)))
        if key not in groups:
            groups[key] = f"group-{hashlib.blake2b('|'.join(key).encode(), digest_size=6).hexdigest()}"
            self.render(
                self.out / s.name / "cells" / f"{groups[key]}.html",
                "cell.html",
                2,
                title=f"{s.title}: {len(key)} {s.cell_label}s",
                scripts=tuple(f"{cell_pages[c]}.js" for c in key),
                s=s,
                cells=[(s.renderer.name(c), f"{cell_pages[c]}.html") for c in key],
            )
        return groups[key]

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
        numbers: CellNumbers,
    ) -> None:
        """The story first: the report's figures (captioned), its headline tables, the run panels;
        then, collapsed, the accuracy of every model and cell, every other report table, the notes."""
        matrix = []
        for cell in cells:
            counts = []
            for model in models:
                if (cell, model) not in numbers.counts:
                    counts.append(None)
                    continue
                k, n = numbers.counts[(cell, model)]
                link = f"cells/{cell_pages[cell]}.html#model={quote('=' + model, safe='')}"
                counts.append({"k": k, "n": n, "link": link})
            matrix.append({"page": cell_pages[cell], "name": s.renderer.name(cell), "counts": counts})
        report = self._report_parts(s, cell_pages) if s.report_dir is not None else {}
        self.render(
            self.out / s.name / "index.html",
            "overview.html",
            1,
            title=s.title,
            s=s,
            trials=len(rows),
            models=models,
            cells=cells,
            budget=self.budget.describe(),
            links=self.overview_links.get(s.name, ()),
            figures=report.get("figures", []),
            headline=report.get("headline", []),
            conventions=report.get("conventions", {}),
            rest=report.get("rest", []),
            has_report=s.report_dir is not None,
            runs=runs,
            matrix=matrix,
            notes=notes,
        )

    def _report_parts(self, s: Section, cell_pages: dict[str, str]) -> dict:
        """The report's figures (copied, captioned), its headline tables, its other tables (each
        number linked to the trials it was computed from) and its units-and-signs legend."""
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
        head = _report_json(s.report_dir)
        captions = head.get("figure_captions") if isinstance(head.get("figure_captions"), dict) else {}
        conventions = head.get("conventions") if isinstance(head.get("conventions"), dict) else {}
        figures = []
        for png in sorted(s.report_dir.glob("*.png"), key=_story):
            shutil.copyfile(png, self.out / s.name / "figures" / png.name)
            figures.append(
                {
                    "href": f"figures/{png.name}",
                    "name": png.stem.replace("_", " "),
                    "caption": captions.get(png.stem, ""),
                }
            )
        return {
            "figures": figures,
            "headline": [tables[k] for k in first],
            "rest": [v for k, v in tables.items() if k not in first],
            "conventions": conventions,
        }

    # -- the front page -----------------------------------------------------------------------------------
    def _headline(
        self, s: Section, cells: list[str], cell_pages: dict, models: list[str], numbers: CellNumbers
    ) -> dict:
        """A benchmark's headline on the front page: per model its clean accuracy, its worst cell
        and the drop there, the panel's fault-line score (the report's); the largest drops per
        cell and model as a heatmap, each linked."""
        others = [c for c in cells if c != "clean"]
        per_model = [_model_headline(s, model, others, cell_pages, numbers) for model in models]
        has_clean = "clean" in cell_pages
        figure = s.report_dir is not None and (s.report_dir / "drop_heatmap.png").is_file()
        return {
            "name": s.name,
            "title": s.title,
            "cell_label": s.cell_label,
            "models": models,
            "per_model": per_model,
            "has_clean": has_clean,
            "has_fault": any(m["fault"] is not None for m in per_model),
            "from_report": bool(numbers.report),
            "heatmap": _drop_heatmap(s, others, cell_pages, models, numbers) if has_clean else [],
            "cells": len(others),
            "figure": f"{s.name}/figures/drop_heatmap.png" if figure else None,
        }

    def finish(self) -> dict:
        (self.out / "assets").mkdir(parents=True, exist_ok=True)
        for asset in ("viewer.js", "viewer.css"):
            shutil.copyfile(ASSETS / asset, self.out / "assets" / asset)
        index = {
            "fields": ["benchmark", "kind", "sample", "cell", "model", "text", "href", "variant", "verdict"],
            "rows": self.search,
        }
        (self.out / "search.js").write_text(
            f"window.FL_SEARCH = {json.dumps(index, default=str, allow_nan=False)};\n", encoding="utf-8"
        )
        self.render(
            self.out / "index.html",
            "front.html",
            0,
            title="faultline-eval results",
            notes=self.notes,
            sections=[{**x, "counts": media_counts(x)} for x in self.summaries],
            headlines=self.headlines,
            budget=self.budget.describe(),
            past_cap=sum(x["past_max_mb"] for x in self.summaries),
            max_mb=f"{self.budget.max_mb:g}",
        )
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
#: How many cells the front page's heatmap shows (those with the largest drop over the models).
HEATMAP_ROWS = 15


def _cell_href(s: Section, page: str, model: str | None = None) -> str:
    """A cell page's address from the site root, filtered to ``model`` when given."""
    return f"{s.name}/cells/{page}.html" + ("" if model is None else f"#model={quote('=' + model, safe='')}")


def _stated_numbers(model: str, cell: str, cell_pages: dict, numbers: CellNumbers) -> dict:
    """One model's row of the numbers a cell page explains: accuracy with its interval (the
    report's), clean's accuracy (linked), the drop from clean, the trials counted."""
    acc, low, high, reported = numbers.accuracy(model, cell)
    k, n = numbers.counts.get((cell, model), (0, 0))
    against_clean = "clean" in cell_pages and cell != "clean"
    return {
        "model": model,
        "reported": reported,
        "accuracy": pct(acc),
        "interval": f"[{pct(low)}, {pct(high)}]" if reported and _finite(low) and _finite(high) else "–",
        "clean": pct(numbers.accuracy(model, "clean")[0]) if "clean" in cell_pages else "–",
        "clean_href": f"{cell_pages['clean']}.html#model={quote('=' + model, safe='')}" if against_clean else None,
        "drop": drop_text(numbers.drop(model, cell)) if against_clean else "–",
        "trials": f"{k} correct of {n} scored",
    }


def _model_headline(s: Section, model: str, others: list[str], cell_pages: dict, numbers: CellNumbers) -> dict:
    """One model's row of the front page: clean accuracy, the worst other cell, its accuracy
    and drop, the panel's fault-line score (None without the report's panel)."""
    seen = [(a, c) for c in others if (a := numbers.accuracy(model, c)[0]) is not None]
    worst_accuracy, worst = min(seen, default=(None, None))
    has_clean = "clean" in cell_pages
    fault = (numbers.panel.get(model) or {}).get("panel_fault")
    return {
        "model": model,
        "clean": pct(numbers.accuracy(model, "clean")[0]) if has_clean else "–",
        "clean_href": _cell_href(s, cell_pages["clean"], model) if has_clean else None,
        "worst": None if worst is None else s.renderer.name(worst),
        "worst_href": None if worst is None else _cell_href(s, cell_pages[worst], model),
        "worst_accuracy": pct(worst_accuracy),
        "worst_drop": drop_text(numbers.drop(model, worst)) if has_clean and worst else "–",
        "fault": drop_text(fault) if _finite(fault) else None,
    }


def _drop_heatmap(s: Section, others: list[str], cell_pages: dict, models: list[str], numbers: CellNumbers) -> list:
    """The :data:`HEATMAP_ROWS` cells with the largest drop from clean over the models, in the
    benchmark's order: per model the drop and its shade."""
    drops = {c: [numbers.drop(m, c) for m in models] for c in others}
    largest = sorted(others, key=lambda c: (-max((d for d in drops[c] if _finite(d)), default=0), c))
    return [
        {
            "name": s.renderer.name(c),
            "href": _cell_href(s, cell_pages[c]),
            "drops": [(drop_text(d), heat_class(d)) for d in drops[c]],
        }
        for c in s.renderer.order(largest[:HEATMAP_ROWS])
    ]


def _story(png: Path) -> tuple:
    """A report figure's place on an overview: by base task (a wrapped report's
    ``<base>__<metric>__<figure>``), then :data:`FIGURE_ORDER`."""
    prefix, _, name = png.stem.rpartition("__")
    return (prefix, FIGURE_ORDER.index(name) if name in FIGURE_ORDER else len(FIGURE_ORDER), png.stem)


def _shortened(text: Any, limit: int) -> str | None:
    if text is None:
        return None
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _common_prefix(texts: list[str]) -> str:
    """The longest start every text shares, cut back to a line's end (a shared system prompt and
    instructions, not half a question)."""
    if not texts:
        return ""
    first, last = min(texts), max(texts)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[: first.rfind("\n", 0, n) + 1] if n < len(first) else first


def model_order(rows: pd.DataFrame) -> list[str]:
    """The models in the order every table and card list shows them (by name)."""
    return sorted(rows["model"].unique())


def run_panel(run: dict) -> dict:
    """A run as ``macros.html``'s ``runs_panel`` shows it: its seeds as text, its token and
    request totals as lines (lmms-eval's efficiency, then each model's requests from the run's
    ``_run_info.json``: tokens in, media by kind, out; requests generated, restored, failed by
    category; no cost, as the project has no price table), its verdicts not correct."""
    tokens = run.get("tokens") or {}
    lines: list[Any] = [", ".join(f"{k} {int(v):,}" for k, v in tokens.items())] if tokens else []
    for label, usage in (run.get("requests") or {}).items():
        counts = [("input", usage.get("input_tokens", 0))]
        counts += [(kind, n) for kind, n in sorted((usage.get("media_tokens") or {}).items())]
        counts.append(("output", usage.get("output_tokens", 0)))
        outcomes = [("generated", usage.get("generated", 0)), ("restored", usage.get("restored", 0))]
        outcomes += [(f"failed: {k}", n) for k, n in sorted((usage.get("failures") or {}).items())]
        reuse = media_reuse_text(usage)  # a served model's repeated media parts and its server's cache hits
        lines.append(
            (
                label,
                "tokens "
                + ", ".join(f"{k} {int(n):,}" for k, n in counts)
                + "; requests "
                + ", ".join(f"{k} {int(n):,}" for k, n in outcomes)
                + (f"; {reuse}" if reuse else ""),
            )
        )
    return {
        **run,
        "seed_text": ", ".join(f"{k.replace('_seed', '')} {v}" for k, v in (run.get("seeds") or {}).items()),
        "cost_lines": lines,
        "failures": sorted((k, v) for k, v in (run.get("verdicts") or {}).items() if k != CORRECT),
        "wall_s": run.get("wall_s"),
        "usage": run.get("usage"),
        "versions": run.get("versions"),
        "backend": run.get("backend"),
        "system_instruction": run.get("system_instruction"),
    }


def verdict_class(verdict: str | None) -> str:
    if verdict is None:
        return ""
    return "ok" if verdict == CORRECT else "bad" if verdict == "wrong" else "odd"
