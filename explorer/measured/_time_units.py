"""Time units of timing columns: names (time_ms, latency_us, …) and plausibility checks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from explorer.base.quoting import quote
from explorer.measured._csv import BoolArray, FloatArray, Numbers, Table, normalize_name
from explorer.measured._problems import Collector
from explorer.specs.measured import TIME_BOUNDS_TEXT, times_within_bounds

# Divide a value in the unit by this to get seconds (division keeps 6.87 ms -> 0.00687 exact).
TIME_UNITS: dict[str, float] = {
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "seconds": 1.0,
    "ms": 1e3,
    "msec": 1e3,
    "us": 1e6,
    "usec": 1e6,
    "ns": 1e9,
}
UNIT_LABEL = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}


@dataclass(frozen=True)
class TimeColumn:
    header: str  # as written in the file
    base: str  # normalized name without the unit suffix
    unit: str | None  # normalized unit suffix, None when the name carries no unit
    divisor: float  # divide by this to get seconds (1.0 when unit is None)


def find_time_column(headers: Sequence[str], bases: Sequence[str]) -> TimeColumn | None:
    """First header whose normalized name is ``base`` or ``base_<unit>``, by order of bases."""
    norm = [(h, normalize_name(h)) for h in headers]
    for base in bases:
        for header, n in norm:
            if n == base:
                return TimeColumn(header, base, None, 1.0)
            if n.startswith(base + "_"):
                unit = n[len(base) + 1 :]
                if unit in TIME_UNITS:
                    return TimeColumn(header, base, unit, TIME_UNITS[unit])
    return None


TimeKind = Literal["step", "kernel"]
# Largest plausible value in seconds for one decode/verify step or one kernel.
_MAX_PLAUSIBLE_S: dict[TimeKind, float] = {"step": 1.0, "kernel": 1.0}
_MIN_PLAUSIBLE_S: dict[TimeKind, float] = {"step": 1e-5, "kernel": 1e-7}


def check_time_units(
    seconds: FloatArray, tc: TimeColumn, kind: TimeKind, col: Collector, what: str
) -> None:
    """Flag time columns whose magnitudes do not fit their (absent or stated) unit."""
    v = seconds[np.isfinite(seconds) & (seconds > 0)]
    if v.size == 0:
        return
    vmax, vmin, med = float(v.max()), float(v.min()), float(np.median(v))
    hi = _MAX_PLAUSIBLE_S[kind]
    if tc.unit is None:
        if vmin > 100.0:
            col.error(
                f"column {quote(tc.header)} has no unit and every value is > 100 (median {med:g}): "
                f"these look like microseconds (or milliseconds), not seconds. Rename the column "
                f"to {tc.base}_us or {tc.base}_ms (or {tc.base}_s if they really are seconds)",
                field=tc.header,
            )
        elif vmax > hi:
            col.error(
                f"column {quote(tc.header)} has no unit and holds {what} up to {vmax:g}, over "
                f"{hi:g} s: these look like milliseconds. Rename the column to {tc.base}_ms "
                f"(or {tc.base}_s if they really are seconds)",
                field=tc.header,
            )
        else:
            col.warn(
                f"column {quote(tc.header)} has no unit; read as seconds (name it {tc.base}_s, "
                f"{tc.base}_ms or {tc.base}_us to say so)",
                field=tc.header,
            )
        return
    label = UNIT_LABEL.get(tc.unit, tc.unit)
    if vmax > hi:
        col.warn(
            f"column {quote(tc.header)} is in {label} but holds {what} up to {vmax:g} s; "
            "check the unit",
            field=tc.header,
        )
    elif vmin < _MIN_PLAUSIBLE_S[kind]:
        col.warn(
            f"column {quote(tc.header)} is in {label} but holds {what} down to {vmin:g} s; "
            f"check the unit",
            field=tc.header,
        )


def out_of_range_message(what: str, written: str, seconds: float) -> str:
    """The one message for a time outside [MIN_TIME_S, MAX_TIME_S] (a denormal 4.9e-324 ms
    becomes 0 s after unit conversion)."""
    return (f"{what} {written} is {seconds:g} s; a measured time must be "
            f"{TIME_BOUNDS_TEXT} (MIN_TIME_S, MAX_TIME_S)")


def seconds_of(tab: Table, tc: TimeColumn, nums: Numbers, col: Collector, what: str,
               mask: BoolArray | None = None) -> Numbers:
    """A parsed time column in seconds; a value outside the measurable range after unit
    conversion is an error naming its row and the column."""
    seconds = nums.values / tc.divisor
    bad = nums.valid & ~times_within_bounds(seconds)
    if mask is not None:
        bad &= mask
    raw = tab.df[tc.header].to_numpy(dtype=object)
    unit = f" {tc.unit}" if tc.unit else ""
    col.add_each("error", np.flatnonzero(bad), lambda i: (
        out_of_range_message(what, quote(raw[i]) + unit, float(seconds[i])),
        int(tab.rows[i]), tc.header))
    return Numbers(values=seconds, valid=nums.valid & ~bad, empty=nums.empty)
