"""CSV tables: header names, reading, and vectorized number parsing with row-level problems."""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from explorer.measured._problems import Collector

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
MAX_INT = 2**53  # larger "whole numbers" are float noise, and overflow int64 columns


def normalize_name(name: str) -> str:
    """'Step time (ms)' -> 'step_time_ms'; 'µs'/'μs' -> 'us'."""
    s = name.strip().lower().replace("µ", "u").replace("μ", "u")
    return re.sub(r"[^0-9a-z]+", "_", s).strip("_")


def find_column(headers: Sequence[str], aliases: Sequence[str]) -> str | None:
    """First header whose normalized name equals one of the aliases (in alias order)."""
    norm = {normalize_name(h): h for h in reversed(headers)}
    for alias in aliases:
        if alias in norm:
            return norm[alias]
    return None


@dataclass(frozen=True)
class Table:
    df: pd.DataFrame  # all cells as stripped strings, blank rows dropped
    rows: npt.NDArray[np.int64]  # 1-based data row number of each df row
    headers: tuple[str, ...]

    def text(self, header: str | None) -> list[str]:
        if header is None:
            return [""] * len(self.df)
        return [str(x) for x in self.df[header].tolist()]


def read_header(text: str) -> list[str] | None:
    """The first non-blank line parsed as CSV, or None."""
    for line in io.StringIO(text):
        if line.strip():
            try:
                return next(csv.reader([line]))
            except (csv.Error, StopIteration):
                return None
    return None


def read_csv(text: str, col: Collector) -> Table | None:
    header = read_header(text)
    if header is None:
        col.error("no CSV header row found")
        return None
    headers = [h.strip() for h in header]
    seen: dict[str, str] = {}
    for h in headers:
        n = normalize_name(h)
        if not n:
            col.error("a header cell is empty; every column needs a name", field=h or None)
        elif n in seen:
            col.error(f"columns '{seen[n]}' and '{h}' name the same field", field=h)
        else:
            seen[n] = h
    if col.has_errors:
        return None
    try:
        df = pd.read_csv(
            io.StringIO(text),
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            skip_blank_lines=False,
            engine="c",
        )
    except pd.errors.EmptyDataError:
        col.error("the file holds no CSV data")
        return None
    except (pd.errors.ParserError, ValueError, OverflowError, csv.Error) as exc:
        col.error(f"not a readable CSV file: {str(exc).strip()}")
        return None
    df.columns = pd.Index(headers[: len(df.columns)] + [str(c) for c in df.columns[len(headers) :]])
    df = df.fillna("")
    for c in df.columns:
        df[c] = df[c].astype(str).str.strip()
    keep = (df != "").any(axis=1).to_numpy()
    rows = np.arange(1, len(df) + 1, dtype=np.int64)[keep]
    df = df.loc[keep].reset_index(drop=True)
    if len(df) == 0:
        col.error("the CSV has a header but no data rows")
        return None
    return Table(df=df, rows=rows, headers=tuple(headers))


@dataclass(frozen=True)
class Numbers:
    values: FloatArray  # NaN where empty or invalid
    valid: BoolArray  # a usable number
    empty: BoolArray


def parse_numbers(
    tab: Table,
    header: str,
    col: Collector,
    *,
    integer: bool = False,
    required: bool = True,
    minimum: float | None = None,
    maximum: float | None = None,
    positive: bool = False,
    what: str = "value",
    mask: BoolArray | None = None,
) -> Numbers:
    """Vectorized conversion of one column; every bad cell becomes a problem naming its row."""
    s = tab.df[header]
    raw = s.to_numpy(dtype=object)
    empty = (s == "").to_numpy()
    num = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    active = np.ones(len(raw), dtype=bool) if mask is None else mask
    finite = np.isfinite(num)
    problem = np.zeros(len(raw), dtype=bool)

    def report(bad: BoolArray, make: str) -> None:
        for i in np.flatnonzero(bad & active & ~problem):
            value = float(num[i]) if finite[i] else raw[i]
            col.error(make.format(v=value, raw=raw[i]), row=int(tab.rows[i]), field=header)
        problem[bad] = True

    if required:
        report(empty, f"missing {what}")
    lowered = s.str.lower().str.lstrip("+-").to_numpy(dtype=object)
    nonfinite_text = np.isin(lowered, ["nan", "inf", "infinity"])
    report(~empty & nonfinite_text, f"{what} must be a finite number, got '{{raw}}'")
    report(~empty & ~finite & np.isnan(num), f"'{{raw}}' is not a number ({what})")
    report(~empty & ~finite, f"{what} must be a finite number, got '{{raw}}'")
    if integer:
        with np.errstate(invalid="ignore"):
            report(finite & (np.mod(num, 1.0) != 0), f"{what} must be a whole number, got {{v}}")
            report(finite & (np.abs(num) > MAX_INT), f"{what} is too large: {{v}}")
    with np.errstate(invalid="ignore"):
        if positive:
            neg = "negative" if what.endswith("time") else "not positive"
            report(finite & (num < 0), f"{what} is {neg}: {{v}}")
            report(finite & (num == 0), f"{what} must be > 0, got 0")
        if minimum is not None:
            report(finite & (num < minimum), f"{what} must be >= {minimum:g}, got {{v}}")
        if maximum is not None:
            report(finite & (num > maximum), f"{what} must be <= {maximum:g}, got {{v}}")
    valid = finite & ~problem
    values = np.where(valid, num, np.nan)
    return Numbers(values=values, valid=valid, empty=empty)


def parse_float_text(raw: str) -> float | None:
    try:
        v = float(raw)
    except ValueError:
        return None
    return v


_LEADING_NUMBER = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\b")


def parse_temperature(raw: str, col: Collector, row: int | None, field: str | None) -> float | None:
    """A number, or a text starting with one ('0 (greedy)'); anything else is unknown."""
    raw = raw.strip()
    if not raw:
        return None
    value = parse_float_text(raw)
    if value is None:
        m = _LEADING_NUMBER.match(raw)
        if m is None:
            col.warn(f"temperature '{raw}' is not a number; kept as unknown", row, field)
            return None
        value = float(m.group(1))
        col.warn(f"temperature '{raw}' read as {value:g}", row, field)
    if not math.isfinite(value) or value < 0:
        col.error(f"temperature must be a finite number >= 0, got '{raw}'", row, field)
        return None
    return value
