"""Calibrate the cost model against measurements (DESIGN.md §2.1: efficiencies and fixed costs
"should come from measurements, not guesses").

Three fits, all vectorized:

* `fit_kernel_efficiencies` — per-kernel timings → GEMM η_c, η_m and the kernel floor, attention
  η_c, η_m. Least squares on log-time residuals of the roofline
  t = max(flops/(F·η_c), bytes/(BW·η_m), floor); parameters are fitted in log space, where the
  model is piecewise linear and its Jacobian is an exact indicator of the binding term.
* `fit_step_overheads` — whole-step times T(B, W) → step_overhead_s plus one multiplicative
  "efficiency scale" on the analytic per-layer part (launch latency and step overhead are
  collinear for one model, so only their sum is identifiable: it is reported as step overhead).
* `back_out_draft_cost` — speculative step times → T_draft = T_step − T_verif(B, 1+D) (model),
  next to the model's own T_draft(B, D).

A parameter that no measurement row constrains (e.g. η_c when every GEMM is memory-bound) keeps
its starting value and the result says so in `notes`: only a bound is known.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict
from scipy.optimize import least_squares

from explorer.model.grid import ScenarioModel
from explorer.model.kernels import attention_time, gemm_time
from explorer.model.layers import total
from explorer.specs.hardware import BYTES_PER_ELEMENT, HardwareOverrides, HardwareSpec

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
StrArray = npt.NDArray[np.str_]
Loss = Literal["linear", "soft_l1", "huber", "cauchy", "arctan"]

# Bounds of the fitted parameters (HardwareOverrides accepts η in (0, 1], floor in [0, 1 ms]).
EFFICIENCY_BOUNDS = (0.01, 1.0)
FLOOR_BOUNDS_S = (0.0, 1e-3)
# The floor is fitted in log space: 1 ns stands for "no floor" (0 is reported as such).
_FLOOR_LOG_MIN_S = 1e-9

# Dtype spellings seen in measurement files (aiconfigurator, torch) → the model's dtypes.
DTYPE_ALIASES: dict[str, str] = {
    "bf16": "bf16", "bfloat16": "bf16", "fp16": "bf16", "float16": "bf16", "half": "bf16",
    "torch.bfloat16": "bf16", "torch.float16": "bf16",
    "fp8": "fp8", "float8": "fp8", "fp8_e4m3": "fp8", "e4m3": "fp8", "fp8_block": "fp8",
    "float8_e4m3fn": "fp8", "torch.float8_e4m3fn": "fp8",
    "fp4": "fp4", "nvfp4": "fp4", "mxfp4": "fp4",
}


def normalize_dtype(name: str) -> str:
    """The model's dtype for a file's spelling (bfloat16 → bf16, nvfp4 → fp4); unknown names
    (int4_wo, sq, …) are returned lower-cased and are skipped by the fit."""
    key = name.strip().lower()
    return DTYPE_ALIASES.get(key, key)


def _ro_float(x: npt.ArrayLike) -> FloatArray:
    out = np.array(x, dtype=np.float64, copy=True).reshape(-1)
    out.flags.writeable = False
    return out


def _ro_int(x: npt.ArrayLike) -> IntArray:
    out = np.array(x, dtype=np.int64, copy=True).reshape(-1)
    out.flags.writeable = False
    return out


def _ro_bool(x: npt.ArrayLike) -> BoolArray:
    out = np.array(x, dtype=np.bool_, copy=True).reshape(-1)
    out.flags.writeable = False
    return out


def _ro_str(x: Sequence[str] | npt.NDArray[np.str_]) -> StrArray:
    out = np.array(list(x), dtype=np.str_).reshape(-1)
    out.flags.writeable = False
    return out


def _strings(values: Sequence[str] | str, rows: int, what: str) -> StrArray:
    if isinstance(values, str):
        return _ro_str([normalize_dtype(values)] * rows)
    if len(values) != rows:
        raise ValueError(f"{what}: {len(values)} values for {rows} rows")
    return _ro_str([normalize_dtype(v) for v in values])


def _columns(name: str, **columns: npt.ArrayLike) -> dict[str, FloatArray]:
    """Read-only float columns; length-1 columns (or scalars) broadcast to the others."""
    arrays = {k: np.atleast_1d(np.asarray(v, dtype=np.float64)).reshape(-1)
              for k, v in columns.items()}
    lengths = {k: v.size for k, v in arrays.items()}
    rows = max(lengths.values())
    if any(n not in (1, rows) for n in lengths.values()):
        raise ValueError(f"{name}: columns have different lengths {lengths}")
    return {k: _ro_float(np.broadcast_to(v, (rows,))) for k, v in arrays.items()}


def _check_columns(name: str, columns: dict[str, FloatArray], time_s: FloatArray) -> None:
    for key, col in columns.items():
        if col.size and (not np.isfinite(col).all() or col.min() < 1):
            raise ValueError(f"{name}: {key} must be finite and >= 1")
    if time_s.size and (not np.isfinite(time_s).all() or time_s.min() <= 0):
        raise ValueError(f"{name}: time_s must be finite and > 0")


# -- inputs ---------------------------------------------------------------------------------


class GemmColumns(Protocol):
    """Anything with GEMM columns, e.g. explorer.measured's GemmTimings (tuples)."""

    @property
    def m(self) -> Sequence[int]: ...
    @property
    def n(self) -> Sequence[int]: ...
    @property
    def k(self) -> Sequence[int]: ...
    @property
    def dtype(self) -> Sequence[str]: ...
    @property
    def time_s(self) -> Sequence[float]: ...


