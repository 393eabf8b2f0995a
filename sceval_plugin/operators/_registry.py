"""The operator registry, filled by plugins, and the public lookup/apply functions."""

from __future__ import annotations

import difflib
import functools
from typing import Any, Callable, Iterator, TypeVar

from sceval_plugin.operators._seed import variant_rng
from sceval_plugin.operators._spec import MODALITIES, OperatorSpec, check_severity, check_spec
from sceval_plugin.operators._validate import CHECK_INPUT, OperatorInputError, check_output

Data = TypeVar("Data")


class UnknownOperatorError(LookupError):
    """No plugin registered an operator of that name."""

    def __str__(self) -> str:  # LookupError would quote the message like a dict key
        return str(self.args[0])


class OperatorRegistry:
    """Name -> :class:`OperatorSpec`. Plugins fill it through ``sceval_register_operators``."""

    def __init__(self) -> None:
        self._specs: dict[str, OperatorSpec] = {}
        self._plugin = "<direct>"

    def add(self, operator: Callable[..., Any] | OperatorSpec) -> OperatorSpec:
        """Register a function decorated with :func:`operator` (or a ready spec, validated
        here like one from the decorator); a clash or an invalid spec raises PluginError."""
        from sceval_plugin.plugins import PluginError

        spec = operator if isinstance(operator, OperatorSpec) else getattr(operator, "sceval_operator", None)
        if not isinstance(spec, OperatorSpec):
            raise PluginError(
                f"plugin {self._plugin} tried to register {operator!r}, which is not decorated with "
                "@sceval_plugin.operators.operator(...)"
            )
        try:
            check_spec(spec)
        except ValueError as exc:
            raise PluginError(f"plugin {self._plugin} registered an invalid operator: {exc}") from None
        previous = self._specs.get(spec.name)
        if previous is not None:
            raise PluginError(
                f"operator {spec.name!r} is registered by two plugins: {previous.plugin} and {self._plugin}; "
                "uninstall one of them or rename its operator"
            )
        spec = spec.with_plugin(self._plugin)
        self._specs[spec.name] = spec
        return spec

    def get(self, name: str) -> OperatorSpec:
        try:
            return self._specs[name]
        except (KeyError, TypeError):
            close = difflib.get_close_matches(str(name), self._specs, n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise UnknownOperatorError(
                f"unknown operator {name!r}{hint} (registered: {', '.join(sorted(self._specs))})"
            ) from None

    def names(self, modality: str | None = None) -> list[str]:
        if modality is not None and modality not in MODALITIES:
            raise ValueError(f"modality must be one of {MODALITIES} or None, got {modality!r}")
        return sorted(n for n, s in self._specs.items() if modality in (None, s.modality))

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
        return iter(self._specs[n] for n in self.names())

    def __len__(self) -> int:
        return len(self._specs)

    def __contains__(self, name: object) -> bool:
        return name in self._specs


@functools.lru_cache(maxsize=None)
def registry() -> OperatorRegistry:
    """The registry of every installed plugin's operators (built once per process)."""
    from sceval_plugin.plugins import fill_registry

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
