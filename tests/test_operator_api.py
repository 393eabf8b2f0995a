"""The public operator API: registry, Table 29, validation, determinism."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from sceval_plugin import operators
from sceval_plugin.operators import OperatorRegistry, SeverityTable, operator

# SCEval paper, Appendix E, Table 29 (severity 10/30/50/70), and Table 28's stochastic column.
TABLE_29 = {
    "drop_words": ("text", True, (0.10, 0.30, 0.50, 0.70)),
    "word_shuffle": ("text", True, (2, 4, 6, 8)),
    "typo_ocr": ("text", True, (0.10, 0.30, 0.50, 0.70)),
    "sentence_break": ("text", True, (0.10, 0.30, 0.50, 0.70)),
    "noise": ("vision", True, (15, 40, 65, 90)),
    "occlusion": ("vision", True, (0.10, 0.30, 0.50, 0.70)),
    "low_resolution": ("vision", False, (0.9, 0.7, 0.5, 0.3)),
    "motion_blur": ("vision", False, (5, 15, 25, 35)),
    "defocus_blur": ("vision", False, (2, 5, 9, 13)),
    "overexposure": ("vision", False, (1.1, 1.3, 1.6, 2.0)),
    "brightness": ("vision", False, (0.9, 0.7, 0.5, 0.3)),
    "remove": ("audio", True, (0.10, 0.30, 0.50, 0.70)),
    "mute": ("audio", True, (0.10, 0.30, 0.50, 0.70)),
    "distortion": ("audio", False, (0.9, 0.7, 0.5, 0.3)),
}


def sample_input(modality: str, rng: np.random.Generator):
    if modality == "text":
        return "Which coloured shape moves to the right while the high tone beeps twice, and how often?"
    if modality == "vision":
        return rng.integers(0, 256, size=(3, 48, 64, 3), dtype=np.uint8)
    return rng.uniform(-0.5, 0.5, size=8000).astype(np.float32)


def test_names_lists_the_fourteen_builtins_sorted():
    assert operators.names() == sorted(TABLE_29)
    for modality in ("text", "vision", "audio"):
        assert operators.names(modality) == sorted(n for n, v in TABLE_29.items() if v[0] == modality)
    with pytest.raises(ValueError, match="modality must be one of"):
        operators.names("smell")


@pytest.mark.parametrize("name", sorted(TABLE_29))
def test_spec_matches_tables_28_and_29(name):
    modality, stochastic, values = TABLE_29[name]
    spec = operators.get(name)
    assert (spec.name, spec.modality, spec.stochastic) == (name, modality, stochastic)
    assert spec.variants == (3 if stochastic else 1)
    assert tuple(spec.parameter(s) for s in (10, 30, 50, 70)) == pytest.approx(values)
    assert spec.description and spec.table.parameter
    assert "built in" in spec.plugin


@pytest.mark.parametrize("name", sorted(TABLE_29))
def test_severity_zero_is_the_identity_and_input_is_never_modified(name, rng):
    data = sample_input(TABLE_29[name][0], rng)
    before = data if isinstance(data, str) else data.copy()
    clean = operators.apply(name, data, severity=0, key="k")
    assert (clean == data) if isinstance(data, str) else (np.array_equal(clean, data) and clean is not data)
    for severity in (10, 30, 50, 70):
        operators.apply(name, data, severity=severity, key="k")
    assert (data == before) if isinstance(data, str) else np.array_equal(data, before)


@pytest.mark.parametrize("name", sorted(TABLE_29))
def test_output_keeps_the_container(name, rng):
    modality = TABLE_29[name][0]
    data = sample_input(modality, rng)
    for severity in (10, 70):
        out = operators.apply(name, data, severity=severity, key="k")
        assert type(out) is type(data)
        if modality == "vision":
            assert out.shape == data.shape and out.dtype == np.uint8
        if modality == "audio":
            assert out.dtype == np.float32 and out.ndim == 1
            assert out.size == (
                data.size - round(data.size * operators.get(name).parameter(severity))
                if name == "remove"
                else data.size
            )


@pytest.mark.parametrize("name", sorted(n for n, v in TABLE_29.items() if v[1]))
def test_stochastic_variants_differ_and_are_pure_functions_of_their_key(name, rng):
    data = sample_input(TABLE_29[name][0], rng)

    def run(variant, key="sample-17"):
        out = operators.apply(name, data, severity=30, variant=variant, key=key)
        return out if isinstance(out, str) else out.tobytes()

    variants = [run(v) for v in range(3)]
    assert len(set(variants)) == 3
    assert run(2) == variants[2]
    assert run(0, key="sample-18") != variants[0]


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"severity": 20}, ValueError, "severity must be one of 0, 10, 30, 50, 70"),
        ({"severity": True}, ValueError, "severity must be one of"),
        ({"severity": "30"}, ValueError, "severity must be one of"),
        ({"severity": 30, "variant": 3}, ValueError, r"3 variant\(s\): variant must be in 0..2"),
        ({"severity": 30, "variant": -1}, ValueError, "variant must be in"),
        ({"severity": 30, "key": None}, ValueError, "stochastic: pass key="),
        ({"severity": 30, "key": 17}, ValueError, "stochastic: pass key="),
        ({"severity": 30, "sample_rate": 16000}, operators.OperatorInputError, "audio only"),
    ],
)
def test_bad_arguments_are_refused_clearly(kwargs, error, match):
    kwargs = {"key": "k", **kwargs}
    with pytest.raises(error, match=match):
        operators.apply("noise", np.zeros((8, 8, 3), np.uint8), **kwargs)


def test_deterministic_operators_have_exactly_one_variant():
    with pytest.raises(ValueError, match=r"1 variant\(s\)"):
        operators.apply("motion_blur", np.zeros((8, 8, 3), np.uint8), severity=30, variant=1)
    # and need no key
    operators.apply("motion_blur", np.zeros((8, 8, 3), np.uint8), severity=30)


def test_unknown_operator_suggests_close_names():
    with pytest.raises(operators.UnknownOperatorError, match="did you mean 'noise'"):
        operators.get("nosie")
    with pytest.raises(operators.UnknownOperatorError, match="unknown operator 'blur'"):
        operators.apply("blur", "text", severity=10, key="k")


def test_seed_derivation_is_pinned():
    # Changing this changes every published variant: add a seed scheme (operators/_seed.py) if you must.
    assert operators.variant_seed("sample-17", "noise", 70, 0) == 4138507078556655673109178836124084345
    assert operators.variant_seed("a", "noise", 70, 0) != operators.variant_seed("a", "noise", 70, 1)
    assert operators.variant_seed("a|b", "c", 10, 0) != operators.variant_seed("a", "b|c", 10, 0)


DIGEST_SCRIPT = r"""
import hashlib, numpy as np
from sceval_plugin import operators
rng = np.random.default_rng(7)
inputs = {
    "text": "Which coloured shape moves to the right while the high tone beeps twice, and how often?",
    "vision": rng.integers(0, 256, size=(3, 48, 64, 3), dtype=np.uint8),
    "audio": rng.uniform(-0.5, 0.5, size=8000).astype(np.float32),
}
h = hashlib.sha256()
for name in operators.names():
    spec = operators.get(name)
    for severity in (10, 30, 50, 70):
        for variant in range(spec.variants):
            out = operators.apply(name, inputs[spec.modality], severity=severity, variant=variant, key="sample-17")
            h.update(out.encode() if isinstance(out, str) else out.tobytes())