class AttentionColumns(Protocol):
    """Anything with attention columns, e.g. explorer.measured's AttentionTimings (tuples)."""

    @property
    def batch(self) -> Sequence[int]: ...
    @property
    def context(self) -> Sequence[int]: ...
    @property
    def q_heads(self) -> Sequence[int]: ...
    @property
    def kv_heads(self) -> Sequence[int]: ...
    @property
    def head_dim(self) -> Sequence[int]: ...
    @property
    def q_len(self) -> Sequence[int]: ...
    @property
    def kv_dtype(self) -> Sequence[str] | None: ...
    @property
    def time_s(self) -> Sequence[float]: ...


@dataclass(frozen=True)
class GemmTimings:
    """Measured GEMM latencies C[m, n] = A[m, k]·W[k, n] (m = tokens), one row per kernel."""

    m: FloatArray
    n: FloatArray
    k: FloatArray
    dtype: StrArray
    time_s: FloatArray

    @classmethod
    def from_columns(
        cls,
        m: npt.ArrayLike,
        n: npt.ArrayLike,
        k: npt.ArrayLike,
        dtype: Sequence[str] | str,
        time_s: npt.ArrayLike,
    ) -> GemmTimings:
        """Plain sequences (or arrays); `dtype` may be one string for every row."""
        cols = _columns("GemmTimings", m=m, n=n, k=k, time_s=time_s)
        t_ = cols.pop("time_s")
        _check_columns("GemmTimings", cols, t_)
        return cls(**cols, dtype=_strings(dtype, t_.size, "GemmTimings dtype"), time_s=t_)

    @classmethod
    def from_table(cls, table: GemmColumns) -> GemmTimings:
        """From explorer.measured's GemmTimings (or any object with these columns)."""
        return cls.from_columns(table.m, table.n, table.k, list(table.dtype), table.time_s)

    def __len__(self) -> int:
        return int(self.time_s.size)


@dataclass(frozen=True)
class AttentionTimings:
    """Measured decode/verify attention latencies: q_len new tokens per sequence over a KV
    cache of `context` tokens, q_heads/kv_heads heads of head_dim."""

    batch: FloatArray
    context: FloatArray
    q_heads: FloatArray
    kv_heads: FloatArray
    head_dim: FloatArray
    q_len: FloatArray
    kv_dtype: StrArray
    time_s: FloatArray

    @classmethod
    def from_columns(
        cls,
        batch: npt.ArrayLike,
        context: npt.ArrayLike,
        q_heads: npt.ArrayLike,
        kv_heads: npt.ArrayLike,
        head_dim: npt.ArrayLike,
        q_len: npt.ArrayLike,
        time_s: npt.ArrayLike,
        kv_dtype: Sequence[str] | str = "bf16",
    ) -> AttentionTimings:
        cols = _columns(
            "AttentionTimings", batch=batch, context=context, q_heads=q_heads,
            kv_heads=kv_heads, head_dim=head_dim, q_len=q_len, time_s=time_s,
        )
        t_ = cols.pop("time_s")
        _check_columns("AttentionTimings", cols, t_)
        kv = _strings(kv_dtype, t_.size, "AttentionTimings kv_dtype")
        return cls(**cols, kv_dtype=kv, time_s=t_)

    @classmethod
    def from_table(cls, table: AttentionColumns) -> AttentionTimings:
        kv = list(table.kv_dtype) if table.kv_dtype is not None else "bf16"
        return cls.from_columns(
            table.batch, table.context, table.q_heads, table.kv_heads, table.head_dim,
            table.q_len, table.time_s, kv,
        )

    def __len__(self) -> int:
        return int(self.time_s.size)


