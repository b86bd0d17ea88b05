"""Kernel efficiencies: GEMM η_c, η_m and the kernel floor, attention η_c, η_m, fitted to
per-kernel timings on log-time residuals of the roofline."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.optimize import least_squares

from explorer.base.dtypes import BYTES_PER_ELEMENT
from explorer.calibration._shared import (
    CalibrationError,
    FloatArray,
    FrozenResult,
    IntArray,
    StrArray,
    mape,
    ro_float,
    ro_int,
    ro_str,
    sample_note,
    sample_rows,
)
from explorer.model.kernels import attention_time, gemm_time
from explorer.specs.hardware import HardwareOverrides, HardwareSpec
from explorer.specs.measured import AttentionTimings, GemmTimings

Loss = Literal["linear", "soft_l1", "huber", "cauchy", "arctan"]

# Bounds of the fitted parameters (HardwareOverrides accepts η in (0, 1], floor in [0, 1 ms]).
EFFICIENCY_BOUNDS = (0.01, 1.0)
FLOOR_BOUNDS_S = (0.0, 1e-3)
# The floor is fitted in log space: 1 ns stands for "no floor" (0 is reported as such).
_FLOOR_LOG_MIN_S = 1e-9


# The fit works on float arrays of the rows the roofline can model; `source_row` maps each back
# to its row in the measured table.
@dataclass(frozen=True)
class _GemmRows:
    m: FloatArray
    n: FloatArray
    k: FloatArray
    dtype: StrArray
    time_s: FloatArray
    source_row: IntArray


@dataclass(frozen=True)
class _AttentionRows:
    batch: FloatArray
    context: FloatArray
    q_heads: FloatArray
    kv_heads: FloatArray
    head_dim: FloatArray
    q_len: FloatArray
    kv_dtype: StrArray
    time_s: FloatArray
    source_row: IntArray


def _float(column: tuple[int, ...] | tuple[float, ...], keep: IntArray) -> FloatArray:
    return np.asarray(column, dtype=np.float64)[keep]


def _usable(ok: npt.NDArray[np.bool_], what: str, notes: list[str]) -> IntArray:
    """The rows the fit uses: those it can model, sampled down to the row cap."""
    rows = np.flatnonzero(ok).astype(np.int64)
    sample = sample_rows(rows.size)
    if sample is None:
        return rows
    notes.append(sample_note(what, sample.size, rows.size))
    return rows[sample]


def _gemm_rows(table: GemmTimings | None, notes: list[str]) -> _GemmRows | None:
    """The rows whose dtype has a roofline peak (dtypes are canonical: GemmTimings says so)."""
    if table is None:
        return None
    dtype = np.asarray(table.dtype, dtype=np.str_)
    ok = np.isin(dtype, list(BYTES_PER_ELEMENT))
    if not ok.all():
        skipped = sorted({str(d) for d in dtype[~ok]})
        notes.append(
            f"skipped {int((~ok).sum())} GEMM rows with dtype {', '.join(skipped)} "
            "(the roofline has no peak for them)"
        )
    if not ok.any():
        return None
    use = _usable(ok, "GEMM", notes)
    return _GemmRows(_float(table.m, use), _float(table.n, use), _float(table.k, use),
                     dtype[use], _float(table.time_s, use), use)


def _attention_rows(table: AttentionTimings | None, notes: list[str]) -> _AttentionRows | None:
    """The rows whose KV dtype has a size; rows without one are taken as BF16 KV."""
    if table is None:
        return None
    kv = np.asarray(table.kv_dtype if table.kv_dtype is not None else ["bf16"] * len(table),
                    dtype=np.str_)
    ok = np.isin(kv, list(BYTES_PER_ELEMENT))
    if not ok.all():
        skipped = sorted({str(d) for d in kv[~ok]})
        notes.append(
            f"skipped {int((~ok).sum())} attention rows with kv_dtype {', '.join(skipped)}"
        )
    if not ok.any():
        return None
    use = _usable(ok, "attention", notes)
    return _AttentionRows(
        _float(table.batch, use), _float(table.context, use), _float(table.q_heads, use),
        _float(table.kv_heads, use), _float(table.head_dim, use), _float(table.q_len, use),
        kv[use], _float(table.time_s, use), use,
    )


class Calibration(FrozenResult):
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


@dataclass(frozen=True)
class _RooflineFit:
    compute_eff: float
    memory_eff: float
    floor_s: float
    binding: dict[str, int]
    notes: tuple[str, ...]


def _unit_hw(hw: HardwareSpec) -> HardwareSpec:
    """Efficiencies 1 and no floor: the kernels' compute_s/memory_s become the η = 1 terms of
    the single-η roofline this calibration fits (the cross-GPU fits are set aside, as
    HardwareOverrides.apply does for the calibrated result)."""
    return hw.model_copy(
        update={
            "gemm_compute_efficiency": 1.0, "gemm_memory_efficiency": 1.0,
            "attention_compute_efficiency": 1.0, "attention_memory_efficiency": 1.0,
            "kernel_floor_s": 0.0, "gemm_fits": (), "attention_fits": (),
        }
    )


def _gemm_times(hw: HardwareSpec, g: _GemmRows) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(time, compute, memory) per row; gemm_time takes one dtype, so loop over the few."""
    t, c, mem = (np.empty(g.time_s.size) for _ in range(3))
    for dt in np.unique(g.dtype):
        sel = g.dtype == dt
        kt = gemm_time(hw, g.m[sel], g.n[sel], g.k[sel], str(dt))
        t[sel], c[sel], mem[sel] = kt.time_s, kt.compute_s, kt.memory_s
    return t, c, mem


def _attention_times(
    hw: HardwareSpec, a: _AttentionRows
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


# Cached per (hardware, table): the Measured data page refits on every rerun otherwise. The
# arguments are frozen models (hashable); the results hold read-only arrays, safe to share.
@lru_cache(maxsize=8)
def fit_kernel_efficiencies(
    hw: HardwareSpec,
    gemm: GemmTimings | None,
    attention: AttentionTimings | None,
    loss: Loss = "linear",
) -> Calibration:
    """Fit GEMM η_c, η_m, kernel_floor_s (GEMM rows) and attention η_c, η_m (attention rows,
    with the floor held at the GEMM fit), starting from `hw`. Without GEMM rows the floor is
    fitted on the attention rows.

    Rows whose dtype has no roofline peak (int4_wo, …) are skipped with a note; when no row is
    left, CalibrationError says so. Above MAX_CALIBRATION_ROWS rows per kind an evenly spaced
    sample is fitted, with a note. `loss="soft_l1"` makes the fit robust to outliers.
    """
    notes: list[str] = []
    g = _gemm_rows(gemm, notes)
    a = _attention_rows(attention, notes)
    if g is None and a is None:
        if not notes:
            raise CalibrationError("calibration needs at least one GEMM or attention timing")
        raise CalibrationError(
            f"nothing to calibrate: no kernel timing the roofline can model "
            f"({'; '.join(notes)}). Known dtypes: {', '.join(BYTES_PER_ELEMENT)}")

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

    n_g = g.time_s.size if g is not None else 0
    n_a = a.time_s.size if a is not None else 0
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
        measured_s=ro_float(measured),
        predicted_before_s=ro_float(before),
        predicted_after_s=ro_float(after),
        kind=ro_str(kind),
        source_row=ro_int(np.concatenate([x.source_row for x in (g, a) if x is not None])),
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
