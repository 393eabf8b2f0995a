"""Shared fixtures. Tests run offline and against the installed distribution."""

from __future__ import annotations

import os

# The suite runs on two workers (README: pytest -n auto); one OpenMP pool per process, sized to
# every core, in each worker and each lmms-eval it starts would oversubscribe the cores and slow
# torch's tiny models by an order of magnitude. Set before any test imports torch.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pytest
from hypothesis import settings
from wrap_datasets import PreparedCopies, prepare

from sceval_plugin import use_offline_defaults

use_offline_defaults()

# README.md and docs/ are tests too: every fenced example runs or is parsed (tests/doc_examples.py).
# A plugin, not this conftest's own hook: a conftest's hooks only see files under its folder.
pytest_plugins = ["doc_examples"]

# CI replays the same examples on every run (a red CI names a bug, not bad luck); locally the
# property tests keep exploring new ones.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

WORDS = (
    "what which colour shape moves left right beep tone twice square circle red blue green above "
    "below while during after before the a an of to is are does how many times sound loud quiet "
    "frame video clip audio object person 3 42 2nd e.g. (large) small, big; end."
).split()


def make_stem(rng: np.random.Generator, n_words: int, *, unique: bool = False) -> str:
    """A random question stem with irregular whitespace (spaces, tabs, newlines)."""
    words = [str(w) for w in rng.choice(WORDS, size=n_words)]
    if unique:
        words = [f"{w}{i}" for i, w in enumerate(words)]
    seps = [str(s) for s in rng.choice([" ", " ", " ", "  ", "\t", "\n", " \n "], size=n_words - 1)]
    body = words[0] + "".join(sep + word for sep, word in zip(seps, words[1:]))
    return str(rng.choice(["", " ", "\n"])) + body + str(rng.choice(["", "?", " ", "?\n"]))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261129)


@pytest.fixture
def clip(rng) -> np.ndarray:
    """A random 4-frame 96x128 RGB clip with no zero pixels (so occluders are detectable)."""
    return rng.integers(1, 256, size=(4, 96, 128, 3), dtype=np.uint8)


@pytest.fixture
def wave(rng) -> np.ndarray:
    """2 s of random mono float32 audio at 16 kHz, no exact zeros."""
    x = rng.uniform(-0.8, 0.8, size=32_000).astype(np.float32)
    x[x == 0] = 0.25
    return x


@pytest.fixture(scope="session")
def wrap_copies(tmp_path_factory) -> PreparedCopies:
    """The local copies of the wrapped-task benchmarks (tests/wrap_datasets.py), built once
    per session, with their task YAMLs and the environment an lmms-eval subprocess needs (the
    video tasks' utils read ``$HF_HOME`` at import, so CLI runs go through subprocesses)."""
    return prepare(tmp_path_factory.mktemp("wrap_copies"))
