"""Measured data, one type per concept: AL curves, kernel timings and step timings.

The parsers produce these, the Scenario embeds them as they are, the calibration fits them and
the model's corrections read them. Everything is SI: times in seconds. Tables are parallel
tuples (one per column), which keeps the models frozen and hashable while still loading 100k
rows quickly; ``to_frame()`` gives a pandas view. Dtype columns hold the canonical spelling
(explorer/base/dtypes.py) whatever the file wrote.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from explorer.base.dtypes import normalize_dtype
from explorer.base.limits import (
    AL_BOUND_TOLERANCE,
    MAX_CURVE_POINTS,
    MAX_FIELD_CHARS,
    MAX_LABEL_CHARS,
    MAX_MEASURED_DRAFT_LEN,
    MAX_MEASURED_ROWS,
    MAX_MESSAGE_CHARS,
    MAX_SOURCE_CHARS,
    MAX_TIME_S,
    MIN_TIME_S,
)
from explorer.base.mechanisms import BUILTIN_MECHANISMS, MechanismSlug
from explorer.base.quoting import bounded

# A registered mechanism's slug (explorer/specs/mechanism.py: the registry, not a Literal).
Mechanism = MechanismSlug
KNOWN_MECHANISMS: tuple[str, ...] = BUILTIN_MECHANISMS
DraftStyle = Literal["chain", "block"]
Severity = Literal["error", "warning"]


def al_within_bounds(acceptance_length: npt.ArrayLike, draft_len: npt.ArrayLike
                     ) -> npt.NDArray[np.bool_]:
    """The one AL bound check, 1 ≤ AL ≤ 1 + D (AL counts the bonus token), per point."""
    al = np.asarray(acceptance_length, dtype=np.float64)
    d = np.asarray(draft_len, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.asarray(np.isfinite(al) & (al >= 1.0) & (al <= 1.0 + d + AL_BOUND_TOLERANCE))


def times_within_bounds(seconds: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """The one check of a measured time: finite and in [MIN_TIME_S, MAX_TIME_S], per value."""
    t = np.asarray(seconds, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.asarray(np.isfinite(t) & (t >= MIN_TIME_S) & (t <= MAX_TIME_S))


TIME_BOUNDS_TEXT = f"finite and in [{MIN_TIME_S:g}, {MAX_TIME_S:g}] s"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _check_times(name: str, values: tuple[float, ...]) -> None:
    ok = times_within_bounds(values)
    if not ok.all():
        i = int(np.argmin(ok))
        raise ValueError(f"{name} must be {TIME_BOUNDS_TEXT}, got {values[i]!r} at row {i + 1}")


def _display_text(value: object, limit: int) -> object:
    """Text shown to people (labels, sources, messages): controls escaped, cut to the limit."""
    return bounded(value, limit) if isinstance(value, str) else value


def _equal_lengths(name: str, columns: dict[str, tuple[object, ...] | None]) -> None:
    lengths = {key: len(col) for key, col in columns.items() if col is not None}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{name}: columns have different lengths {lengths}")


def _canonical(dtypes: tuple[str, ...]) -> tuple[str, ...]:
    """Dtype columns hold the canonical spelling, so every consumer matches them alike."""
    canonical = {d: normalize_dtype(d) for d in set(dtypes)}  # a table names a few dtypes
    return tuple(canonical[d] for d in dtypes)


def _column(values: npt.ArrayLike, rows: int, name: str) -> list[Any]:
    """Plain Python values of one column; a scalar or length-1 column broadcasts to `rows`."""
    arr = np.atleast_1d(np.asarray(values)).reshape(-1)
    if arr.size not in (1, rows):
        raise ValueError(f"columns have different lengths: {name} has {arr.size} values for "
                         f"{rows} rows")
    return list(np.broadcast_to(arr, (rows,)).tolist())


def _rows(*columns: npt.ArrayLike) -> int:
    return max(np.atleast_1d(np.asarray(c)).size for c in columns)


def _strings(values: Sequence[str] | str, rows: int, name: str) -> tuple[str, ...]:
    """One string for every row, or one per row."""
    if isinstance(values, str):
        return (values,) * rows
    if len(values) != rows:
        raise ValueError(f"{name}: {len(values)} values for {rows} rows")
    return tuple(str(v) for v in values)


class Provenance(_Frozen):
    """Where a dataset came from: the file and what the file says about itself. Texts longer
    than the storage limit are cut (they describe the data; they are not the data)."""

    file: str
    source: str | None = None
    model: str | None = None
    drafter: str | None = None
    dataset: str | None = None
    temperature: float | None = None
    format: str

    @field_validator("file", "source", "model", "drafter", "dataset", "format", mode="before")
    @classmethod
    def _cut(cls, value: object) -> object:
        return _display_text(value, MAX_SOURCE_CHARS)

    @model_validator(mode="after")
    def _check(self) -> Provenance:
        t = self.temperature
        if t is not None and (not math.isfinite(t) or t < 0):
            raise ValueError(f"temperature must be a finite number >= 0, got {t}")
        return self

    def text(self) -> str:
        """One line: what the data is, then which file it was read from."""
        parts = (self.source, self.drafter and f"drafter {self.drafter}",
                 self.model and f"model {self.model}", self.dataset and f"dataset {self.dataset}",
                 self.temperature is not None and f"temperature {self.temperature:g}",
                 f"file {self.file} ({self.format})")
        return "; ".join(x for x in parts if x)


class _Sourced(_Frozen):
    """A dataset with a one-line source text and, where it was parsed, its provenance.

    `source` is free text (a scenario saved before provenance was recorded, a hand-written
    JSON); empty, the text comes from the provenance."""

    source: str = Field(default="", max_length=MAX_SOURCE_CHARS)
    provenance: Provenance | None = None

    @field_validator("source", mode="before")
    @classmethod
    def _safe_source(cls, value: object) -> object:
        return _display_text(value, MAX_SOURCE_CHARS)

    @property
    def source_text(self) -> str:
        if self.source:
            return self.source
        return self.provenance.text() if self.provenance is not None else ""


class AcceptanceCurve(_Sourced):
    """Acceptance length AL (tokens per target step, bonus token included) by draft length D.

    ``acceptance_lengths[i]`` is AL at ``draft_lens[i]``; 1 <= AL <= 1 + D.
    ``conditional_rates[j]`` is the conditional acceptance c_{j+1} of draft position j + 1.
    A block drafter (``draft_style == "block"``) is only valid at its measured draft lengths.
    An upload, a shipped sample (data/al_curves.csv) and a scenario's curve are all this type.
    """

    label: str = Field(default="measured", max_length=MAX_LABEL_CHARS)
    mechanism: Mechanism | None = None
    draft_style: DraftStyle | None = None
    draft_lens: tuple[int, ...] = Field(min_length=1, max_length=MAX_CURVE_POINTS)
    acceptance_lengths: tuple[float, ...] = Field(min_length=1, max_length=MAX_CURVE_POINTS)
    conditional_rates: tuple[float, ...] | None = Field(default=None,
                                                        max_length=MAX_CURVE_POINTS)
    max_supported_draft_len: int | None = None
    # standard error of AL at each measured D, from the source's counts or per-request values;
    # None where it gives means only (then the measured points carry no interval)
    al_std_errors: tuple[float, ...] | None = Field(default=None, max_length=MAX_CURVE_POINTS)

    @field_validator("label", mode="before")
    @classmethod
    def _safe_label(cls, value: object) -> object:
        return _display_text(value, MAX_LABEL_CHARS)

    @model_validator(mode="after")
    def _check(self) -> AcceptanceCurve:
        d, al = self.draft_lens, self.acceptance_lengths
        if len(d) != len(al):
            raise ValueError(f"draft_lens has {len(d)} entries but acceptance_lengths {len(al)}")
        if d[0] < 1 or any(b <= a for a, b in pairwise(d)):
            raise ValueError(f"draft_lens must be >= 1 and strictly increasing, got {d[:8]}")
        if d[-1] > MAX_MEASURED_DRAFT_LEN:
            raise ValueError(f"draft_lens must be <= {MAX_MEASURED_DRAFT_LEN}, got {d[-1]}")
        ok = al_within_bounds(al, d)
        if not ok.all():
            i = int(np.argmin(ok))
            raise ValueError(f"AL {al[i]} at D={d[i]} is outside [1, 1+D] = [1, {1 + d[i]}]")
        rates = self.conditional_rates
        if rates is not None:
            if not rates:
                raise ValueError("conditional_rates, when given, must not be empty")
            if not all(math.isfinite(r) and 0.0 <= r <= 1.0 for r in rates):
                raise ValueError("conditional_rates must lie in [0, 1]")
        if self.max_supported_draft_len is not None and self.max_supported_draft_len < 1:
            raise ValueError("max_supported_draft_len must be >= 1")
        se = self.al_std_errors
        if se is not None:
            if len(se) != len(d):
                raise ValueError(f"al_std_errors has {len(se)} entries but draft_lens {len(d)}")
            if not all(math.isfinite(x) and 0.0 <= x <= d_ for x, d_ in zip(se, d, strict=True)):
                raise ValueError("al_std_errors must be finite and within [0, D]")
        return self

    def with_label(self, label: str) -> AcceptanceCurve:
        """The same curve under another label (controls escaped, cut to the label limit)."""
        return self.model_copy(update={"label": bounded(label, MAX_LABEL_CHARS)})


def _rows_field() -> Any:
    return Field(min_length=1, max_length=MAX_MEASURED_ROWS)


class GemmTimings(_Frozen):
    """GEMM latencies C[m, n] = A[m, k] · W[k, n] (m = tokens), one row per kernel."""

    m: tuple[int, ...] = _rows_field()
    n: tuple[int, ...] = _rows_field()
    k: tuple[int, ...] = _rows_field()
    dtype: tuple[str, ...] = _rows_field()
    time_s: tuple[float, ...] = _rows_field()

    @field_validator("dtype")
    @classmethod
    def _canonical_dtype(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _canonical(v)

    @model_validator(mode="after")
    def _check(self) -> GemmTimings:
        _equal_lengths(
            "GemmTimings",
            {"m": self.m, "n": self.n, "k": self.k, "dtype": self.dtype, "time_s": self.time_s},
        )
        if min(min(self.m), min(self.n), min(self.k)) < 1:
            raise ValueError("m, n, k must be >= 1")
        _check_times("time_s", self.time_s)
        return self

    @classmethod
    def from_columns(cls, m: npt.ArrayLike, n: npt.ArrayLike, k: npt.ArrayLike,
                     dtype: Sequence[str] | str, time_s: npt.ArrayLike) -> GemmTimings:
        """From arrays or sequences; a scalar column (or one dtype string) fills every row."""
        rows = _rows(m, n, k, time_s)
        return cls(m=tuple(_column(m, rows, "m")), n=tuple(_column(n, rows, "n")),
                   k=tuple(_column(k, rows, "k")), dtype=_strings(dtype, rows, "dtype"),
                   time_s=tuple(_column(time_s, rows, "time_s")))

    def __len__(self) -> int:
        return len(self.time_s)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "m": np.asarray(self.m, dtype=np.int64),
                "n": np.asarray(self.n, dtype=np.int64),
                "k": np.asarray(self.k, dtype=np.int64),
                "dtype": list(self.dtype),
                "time_s": np.asarray(self.time_s, dtype=np.float64),
            }
        )


class AttentionTimings(_Frozen):
    """Decode/verify attention latencies of one layer: ``q_len`` new tokens per sequence over
    a KV cache of ``context`` tokens, q_heads/kv_heads heads of head_dim. ``kv_dtype`` None:
    the KV dtype was not recorded."""

    batch: tuple[int, ...] = _rows_field()
    context: tuple[int, ...] = _rows_field()
    q_heads: tuple[int, ...] = _rows_field()
    kv_heads: tuple[int, ...] = _rows_field()
    head_dim: tuple[int, ...] = _rows_field()
    q_len: tuple[int, ...] = _rows_field()
    kv_dtype: tuple[str, ...] | None = Field(default=None, min_length=1,
                                            max_length=MAX_MEASURED_ROWS)
    time_s: tuple[float, ...] = _rows_field()

    @field_validator("kv_dtype")
    @classmethod
    def _canonical_dtype(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if v is None else _canonical(v)

    @model_validator(mode="after")
    def _check(self) -> AttentionTimings:
        ints = {
            "batch": self.batch,
            "context": self.context,
            "q_heads": self.q_heads,
            "kv_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "q_len": self.q_len,
        }
        _equal_lengths("AttentionTimings", {**ints, "kv_dtype": self.kv_dtype,
                                            "time_s": self.time_s})
        if min(min(col) for col in ints.values()) < 1:
            raise ValueError("batch, context, q_heads, kv_heads, head_dim, q_len must be >= 1")
        _check_times("time_s", self.time_s)
        return self

    @classmethod
    def from_columns(cls, batch: npt.ArrayLike, context: npt.ArrayLike, q_heads: npt.ArrayLike,
                     kv_heads: npt.ArrayLike, head_dim: npt.ArrayLike, q_len: npt.ArrayLike,
                     time_s: npt.ArrayLike, kv_dtype: Sequence[str] | str | None = None,
                     ) -> AttentionTimings:
        """From arrays or sequences; a scalar column (or one kv_dtype string) fills every row."""
        cols = {"batch": batch, "context": context, "q_heads": q_heads, "kv_heads": kv_heads,
                "head_dim": head_dim, "q_len": q_len, "time_s": time_s}
        rows = _rows(*cols.values())
        values = {key: tuple(_column(v, rows, key)) for key, v in cols.items()}
        kv = None if kv_dtype is None else _strings(kv_dtype, rows, "kv_dtype")
        return cls(**values, kv_dtype=kv)

    def __len__(self) -> int:
        return len(self.time_s)

    def to_frame(self) -> pd.DataFrame:
        data: dict[str, object] = {
            "batch": np.asarray(self.batch, dtype=np.int64),
            "context": np.asarray(self.context, dtype=np.int64),
            "q_heads": np.asarray(self.q_heads, dtype=np.int64),
            "kv_heads": np.asarray(self.kv_heads, dtype=np.int64),
            "head_dim": np.asarray(self.head_dim, dtype=np.int64),
            "q_len": np.asarray(self.q_len, dtype=np.int64),
            "time_s": np.asarray(self.time_s, dtype=np.float64),
        }
        if self.kv_dtype is not None:
            data["kv_dtype"] = list(self.kv_dtype)
        return pd.DataFrame(data)


class KernelTimings(_Sourced):
    """Per-kernel measurements: they replace the roofline for matching shapes and calibrate
    its efficiencies."""

    gemm: GemmTimings | None = None
    attention: AttentionTimings | None = None

    @model_validator(mode="after")
    def _check(self) -> KernelTimings:
        if self.gemm is None and self.attention is None:
            raise ValueError("kernel timings need at least one gemm or attention row")
        return self


class StepTimings(_Sourced):
    """Measured decode steps by (B, D); D = 0 is plain decoding. With ``includes_draft`` a row
    is a whole round T_verif(B·(1+D)) + T_draft(B, D), else the target's verify step alone.
    Where the table covers a point it replaces the model's time there."""

    batch: tuple[int, ...] = _rows_field()
    draft_len: tuple[int, ...] = _rows_field()
    verify_tokens: tuple[int, ...] | None = Field(default=None, min_length=1,
                                                 max_length=MAX_MEASURED_ROWS)
    step_time_s: tuple[float, ...] = _rows_field()
    acceptance_length: tuple[float | None, ...] | None = Field(default=None, min_length=1,
                                                               max_length=MAX_MEASURED_ROWS)
    includes_draft: bool = True

    @model_validator(mode="after")
    def _check(self) -> StepTimings:
        _equal_lengths(
            "StepTimings",
            {
                "batch": self.batch,
                "draft_len": self.draft_len,
                "verify_tokens": self.verify_tokens,
                "step_time_s": self.step_time_s,
                "acceptance_length": self.acceptance_length,
            },
        )
        if min(self.batch) < 1 or min(self.draft_len) < 0:
            raise ValueError("batch must be >= 1 and draft_len >= 0")
        if self.verify_tokens is not None and min(self.verify_tokens) < 1:
            raise ValueError("verify_tokens must be >= 1")
        _check_times("step_time_s", self.step_time_s)
        if self.acceptance_length is not None:
            pairs = [(a, d) for a, d in zip(self.acceptance_length, self.draft_len, strict=True)
                     if a is not None]
            if pairs:
                al, d = np.asarray(pairs, dtype=np.float64).T
                ok = al_within_bounds(al, d)
                if not ok.all():
                    i = int(np.argmin(ok))
                    raise ValueError(f"acceptance_length {al[i]:g} at draft_len {d[i]:g} "
                                     "outside [1, 1+D]")
        return self

    def to_frame(self) -> pd.DataFrame:
        data: dict[str, object] = {
            "batch": np.asarray(self.batch, dtype=np.int64),
            "draft_len": np.asarray(self.draft_len, dtype=np.int64),
            "step_time_s": np.asarray(self.step_time_s, dtype=np.float64),
        }
        if self.verify_tokens is not None:
            data["verify_tokens"] = np.asarray(self.verify_tokens, dtype=np.int64)
        if self.acceptance_length is not None:
            data["acceptance_length"] = np.asarray(
                [np.nan if a is None else a for a in self.acceptance_length], dtype=np.float64
            )
        return pd.DataFrame(data)


