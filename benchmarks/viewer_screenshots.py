"""Screenshots of the results viewer, at a desktop width (1,280 px) and a phone's (390 px), for the docs.

    python benchmarks/viewer_screenshots.py SITE -o SHOTS/          # a site `faultline view` or --html wrote
    python benchmarks/viewer_screenshots.py --demo -o SHOTS/        # the demo main job, its reports and site first
    python benchmarks/viewer_screenshots.py --smoke                 # CI: a 3-item demo site, shot if chromium is there

Pages: the front page, each benchmark's overview, a cell page filtered to the trials not correct,
a sample page, one corrupted trial of it (its section: what was sent, the text with the corruption
marked, the reply), the compare view where the site has one (wrapped tasks also their audit's
items), and the search box with results. Uses Debian's Chromium (``apt-get install
chromium``) through Playwright, headless, from ``file://``; the PNGs are not part of the repository.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from collections.abc import Collection
from pathlib import Path

import provenance

BIN = Path(sys.executable).parent
WIDTHS = {"desktop": 1280, "phone": 390}
#: Where the element the address names (``#<section id>``) starts on the page; 0 for none.
SECTION_TOP = """(() => {
  const named = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
  return named ? Math.floor(named.getBoundingClientRect().top + window.scrollY) : 0;
})()"""


def demo_site(work: Path, smoke: bool = False) -> Path:
    """The README's main job on the demo (``smoke``: two tasks on 3 items), both reports, and the site with them."""
    out = provenance.demo_main_job(work / "demo_out", smoke)
    view = [str(BIN / "faultline"), "view", str(out), "-o", str(out / "html"), "--sceval-report", str(out / "report"),
            "--c3po-report", str(out / "c3po-report")]  # fmt: skip
    done = provenance.run_command(view, capture_output=True, text=True)  # the command runs offline by default
    if done.returncode:
        raise SystemExit(f"{' '.join(view)} failed:\n{done.stderr[-2000:]}")
    return out / "html"


def pages(site: Path) -> list[tuple[str, str]]:
    """(name, address) of each page shot (``file://`` addresses: ``site`` is made absolute)."""
    site = Path(site).resolve()  # Path.as_uri() refuses a relative path (the docs' `out/site/` is one)
    found = [("index", (site / "index.html").as_uri())]
    for bench in ("sceval", "c3po", "wrapped"):
        if not (site / bench).is_dir():
            continue
        found.append((f"{bench}-overview", (site / bench / "index.html").as_uri()))
        cells = sorted(p for p in (site / bench / "cells").glob("*.html") if not p.name.startswith("group-"))
        if cells:
            found.append((f"{bench}-cell", cells[min(1, len(cells) - 1)].as_uri() + "#verdict=!correct"))
        samples = sorted((site / bench / "samples").glob("*.html"))
        if samples:
            found.append((f"{bench}-sample", samples[0].as_uri()))
            # a corrupted trial: the first section of the sample whose text the corruption changed
            # (words marked), else the first that is not the clean item's
            sections = re.findall(r'<section class="trial" id="([^"]+)">(.*?)</section>', samples[0].read_text(), re.S)
            corrupted = [key for key, body in sections if not key.startswith("clean-")]
            marked = [key for key, body in sections if not key.startswith("clean-") and "<del>" in body]
            if corrupted:
                found.append((f"{bench}-trial", f"{samples[0].as_uri()}#{(marked or corrupted)[0]}"))
        if (site / bench / "compare.html").is_file():
            found.append((f"{bench}-compare", (site / bench / "compare.html").as_uri()))
        if (site / bench / "audit.html").is_file():  # wrapped tasks: the audit's items
            found.append((f"{bench}-audit", (site / bench / "audit.html").as_uri()))
    return found


def shoot(
    site: Path,
    out: Path,
    chromium: str,
    query: str | None,
    widths: dict[str, int] = WIDTHS,
    only: Collection[str] | None = None,
    max_height: int = 3000,
) -> list[Path]:
    """Shoot ``site``'s pages (those named in ``only``, default all) at each of ``widths`` into
    ``out/<page>-<width name>.png``, each down to ``max_height`` px, and the search box with results
    for ``query`` (``None``: no search shot). ``docs/assets/make_assets.py`` takes a few of them."""
    from playwright.sync_api import sync_playwright  # heavy: only for the screenshots

    site = Path(site).resolve()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"])
        for kind, width in widths.items():
            page = browser.new_page(viewport={"width": width, "height": 900})
            for name, address in pages(site):
                if only is not None and name not in only:
                    continue
                page.goto(address)
                page.wait_for_load_state("load")
                written.append(out / f"{name}-{kind}.png")
                # the whole page, down to 3,000 px (a sample page of 69 conditions is far longer), from
                # the section the address names (a trial's) or the top
                top = page.evaluate(SECTION_TOP)
                height = min(max_height, page.evaluate("document.documentElement.scrollHeight") - top)
                page.screenshot(
                    path=written[-1], full_page=True, clip={"x": 0, "y": top, "width": width, "height": height}
                )
            if query is not None:
                page.goto((site / "index.html").as_uri())
                page.fill("#fl-search", query)  # the search box over the whole site
                page.wait_for_selector("#fl-results li")
                written.append(out / f"search-{kind}.png")
                page.screenshot(path=written[-1])
            page.close()
        browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", nargs="?", help="a site folder (its index.html)")
    parser.add_argument("--demo", action="store_true", help="run the demo main job and write its site first")
    parser.add_argument("-o", "--output", help="folder for the PNGs (required but with --smoke)")
    parser.add_argument("--query", default="count", help="what the search screenshot searches for")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"{provenance.SMOKE_HELP}: a demo site of 3 items, shot into a temporary folder",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    args = parser.parse_args(argv)
    record = provenance.Record(__file__, peer=None, argv=argv)
    if args.site and not (Path(args.site) / "index.html").is_file():
        parser.error(f"{args.site}: no index.html there; give the folder `faultline view -o` wrote")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None and not args.smoke:
        parser.error("no chromium binary (apt-get install chromium)")
    if args.smoke:
        args.demo = not args.site
    elif bool(args.site) == args.demo or not args.output:
        parser.error("give a SITE folder or --demo, and -o SHOTS/")
    with tempfile.TemporaryDirectory() as work:
        site = demo_site(Path(work), smoke=args.smoke) if args.demo else Path(args.site).resolve()
        if chromium is None:  # --smoke: the site was built; only the browser is missing
            return provenance.peer_missing(
                "no chromium binary, the site was built but not shot (apt-get install chromium)"
            )
        shots = shoot(site, Path(args.output or Path(work) / "shots"), chromium, args.query)
        for path in shots:
            print(path)
    record.figure(
        "screenshots", len(shots), "PNG files", f"{len(pages(site))} pages at {len(WIDTHS)} widths, and search"
    )
    record.write(args.json, smoke=args.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
