"""The pictures README.md and docs/ show come from ``docs/assets/make_assets.py`` (issue 29, D7).

Every image a page references under ``docs/assets/demo/`` must be one the script writes and be
committed, and nothing else may lie there; the script itself runs on the demo run (the checkout's
finished ``demo_out/``, or the reduced one ``tests/doc_examples.py`` builds) and must write exactly
those files, as small palette PNGs.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "docs" / "assets" / "make_assets.py"
ASSET_DIR = SCRIPT.parent / "demo"
#: Markdown images ``![alt](target "title")`` and HTML ``<img src="target">``.
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)|<img\s[^>]*src=[\"']([^\"']+)")
#: What the committed set may weigh in all (the README and the site load them).
MAX_TOTAL_BYTES = 1_500_000


def make_assets():
    spec = importlib.util.spec_from_file_location("make_assets", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pages() -> list[Path]:
    docs = [p for p in sorted((ROOT / "docs").rglob("*.md")) if "design" not in p.relative_to(ROOT / "docs").parts]
    return [ROOT / "README.md", *docs]


def demo_images() -> list[tuple[Path, str, Path]]:
    """(page, target as written, resolved path) of every image a page shows from docs/assets/demo/."""
    found = []
    for page in pages():
        for match in IMAGE.finditer(page.read_text(encoding="utf-8")):
            target = match.group(1) or match.group(2)
            if "://" in target:
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if path.is_relative_to(ASSET_DIR):
                found.append((page, target, path))
    return found


def test_every_demo_image_the_docs_show_is_written_by_make_assets_and_committed():
    assets = make_assets().ASSETS
    shown = demo_images()
    problems = [
        f"{page.relative_to(ROOT)}: {target} is not one of make_assets.ASSETS {list(assets)}"
        for page, target, path in shown
        if path.parent != ASSET_DIR or path.name not in assets
    ]
    problems += [
        f"{page.relative_to(ROOT)}: {target} is not committed (run python docs/assets/make_assets.py)"
        for page, target, path in shown
        if path.name in assets and not path.is_file()
    ]
    assert not problems, "\n".join(problems)
    readme = {path.name for page, _, path in shown if page.name == "README.md"}
    assert "severity_curves.png" in readme, "the README shows the demo report's figure"
    committed = sorted(p.name for p in ASSET_DIR.iterdir())
    assert committed == sorted(assets), "docs/assets/demo/ holds exactly what make_assets.py writes"
    assert sum(p.stat().st_size for p in ASSET_DIR.iterdir()) < MAX_TOTAL_BYTES


def demo_run(config: pytest.Config) -> Path:
    """The demo run the doc examples use; without that collector, the checkout's finished demo_out/."""
    try:
        from doc_examples import demo_out  # tests/doc_examples.py: the checkout's or a reduced one
    except ImportError:
        checkout = ROOT / "demo_out"
        if not (checkout / "report" / "report.json").is_file() or not (checkout / "c3po-report").is_dir():
            pytest.skip("no finished demo_out/ in the checkout (run the README's main job)")
        return checkout
    return demo_out(config)


@pytest.mark.slow
def test_make_assets_writes_every_asset_from_the_demo_run(request, tmp_path):
    """The script on the demo run writes exactly ASSETS, each a palette PNG no wider than
    MAX_WIDTH (~10 s on 2 cores: the viewer site and four Chromium screenshots)."""
    if shutil.which("chromium") is None and shutil.which("chromium-browser") is None:
        pytest.skip("no chromium binary: the viewer screenshots need it (the README's test command installs it)")
    module = make_assets()
    run = demo_run(request.config)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(run), "-o", str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(module.ASSETS)
    for name in module.ASSETS:
        with Image.open(tmp_path / name) as image:
            assert image.format == "PNG" and image.mode == "P", name
            assert 300 <= image.width <= module.MAX_WIDTH, (name, image.size)
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) < MAX_TOTAL_BYTES


def test_make_assets_refuses_a_folder_that_is_no_demo_run(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path), "-o", str(tmp_path / "out")], capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "is not a finished demo run" in done.stderr and "report/severity_curves.png" in done.stderr
    assert not (tmp_path / "out").exists()
