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

from explorer.base.limits import MAX_CELL_CHARS, MAX_CELLS, MAX_COLUMNS
from explorer.base.quoting import quote
from explorer.measured._bounds import check_line_count, count_lines, iter_lines, over_cap
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
    for _, line in iter_lines(text):
        if line.strip():
            try:
                return next(csv.reader([line]))
            except (csv.Error, StopIteration):
                return None
    return None


# A quoted CSV cell ("" inside it reads as two adjacent quoted cells: same count of commas).
_QUOTED_CELL = re.compile(r'"[^"]*"')


def _widest_line(text: str) -> tuple[int, int]:
    """(line number, cells) of the line with the most cells, counted by the commas outside
    quotes: linear, one pass of str.count per line, nothing materialised per cell. A quoted
    cell spanning lines merges them, as a CSV reader does."""
    skeleton = _QUOTED_CELL.sub("", text) if '"' in text else text
    widest, at = 0, 0
    for lineno, line in iter_lines(skeleton):
        n = line.count(",")
        if n > widest:
            widest, at = n, lineno
    return at, widest + 1


def _check_shape(text: str, headers: list[str], col: Collector) -> bool:
    """Columns, cells and header cells against their caps, before pandas reads a cell: the
    header and every row (a 2-column header over rows of 100,000 cells is as wide as a
    100,000-column header, and would cost pandas a column each)."""
    if len(headers) > MAX_COLUMNS:
        over_cap(col, "the header", len(headers), MAX_COLUMNS, "columns", "MAX_COLUMNS")
        return False
    long_names = [h for h in headers if len(h) > MAX_CELL_CHARS]
    if long_names:
        over_cap(col, f"the header cell {quote(long_names[0])}", len(long_names[0]),
                 MAX_CELL_CHARS, "characters", "MAX_CELL_CHARS")
        return False
    if not check_line_count(text, col):
        return False
    line, widest = _widest_line(text)
    if widest > MAX_COLUMNS:
        over_cap(col, f"line {line}", widest, MAX_COLUMNS, "cells (the header has "
                 f"{len(headers)} columns)", "MAX_COLUMNS")
        return False
    cells = (count_lines(text) - 1) * max(len(headers), widest)
    if cells > MAX_CELLS:
        over_cap(col, "the table", cells, MAX_CELLS, "cells (lines x columns)", "MAX_CELLS")
        return False
    return True


def _check_cell_lengths(df: pd.DataFrame, names: list[str], col: Collector) -> bool:
    ok = True
    for j, name in enumerate(names):
        cells = df.iloc[:, j]
        lengths = cells.str.len().to_numpy(dtype=np.int64, na_value=0)
        bad = np.flatnonzero(lengths > MAX_CELL_CHARS)
        if bad.size:
            i = int(bad[0])
            over_cap(col, f"the cell {quote(cells.iloc[i])}", int(lengths[i]), MAX_CELL_CHARS,
                     "characters", "MAX_CELL_CHARS", i + 1, name)
            ok = False
    return ok


# A number cut mid-value: "19.2164" -> "19.", "1e-5" -> "1e" or "1e-", "-1.5" -> "-".
_CUT_NUMBER = re.compile(r"[+-]?\d*\.?\d*(?:[eE][+-]?)?")
_CUT_NUMBER_ENDS = (".", "e", "E", "+", "-")


def _check_cut_off(text: str, headers: list[str], last_row: int, col: Collector) -> None:
    """A file that ends mid-row (no final newline, the row short or its number dangling) was
    most likely cut in transfer: its last value cannot be trusted."""
    if text.endswith(("\n", "\r")):
        return
    last_line = text[text.rfind("\n") + 1:]
    if not last_line.strip():
        return
    try:
        cells = next(csv.reader([last_line]))
    except (csv.Error, StopIteration):
        return
    value = cells[-1].strip() if cells else ""
    short = len(cells) < len(headers)
    dangling = value.endswith(_CUT_NUMBER_ENDS) and _CUT_NUMBER.fullmatch(value) is not None
    if short or dangling:
        col.error(
            f"the file ends in the middle of row {last_row} (no newline after it; "
            f"{len(cells)} of {len(headers)} columns; last value {quote(value)}): it looks cut "
            "off, so that value may be incomplete. Export the file again; if the row is "
            "complete, end the file with a newline",
            last_row,
            headers[min(len(cells), len(headers)) - 1] if cells else None,
        )


