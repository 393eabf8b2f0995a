"""The SCEval paper's own numbers (arXiv 2608.29278) for the two canonical deep-dive models, as the
fixtures the report tests compare against: Tables 5 and 6, read from the one transcription,
sceval_plugin/data/published/sceval_v1.json. Values are mean-variant accuracies in percent."""

from sceval_plugin.data.sceval_published import published_rows

_ROWS = published_rows()
_MODELS = {"qwen3.5-omni-plus": "Qwen3.5-Omni-Plus", "gemini-3-flash": "Gemini 3 Flash"}
_SEVERITIES = (10, 30, 50, 70)


def _singles(model: str) -> dict[str, tuple[float, ...]]:
    """Table 6: operator -> accuracy (%) at severities 10/30/50/70."""
    row = _ROWS.row("6", model)
    return {op: tuple(float(row[f"{op}@{s}"].value) for s in _SEVERITIES) for op in _ROWS.operators}


QWEN_SINGLES = _singles("Qwen3.5-Omni-Plus")
FLASH_SINGLES = _singles("Gemini 3 Flash")


def _cells(column: str) -> tuple[tuple[str, int], ...]:
    return tuple((op, int(sev)) for op, sev in (part.split("@") for part in column.split("+")))


#: Table 5: joint cells ((operator, severity), ...) -> accuracy (%) of Gemini 3 Flash and Qwen3.5-Omni-Plus.
JOINT = [
    (_cells(column), float(flash.value), float(_ROWS.value("5", "Qwen3.5-Omni-Plus", column).value))
    for column, flash in _ROWS.row("5", "Gemini 3 Flash").items()
    if column != "clean"
]
#: Clean accuracy (%) of each model (Table 5's clean row).
CLEAN = {key: float(_ROWS.value("5", model, "clean").value) for key, model in _MODELS.items()}