class Problem(_Frozen):
    """One thing wrong (error) or doubtful (warning) in an uploaded file.

    ``row`` is the 1-based data row (CSV: the first row after the header is 1; JSONL and
    Prometheus text: the line number); ``field`` names the column, key or JSON path.
    """

    row: int | None = None
    field: str | None = None
    message: str
    severity: Severity = "error"

    @field_validator("message", mode="before")
    @classmethod
    def _safe_message(cls, value: object) -> object:
        return _display_text(value, MAX_MESSAGE_CHARS)

    @field_validator("field", mode="before")
    @classmethod
    def _safe_field(cls, value: object) -> object:
        return _display_text(value, MAX_FIELD_CHARS)

    def __str__(self) -> str:
        where = []
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        prefix = f"{self.severity}" + (f" ({', '.join(where)})" if where else "")
        return f"{prefix}: {self.message}"


_OVERALL_WORDS = ("overall", "mean of", "average", "all categories", "all datasets")


def _is_overall(curve: AcceptanceCurve) -> bool:
    dataset = (curve.provenance.dataset if curve.provenance is not None else None) or ""
    return any(w in dataset.lower() for w in _OVERALL_WORDS)


class ParseResult(_Frozen):
    """The outcome of parsing one file. A result with errors holds no datasets."""

    format: str
    summary: str
    curves: tuple[AcceptanceCurve, ...] = ()
    step_timings: StepTimings | None = None
    kernel_timings: KernelTimings | None = None
    problems: tuple[Problem, ...] = ()

    @field_validator("summary", mode="before")
    @classmethod
    def _safe_summary(cls, value: object) -> object:
        return _display_text(value, MAX_MESSAGE_CHARS)

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "warning")

    def default_curve_index(self, mechanism: str | None = None) -> int | None:
        """Which curve a file stands for when nobody picks one: among the curves of `mechanism`
        (or without one; any curve when none match), the file's overall/mean row where it has
        one (a SPEED-Bench report's Overall, a per-category profile's mean), else the first —
        never silently its first category."""
        order = [i for i, c in enumerate(self.curves) if c.mechanism == mechanism] or [
            i for i, c in enumerate(self.curves) if c.mechanism is None] or list(
            range(len(self.curves)))
        if not order:
            return None
        overall = [i for i in order if _is_overall(self.curves[i])]
        return overall[0] if overall else order[0]

    @model_validator(mode="after")
    def _no_data_with_errors(self) -> ParseResult:
        has_data = bool(self.curves) or self.step_timings is not None
        if not self.ok and (has_data or self.kernel_timings is not None):
            raise ValueError("a result with errors must not hold datasets")
        return self
