"""What an operator is: a pure function plus its severity table."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

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
        raise ValueError(
            f"severity must be one of {', '.join(map(str, SEVERITIES))} (0 = clean); got {severity!r}"
        )
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
    """

    parameter: str
    values: Mapping[int, float]
    identity: float

    def __post_init__(self) -> None:
        if set(self.values) != set(CORRUPTING_SEVERITIES):
            raise ValueError(
                f"severity table for {self.parameter!r} must map exactly {CORRUPTING_SEVERITIES}, "
                f"got keys {sorted(self.values)}"
            )
        object.__setattr__(self, "values", dict(self.values))

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
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"operator name must match {_NAME.pattern}, got {name!r}")
    if modality not in MODALITIES:
        raise ValueError(f"operator {name!r}: modality must be one of {MODALITIES}, got {modality!r}")
    if not isinstance(table, SeverityTable):
        raise TypeError(f"operator {name!r}: table must be a SeverityTable, got {type(table).__name__}")
    if variants is None:
        variants = DEFAULT_STOCHASTIC_VARIANTS if stochastic else 1
    if isinstance(variants, bool) or not isinstance(variants, int) or variants < 1:
        raise ValueError(f"operator {name!r}: variants must be a positive int, got {variants!r}")
    if not stochastic and variants != 1:
        raise ValueError(f"operator {name!r} is deterministic, so it has exactly 1 variant, not {variants}")

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        doc = (func.__doc__ or "").strip().splitlines()
        func.sceval_operator = OperatorSpec(  # type: ignore[attr-defined]
            name=name,
            modality=modality,
            func=func,
            table=table,
            stochastic=bool(stochastic),
            variants=variants,
            description=doc[0] if doc else "",
        )
        return func

    return decorate
