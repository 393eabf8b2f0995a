"""Measured figures in the docs, each from its one source: the result files of ``benchmarks/results/``.

A MkDocs hook (``mkdocs.yml``: ``hooks:``) that rewrites each page's Markdown before it is rendered:

- ``{{ measured:NAME.FIGURE }}`` becomes that figure of ``benchmarks/results/NAME.json`` as the
  docs state it (``{{ measured:install.pip_install }}`` -> ``246 s``);
- ``<!-- results: NAME ... -->`` becomes, for each NAME, what was run (the command), when, at which
  commit, on which machine and under what load, against which peer, and a table of its figures;
  a result that may no longer hold (``provenance.stale``) is marked as such.

An unknown NAME or FIGURE fails the build, naming the page. The README is read on GitHub, where
nothing rewrites it: ``tests/test_measured_figures.py`` checks its figures against the same files.
Run as a script, ``python docs/_ext/measured.py PAGE.md`` prints the page as the site renders it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # MkDocs loads this file by path

import provenance  # noqa: E402

FIGURE = re.compile(r"\{\{\s*measured:([\w-]+)\.([\w/.(), -]+?)\s*\}\}")
RESULTS_MARKER = re.compile(r"<!--\s*results:\s*([\w\s-]+?)\s*-->")


class UnknownFigure(LookupError):
    """A page names a result file or a figure that does not exist."""


def lookup(results: dict[str, provenance.Result], name: str, figure: str | None = None) -> Any:
    if name not in results:
        raise UnknownFigure(f"no benchmarks/results/{name}.json (there are: {', '.join(sorted(results))})")
    if figure is None:
        return results[name]
    if figure == "date":  # when the result was measured, as a figure's provenance in a sentence
        return {"value": results[name].data["date"][:10], "unit": ""}
    try:
        return results[name].figure(figure)
    except KeyError as error:
        raise UnknownFigure(error.args[0]) from None


def machine_text(machine: dict[str, Any]) -> str:
    if "description" in machine:
        return machine["description"]
    memory = f", {machine['memory_gib']:g} GiB" if machine.get("memory_gib") else ""
    return f"{machine['cpu']}, {machine['cores']} cores{memory}; {machine['platform']}"


def load_text(load: dict[str, Any]) -> str:
    if "note" in load:
        return load["note"]
    return f"{load['before'][0]:g} before, {load['after'][0]:g} after (1-minute average)"


def provenance_text(result: provenance.Result) -> str:
    """Who measured what, where, when: the lines above a result's table, and a warning where the
    figures were transcribed or may be stale."""
    data = result.data
    commit = f"commit `{data['commit'][:10]}`" if data.get("commit") else "commit not recorded"
    lines = [
        f"`{data['command']}`",
        f"measured {data['date'][:10]}, {commit}; {machine_text(data['machine'])}; load: {load_text(data['load'])}",
    ]
    if data.get("peer"):
        lines.append(f"peer: {data['peer']}")
    text = "  \n".join(lines)
    transcribed = data.get("transcribed")
    if transcribed:
        text += f'\n\n!!! warning "Transcribed, not re-run"\n    From {transcribed["from"]}: {transcribed["note"]}.'
    elif reason := provenance.stale(result):
        text += f'\n\n!!! warning "May be stale"\n    {reason[0].upper()}{reason[1:]}.'
    return text


def figures_table(result: provenance.Result) -> str:
    rows = ["| figure | value | what it is |", "|---|---|---|"]
    for figure in result.data["figures"]:
        what = figure["what"].replace("|", "\\|")
        rows.append(f"| `{figure['name']}` | {provenance.format_value(figure['value'], figure['unit'])} | {what} |")
    return "\n".join(rows)


def result_block(results: dict[str, provenance.Result], name: str) -> str:
    result = lookup(results, name)
    return f"{provenance_text(result)}\n\n{figures_table(result)}\n"


def render(markdown: str, results: dict[str, provenance.Result] | None = None) -> str:
    """``markdown`` with its figures and result blocks filled in from ``results`` (default: the files)."""
    results = provenance.results() if results is None else results
    markdown = RESULTS_MARKER.sub(
        lambda m: "\n".join(result_block(results, name) for name in m.group(1).split()), markdown
    )
    return FIGURE.sub(lambda m: figure_text(lookup(results, *m.groups())), markdown)


def figure_text(figure: dict[str, Any]) -> str:
    return provenance.format_value(figure["value"], figure["unit"])


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    from mkdocs.exceptions import PluginError

    try:
        return render(markdown)
    except (UnknownFigure, ValueError) as error:
        raise PluginError(f"{page.file.src_path}: {error}") from None


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print(render(Path(path).read_text(encoding="utf-8")))
