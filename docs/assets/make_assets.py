"""Make the pictures the README and the docs show, from a demo run (issue 29, decision D7).

    python docs/assets/make_assets.py                       # from demo_out/, into docs/assets/demo/
    python docs/assets/make_assets.py RUN -o FOLDER/

RUN is the README's main job's output folder: its lmms-eval logs, ``report/`` (``sceval report``) and
``c3po-report/`` (``c3po report``). The script writes exactly :data:`ASSETS` into the output folder:
two figures copied from the SCEval report, and six screenshots of the results viewer (the site
``faultline view`` writes, built in a temporary folder: its front page, SCEval's overview, a cell
page, a sample page and a corrupted trial of it; and the compare view of the run with itself) at a desktop width of 1,280 px, taken with
Debian's Chromium through ``benchmarks/viewer_screenshots.py``. Every PNG is reduced to a 256-colour
palette and, where wider than :data:`MAX_WIDTH`, scaled down, so the committed set stays small.

Nothing is hand-pasted: rerun the script after a change to the report or the viewer and commit what
it writes. ``tests/test_docs_assets.py`` checks that every image the README and ``docs/`` reference
under ``docs/assets/demo/`` is one this script writes, and runs it on the demo run.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image, ImageChops

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = Path(__file__).resolve().parent / "demo"
BIN = Path(sys.executable).parent

#: Figures taken from the run's reports: asset name -> path inside RUN.
FIGURES = {
    "severity_curves.png": "report/severity_curves.png",  # the README figure: accuracy against severity
    "drop_heatmap.png": "report/drop_heatmap.png",  # severity-70 drop per operator
}
#: Viewer screenshots: asset name -> page name in ``viewer_screenshots.pages``.
SCREENSHOTS = {
    "viewer-index.png": "index",
    "viewer-sceval-overview.png": "sceval-overview",
    "viewer-sceval-cell.png": "sceval-cell",
    "viewer-sceval-sample.png": "sceval-sample",
    "viewer-sceval-trial.png": "sceval-trial",  # a corrupted trial: what was sent, the marked text, the reply
}
#: The compare view's screenshot, from a second site comparing the run with itself (``--compare``).
COMPARE_SHOT = {"viewer-sceval-compare.png": "sceval-compare"}
#: Every file the script writes (and the only images the docs may reference under docs/assets/demo/).
ASSETS = (*FIGURES, *SCREENSHOTS, *COMPARE_SHOT)
#: Width limit of a committed PNG (px): the README shows figures at well under this.
MAX_WIDTH = 1400
#: How far down a screenshot reaches (px): the top of a long page says what the page is.
SHOT_HEIGHT = 1100


def screenshots_module():
    """``benchmarks/viewer_screenshots.py`` (a script folder, not a package; its helper
    ``provenance`` imports from beside it, as when the script runs)."""
    path = ROOT / "benchmarks" / "viewer_screenshots.py"
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location("viewer_screenshots", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shrink(source: Path, target: Path) -> Path:
    """Write ``source`` to ``target`` as a palette PNG no wider than :data:`MAX_WIDTH`, with the empty
    background below its content cut off (a short page is shot at the window's full height)."""
    with Image.open(source) as image:
        image = image.convert("RGB")
        background = Image.new("RGB", image.size, image.getpixel((image.width - 1, image.height - 1)))
        content = ImageChops.difference(image, background).getbbox()
        if content is not None:
            image = image.crop((0, 0, image.width, min(image.height, content[3] + 20)))
        if image.width > MAX_WIDTH:
            image = image.resize((MAX_WIDTH, round(image.height * MAX_WIDTH / image.width)), Image.Resampling.LANCZOS)
        small = image.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        small.save(target, optimize=True)
    return target


def check_run(run: Path) -> None:
    """Refuse a run folder without what the assets come from, naming what is missing."""
    wanted = [run / path for path in FIGURES.values()] + [run / "report", run / "c3po-report"]
    missing = [str(p) for p in wanted if not p.exists()]
    if not any(run.glob("**/*_results.json")):
        missing.append(f"{run}/**/*_results.json")
    if missing:
        raise SystemExit(
            f"make_assets: {run} is not a finished demo run (missing: {', '.join(missing)}); run the README's "
            "main job first"
        )


def make_assets(run: Path, out: Path, chromium: str) -> list[Path]:
    """Write :data:`ASSETS` for the demo run ``run`` into ``out``; return their paths."""
    check_run(run)
    out.mkdir(parents=True, exist_ok=True)
    written = [shrink(run / path, out / name) for name, path in FIGURES.items()]
    with tempfile.TemporaryDirectory() as work:
        shooter = screenshots_module()
        views = {  # the site as the docs build it, and the run compared with itself (one media per cell)
            "site": (
                [run],
                ["--sceval-report", str(run / "report"), "--c3po-report", str(run / "c3po-report")],
                SCREENSHOTS,
            ),
            "compare": ([run, run], ["--compare", "--html-budget", "per_cell=1"], COMPARE_SHOT),
        }
        for folder, (runs, options, wanted) in views.items():
            site, shots = Path(work) / folder, Path(work) / f"{folder}-shots"
            view = [str(BIN / "faultline"), "view", *map(str, runs), "-o", str(site), *options]
            done = subprocess.run(view, capture_output=True, text=True)  # offline by default, like every command
            if done.returncode:
                raise SystemExit(f"make_assets: {' '.join(view)} failed:\n{done.stderr[-2000:]}")
            taken = shooter.shoot(
                site,
                shots,
                chromium,
                query=None,
                widths={"desktop": 1280},
                only=set(wanted.values()),
                max_height=SHOT_HEIGHT,
            )
            by_page = {path.name.removesuffix("-desktop.png"): path for path in taken}
            for name, page in wanted.items():
                if page not in by_page:
                    raise SystemExit(f"make_assets: the site in {site} has no {page} page")
                written.append(shrink(by_page[page], out / name))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", default="demo_out", help="the main job's output folder (default demo_out/)")
    parser.add_argument(
        "-o", "--output", default=str(DEFAULT_OUT), help="folder for the PNGs (default docs/assets/demo/)"
    )
    args = parser.parse_args(argv)
    check_run(Path(args.run))  # before the browser: a wrong folder is the likelier mistake
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        parser.error("no chromium binary for the viewer screenshots (apt-get install chromium)")
    for path in make_assets(Path(args.run), Path(args.output), chromium):
        print(f"{path} ({path.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
