"""Shared machinery for the measured-data parsers: problem collection, CSV reading, vectorized
number checks, time units, mechanism names and curve building."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from pydantic import ValidationError

from explorer.model.acceptance import conditional_from_marginal
from explorer.specs.measured import (
    AL_BOUND_TOLERANCE,
    KNOWN_MECHANISMS,
    AcceptanceCurve,
    DraftStyle,
    KernelTimingTable,
    Mechanism,
    ParseResult,
    Problem,
    Provenance,
    Severity,
    StepTimingTable,
)

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

MAX_FILE_BYTES = 50 * 1024 * 1024
# More problems than this are summarised in one final problem (a 100k-row file where every row
# is bad would otherwise carry 100k messages).
MAX_PROBLEMS = 10_000
# |AL - (1 + Σ marginals)| above this is an error. Same tolerance as specdec_bench's own
# mean-consistency check (speculation_profile.py, _consistency_check).
AL_CONSISTENCY_TOL = 0.02
# Conditional and marginal vectors given together must agree to this (files round to 1e-6).
RATE_CONSISTENCY_TOL = 1e-3
MAX_INT = 2**53  # larger "whole numbers" are float noise, and overflow int64 columns


class Collector:
    """Accumulates problems; every parser reports all of them, not just the first."""

    def __init__(self) -> None:
        self._items: list[Problem] = []
        self._dropped = 0
        self._dropped_errors = 0

    def add(
        self, severity: Severity, message: str, row: int | None = None, field: str | None = None
    ) -> None:
        if len(self._items) >= MAX_PROBLEMS:
            self._dropped += 1
            self._dropped_errors += severity == "error"
            return
        self._items.append(Problem(row=row, field=field, message=message, severity=severity))

    def error(self, message: str, row: int | None = None, field: str | None = None) -> None:
        self.add("error", message, row, field)

    def warn(self, message: str, row: int | None = None, field: str | None = None) -> None:
        self.add("warning", message, row, field)

    @property
    def has_errors(self) -> bool:
        return self._dropped_errors > 0 or any(p.severity == "error" for p in self._items)

    def error_count(self) -> int:
        return self._dropped_errors + sum(p.severity == "error" for p in self._items)

    def problems(self) -> tuple[Problem, ...]:
        """File-level problems first, then by row (stable, so related messages stay together)."""
        items = sorted(self._items, key=lambda p: -1 if p.row is None else p.row)
        if self._dropped:
            severity: Severity = "error" if self._dropped_errors else "warning"
            items.append(
                Problem(
                    message=f"... and {self._dropped} more problems like the ones above "
                    f"(the first {MAX_PROBLEMS} are listed)",
                    severity=severity,
                )
            )
        return tuple(items)


def finish(
    fmt: str,
    summary: str,
    col: Collector,
    *,
    curves: Sequence[AcceptanceCurve] = (),
    step_timings: StepTimingTable | None = None,
    kernel_timings: KernelTimingTable | None = None,
) -> ParseResult:
    """Assemble a ParseResult; with any error the datasets are dropped."""
    if col.has_errors:
        n = col.error_count()
        return ParseResult(
            format=fmt,
            summary=f"{fmt}: not loaded, {n} error{'s' if n != 1 else ''} to fix",
            problems=col.problems(),
        )
    return ParseResult(
        format=fmt,
        summary=summary,
        curves=tuple(curves),
        step_timings=step_timings,
        kernel_timings=kernel_timings,
        problems=col.problems(),
    )


def group_provenance(
    name: str, sources: Iterable[str], model: str, dataset: str, temperature: float | None,
    fmt: str,
) -> Provenance:
    """Provenance of one curve built from a group of CSV rows."""
    return Provenance(
        file=name,
        source="; ".join(sorted({s for s in sources if s})) or None,
        model=model or None,
        dataset=dataset or None,
        temperature=temperature,
        format=fmt,
    )


def validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()))
        parts.append(f"{loc}: {err.get('msg', '')}" if loc else str(err.get("msg", "")))
    return "; ".join(parts)


# --------------------------------------------------------------------------------------------
# Header names and units


def normalize_name(name: str) -> str:
    """'Step time (ms)' -> 'step_time_ms'; 'µs'/'μs' -> 'us'."""
    s = name.strip().lower().replace("µ", "u").replace("μ", "u")
    return re.sub(r"[^0-9a-z]+", "_", s).strip("_")


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


def find_column(headers: Sequence[str], aliases: Sequence[str]) -> str | None:
    """First header whose normalized name equals one of the aliases (in alias order)."""
    norm = {normalize_name(h): h for h in reversed(headers)}
    for alias in aliases:
        if alias in norm:
            return norm[alias]
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
                f"column '{tc.header}' has no unit and every value is > 100 (median {med:g}): "
                f"these look like microseconds (or milliseconds), not seconds. Rename the column "
                f"to {tc.base}_us or {tc.base}_ms (or {tc.base}_s if they really are seconds)",
                field=tc.header,
            )
        elif vmax > hi:
            col.error(
                f"column '{tc.header}' has no unit and holds {what} up to {vmax:g}, over "
                f"{hi:g} s: these look like milliseconds. Rename the column to {tc.base}_ms "
                f"(or {tc.base}_s if they really are seconds)",
                field=tc.header,
            )
        else:
            col.warn(
                f"column '{tc.header}' has no unit; read as seconds (name it {tc.base}_s, "
                f"{tc.base}_ms or {tc.base}_us to say so)",
                field=tc.header,
            )
        return
    label = UNIT_LABEL.get(tc.unit, tc.unit)
    if vmax > hi:
        col.warn(
            f"column '{tc.header}' is in {label} but holds {what} up to {vmax:g} s; check the unit",
            field=tc.header,
        )
    elif vmin < _MIN_PLAUSIBLE_S[kind]:
        col.warn(
            f"column '{tc.header}' is in {label} but holds {what} down to {vmin:g} s; "
            f"check the unit",
            field=tc.header,
        )


# --------------------------------------------------------------------------------------------
# CSV


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


# --------------------------------------------------------------------------------------------
# Mechanisms

_MECHANISM_ALIASES: dict[str, Mechanism] = {
    "external": "external",
    "external_draft": "external",
    "draft": "external",
    "draft_model": "external",
    "draft_target": "external",
    "standalone": "external",
    "small_model": "external",
    "mtp": "mtp",
    "nextn": "mtp",
    "deepseek_mtp": "mtp",
    "eagle3": "eagle3",
    "eagle_3": "eagle3",
    "dflash": "dflash",
    "dspark": "dspark",
    "ngram": "ngram",
    "n_gram": "ngram",
    "prompt_lookup": "ngram",
    "suffix": "ngram",
    "suffix_decoding": "ngram",
}
KNOWN_MECHANISMS_TEXT = ", ".join(KNOWN_MECHANISMS)


def normalize_mechanism(raw: str) -> tuple[Mechanism | None, DraftStyle | None, bool]:
    """(mechanism, draft style, recognised). Empty text is (None, None, True).

    Accepts the names engines and papers use: 'EAGLE3', 'eagle3_chain', 'draft_model',
    'ngram_prompt_lookup', 'dflash_block_diffusion (5 layers)', 'MTP (nextn)', ...
    """
    s = re.sub(r"\([^)]*\)", " ", raw.strip().lower())
    s = re.sub(r"[^0-9a-z]+", "_", s).strip("_")
    if not s:
        return None, None, True
    mech: Mechanism | None = _MECHANISM_ALIASES.get(s)
    if mech is None:
        parts = s.split("_")
        for i in range(len(parts) - 1, 0, -1):
            mech = _MECHANISM_ALIASES.get("_".join(parts[:i]))
            if mech is not None:
                break
    if mech is None:
        return None, None, False
    return mech, infer_draft_style(mech, s), True


def infer_draft_style(mech: Mechanism | None, text: str = "") -> DraftStyle | None:
    t = text.lower()
    if "tree" in t:
        return None
    if "block" in t or mech in ("dflash", "dspark"):
        return "block"
    if "chain" in t or mech in ("external", "mtp", "eagle3", "ngram"):
        return "chain"
    return None


def parse_draft_style(raw: str) -> tuple[DraftStyle | None, bool]:
    s = raw.strip().lower()
    if not s:
        return None, True
    if s in ("chain", "linear", "autoregressive", "ar", "chain_analytic"):
        return "chain", True
    if s in ("block", "parallel", "block_parallel", "measured_per_k"):
        return "block", True
    if s == "tree":
        return None, True
    return None, False


def unknown_mechanism_message(raw: str) -> str:
    return f"unknown mechanism '{raw}'; known mechanisms: {KNOWN_MECHANISMS_TEXT}"


# --------------------------------------------------------------------------------------------
# Curves


def build_curve(
    col: Collector,
    *,
    label: str,
    mechanism: Mechanism | None,
    draft_style: DraftStyle | None,
    draft_lens: Sequence[int],
    als: Sequence[float],
    provenance: Provenance,
    conditional: Sequence[float] | None = None,
    max_supported: int | None = None,
    rows: Sequence[int | None] | None = None,
    fields: Sequence[str | None] | None = None,
) -> AcceptanceCurve | None:
    """Check the AL bounds and monotonicity of one curve, then build it (None on errors)."""
    n = len(draft_lens)
    rows_ = list(rows) if rows is not None else [None] * n
    fields_ = list(fields) if fields is not None else ["AL"] * n
    ok = True
    for d, a, r, f in zip(draft_lens, als, rows_, fields_, strict=True):
        if not math.isfinite(a):
            col.error(f"{label}: AL at D={d} is not a finite number", r, f)
            ok = False
        elif a < 1.0 or a > 1.0 + d + AL_BOUND_TOLERANCE:
            col.error(
                f"{label}: AL {a:g} at D={d} is outside [1, {1 + d}] (AL counts the bonus "
                f"token, so 1 <= AL <= 1 + D)",
                r,
                f,
            )
            ok = False
    for i in range(1, n):
        if ok and als[i] < als[i - 1] - 1e-12:
            col.warn(
                f"{label}: AL falls from {als[i - 1]:g} at D={draft_lens[i - 1]} to {als[i]:g} "
                f"at D={draft_lens[i]} (AL should not decrease with D)",
                rows_[i],
                fields_[i],
            )
    if max_supported is not None and draft_lens and max_supported < max(draft_lens):
        col.error(
            f"{label}: measured at D={max(draft_lens)} but the maximum supported draft length "
            f"is {max_supported}",
            None,
            "max_supported_draft_len",
        )
        ok = False
    if not ok:
        return None
    try:
        return AcceptanceCurve(
            label=label,
            mechanism=mechanism,
            draft_style=draft_style,
            draft_lens=tuple(int(d) for d in draft_lens),
            acceptance_lengths=tuple(float(a) for a in als),
            conditional_rates=None if conditional is None else tuple(float(c) for c in conditional),
            provenance=provenance,
            max_supported_draft_len=max_supported,
        )
    except ValidationError as exc:
        col.error(f"{label}: {validation_message(exc)}")
        return None


def conditional_rates_of(marginal: npt.ArrayLike) -> list[float]:
    """Conditional rates from marginals, kept in [0, 1] (rising marginals are warned about)."""
    with np.errstate(all="ignore"):
        c = conditional_from_marginal(marginal)
    return [float(x) for x in np.clip(np.nan_to_num(c, nan=0.0, posinf=1.0), 0.0, 1.0)]


def check_rates(
    col: Collector,
    rates: Sequence[float],
    *,
    field: str,
    rows: Sequence[int | None] | None = None,
    what: str = "rate",
) -> bool:
    """Every rate in [0, 1]; errors name the position (1-based) and field."""
    ok = True
    for i, r in enumerate(rates):
        row = rows[i] if rows is not None else None
        f = field if rows is not None else f"{field}[{i}]"
        if not (math.isfinite(r) and 0.0 <= r <= 1.0):
            col.error(f"{what} at position {i + 1} is {r:g}, outside [0, 1]", row, f)
            ok = False
    return ok


def warn_if_marginals_increase(
    col: Collector, marginal: Sequence[float], *, label: str, field: str | None = None
) -> None:
    for i in range(1, len(marginal)):
        if marginal[i] > marginal[i - 1] + 1e-9:
            col.warn(
                f"{label}: marginal acceptance rises from {marginal[i - 1]:g} at position {i} "
                f"to {marginal[i]:g} at position {i + 1}; a survival probability cannot rise "
                f"(malformed data, or these are conditional rates)",
                None,
                field,
            )


def check_al_consistency(
    col: Collector,
    reported_al: float,
    marginal: Sequence[float],
    *,
    label: str,
    field: str | None,
    row: int | None = None,
) -> None:
    implied = 1.0 + float(sum(marginal))
    if abs(implied - reported_al) > AL_CONSISTENCY_TOL:
        col.error(
            f"{label}: reported AL {reported_al:.6g} disagrees with 1 + sum of marginal rates "
            f"= {implied:.6g} (difference {reported_al - implied:+.4g}, tolerance "
            f"{AL_CONSISTENCY_TOL})",
            row,
            field,
        )


# --------------------------------------------------------------------------------------------
# JSON


def load_json(text: str, col: Collector) -> object | None:
    try:
        parsed: object = json.loads(text)
        return parsed
    except json.JSONDecodeError as exc:
        col.error(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", exc.lineno)
    except RecursionError:
        col.error("not usable JSON: nested too deeply")
    except ValueError as exc:
        col.error(f"not valid JSON: {exc}")
    return None


def json_number(value: object) -> float | None:
    """A JSON number (not a bool) as float, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def json_int(value: object) -> int | None:
    v = json_number(value)
    if v is None or not math.isfinite(v) or v != int(v) or abs(v) > MAX_INT:
        return None
    return int(v)


def int_key(key: str) -> int | None:
    try:
        v = int(str(key).strip())
    except ValueError:
        return None
    return v if abs(v) <= MAX_INT else None


def join_nonempty(parts: Iterable[str | None], sep: str = " · ") -> str:
    return sep.join(p for p in parts if p)
