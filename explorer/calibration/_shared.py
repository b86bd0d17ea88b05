"""What the three fits share: read-only array copies, the result base, MAPE, flat inputs, the
bound on the rows a fit uses, and the error for measurements no fit can use."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from explorer.base.limits import MAX_CALIBRATION_ROWS
from explorer.model.grid import ScenarioModel

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
StrArray = npt.NDArray[np.str_]


class CalibrationError(ValueError):
    """The measurements hold nothing this fit can use: the message says why, for the user."""


def sample_rows(n: int, cap: int = MAX_CALIBRATION_ROWS) -> IntArray | None:
    """Evenly spaced row indices when there are more than `cap` rows, else None (every row).

    Deterministic, and spread over the whole table, so a table sorted by shape keeps every
    shape in the sample; a fit's cost is then bounded whatever the table's size."""
    if n <= cap:
        return None
    return np.unique(np.linspace(0, n - 1, cap).round().astype(np.int64))


def sample_note(what: str, kept: int, rows: int) -> str:
    return (f"{what}: fitted on an evenly spaced sample of {kept:,} of {rows:,} rows "
            f"(at most {MAX_CALIBRATION_ROWS:,}, MAX_CALIBRATION_ROWS); figures and MAPE are "
            "on the sample")


def ro_float(x: npt.ArrayLike) -> FloatArray:
    out = np.array(x, dtype=np.float64, copy=True).reshape(-1)
    out.flags.writeable = False
    return out


def ro_int(x: npt.ArrayLike) -> IntArray:
    out = np.array(x, dtype=np.int64, copy=True).reshape(-1)
    out.flags.writeable = False
    return out


def ro_bool(x: npt.ArrayLike) -> BoolArray:
    out = np.array(x, dtype=np.bool_, copy=True).reshape(-1)
    out.flags.writeable = False
    return out


def ro_str(x: Sequence[str] | npt.NDArray[np.str_]) -> StrArray:
    out = np.array(list(x), dtype=np.str_).reshape(-1)
    out.flags.writeable = False
    return out


class FrozenResult(BaseModel):
    """Frozen result; its numpy arrays are read-only copies."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


def mape(predicted: npt.ArrayLike, measured: npt.ArrayLike) -> float:
    """Mean absolute percentage error of predicted vs measured, in %."""
    p, m = np.asarray(predicted, dtype=np.float64), np.asarray(measured, dtype=np.float64)
    if m.size == 0:
        return float("nan")
    return float(100.0 * np.mean(np.abs(p - m) / m))


def flat(*arrays: npt.ArrayLike) -> list[FloatArray]:
    """The inputs broadcast against each other, as flat float arrays."""
    arrs = [np.asarray(x, dtype=np.float64) for x in arrays]
    try:
        shaped = np.broadcast_arrays(*arrs)
    except ValueError as exc:
        raise ValueError(f"inputs do not broadcast: {[a.shape for a in arrs]}") from exc
    return [np.asarray(x, dtype=np.float64).reshape(-1) for x in shaped]


def group_or_preset(sm: ScenarioModel, group: npt.ArrayLike | None) -> npt.ArrayLike:
    """G as given, else the scenario's own."""
    return sm.r.group if group is None else group
