"""Input checks at the API boundary, and contract checks on what an operator returns.

Every message names the problem and, where there is one, the usual fix. Nothing is coerced:
a conversion would change what is measured, so it is the caller's explicit decision.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from faultline_eval.core.media import SAMPLE_RATE


class OperatorInputError(ValueError):
    """The data handed to an operator is not what its modality takes."""


def check_text(data: Any) -> str:
    if not isinstance(data, str):
        raise OperatorInputError(f"text operators take the question stem as a str, got {type(data).__name__}")
    if not data.strip():
        raise OperatorInputError("text operators need a non-empty question stem, got an empty/blank string")
    return data


def check_vision(data: Any) -> np.ndarray:
    if not isinstance(data, np.ndarray):
        raise OperatorInputError(
            f"vision operators take a numpy uint8 array (H, W, 3) or (N, H, W, 3), got {type(data).__name__}"
        )
    if data.ndim == 2 or (data.ndim in (3, 4) and data.shape[-1] == 1):
        raise OperatorInputError(
            f"vision input of shape {data.shape} looks grayscale; SCEval frames are RGB (..., 3): "
            "convert first, e.g. np.repeat(x[..., None], 3, axis=-1)"
        )
    if data.ndim in (3, 4) and data.shape[-1] == 4:
        raise OperatorInputError(
            f"vision input of shape {data.shape} has 4 channels (RGBA?); SCEval frames are RGB: "
            "drop or composite the alpha channel first"
        )
    if data.ndim not in (3, 4) or data.shape[-1] != 3:
        raise OperatorInputError(f"vision input must be (H, W, 3) or (N, H, W, 3), got shape {data.shape}")
    if data.dtype != np.uint8:
        raise OperatorInputError(
            f"vision input must be uint8 (0-255), got {data.dtype}; scale and convert explicitly, "
            "e.g. np.clip(np.rint(x * 255), 0, 255).astype(np.uint8) for floats in [0, 1]"
        )
    if 0 in data.shape:
        raise OperatorInputError(f"vision input is empty: shape {data.shape}")
    return data


def check_audio(data: Any, sample_rate: int | None) -> np.ndarray:
    if sample_rate is not None and (isinstance(sample_rate, bool) or sample_rate != SAMPLE_RATE):
        raise OperatorInputError(
            f"audio at {sample_rate!r} Hz: SCEval operators take mono 16000 Hz audio and do not "
            "resample silently; resample first (e.g. soxr.resample(x, sr, 16000))"
        )
    if not isinstance(data, np.ndarray):
        raise OperatorInputError(f"audio operators take a 1-D numpy float32 waveform, got {type(data).__name__}")
    if data.ndim == 2 and 1 in data.shape:
        raise OperatorInputError(f"audio of shape {data.shape}: pass a 1-D mono waveform (flatten the singleton axis)")
    if data.ndim == 2:
        raise OperatorInputError(
            f"audio of shape {data.shape} is multichannel (stereo?); SCEval audio is mono: "
            "downmix first, e.g. x.mean(axis=channel_axis)"
        )
    if data.ndim != 1:
        raise OperatorInputError(f"audio must be a 1-D mono waveform, got shape {data.shape}")
    if data.dtype != np.float32:
        raise OperatorInputError(
            f"audio must be float32 (samples in [-1, 1]), got {data.dtype}; convert explicitly "
            "(int16 PCM: x.astype(np.float32) / 32768)"
        )
    if data.size == 0:
        raise OperatorInputError("audio is zero-length")
    if not np.isfinite(data).all():
        raise OperatorInputError("audio contains NaN or infinite samples")
    return data


def check_output(name: str, plugin: str, modality: str, before: Any, after: Any) -> None:
    """Hold every operator, built-in or third-party, to the container contract."""

    def broken(what: str) -> OperatorContractError:
        return OperatorContractError(f"operator {name!r} from plugin {plugin} broke its contract: {what}")

    if modality == "text":
        if not isinstance(after, str):
            raise broken(f"returned {type(after).__name__}, not str")
        return
    if not isinstance(after, np.ndarray):
        raise broken(f"returned {type(after).__name__}, not a numpy array")
    if after.dtype != before.dtype:
        raise broken(f"returned dtype {after.dtype}, expected {before.dtype}")
    if np.may_share_memory(after, before):
        raise broken("returned (a view of) its input; operators must not alias or modify it")
    if modality == "vision" and after.shape != before.shape:
        raise broken(f"returned shape {after.shape}, expected {before.shape}")
    if modality == "audio" and (after.ndim != 1 or not 0 < after.size <= before.size):
        raise broken(f"returned audio of shape {after.shape} from input of shape {before.shape}")


class OperatorContractError(RuntimeError):
    """An operator returned something other than its input's container."""


CHECK_INPUT = {
    "text": lambda data, sample_rate: check_text(data),
    "vision": lambda data, sample_rate: check_vision(data),
    "audio": check_audio,
}
