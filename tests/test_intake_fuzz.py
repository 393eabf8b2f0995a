"""Fuzzing what a dataset can hold: record fields of any JSON type, garbage lines, damaged media.

Whatever the input, ``sceval check``/``c3po check`` never show a traceback, and every row
ends up either a usable item or a listed problem (never silently dropped, never silently
accepted); the task builder, told to exclude bad input, counts every trial it leaves out in
the run's ``excluded_trials`` metric. Bounded and reproducible: 40 derandomized examples each, no
deadline (about 2 s).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from pathlib import Path

import pytest
from c3po_fixtures import item as c3po_item
from c3po_fixtures import write_media
from fixtures import copy_demo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from c3po_plugin.data import sources as c3po_sources
from faultline_app import c3po_cli, sceval_cli
from faultline_eval.core.intake import REASONS
from faultline_eval.tasks import sceval_task as task
from sceval_plugin.conditions import catalogue
from sceval_plugin.data import sources as sceval_sources

JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**6), 10**6),
        st.floats(allow_nan=True),
        st.text(max_size=12),
        st.sampled_from(["A", "B", "../x.png", "media", "/etc/hostname", "", " "]),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=3), inner, max_size=4)),
    max_leaves=8,
)
SCEVAL_FIELDS = ("sample_id", "question", "options", "gold_key", "visual", "audio", "context", "hidden", "source")
C3PO_FIELDS = (
    "sample_id",
    "template",
    "category",
    "tier",
    "question",
    "answer",
    "video",
    "image",
    "audio",
    "context",
    "distractors",
    "difficulty",
    "human_answer",
    "hidden",
)
#: keep a file, cut it short, or overwrite a few bytes of its header
MEDIA_DAMAGE = st.one_of(
    st.just(("keep", 0, b"")),
    st.tuples(st.just("truncate"), st.integers(0, 300), st.just(b"")),
    st.tuples(st.just("patch"), st.integers(0, 48), st.binary(min_size=1, max_size=6)),
)
GARBAGE_LINE = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b" "))
FUZZ = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def damage(path: Path, how: tuple[str, int, bytes]) -> None:
    kind, at, patch = how
    data = path.read_bytes()
    if kind == "truncate":
        path.write_bytes(data[:at])
    elif kind == "patch":
        path.write_bytes(data[:at] + patch + data[at + len(patch) :])


def run_check(cli, source: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["check", str(source)])
    return status, out.getvalue(), err.getvalue()


def assert_every_row_accounted_for(status: int, stdout: str, stderr: str, n_rows: int) -> int:
    assert status in (0, 1) and "Traceback" not in stderr and not stderr.strip(), stderr
    *problems, summary = stdout.strip().splitlines()
    usable, listed = map(int, re.search(r": (\d+) usable item\(s\), (\d+) problem\(s\)$", summary).groups())
    assert listed == len(problems) and usable + listed == n_rows, stdout
    assert all(line.split(":", 1)[0] in REASONS for line in problems), problems
    assert status == (1 if problems else 0)
    return usable


def write_lines(path: Path, rows: list[dict], garbage: list[bytes]) -> int:
    lines = [json.dumps(r).encode() for r in rows] + [g for g in garbage if g.strip()]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return len(lines)


@FUZZ
@given(
    overrides=st.lists(
        st.dictionaries(st.sampled_from(SCEVAL_FIELDS), JSON_VALUES, max_size=3), min_size=3, max_size=3
    ),
    media_damage=st.lists(MEDIA_DAMAGE, min_size=2, max_size=2),
    garbage=st.lists(GARBAGE_LINE, max_size=2),
)
def test_sceval_check_and_builder_account_for_every_row(overrides, media_damage, garbage):
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as env:
        folder = copy_demo(Path(tmp) / "data", 3)
        rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
        damage(folder / rows[0]["audio"], media_damage[0])
        first_frame = rows[1]["visual"][0] if isinstance(rows[1]["visual"], list) else rows[1]["visual"]
        damage(folder / first_frame, media_damage[1])
        n_rows = write_lines(folder / "items.jsonl", [{**r, **o} for r, o in zip(rows, overrides)], garbage)

        usable = assert_every_row_accounted_for(*run_check(sceval_cli, folder), n_rows)

        env.setenv("SCEVAL_SOURCE", str(folder))
        env.setenv("SCEVAL_ON_BAD_INPUT", "exclude")
        condition = catalogue().get("single_noise_v70")  # 3 variants: every row stands for 3 trials
        built, excluded = task.build_rows(condition)
        assert len(built) == 3 * usable and len(built) + sum(excluded.values()) == 3 * n_rows
        if built:
            task.process_docs(None, condition.id)
            assert task.excluded_trials([condition.id]) == sum(excluded.values())
        sceval_sources._load_source.cache_clear()


@FUZZ
@given(
    overrides=st.lists(st.dictionaries(st.sampled_from(C3PO_FIELDS), JSON_VALUES, max_size=3), min_size=2, max_size=2),
    media_damage=st.lists(MEDIA_DAMAGE, min_size=3, max_size=3),
    garbage=st.lists(GARBAGE_LINE, max_size=2),
)
def test_c3po_check_accounts_for_every_row(overrides, media_damage, garbage):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = write_media(root)
        for kind, how in zip(("video", "image", "audio"), media_damage):
            damage(root / paths[kind], how)
        rows = [c3po_item("t4", "CC14", paths), c3po_item("t2", "CC08", paths)]
        n_rows = write_lines(root / "items.jsonl", [{**r, **o} for r, o in zip(rows, overrides)], garbage)
        assert_every_row_accounted_for(*run_check(c3po_cli, root), n_rows)
        c3po_sources._load_source.cache_clear()