def read_csv(text: str, col: Collector) -> Table | None:
    header = read_header(text)
    if header is None:
        col.error("no CSV header row found")
        return None
    headers = [h.strip() for h in header]
    if not _check_shape(text, headers, col):
        return None
    seen: dict[str, str] = {}
    for h in headers:
        n = normalize_name(h)
        if not n:
            col.error("a header cell is empty; every column needs a name", field=h or None)
        elif n in seen:
            col.error(f"columns {quote(seen[n])} and {quote(h)} name the same field", field=h)
        else:
            seen[n] = h
    if col.has_errors:
        return None
    try:
        # Bytes, not a StringIO: an ASCII file then costs one byte per character.
        df = pd.read_csv(
            io.BytesIO(text.encode("utf-8", "replace")),
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            skip_blank_lines=False,
            engine="c",
            encoding="utf-8",
            encoding_errors="replace",
        )
    except pd.errors.EmptyDataError:
        col.error("the file holds no CSV data")
        return None
    except (pd.errors.ParserError, ValueError, OverflowError, csv.Error) as exc:
        col.error(f"not a readable CSV file: {str(exc).strip()}")
        return None
    names = headers[: len(df.columns)] + [str(c) for c in df.columns[len(headers) :]]
    if not _check_cell_lengths(df, names, col):
        return None
    # One new frame from stripped columns: setting columns one by one on a wide frame is slow.
    df = pd.DataFrame(
        {i: df.iloc[:, i].fillna("").astype(str).str.strip() for i in range(len(names))}
    )
    df.columns = pd.Index(names)
    keep = (df != "").any(axis=1).to_numpy()
    rows = np.arange(1, len(df) + 1, dtype=np.int64)[keep]
    df = df.loc[keep].reset_index(drop=True)
    if len(df) == 0:
        col.error("the CSV has a header but no data rows")
        return None
    _check_cut_off(text, headers, int(rows[-1]), col)
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
    s = tab.df[header]  # cell text is read only for the problems listed (no object arrays)
    empty = (s == "").to_numpy(dtype=bool)
    num = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    active = np.ones(len(s), dtype=bool) if mask is None else mask
    finite = np.isfinite(num)
    problem = np.zeros(len(s), dtype=bool)

    def report(bad: BoolArray, make: str) -> None:
        col.add_each("error", np.flatnonzero(bad & active & ~problem), lambda i: (
            make.format(v=float(num[i]) if finite[i] else s.iloc[i], raw=quote(s.iloc[i])),
            int(tab.rows[i]), header))
        problem[bad] = True

    if required:
        report(empty, f"missing {what}")
    nonfinite_text = s.str.lower().str.lstrip("+-").isin(["nan", "inf", "infinity"]).to_numpy(
        dtype=bool)
    report(~empty & nonfinite_text, f"{what} must be a finite number, got {{raw}}")
    report(~empty & ~finite & np.isnan(num), f"{{raw}} is not a number ({what})")
    report(~empty & ~finite, f"{what} must be a finite number, got {{raw}}")
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
            col.warn(f"temperature {quote(raw)} is not a number; kept as unknown", row, field)
            return None
        value = float(m.group(1))
        col.warn(f"temperature {quote(raw)} read as {value:g}", row, field)
    if not math.isfinite(value) or value < 0:
        col.error(f"temperature must be a finite number >= 0, got {quote(raw)}", row, field)
        return None
    return value
