"""What an operator is: a pure function plus its severity table."""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

#: The severity levels of the protocol. 0 is the identity (clean), used for fragility slopes.
SEVERITIES: tuple[int, ...] = (0, 10, 30, 50, 70)
CORRUPTING_SEVERITIES: tuple[int, ...] = (10, 30, 50, 70)
MODALITIES: tuple[str, ...] = ("text", "vision", "audio")
#: Variants a stochastic operator gets unless it says otherwise (the paper's "up to three").
DEFAULT_STOCHASTIC_VARIANTS = 3

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def check_severity(severity: Any) -> int:
    """Return ``severity`` if it is one of :data:`SEVERITIES`, else raise ``ValueError``."""
    if isinstance(severity, bool) or not isinstance(severity, int) or severity not in SEVERITIES:
        raise ValueError(f"severity must be one of {', '.join(map(str, SEVERITIES))} (0 = clean); got {severity!r}")
    return severity


def round_half_up(x: float) -> int:
    """Round to the nearest integer, halves up (Python's ``round`` rounds halves to even).

    The tiny epsilon absorbs float error such as ``0.3 * 5 == 1.4999999999999998``.
    """
    return int(math.floor(x + 0.5 + 1e-9))


@dataclass(frozen=True)
class SeverityTable:
    """Severity (10/30/50/70) to the operator's own parameter, plus its value at severity 0.

    ``table[severity]`` is the checked lookup: anything but 0/10/30/50/70 raises ``ValueError``.
    Every value, the identity included, must be a finite number of the declared ``dtype``
    (``float``: any real number; ``int``: whole numbers only); a table that is not is refused
    when it is built, so a plugin's mistake surfaces at registration, naming the table.
    """

    parameter: str
    values: Mapping[int, float]
    identity: float
    dtype: type = float

    def __post_init__(self) -> None:
        if not isinstance(self.parameter, str) or not self.parameter.strip():
            raise ValueError(f"a severity table needs a parameter description (str), got {self.parameter!r}")
        if self.dtype not in (float, int):
            raise ValueError(f"severity table {self.parameter!r}: dtype must be float or int, got {self.dtype!r}")
        if not isinstance(self.values, Mapping):
            raise ValueError(
                f"severity table {self.parameter!r}: values must map severity to parameter, "
                f"got {type(self.values).__name__}"
            )
        keys = list(self.values)
        if any(isinstance(k, bool) for k in keys) or set(keys) != set(CORRUPTING_SEVERITIES):
            raise ValueError(
                f"severity table for {self.parameter!r} must map exactly {CORRUPTING_SEVERITIES}, got keys {keys}"
            )
        for severity, value in [*self.values.items(), ("identity (severity 0)", self.identity)]:
            self._check_value(severity, value)
        object.__setattr__(self, "values", dict(self.values))

    def _check_value(self, severity: Any, value: Any) -> None:
        where = f"severity table {self.parameter!r}: the value at {severity if isinstance(severity, str) else f'severity {severity}'}"
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{where} is {value!r} ({type(value).__name__}), not a number")
        if not math.isfinite(value):
            raise ValueError(f"{where} is {value!r}, not a finite number")
        if self.dtype is int and int(value) != value:
            raise ValueError(f"{where} is {value!r}, but the table is declared dtype=int")

    def __getitem__(self, severity: int) -> float:
        severity = check_severity(severity)
        return self.identity if severity == 0 else self.values[severity]


@dataclass(frozen=True)
class OperatorSpec:
    """A registered corruption operator.

    ``func(data, parameter, rng) -> data`` is pure: all randomness comes from ``rng``, a
    :class:`numpy.random.Generator` seeded from (key, name, severity, variant).
    """

    name: str
    modality: str
    func: Callable[..., Any] = field(repr=False)
    table: SeverityTable
    stochastic: bool
    variants: int
    description: str = ""
    #: Which plugin registered it; filled in by the registry.
    plugin: str = ""

    def parameter(self, severity: int) -> float:
        """The operator's parameter at ``severity`` (its identity value at 0)."""
        return self.table[severity]

    def with_plugin(self, plugin: str) -> OperatorSpec:
        return replace(self, plugin=plugin)


def operator(
    name: str,
    *,
    modality: str,
    table: SeverityTable,
    stochastic: bool,
    variants: int | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare ``func(data, parameter, rng)`` as a corruption operator.

    The function itself is returned unchanged (so it stays a plain, testable function) with its
    :class:`OperatorSpec` attached as ``func.sceval_operator``; a plugin then hands it to
    ``registry.add``. Its docstring's first line becomes the description.

    Args:
        name: lower-case identifier; it becomes part of condition ids and task names.
        modality: ``"text"`` (the question stem), ``"vision"`` (uint8 RGB frames) or
            ``"audio"`` (mono float32 at 16 kHz).
        table: severity to parameter.
        stochastic: whether the result depends on ``rng``.
        variants: number of random variants per severity; 3 for stochastic operators by
            default, always 1 for deterministic ones.
    """
    if variants is None:
        variants = DEFAULT_STOCHASTIC_VARIANTS if stochastic else 1

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        doc = (func.__doc__ or "").strip().splitlines()
        func.sceval_operator = OperatorSpec(  # type: ignore[attr-defined]
            name=name,
            modality=modality,
            func=func,
            table=table,
            stochastic=stochastic,
            variants=variants,
            description=doc[0] if doc else "",
        )
        return func

    check_spec(OperatorSpec(name, modality, lambda data, parameter, rng: data, table, stochastic, variants))
    return decorate


def check_spec(spec: OperatorSpec) -> OperatorSpec:
    """Raise ``ValueError`` naming the operator if ``spec`` breaks the operator contract.

    Run by :func:`operator` and again by the registry on every spec it is handed, however it
    was built.
    """
    name = spec.name
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"operator name must match {_NAME.pattern}, got {name!r}")
    if spec.modality not in MODALITIES:
        raise ValueError(f"operator {name!r}: modality must be one of {MODALITIES}, got {spec.modality!r}")
    if not isinstance(spec.table, SeverityTable):
        raise ValueError(f"operator {name!r}: table must be a SeverityTable, got {type(spec.table).__name__}")
    if not callable(spec.func):
        raise ValueError(f"operator {name!r}: func must be callable, got {type(spec.func).__name__}")
    if not isinstance(spec.stochastic, bool):
        raise ValueError(f"operator {name!r}: stochastic must be True or False, got {spec.stochastic!r}")
    variants = spec.variants
    if isinstance(variants, bool) or not isinstance(variants, int) or variants < 1:
        raise ValueError(f"operator {name!r}: variants must be a positive int, got {variants!r}")
    if not spec.stochastic and variants != 1:
        raise ValueError(f"operator {name!r} is deterministic, so it has exactly 1 variant, not {variants}")
    return spec
