"""Measured timings replace the analytic estimate where they match (DESIGN.md §2.1).

A measured kernel or step time is used as a correction ratio r = measured / model: at a measured
point the model returns the measurement exactly; between measured points of one shape r is
interpolated in log space; past the measured range r is held at the nearest edge, so curves stay
continuous. Shapes with no measurement keep the analytic (or calibrated) roofline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from explorer.base.dtypes import BYTES_PER_ELEMENT, WEIGHT_DTYPES
from explorer.model.kernels import attention_time, gemm_time
from explorer.specs.hardware import HardwareSpec
from explorer.specs.measured import AttentionTimings, GemmTimings, StepTimings

FloatArray = npt.NDArray[np.float64]


def _scalar(x: npt.ArrayLike) -> float | None:
    """A shape dimension that is the same everywhere on the grid, else None."""
    arr = np.unique(np.asarray(x, dtype=np.float64))
    return float(arr[0]) if arr.size == 1 else None


@dataclass(frozen=True)
class _Ratio:
    """log-ratio of measured to model time as a function of log(x), for one shape."""

    log_x: FloatArray
    log_ratio: FloatArray

    def __call__(self, x: npt.ArrayLike) -> FloatArray:
        lx = np.log(np.maximum(np.asarray(x, dtype=np.float64), 1e-30))
        return np.exp(np.interp(lx, self.log_x, self.log_ratio))


def _ratio(x: FloatArray, measured: FloatArray, model: FloatArray) -> _Ratio:
    order = np.argsort(x)
    lx, lr = np.log(x[order]), np.log(measured[order] / model[order])
    uniq, idx = np.unique(lx, return_inverse=True)  # repeated x: average their log-ratios
    mean = np.bincount(idx, weights=lr) / np.bincount(idx)
    return _Ratio(uniq, mean)


class GemmCorrection:
    """Per (n, k, dtype) shape: measured/model ratio over m."""

    def __init__(self, hw: HardwareSpec, table: GemmTimings) -> None:
        m = np.asarray(table.m, dtype=np.float64)
        n = np.asarray(table.n, dtype=np.float64)
        k = np.asarray(table.k, dtype=np.float64)
        t = np.asarray(table.time_s, dtype=np.float64)
        dtypes = np.asarray(table.dtype)  # canonical spellings (GemmTimings normalises them)
        self.shapes: dict[tuple[float, float, str], _Ratio] = {}
        for dt in np.unique(dtypes):
            if dt not in WEIGHT_DTYPES:
                continue  # int8/int4 weight-only kernels: the roofline has no peak for them
            sel = dtypes == dt
            keys = np.stack([n[sel], k[sel]], axis=1)
            for nk in np.unique(keys, axis=0):
                rows = sel.copy()
                rows[sel] = (keys == nk).all(axis=1)
                model = gemm_time(hw, m[rows], nk[0], nk[1], str(dt)).time_s
                self.shapes[(float(nk[0]), float(nk[1]), str(dt))] = _ratio(
                    m[rows], t[rows], model)

    def factor(self, m: npt.ArrayLike, n: npt.ArrayLike, k: npt.ArrayLike,
               dtype: str) -> FloatArray | None:
        n_s, k_s = _scalar(n), _scalar(k)
        if n_s is None or k_s is None:
            return None
        r = self.shapes.get((n_s, k_s, dtype))
        return None if r is None else r(m)


# The KV-dtype key of attention rows that did not record their KV dtype: they match any.
ANY_KV_DTYPE = ""


class AttentionCorrection:
    """Per (KV heads, G, head_dim, KV dtype) per rank: measured/model ratio over B·S, nearest
    q_len. Rows without a KV dtype apply to every KV dtype (ratio taken against BF16 KV)."""

    def __init__(self, hw: HardwareSpec, table: AttentionTimings) -> None:
        cols = [np.asarray(c, dtype=np.float64) for c in (
            table.batch, table.context, table.q_heads, table.kv_heads, table.head_dim,
            table.q_len, table.time_s)]
        b, s, qh, kvh, hd, ql, t = cols
        g = qh / kvh
        kv_dtypes = np.asarray(table.kv_dtype if table.kv_dtype is not None
                               else [ANY_KV_DTYPE] * len(t))
        self.shapes: dict[tuple[float, float, float, str], dict[float, _Ratio]] = {}
        keys = np.stack([kvh, g, hd], axis=1)
        for dt in np.unique(kv_dtypes):
            if dt != ANY_KV_DTYPE and dt not in BYTES_PER_ELEMENT:
                continue  # int8/int4 KV: the roofline has no size for them
            of_dtype = kv_dtypes == dt
            model_dtype = "bf16" if dt == ANY_KV_DTYPE else str(dt)
            for key in np.unique(keys[of_dtype], axis=0):
                in_shape = of_dtype & (keys == key).all(axis=1)
                by_qlen: dict[float, _Ratio] = {}
                for q in np.unique(ql[in_shape]):
                    rows = in_shape & (ql == q)
                    model = attention_time(hw, b[rows], s[rows], key[0], key[1], q, key[2],
                                           kv_dtype=model_dtype).time_s
                    by_qlen[float(q)] = _ratio(b[rows] * s[rows], t[rows], model)
                self.shapes[(float(key[0]), float(key[1]), float(key[2]), str(dt))] = by_qlen

    def factor(self, batch: npt.ArrayLike, context: npt.ArrayLike, kv_heads: npt.ArrayLike,
               group: npt.ArrayLike, q_len: npt.ArrayLike, head_dim: float,
               kv_dtype: str) -> FloatArray | None:
        kv_s, g_s = _scalar(kv_heads), _scalar(group)
        if kv_s is None or g_s is None:
            return None
        shape_key = (kv_s, g_s, float(head_dim))
        by_qlen = (self.shapes.get((*shape_key, kv_dtype))
                   or self.shapes.get((*shape_key, ANY_KV_DTYPE)))
        if not by_qlen:
            return None
        q_measured = np.asarray(sorted(by_qlen), dtype=np.float64)
        w = np.asarray(q_len, dtype=np.float64)
        nearest = q_measured[np.argmin(np.abs(np.log(w)[..., None] - np.log(q_measured)), axis=-1)]
        tokens = np.asarray(batch, dtype=np.float64) * np.asarray(context, dtype=np.float64)
        shape = np.broadcast_shapes(nearest.shape, tokens.shape)
        out = np.empty(shape, dtype=np.float64)
        near_b = np.broadcast_to(nearest, shape)
        tok_b = np.broadcast_to(tokens, shape)
        for q in np.unique(near_b):
            sel = near_b == q
            out[sel] = by_qlen[float(q)](tok_b[sel])
        return out


@dataclass(frozen=True)
class KernelCorrections:
    gemm: GemmCorrection | None
    attention: AttentionCorrection | None

    def describe(self) -> str:
        parts = []
        if self.gemm and self.gemm.shapes:
            parts.append(f"{len(self.gemm.shapes)} measured GEMM shape(s) replace the roofline")
        if self.attention and self.attention.shapes:
            parts.append(f"{len(self.attention.shapes)} measured attention shape(s) replace it")
        return "; ".join(parts)


class StepCorrection:
    """Measured whole steps by (B, D): ratio over B per measured D."""

    def __init__(self, table: StepTimings,
                 model_step: Callable[[FloatArray, FloatArray], FloatArray]) -> None:
        b = np.asarray(table.batch, dtype=np.float64)
        d = np.asarray(table.draft_len, dtype=np.float64)
        t = np.asarray(table.step_time_s, dtype=np.float64)
        self.includes_draft = table.includes_draft
        self.by_draft_len: dict[float, _Ratio] = {}
        for dv in np.unique(d):
            rows = d == dv
            self.by_draft_len[float(dv)] = _ratio(
                b[rows], t[rows], model_step(b[rows], np.full(rows.sum(), dv)))

    def factor(self, batch: npt.ArrayLike, draft_len: npt.ArrayLike) -> FloatArray:
        """Ratio at each point; 1 where D has no measurement."""
        d = np.asarray(draft_len, dtype=np.float64)
        b = np.asarray(batch, dtype=np.float64)
        shape = np.broadcast_shapes(d.shape, b.shape)
        out = np.ones(shape, dtype=np.float64)
        db, bb = np.broadcast_to(d, shape), np.broadcast_to(b, shape)
        for dv, r in self.by_draft_len.items():
            sel = db == dv
            out[sel] = r(bb[sel])
        return out

    def covers(self, draft_len: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        return np.isin(np.asarray(draft_len, dtype=np.float64), list(self.by_draft_len))
