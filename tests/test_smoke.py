"""`sceval smoke`: the interface check passes for the reference model and catches a deaf one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCEVAL = str(Path(sys.executable).with_name("sceval"))


@pytest.mark.slow
def test_reference_model_passes(tmp_path):
    done = subprocess.run(
        [SCEVAL, "smoke", "--model", "sceval_reference"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[-1] == "IFACE OK"
    assert any(line.startswith("audio actually consumed") and "ok" in line for line in lines)


@pytest.mark.slow
def test_a_model_that_ignores_audio_fails_the_audio_check(tmp_path):
    # lmms-eval's dummy model replies "A" whatever it is sent
    done = subprocess.run([SCEVAL, "smoke", "--model", "dummy"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "IFACE FAILED: audio actually consumed"
    assert "0/10 replies change when the audio is silence" in done.stdout
