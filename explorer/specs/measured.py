"""Validated datasets produced by the measured-data parsers.

Everything here is SI: times in seconds. Tables are stored as parallel tuples (one tuple per
column), which keeps the models frozen and hashable while still loading 100k rows quickly; use
``to_frame()`` for a pandas view.
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, model_validator

Mechanism = Literal["external", "mtp", "eagle3", "dflash", "dspark", "ngram"]
KNOWN_MECHANISMS: tuple[Mechanism, ...] = ("external", "mtp", "eagle3", "dflash", "dspark", "ngram")
DraftStyle = Literal["chain", "block"]
Severity = Literal["error", "warning"]

# An AL may exceed 1 + D by at most this much (float noise only; rounding is the file's problem).
AL_BOUND_TOLERANCE = 1e-9


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _all_finite(values: tuple[float, ...]) -> bool:
    return bool(np.isfinite(np.asarray(values, dtype=np.float64)).all()) if values else True


def _equal_lengths(name: str, columns: dict[str, tuple[object, ...] | None]) -> int:
    lengths = {key: len(col) for key, col in columns.items() if col is not None}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{name}: columns have different lengths {lengths}")
    return next(iter(lengths.values()), 0)


class Provenance(_Frozen):
    """Where a dataset came from: the uploaded file and what the file says about itself."""

    file: str
    source: str | None = None
    model: str | None = None
    dataset: str | None = None
    temperature: float | None = None
    format: str

    @model_validator(mode="after")
    def _check(self) -> Provenance:
        t = self.temperature
        if t is not None and (not math.isfinite(t) or t < 0):
            raise ValueError(f"temperature must be a finite number >= 0, got {t}")
        return self


class AcceptanceCurve(_Frozen):
    """Acceptance length AL (tokens per target step, bonus token included) by draft length D.

    ``acceptance_lengths[i]`` is AL at ``draft_lens[i]``; 1 <= AL <= 1 + D.
    ``conditional_rates[j]`` is the conditional acceptance c_{j+1} of draft position j + 1.
    A block drafter (``draft_style == "block"``) is only valid at its measured draft lengths.
    """

    label: str
    mechanism: Mechanism | None = None
    draft_style: DraftStyle | None = None
    draft_lens: tuple[int, ...]
    acceptance_lengths: tuple[float, ...]
    conditional_rates: tuple[float, ...] | None = None
    provenance: Provenance
    max_supported_draft_len: int | None = None

    @model_validator(mode="after")
    def _check(self) -> AcceptanceCurve:
        d, al = self.draft_lens, self.acceptance_lengths
        if not d:
            raise ValueError("a curve needs at least one point")
        if len(d) != len(al):
            raise ValueError(f"draft_lens has {len(d)} entries but acceptance_lengths {len(al)}")
        if d[0] < 1 or any(b <= a for a, b in pairwise(d)):
            raise ValueError(f"draft_lens must be >= 1 and strictly increasing, got {d}")
        for dl, a in zip(d, al, strict=True):
            if not (math.isfinite(a) and 1.0 <= a <= 1.0 + dl + AL_BOUND_TOLERANCE):
                raise ValueError(f"AL {a} at D={dl} is outside [1, {1 + dl}]")
        rates = self.conditional_rates
        if rates is not None:
            if not rates:
                raise ValueError("conditional_rates, when given, must not be empty")
            if not all(math.isfinite(r) and 0.0 <= r <= 1.0 for r in rates):
                raise ValueError("conditional_rates must lie in [0, 1]")
        if self.max_supported_draft_len is not None and self.max_supported_draft_len < 1:
            raise ValueError("max_supported_draft_len must be >= 1")
        return self


class StepTimingTable(_Frozen):
    """Measured target step time by batch and draft length (draft_len 0 = no speculation)."""

    batch: tuple[int, ...]
    draft_len: tuple[int, ...]
    verify_tokens: tuple[int, ...] | None = None
    step_time_s: tuple[float, ...]
    acceptance_length: tuple[float | None, ...] | None = None
    provenance: Provenance

    @model_validator(mode="after")
    def _check(self) -> StepTimingTable:
        n = _equal_lengths(
            "StepTimingTable",
            {
                "batch": self.batch,
                "draft_len": self.draft_len,
                "verify_tokens": self.verify_tokens,
                "step_time_s": self.step_time_s,
                "acceptance_length": self.acceptance_length,
            },
        )
        if n == 0:
            raise ValueError("StepTimingTable needs at least one row")
        if min(self.batch) < 1 or min(self.draft_len) < 0:
            raise ValueError("batch must be >= 1 and draft_len >= 0")
        if self.verify_tokens is not None and min(self.verify_tokens) < 1:
            raise ValueError("verify_tokens must be >= 1")
        if not _all_finite(self.step_time_s) or min(self.step_time_s) <= 0:
            raise ValueError("step_time_s must be finite and > 0")
        if self.acceptance_length is not None:
            for dl, a in zip(self.draft_len, self.acceptance_length, strict=True):
                if a is not None and not (math.isfinite(a) and 1.0 <= a <= 1.0 + dl + 1e-9):
                    raise ValueError(f"acceptance_length {a} at draft_len {dl} outside [1, 1+D]")
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


class GemmTimings(_Frozen):
    """GEMM latencies: C[m, n] = A[m, k] · B[k, n] (m = tokens)."""

    m: tuple[int, ...] = ()
    n: tuple[int, ...] = ()
    k: tuple[int, ...] = ()
    dtype: tuple[str, ...] = ()
    time_s: tuple[float, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> GemmTimings:
        rows = _equal_lengths(
            "GemmTimings",
            {"m": self.m, "n": self.n, "k": self.k, "dtype": self.dtype, "time_s": self.time_s},
        )
        if rows and min(min(self.m), min(self.n), min(self.k)) < 1:
            raise ValueError("m, n, k must be >= 1")
        if rows and (not _all_finite(self.time_s) or min(self.time_s) <= 0):
            raise ValueError("time_s must be finite and > 0")
        return self

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
    """Decode/verify attention latencies: ``q_len`` query tokens per sequence over ``context``."""

    batch: tuple[int, ...] = ()
    context: tuple[int, ...] = ()
    q_heads: tuple[int, ...] = ()
    kv_heads: tuple[int, ...] = ()
    head_dim: tuple[int, ...] = ()
    q_len: tuple[int, ...] = ()
    kv_dtype: tuple[str, ...] | None = None
    time_s: tuple[float, ...] = ()

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
        rows = _equal_lengths(
            "AttentionTimings", {**ints, "kv_dtype": self.kv_dtype, "time_s": self.time_s}
        )
        if rows and min(min(col) for col in ints.values()) < 1:
            raise ValueError("batch, context, q_heads, kv_heads, head_dim, q_len must be >= 1")
        if rows and (not _all_finite(self.time_s) or min(self.time_s) <= 0):
            raise ValueError("time_s must be finite and > 0")
        return self

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


class KernelTimingTable(_Frozen):
    """Per-kernel measurements that can replace the analytic GEMM/attention roofline."""

    gemm: GemmTimings = GemmTimings()
    attention: AttentionTimings = AttentionTimings()
    provenance: Provenance

    @model_validator(mode="after")
    def _check(self) -> KernelTimingTable:
        if not self.gemm.time_s and not self.attention.time_s:
            raise ValueError("KernelTimingTable needs at least one gemm or attention row")
        return self


class Problem(_Frozen):
    """One thing wrong (error) or doubtful (warning) in an uploaded file.

    ``row`` is the 1-based data row (CSV: the first row after the header is 1; JSONL and
    Prometheus text: the line number); ``field`` names the column, key or JSON path.
    """

    row: int | None = None
    field: str | None = None
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        where = []
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        prefix = f"{self.severity}" + (f" ({', '.join(where)})" if where else "")
        return f"{prefix}: {self.message}"


class ParseResult(_Frozen):
    """The outcome of parsing one file. A result with errors holds no datasets."""

    format: str
    summary: str
    curves: tuple[AcceptanceCurve, ...] = ()
    step_timings: StepTimingTable | None = None
    kernel_timings: KernelTimingTable | None = None
    problems: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "warning")

    @model_validator(mode="after")
    def _no_data_with_errors(self) -> ParseResult:
        has_data = bool(self.curves) or self.step_timings is not None
        if not self.ok and (has_data or self.kernel_timings is not None):
            raise ValueError("a result with errors must not hold datasets")
        return self
