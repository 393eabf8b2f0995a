"""SCEval's structure-corruption operators and their registry.

>>> from sceval_plugin import operators
>>> operators.names("audio")
['distortion', 'mute', 'remove']
>>> operators.get("noise").parameter(70)
90.0

``apply(name, data, severity=..., variant=..., key=...)`` corrupts text (the question stem),
vision (uint8 RGB frames) or audio (mono float32, 16 kHz); see its docstring. Operators come
from plugins: the built-ins and any installed package with an entry point in group ``sceval``.
"""

from sceval_plugin.operators._registry import (
    OperatorRegistry,
    UnknownOperatorError,
    apply,
    get,
    names,
    registry,
)
from sceval_plugin.operators._seed import SEED_SCHEMES, seed_scheme, variant_rng, variant_seed
from sceval_plugin.operators._spec import (
    CORRUPTING_SEVERITIES,
    MODALITIES,
    SEVERITIES,
    OperatorSpec,
    SeverityTable,
    operator,
)
from sceval_plugin.operators._validate import SAMPLE_RATE, OperatorContractError, OperatorInputError

__all__ = [
    "CORRUPTING_SEVERITIES",
    "MODALITIES",
    "SAMPLE_RATE",
    "SEED_SCHEMES",
    "SEVERITIES",
    "OperatorContractError",
    "OperatorInputError",
    "OperatorRegistry",
    "OperatorSpec",
    "SeverityTable",
    "UnknownOperatorError",
    "apply",
    "get",
    "names",
    "operator",
    "registry",
    "seed_scheme",
    "variant_rng",
    "variant_seed",
]