print(h.hexdigest())
"""


@pytest.mark.slow
def test_same_bytes_in_separate_processes():
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", DIGEST_SCRIPT], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        digests.add(done.stdout.strip())
    assert len(digests) == 1 and len(digests.pop()) == 64


def test_registry_enforces_the_output_contract():
    table = SeverityTable("nothing", {10: 1, 30: 2, 50: 3, 70: 4}, identity=0)

    @operator("shrinks", modality="vision", table=table, stochastic=False)
    def shrinks(frames, value, rng):
        return frames[..., :2, :].copy()

    @operator("aliases", modality="vision", table=table, stochastic=False)
    def aliases(frames, value, rng):
        return frames

    @operator("wrong_type", modality="text", table=table, stochastic=False)
    def wrong_type(stem, value, rng):
        return stem.split()

    reg = OperatorRegistry()
    for op in (shrinks, aliases, wrong_type):
        reg.add(op)
    image = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(operators.OperatorContractError, match=r"'shrinks'.*returned shape \(8, 2, 3\)"):
        reg.apply("shrinks", image, severity=10)
    with pytest.raises(operators.OperatorContractError, match="must not alias"):
        reg.apply("aliases", image, severity=10)
    with pytest.raises(operators.OperatorContractError, match="returned list, not str"):
        reg.apply("wrong_type", "a b", severity=10)


def test_operator_declarations_are_validated():
    table = SeverityTable("x", {10: 1, 30: 2, 50: 3, 70: 4}, identity=0)
    with pytest.raises(ValueError, match="must match"):
        operator("Salt-Pepper", modality="vision", table=table, stochastic=True)
    with pytest.raises(ValueError, match="modality must be one of"):
        operator("smell", modality="olfactory", table=table, stochastic=True)
    with pytest.raises(ValueError, match="deterministic, so it has exactly 1 variant"):
        operator("blur2", modality="vision", table=table, stochastic=False, variants=3)
    with pytest.raises(ValueError, match="must map exactly"):
        SeverityTable("x", {10: 1, 30: 2, 50: 3}, identity=0)
    with pytest.raises(Exception, match="not decorated"):
        OperatorRegistry().add(lambda frames, value, rng: frames)
