"""The operator registry, filled by plugins, and the public lookup/apply functions."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from faultline_eval.core.registry import PluginError, Registry, UnknownNameError
from sceval_plugin.operators._seed import variant_rng
from sceval_plugin.operators._spec import MODALITIES, OperatorSpec, check_severity, check_spec
from sceval_plugin.operators._validate import CHECK_INPUT, OperatorInputError, check_output
from sceval_plugin.plugins import fill_registry

Data = TypeVar("Data")


class UnknownOperatorError(UnknownNameError):
    """No plugin registered an operator of that name (a ``KeyError``/``LookupError``)."""


class OperatorRegistry(Registry[OperatorSpec]):
    """Name -> :class:`OperatorSpec`. Plugins fill it through ``sceval_register_operators``."""

    def __init__(self) -> None:
        super().__init__(
            "operator", error=UnknownOperatorError, clash_hint="; uninstall one of them or rename its operator"
        )

    def add(self, operator: Callable[..., Any] | OperatorSpec) -> OperatorSpec:
        """Register a function decorated with :func:`operator` (or a ready spec, validated
        here like one from the decorator); a clash or an invalid spec raises PluginError."""
        spec = operator if isinstance(operator, OperatorSpec) else getattr(operator, "sceval_operator", None)
        if not isinstance(spec, OperatorSpec):
            raise PluginError(
                f"plugin {self.plugin} tried to register {operator!r}, which is not decorated with "
                "@sceval_plugin.operators.operator(...)"
            )
        try:
            check_spec(spec)
        except ValueError as exc:
            raise PluginError(f"plugin {self.plugin} registered an invalid operator: {exc}") from None
        return self.register(spec.name, spec.with_plugin(self.plugin))

    def names(self, modality: str | None = None) -> list[str]:
        """Registered names, sorted; ``modality`` filters by "text" | "vision" | "audio"."""
        if modality is not None and modality not in MODALITIES:
            raise ValueError(f"modality must be one of {MODALITIES} or None, got {modality!r}")
        return sorted(spec.name for spec in super().__iter__() if modality in (None, spec.modality))

    def apply(
        self,
        name: str,
        data: Data,
        *,
        severity: int,
        variant: int = 0,
        key: str | None = None,
        sample_rate: int | None = None,
    ) -> Data:
        """Corrupt ``data`` with operator ``name`` at ``severity``; never modifies ``data``.

        Args:
            name: a registered operator, e.g. ``"noise"``.
            data: text: the question stem (``str``); vision: ``uint8`` ``(H, W, 3)`` or
                ``(N, H, W, 3)``; audio: mono ``float32`` 1-D array at 16 kHz.
            severity: 0 (identity, returns a copy), 10, 30, 50 or 70.
            variant: 0 .. ``spec.variants - 1``.
            key: the sample id. Required for stochastic operators: the variant is a pure function
                of (key, name, severity, variant).
            sample_rate: audio only; anything but 16000 is refused (resample first).

        Returns:
            The same container: a ``str``; an array of the same shape and dtype; audio of the
            same dtype and length, except ``remove``, which is shorter by the removed segment.
        """
        spec = self.get(name)
        severity = check_severity(severity)
        if isinstance(variant, bool) or not isinstance(variant, int) or not 0 <= variant < spec.variants:
            raise ValueError(
                f"operator {name!r} has {spec.variants} variant(s): variant must be in "
                f"0..{spec.variants - 1}, got {variant!r}"
            )
        if spec.stochastic and not (isinstance(key, str) and key):
            raise ValueError(
                f"operator {name!r} is stochastic: pass key=<sample id> (a non-empty str) so the variant "
                f"is reproducible; got {key!r}"
            )
        if sample_rate is not None and spec.modality != "audio":
            raise OperatorInputError(f"sample_rate applies to audio only; {name!r} is a {spec.modality} operator")
        CHECK_INPUT[spec.modality](data, sample_rate)
        if severity == 0:
            return data if isinstance(data, str) else data.copy()  # type: ignore[union-attr]
        rng = variant_rng(key or "", name, severity, variant)
        out = spec.func(data, spec.parameter(severity), rng)
        check_output(name, spec.plugin, spec.modality, data, out)
        return out

    def __iter__(self) -> Iterator[OperatorSpec]:
        return iter(sorted(super().__iter__(), key=lambda spec: spec.name))


@functools.cache
def registry() -> OperatorRegistry:
    """The registry of every installed plugin's operators (built once per process)."""
    return fill_registry("sceval_register_operators", OperatorRegistry(), "operators")


def names(modality: str | None = None) -> list[str]:
    """Registered operator names, sorted; ``modality`` filters by "text" | "vision" | "audio"."""
    return registry().names(modality)


def get(name: str) -> OperatorSpec:
    """The :class:`OperatorSpec` of ``name``; an unknown name raises with suggestions."""
    return registry().get(name)


def apply(
    name: str,
    data: Data,
    *,
    severity: int,
    variant: int = 0,
    key: str | None = None,
    sample_rate: int | None = None,
) -> Data:
    """Corrupt ``data`` with the installed operator ``name``; see :meth:`OperatorRegistry.apply`."""
    return registry().apply(name, data, severity=severity, variant=variant, key=key, sample_rate=sample_rate)