# -- results --------------------------------------------------------------------------------


class _Result(BaseModel):
    """Frozen result; its numpy arrays are read-only copies."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class Calibration(_Result):
    """Kernel efficiencies fitted to per-kernel timings (rows: GEMMs first, then attention)."""

    overrides: HardwareOverrides
    calibrated: HardwareSpec
    n_gemm: int
    n_attention: int
    mape_before: float
    mape_after: float
    mape_by_kind_before: dict[str, float]
    mape_by_kind_after: dict[str, float]
    measured_s: FloatArray
    predicted_before_s: FloatArray
    predicted_after_s: FloatArray
    kind: StrArray
    source_row: IntArray
    binding_rows: dict[str, int]
    notes: tuple[str, ...]
    summary: str


class StepCalibration(_Result):
    """Fixed per-step cost and a scale on the analytic per-layer part, fitted to step times.

    predicted_after = efficiency_scale·(T_model − step_overhead_model) + step_overhead_s.
    `overrides` carries step_overhead_s only; the scale has no HardwareOverrides field (it says
    how much faster/slower the kernels run than modelled: calibrate kernels to absorb it).
    `mape_overhead_only` is the model with the overrides alone applied (scale 1).
    """

    overrides: HardwareOverrides
    step_overhead_s: float
    step_overhead_before_s: float
    efficiency_scale: float
    mape_before: float
    mape_after: float
    mape_overhead_only: float
    batch: FloatArray
    width: FloatArray
    context: FloatArray
    measured_s: FloatArray
    predicted_before_s: FloatArray
    predicted_after_s: FloatArray
    notes: tuple[str, ...]
    summary: str


class DraftBackOut(_Result):
    """T_draft backed out of speculative step times: measured step − model T_verif(B, W)."""

    batch: FloatArray
    draft_len: FloatArray
    context: FloatArray
    width: FloatArray
    t_step_measured_s: FloatArray
    t_verif_model_s: FloatArray
    t_draft_measured_s: FloatArray
    t_draft_model_s: FloatArray
    ratio: FloatArray  # measured / model T_draft (nan where the model's T_draft is 0)
    negative: BoolArray
    n_negative: int
    message: str
    summary: str


def mape(predicted: npt.ArrayLike, measured: npt.ArrayLike) -> float:
    """Mean absolute percentage error of predicted vs measured, in %."""
    p, m = np.asarray(predicted, dtype=np.float64), np.asarray(measured, dtype=np.float64)
    if m.size == 0:
        return float("nan")
    return float(100.0 * np.mean(np.abs(p - m) / m))


# -- roofline fit ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _RooflineFit:
    compute_eff: float
    memory_eff: float
    floor_s: float
    binding: dict[str, int]
    notes: tuple[str, ...]


def _unit_hw(hw: HardwareSpec) -> HardwareSpec:
    """Efficiencies 1 and no floor: the kernels' compute_s/memory_s become the η = 1 terms."""
    return hw.model_copy(
        update={
            "gemm_compute_efficiency": 1.0, "gemm_memory_efficiency": 1.0,
            "attention_compute_efficiency": 1.0, "attention_memory_efficiency": 1.0,
            "kernel_floor_s": 0.0,
        }
    )


