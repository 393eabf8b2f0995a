"""One fact, one place (issues 35 and 42): every measured figure the docs state comes from the result
files of ``benchmarks/results/`` (``benchmarks/provenance.py`` writes and reads them). Doc pages name
a figure as ``{{ measured:NAME.FIGURE }}`` and the Benchmarks page is generated from the files
(``docs/_ext/measured.py``, a MkDocs hook); the README, which GitHub shows as written, states its
figures literally and is checked here against the same files.
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import measured  # noqa: E402  (puts benchmarks/ on the path)
import provenance  # noqa: E402

RESULTS = provenance.results()
#: The pages of the site (design notes and the hook's own code are not pages; the changelog is history).
PAGES = sorted(
    path
    for path in (ROOT / "docs").rglob("*.md")
    if path.relative_to(ROOT / "docs").parts[0] not in ("design", "_ext") and path.name != "changelog.md"
)
#: A number with a unit of measured time, size, count or ratio, as a page or the README states it.
QUANTITY = re.compile(r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?)\s?(s|min|minutes|GB|MB|×|tests)(?!\w)")
#: Literal figures on a page that equal a result's by coincidence: (page, text) -> what they are.
COINCIDENCES = {
    ("docs/how-to/resume.md", "170 s"): "the duration of tests/test_fault_lmms_run.py, not CI's main job",
}


def prose(text: str) -> str:
    """``text`` without its fenced blocks and HTML comments (commands, example markers)."""
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.S | re.M)
    return re.sub(r"<!--.*?-->", "", text, flags=re.S)


def stated(figure: dict) -> str:
    return provenance.format_value(figure["value"], figure["unit"])


def test_results_have_their_provenance():
    assert {"report", "install", "ci"} <= set(RESULTS), sorted(RESULTS)
    for name, result in RESULTS.items():
        data = result.data
        assert data["figures"], name
        assert dt.date.fromisoformat(data["date"][:10]) <= dt.date.today(), name
        if data.get("transcribed"):
            assert data["transcribed"]["from"] and data["transcribed"]["note"], name
        else:
            assert re.fullmatch(r"[0-9a-f]{40}", data["commit"]), name
            assert data["smoke"] is False, f"{name}: a --smoke run's figures say nothing about speed"
            assert data["command"].startswith(f"python {data['script']}"), name
            assert {"cpu", "cores", "memory_gib", "platform"} <= set(data["machine"]), name
            assert set(data["load"]) == {"before", "after"}, name
        for figure in data["figures"]:
            assert figure["what"] and isinstance(figure["unit"], str), (name, figure)


def test_every_result_is_stated_somewhere():
    """Each file is a block of the Benchmarks page or feeds a ``{{ measured: }}`` figure, so none is
    kept that no page shows; and the page's blocks name files that exist."""
    used: set[str] = set()
    for path in [*PAGES, ROOT / "README.md"]:
        text = path.read_text(encoding="utf-8")
        used |= {name for names in measured.RESULTS_MARKER.findall(text) for name in names.split()}
        used |= {name for name, _ in measured.FIGURE.findall(text)}
    assert sorted(used - set(RESULTS)) == []
    assert sorted(set(RESULTS) - used) == [], "results no page states"
    assert sorted(RESULTS) != []


@pytest.mark.parametrize("page", PAGES, ids=lambda path: str(path.relative_to(ROOT)))
def test_pages_render_their_figures(page: Path):
    """Every ``{{ measured: }}`` of a page names a figure that exists, and after rendering no
    placeholder or marker is left."""
    rendered = measured.render(page.read_text(encoding="utf-8"), RESULTS)
    assert "{{ measured" not in rendered and "<!-- results:" not in rendered


def test_unknown_figures_are_refused_by_name():
    with pytest.raises(measured.UnknownFigure, match="has no figure 'no_such'"):
        measured.render("{{ measured:install.no_such }}", RESULTS)
    with pytest.raises(measured.UnknownFigure, match="no benchmarks/results/nothing.json"):
        measured.render("<!-- results: nothing -->", RESULTS)


def test_pages_state_no_figure_of_the_results_literally():
    """A page that copies a figure the docs state (one some page names, or an install or CI fact)
    instead of naming it would not follow a new run. (Every figure of every run would match by
    chance the many sizes and settings the pages give: 0.25 s, 8 s, 1.5x.)"""
    named = {(name, figure) for page in PAGES for name, figure in measured.FIGURE.findall(page.read_text("utf-8"))}
    figures = {
        stated(figure): name
        for name, result in RESULTS.items()
        for figure in result.data["figures"]
        if (name, figure["name"]) in named or result.data.get("script") is None
    }
    copies = []
    for page in PAGES:
        where = str(page.relative_to(ROOT))
        for number, unit in QUANTITY.findall(prose(page.read_text(encoding="utf-8"))):
            text = provenance.format_value(float(number.replace(",", "")), unit.replace("×", "x"))
            if text in figures and (where, text) not in COINCIDENCES:
                copies.append(f"{where}: {text} (write {{{{ measured:{figures[text]}.… }}}})")
    assert copies == []


def test_readme_figures_are_the_results():
    """The README cannot use placeholders (GitHub shows it as written): each measured figure it states
    equals a result's, and the figures it must state are there."""
    readme = prose((ROOT / "README.md").read_text(encoding="utf-8"))
    figures = {stated(figure) for result in RESULTS.values() for figure in result.data["figures"]}
    found = [
        provenance.format_value(float(n.replace(",", "")) if "." in n else int(n.replace(",", "")), u.replace("×", "x"))
        for n, u in QUANTITY.findall(readme)
    ]
    assert found, "no figure found in README.md"
    assert [text for text in found if text not in figures] == []
    must = [
        RESULTS["install"].figure("disk"),
        RESULTS["install"].figure("pip_install"),
        RESULTS["ci"].figure("main_job"),
    ]
    for figure in [*must, RESULTS["ci"].figure("test_command")]:
        assert stated(figure) in found, f"README.md does not state {figure['what']}"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def test_a_result_is_stale_once_its_script_changed():
    """Measured at the commit before the latest change to its script, a result is marked stale naming
    the change; measured at HEAD by a script unchanged since, it is not; a year later it is, by age."""
    script = "benchmarks/report.py"
    before = git("log", "--format=%H", "-1", f"{git('log', '--format=%H', '-1', '--', script)}^")
    data = {"command": "python benchmarks/report.py", "date": dt.date.today().isoformat(), "machine": {}}
    data |= {"figures": [], "script": script, "changed_files": []}
    old = provenance.stale(provenance.Result("r", data | {"commit": before}))
    assert old is not None and f"{script} changed since" in old
    assert provenance.stale(provenance.Result("r", data | {"commit": git("rev-parse", "HEAD")})) is None
    later = dt.date.today() + dt.timedelta(days=365)
    assert "days ago" in provenance.stale(provenance.Result("r", data | {"commit": git("rev-parse", "HEAD")}), later)
    unknown = provenance.stale(provenance.Result("r", data | {"commit": "0" * 40}))
    assert unknown is not None and "not in this checkout's history" in unknown


def test_benchmarks_page_names_each_run():
    """The generated page gives, for every result, its command and when and where it ran."""
    page = measured.render((ROOT / "docs/explanations/benchmarks.md").read_text(encoding="utf-8"), RESULTS)
    for name, result in RESULTS.items():
        assert f"`{result.data['command']}`" in page, name
        assert f"measured {result.data['date'][:10]}" in page, name
