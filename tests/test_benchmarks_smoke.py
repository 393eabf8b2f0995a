"""Every script under ``benchmarks/`` at its ``--smoke`` size (issue 42): it must run its whole path
(synthesis, the real commands, the comparison with its peer) to the end and write its figures with
their provenance (``--json``). A ratio never fails this test; a crash does. A script whose peer is
not installed here (imagecorruptions for ``operators.py``, chromium for ``viewer_screenshots.py``)
runs what it can without it and exits 3 saying which, and is skipped with that reason.

Measured on the shared 2-core development machine at a load of about 3 (2026-12-07): 307 s in all,
from under 1 s (decode_cache) to 45 s (serving: three lmms-eval runs); the scripts that start
lmms-eval, a tiny model or the embedding model pay those imports, which puts the whole far above a
minute. Marked slow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import provenance  # noqa: E402

#: The scripts (provenance.py is their helper, not a benchmark).
SCRIPTS = sorted(path.stem for path in BENCHMARKS.glob("*.py") if path.stem != "provenance")


def test_every_script_is_smoked():
    """The parametrisation below is not empty and names every script of ``benchmarks/``."""
    assert len(SCRIPTS) >= 16 and "report" in SCRIPTS and "provenance" not in SCRIPTS


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_smoke(script: str, tmp_path: Path):
    figures = tmp_path / "figures.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{script}.py"), "--smoke", "--json", str(figures)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    output = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    if done.returncode == provenance.PEER_MISSING:
        said = [line for line in done.stderr.splitlines() if line.startswith("peer missing:")]
        assert said, f"{script} exited {provenance.PEER_MISSING} without naming the missing peer:\n{output}"
        pytest.skip(f"benchmarks/{script}.py: {said[-1]}")
    assert done.returncode == 0, f"benchmarks/{script}.py --smoke exited {done.returncode}:\n{output}"
    data = json.loads(figures.read_text(encoding="utf-8"))
    assert data["smoke"] is True
    assert data["command"].startswith(f"python benchmarks/{script}.py --smoke")
    assert data["commit"] and data["machine"]["cores"] >= 1 and len(data["load"]["after"]) == 3
    assert data["figures"], f"{script} recorded no figure"
    for figure in data["figures"]:
        assert set(figure) == {"name", "value", "unit", "what"} and figure["what"], figure
    names = [figure["name"] for figure in data["figures"]]
    assert len(names) == len(set(names)), f"{script}: a figure name used twice"