def _gemm_times(hw: HardwareSpec, g: GemmTimings) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(time, compute, memory) per row; gemm_time takes one dtype, so loop over the few."""
    t, c, mem = (np.empty(len(g)) for _ in range(3))
    for dt in np.unique(g.dtype):
        sel = g.dtype == dt
        kt = gemm_time(hw, g.m[sel], g.n[sel], g.k[sel], str(dt))
        t[sel], c[sel], mem[sel] = kt.time_s, kt.compute_s, kt.memory_s
    return t, c, mem


def _attention_times(
    hw: HardwareSpec, a: AttentionTimings
) -> tuple[FloatArray, FloatArray, FloatArray]:
    b_kv = np.array([BYTES_PER_ELEMENT[str(d)] for d in a.kv_dtype], dtype=np.float64)
    kt = attention_time(
        hw, a.batch, a.context, a.kv_heads, a.q_heads / a.kv_heads, a.q_len, a.head_dim,
        kv_bytes_per_token_head=2.0 * a.head_dim * b_kv,
    )
    return kt.time_s, kt.compute_s, kt.memory_s


def _fit_roofline(
    what: str,
    compute1_s: FloatArray,
    memory1_s: FloatArray,
    measured_s: FloatArray,
    start: tuple[float, float, float],
    fit_floor: bool,
    loss: Loss,
) -> _RooflineFit:
    """Fit t = max(c1/η_c, m1/η_m, floor) to measured t on log residuals.

    In log space log t = max(log c1 − x0, log m1 − x1, x2) is piecewise linear in
    x = (log η_c, log η_m, log floor); the Jacobian is the indicator of the binding term.
    Two starts (the given values and a data-driven one) guard against a term that binds no row
    at the start and so never moves.
    """
    lc, lm, lt = np.log(compute1_s), np.log(memory1_s), np.log(measured_s)
    e_lo, e_hi = np.log(EFFICIENCY_BOUNDS[0]), np.log(EFFICIENCY_BOUNDS[1])
    f_lo, f_hi = np.log(_FLOOR_LOG_MIN_S), np.log(FLOOR_BOUNDS_S[1])
    fixed_floor = np.log(start[2]) if start[2] > 0 else -np.inf
    lb = np.array([e_lo, e_lo] + ([f_lo] if fit_floor else []))
    ub = np.array([e_hi, e_hi] + ([f_hi] if fit_floor else []))

    def terms(x: FloatArray) -> FloatArray:
        floor = x[2] if fit_floor else fixed_floor
        return np.stack([lc - x[0], lm - x[1], np.full_like(lc, floor)], axis=1)

    def resid(x: FloatArray) -> FloatArray:
        return np.asarray(terms(x).max(axis=1) - lt, dtype=np.float64)

    def jac(x: FloatArray) -> FloatArray:
        which = terms(x).argmax(axis=1)
        j = np.zeros((lt.size, x.size))
        j[which == 0, 0] = -1.0
        j[which == 1, 1] = -1.0
        if fit_floor:
            j[which == 2, 2] = 1.0
        return j

    def clip(x: FloatArray) -> FloatArray:
        return np.clip(x, lb + 1e-9, ub - 1e-9)

    preset = np.log(np.maximum([start[0], start[1], start[2]], _FLOOR_LOG_MIN_S))
    # Every row roughly bounds the parameters: η_c ≥ c1/t, η_m ≥ m1/t, floor ≤ t.
    data = np.array([np.max(lc - lt), np.max(lm - lt), np.min(lt)])
    starts = [clip(preset[: lb.size]), clip(data[: lb.size])]
    fits = [
        least_squares(resid, x0, jac=jac, bounds=(lb, ub), method="trf", loss=loss)
        for x0 in starts
    ]
    best = min(fits, key=lambda r: float(r.cost))
    x = np.asarray(best.x, dtype=np.float64)
    cost = float(np.sum(resid(x) ** 2))

    # Terms that bind no row are not identified: restore the starting value when that does not
    # change the fit, and report the bound the data implies.
    notes: list[str] = []
    names = ("compute", "memory", "floor")
    for i in range(lb.size):
        if np.any(terms(x).argmax(axis=1) == i):
            continue
        trial = x.copy()
        trial[i] = np.clip(preset[i], lb[i], ub[i])
        # The largest (floor) or smallest (η) value that still binds no row at the fit.
        others = np.delete(terms(x), i, axis=1).max(axis=1)
        limit = float(np.exp(np.min(others) if i == 2 else np.max(terms(x)[:, i] + x[i] - others)))
        restored = float(np.sum(resid(trial) ** 2)) <= cost * (1.0 + 1e-9) + 1e-15
        if restored:
            x = trial
        bound = f"≥ {limit:.3g}" if i < 2 else f"≤ {limit * 1e6:.3g} µs"
        state = "kept at the starting value" if restored else "left at"
        notes.append(
            f"{what}: no {names[i]}-bound row, so its {names[i]} parameter is not identified "
            f"(the data only say {bound}); {state} {_fmt_param(i, float(np.exp(x[i])))}"
        )
    for i in range(lb.size):
        if np.isclose(x[i], ub[i], atol=1e-6) or (i < 2 and np.isclose(x[i], lb[i], atol=1e-6)):
            notes.append(
                f"{what}: the {names[i]} parameter sits at its bound "
                f"{_fmt_param(i, float(np.exp(x[i])))}: the roofline cannot follow these "
                "timings there (check the spec-sheet peaks)"
            )
    if np.ptp(lc - lm) < 1e-9:
        notes.append(
            f"{what}: every row has the same FLOP per byte, so only one of η_c, η_m is "
            "identified (the fit cannot tell compute- from memory-bound); add rows of another "
            "arithmetic intensity"
            + (" (G·q_len above 128 for attention)" if what == "attention" else "")
        )
    which = terms(x).argmax(axis=1)
    binding = {f"{what}_{names[i]}": int(np.sum(which == i)) for i in range(3)}
    floor = float(np.exp(x[2])) if fit_floor else start[2]
    if fit_floor and floor <= _FLOOR_LOG_MIN_S * 1.001:
        floor = 0.0
    return _RooflineFit(
        compute_eff=float(np.exp(x[0])), memory_eff=float(np.exp(x[1])),
        floor_s=min(floor, FLOOR_BOUNDS_S[1]), binding=binding, notes=tuple(notes),
    )


def _fmt_param(i: int, value: float) -> str:
    return f"{value * 1e6:.3g} µs" if i == 2 else f"{value:.3f}"


def _supported_gemm(gemm: GemmTimings, notes: list[str]) -> tuple[GemmTimings, IntArray]:
    ok = np.isin(gemm.dtype, list(BYTES_PER_ELEMENT))
    if not ok.all():
        skipped = sorted({str(d) for d in gemm.dtype[~ok]})
        notes.append(
            f"skipped {int((~ok).sum())} GEMM rows with dtype {', '.join(skipped)} "
            "(the roofline has no peak for them)"
        )
    idx = np.flatnonzero(ok).astype(np.int64)
    kept = GemmTimings(
        gemm.m[ok], gemm.n[ok], gemm.k[ok], gemm.dtype[ok], gemm.time_s[ok]
    )
    return kept, idx


def _supported_attention(
    attn: AttentionTimings, notes: list[str]
) -> tuple[AttentionTimings, IntArray]:
    ok = np.isin(attn.kv_dtype, list(BYTES_PER_ELEMENT))
    if not ok.all():
        skipped = sorted({str(d) for d in attn.kv_dtype[~ok]})
        notes.append(
            f"skipped {int((~ok).sum())} attention rows with kv_dtype {', '.join(skipped)}"
        )
    idx = np.flatnonzero(ok).astype(np.int64)
    kept = AttentionTimings(
        attn.batch[ok], attn.context[ok], attn.q_heads[ok], attn.kv_heads[ok],
        attn.head_dim[ok], attn.q_len[ok], attn.kv_dtype[ok], attn.time_s[ok],
    )
    return kept, idx


def _as_gemm(g: GemmTimings | GemmColumns | None) -> GemmTimings | None:
    if g is None:
        return None
    out = g if isinstance(g, GemmTimings) else GemmTimings.from_table(g)
    return out if len(out) else None


def _as_attention(a: AttentionTimings | AttentionColumns | None) -> AttentionTimings | None:
    if a is None:
        return None
    out = a if isinstance(a, AttentionTimings) else AttentionTimings.from_table(a)
    return out if len(out) else None


def fit_kernel_efficiencies(
    hw: HardwareSpec,
    gemm: GemmTimings | GemmColumns | None,
    attention: AttentionTimings | AttentionColumns | None,
    loss: Loss = "linear",
) -> Calibration:
    """Fit GEMM η_c, η_m, kernel_floor_s (GEMM rows) and attention η_c, η_m (attention rows,
    with the floor held at the GEMM fit), starting from `hw`. Without GEMM rows the floor is
    fitted on the attention rows.

    `gemm`/`attention` may be this module's timings or explorer.measured's tables; rows whose
    dtype has no roofline peak (int4_wo, …) are skipped with a note. `loss="soft_l1"` makes the
    fit robust to outliers.
    """
    notes: list[str] = []
    g = _as_gemm(gemm)
    a = _as_attention(attention)
    g_idx = a_idx = np.zeros(0, dtype=np.int64)
    if g is not None:
        g, g_idx = _supported_gemm(g, notes)
        g = g if len(g) else None
    if a is not None:
        a, a_idx = _supported_attention(a, notes)
        a = a if len(a) else None
    if g is None and a is None:
        raise ValueError("calibration needs at least one GEMM or attention timing")

    unit = _unit_hw(hw)
    updates: dict[str, float] = {}
    binding: dict[str, int] = {}
    floor = hw.kernel_floor_s
    if g is not None:
        _, c1, m1 = _gemm_times(unit, g)
        fit = _fit_roofline(
            "gemm", c1, m1, g.time_s,
            (hw.gemm_compute_efficiency, hw.gemm_memory_efficiency, hw.kernel_floor_s),
            fit_floor=True, loss=loss,
        )
        floor = fit.floor_s
        updates |= {
            "gemm_compute_efficiency": fit.compute_eff,
            "gemm_memory_efficiency": fit.memory_eff,
            "kernel_floor_s": fit.floor_s,
        }
        binding |= fit.binding
        notes.extend(fit.notes)
    if a is not None:
        _, c1, m1 = _attention_times(unit, a)
        fit = _fit_roofline(
            "attention", c1, m1, a.time_s,
            (hw.attention_compute_efficiency, hw.attention_memory_efficiency, floor),
            fit_floor=g is None, loss=loss,
        )
        updates |= {
            "attention_compute_efficiency": fit.compute_eff,
            "attention_memory_efficiency": fit.memory_eff,
        }
        if g is None:
            updates["kernel_floor_s"] = fit.floor_s
            notes.append("no GEMM rows: the kernel floor (shared by all kernels) was fitted on "
                         "the attention rows")
        binding |= fit.binding
        notes.extend(fit.notes)

    n_g, n_a = (len(g) if g is not None else 0), (len(a) if a is not None else 0)
    overrides = HardwareOverrides(
        **updates, label=f"calibrated on {n_g} GEMM + {n_a} attention timings"
    )
    calibrated = overrides.apply(hw)

    def predict(spec: HardwareSpec) -> FloatArray:
        parts = []
        if g is not None:
            parts.append(_gemm_times(spec, g)[0])
        if a is not None:
            parts.append(_attention_times(spec, a)[0])
        return np.concatenate(parts)

    measured = np.concatenate(
        [x.time_s for x in (g, a) if x is not None]
    )
    kind = np.array(["gemm"] * n_g + ["attention"] * n_a, dtype=np.str_)
    before, after = predict(hw), predict(calibrated)
    by_kind_before = {
        k: mape(before[kind == k], measured[kind == k]) for k in ("gemm", "attention")
        if np.any(kind == k)
    }
    by_kind_after = {
        k: mape(after[kind == k], measured[kind == k]) for k in ("gemm", "attention")
        if np.any(kind == k)
    }
    m_before, m_after = mape(before, measured), mape(after, measured)
    if m_after > m_before:
        notes.append(
            f"MAPE rose ({m_before:.1f}% → {m_after:.1f}%): the fit minimizes squared log "
            "errors, not MAPE, and the roofline does not follow these timings closely"
        )
    return Calibration(
        overrides=overrides,
        calibrated=calibrated,
        n_gemm=n_g,
        n_attention=n_a,
        mape_before=m_before,
        mape_after=m_after,
        mape_by_kind_before=by_kind_before,
        mape_by_kind_after=by_kind_after,
        measured_s=_ro_float(measured),
        predicted_before_s=_ro_float(before),
        predicted_after_s=_ro_float(after),
        kind=_ro_str(kind),
        source_row=_ro_int(np.concatenate([g_idx, a_idx])),
        binding_rows=binding,
        notes=tuple(notes),
        summary=_kernel_summary(hw, calibrated, n_g, n_a, m_before, m_after),
    )


def _kernel_summary(
    hw: HardwareSpec, cal: HardwareSpec, n_g: int, n_a: int, before: float, after: float
) -> str:
    parts = []
    if n_g:
        parts.append(
            f"GEMM η_c {hw.gemm_compute_efficiency:.3f}→{cal.gemm_compute_efficiency:.3f}, "
            f"η_m {hw.gemm_memory_efficiency:.3f}→{cal.gemm_memory_efficiency:.3f}, "
            f"floor {hw.kernel_floor_s * 1e6:.2f}→{cal.kernel_floor_s * 1e6:.2f} µs"
        )
    if n_a:
        parts.append(
            f"attention η_c {hw.attention_compute_efficiency:.3f}→"
            f"{cal.attention_compute_efficiency:.3f}, η_m {hw.attention_memory_efficiency:.3f}→"
            f"{cal.attention_memory_efficiency:.3f}"
            + ("" if n_g else f", floor {hw.kernel_floor_s * 1e6:.2f}→"
               f"{cal.kernel_floor_s * 1e6:.2f} µs")
        )
    return (
        f"{hw.slug}: " + "; ".join(parts)
        + f". MAPE {before:.1f}% → {after:.1f}% on {n_g} GEMM + {n_a} attention timings"
    )


# -- step overheads -------------------------------------------------------------------------


def _flat(*arrays: npt.ArrayLike) -> list[FloatArray]:
    arrs = [np.asarray(x, dtype=np.float64) for x in arrays]
    try:
        shaped = np.broadcast_arrays(*arrs)
    except ValueError as exc:
        raise ValueError(f"inputs do not broadcast: {[a.shape for a in arrs]}") from exc
    return [np.asarray(x, dtype=np.float64).reshape(-1) for x in shaped]


def _group(sm: ScenarioModel, group: npt.ArrayLike | None) -> npt.ArrayLike:
    return sm.r.group if group is None else group


def fit_step_overheads(
    scenario_model: ScenarioModel,
    batch: npt.ArrayLike,
    width: npt.ArrayLike,
    context: npt.ArrayLike,
    step_time_s: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
) -> StepCalibration:
    """Fit t = scale·(T_model(B, W) − overhead_model) + step_overhead to measured step times.

    W is the verify width per sequence (1 + D for chains, 1 for plain decode). Linear least
    squares on relative residuals (each row divided by its measured time, so every row counts
    by its percentage error, as MAPE does). A negative overhead is refitted at 0; the scale must
    come out positive and the design must have two distinct model times, else only the overhead
    is fitted (scale 1).
    """
    b, w, s, t = _flat(batch, width, context, step_time_s)
    if t.size == 0:
        raise ValueError("fit_step_overheads needs at least one step time")
    if not np.isfinite(t).all() or t.min() <= 0:
        raise ValueError("step_time_s must be finite and > 0")
    if b.min() < 1 or w.min() < 1 or s.min() < 1:
        raise ValueError("batch, width and context must be >= 1")
    ovh0 = scenario_model.r.hardware.step_overhead_s
    t_model = total(scenario_model.verify(b, w, s, _group(scenario_model, group)))
    x = t_model - ovh0  # the analytic per-layer part (kernels, launches, comms)
    notes: list[str] = []

    a = np.stack([x / t, 1.0 / t], axis=1)
    rank = int(np.linalg.matrix_rank(a))
    scale, ovh = 1.0, float(np.mean(t - x))
    if rank >= 2:
        (scale, ovh), *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
        scale, ovh = float(scale), float(ovh)
        if ovh < 0:
            notes.append(
                f"the free fit gave a negative step overhead ({ovh * 1e3:.3f} ms): refitted at 0"
            )
            ovh = 0.0
            scale = float(np.sum(x / t) / np.sum((x / t) ** 2))
        if scale <= 0:
            notes.append("the free fit gave a non-positive scale: fitted the overhead only")
            scale, ovh = 1.0, float(np.mean(t - x))
    else:
        notes.append(
            "every row has the same model time: scale and overhead are not separable; "
            "fitted the overhead only (scale 1)"
        )
    if ovh < 0:
        notes.append(f"the measured steps are faster than the model's per-layer part: "
                     f"overhead {ovh * 1e3:.3f} ms clipped at 0")
        ovh = 0.0
    if ovh > 0.1:
        notes.append(f"step overhead {ovh * 1e3:.1f} ms clipped at 100 ms")
        ovh = 0.1

    after = scale * x + ovh
    only = x + ovh
    m_before, m_after = mape(t_model, t), mape(after, t)
    overrides = HardwareOverrides(
        step_overhead_s=ovh, label=f"step overhead fitted on {t.size} step times"
    )
    summary = (
        f"step overhead {ovh0 * 1e3:.3f}→{ovh * 1e3:.3f} ms, efficiency scale {scale:.3f} "
        f"(per-layer model time × {scale:.3f}); MAPE {m_before:.1f}% → {m_after:.1f}% on "
        f"{t.size} step times ({mape(only, t):.1f}% with the overhead alone)"
    )
    return StepCalibration(
        overrides=overrides,
        step_overhead_s=ovh,
        step_overhead_before_s=ovh0,
        efficiency_scale=scale,
        mape_before=m_before,
        mape_after=m_after,
        mape_overhead_only=mape(only, t),
        batch=_ro_float(b), width=_ro_float(w), context=_ro_float(s),
        measured_s=_ro_float(t),
        predicted_before_s=_ro_float(t_model),
        predicted_after_s=_ro_float(after),
        notes=tuple(notes),
        summary=summary,
    )


# -- draft cost back-out --------------------------------------------------------------------


def back_out_draft_cost(
    scenario_model: ScenarioModel,
    batch: npt.ArrayLike,
    draft_len: npt.ArrayLike,
    context: npt.ArrayLike,
    step_time_spec_s: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
) -> DraftBackOut:
    """T_draft(measured) = T_step(measured) − T_verif(B, W)(model), beside the model's T_draft.

    W = 1 + D, or the scenario's tree width where it is wider (as the grid does). A negative
    back-out means the measured step is faster than the model's verify alone: the verify model
    is too slow there (calibrate kernels and step overheads first).
    """
    b, d, s, t = _flat(batch, draft_len, context, step_time_spec_s)
    if t.size == 0:
        raise ValueError("back_out_draft_cost needs at least one step time")
    if not np.isfinite(t).all() or t.min() <= 0:
        raise ValueError("step_time_spec_s must be finite and > 0")
    if b.min() < 1 or d.min() < 0 or s.min() < 1:
        raise ValueError("batch and context must be >= 1, draft_len >= 0")
    g = _group(scenario_model, group)
    width = scenario_model.verify_width(d)
    t_verif = total(scenario_model.verify(b, width, s, g))
    t_draft_model = total(scenario_model.draft(b, d, s, g))
    measured = t - t_verif
    negative = measured < 0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(t_draft_model > 0, measured / t_draft_model, np.nan)
    n_neg = int(negative.sum())
    if n_neg:
        rows = ", ".join(
            f"B={b[i]:g} D={d[i]:g}" for i in np.flatnonzero(negative)[:5]
        ) + (", …" if n_neg > 5 else "")
        message = (
            f"{n_neg} of {t.size} rows: the measured step is faster than the model's verify "
            f"alone ({rows}) — the verify model is too slow there; calibrate kernel "
            "efficiencies and step overheads before reading draft costs"
        )
    else:
        message = ""
    finite = np.isfinite(ratio) & ~negative
    med = float(np.median(ratio[finite])) if finite.any() else float("nan")
    summary = (
        f"T_draft backed out of {t.size} step times: median measured/model {med:.2f}"
        + (f"; {n_neg} negative" if n_neg else "")
    )
    return DraftBackOut(
        batch=_ro_float(b), draft_len=_ro_float(d), context=_ro_float(s),
        width=_ro_float(width),
        t_step_measured_s=_ro_float(t),
        t_verif_model_s=_ro_float(t_verif),
        t_draft_measured_s=_ro_float(measured),
        t_draft_model_s=_ro_float(t_draft_model),
        ratio=_ro_float(ratio),
        negative=_ro_bool(negative),
        n_negative=n_neg,
        message=message,
        summary=summary,
    )


__all__ = [
    "AttentionTimings", "Calibration", "DraftBackOut", "GemmTimings", "StepCalibration",
    "back_out_draft_cost", "fit_kernel_efficiencies", "fit_step_overheads", "mape",
    "normalize_dtype",
]
