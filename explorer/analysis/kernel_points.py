"""One kernel's time at each point of a grid of shapes, as the cost model prices it, with the
source of each time: the pinned package's measured table (engine, version, GPU) where it covers
the point, else the roofline (the per-dtype cross-GPU fit, or the preset's single η).

`python -m explorer kernel gemm|attention|moe` prints these; the model (model/layers.py) prices
its calls through the same MeasuredKernels lookups.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from explorer.kernel_tables.moe import MoeShape
from explorer.model.kernels import FloatArray, KernelTime, attention_time, gemm_time
from explorer.model.layers import routed_experts_roofline
from explorer.model.measured_kernels import MeasuredKernels, measured_kernels
from explorer.specs.hardware import HardwareSpec, roofline_fit_origin


@dataclass(frozen=True)
class KernelPoint:
    """One point: its shape, the time the model uses, and where it came from."""

    shape: dict[str, Any]
    time_s: float
    roofline_time_s: float
    source: str
    measured: bool
    flops: float
    nbytes: float
    compute_bound: bool
    at_floor: bool

    def as_dict(self, kernel: str, hardware: str, engine: str) -> dict[str, Any]:
        t = self.time_s
        return {
            "kernel": kernel, "hardware": hardware, "engine": engine, **self.shape,
            "time_s": t, "roofline_time_s": self.roofline_time_s, "source": self.source,
            "achieved_tflops": self.flops / t / 1e12, "achieved_bytes_per_s": self.nbytes / t,
            "bound": "compute" if self.compute_bound else "memory",
            "at_kernel_floor": self.at_floor,
        }


def roofline_source(hw: HardwareSpec, kind: str, dtype: str, engine: str | None = None) -> str:
    """Which roofline prices an uncovered call on `engine`, with its cross-validated error."""
    fit = hw.gemm_fit(dtype, engine) if kind == "gemm" else hw.attention_fit(dtype, engine)
    if fit is None:
        return f"roofline ({hw.slug} single-η fit, hardware.csv)"
    return (f"roofline ({dtype} fit on {roofline_fit_origin(fit, engine, hw.slug)} of {fit.gpus}; "
            f"leave-one-GPU-out MAPE {fit.loo_mape:.1%})")


def _read_as_served(tables: MeasuredKernels, kind: str) -> str:
    """What reading the table as a serving step takes it changed at this point: the GEMM
    table's own adjustment (TRT-LLM fp8 static, a stand-in's reason) and the DRAM floor."""
    notes = tables.table_notes(kind)
    if tables.tally.raised.get(kind):
        notes.append(tables.raised_note(kind))
    return "".join(f"; {n}" for n in notes)


def _point(kt: KernelTime, t: float, shape: dict[str, Any], source: str,
           measured: bool) -> KernelPoint:
    return KernelPoint(shape, t, float(kt.time_s), source, measured, float(kt.flops),
                       float(kt.bytes), bool(kt.compute_bound), bool(kt.at_floor))


def gemm_points(hw: HardwareSpec, engine: str, ms: list[int], ns: list[int], ks: list[int],
                dtype: str) -> list[KernelPoint]:
    hw = hw.for_engine(engine)  # uncovered calls on the engine's own roofline fit
    tables = measured_kernels(hw, engine, dtype, "bf16")
    out = []
    for m, n, k in itertools.product(ms, ns, ks):
        kt = gemm_time(hw, m, n, k, dtype)
        tables.tally.reset()
        t = float(tables.gemm_time(
            np.array([float(m)]), float(n), float(k), np.atleast_1d(kt.time_s),
            lambda mm, nn, kk: gemm_time(hw, mm, nn, kk, dtype).time_s)[0])
        covered = tables.tally.measured.get("gemm", 0) > 0
        source = (f"table {tables.label()} gemm {dtype}{_read_as_served(tables, 'gemm')}" if covered
                  else f"{roofline_source(hw, 'gemm', dtype, engine)}: "
                  f"{tables.tally.why_not.get('gemm', 'not covered')}")
        out.append(_point(kt, t, {"m": m, "n": n, "k": k, "dtype": dtype}, source, covered))
    return out


def _attention_q1(hw: HardwareSpec, kv: int, g: float, h: int, kv_dtype: str,
                  batch: FloatArray, context: FloatArray) -> FloatArray:
    return attention_time(hw, batch, context, kv, g, 1, h, kv_dtype=kv_dtype).time_s


def attention_points(hw: HardwareSpec, engine: str, batches: list[int], contexts: list[int],
                     q_heads: list[int], kv_heads: list[int], head_dims: list[int],
                     q_lens: list[int], kv_dtype: str) -> list[KernelPoint]:
    """Decode/verify attention per point; q_heads and kv_heads are per GPU (each KV head must
    divide the query heads: the caller checks it)."""
    hw = hw.for_engine(engine)
    tables = measured_kernels(hw, engine, "bf16", kv_dtype)
    out = []
    for b, s, qh, kv, h, w in itertools.product(batches, contexts, q_heads, kv_heads,
                                                head_dims, q_lens):
        g = qh / kv
        kt = attention_time(hw, b, s, kv, g, w, h, kv_dtype=kv_dtype)
        kt1 = attention_time(hw, b, s, kv, g, 1, h, kv_dtype=kv_dtype)
        tables.tally.reset()
        t = float(np.asarray(tables.attention_time(
            np.array([float(b)]), np.array([float(s)]), float(qh), np.array([float(kv)]), h, 0,
            np.atleast_1d(kt.time_s), np.atleast_1d(kt1.time_s),
            partial(_attention_q1, hw, kv, g, h, kv_dtype),
        )).reshape(-1)[0])
        covered = tables.tally.measured.get("attention", 0) > 0
        if covered:
            source = (f"table {tables.label()} generation_attention {kv_dtype} KV"
                      f"{_read_as_served(tables, 'attention')}")
            if w > 1:
                source += f" × modelled tile increment t(q_len={w})/t(1)"
        else:
            source = (f"{roofline_source(hw, 'attention', kv_dtype, engine)}: "
                      f"{tables.tally.why_not.get('attention', 'not covered')}")
        shape = {"batch": b, "context": s, "q_heads": qh, "kv_heads": kv, "head_dim": h,
                 "q_len": w, "kv_dtype": kv_dtype}
        out.append(_point(kt, t, shape, source, covered))
    return out


def _moe_roofline_s(hw: HardwareSpec, shape: MoeShape, dtype: str, n: FloatArray
                    ) -> FloatArray:
    return routed_experts_roofline(hw, shape, n, dtype).time_s


def moe_points(hw: HardwareSpec, engine: str, tokens: list[int], hidden: list[int],
               inter: list[int], topk: list[int], experts: list[int], tp: list[int],
               dtype: str) -> list[KernelPoint]:
    """One routed-expert layer per point (inter: the model's full expert width, TP shards it):
    the engine's measured MoE table where it has the exact shape, else the roofline."""
    hw = hw.for_engine(engine)
    tables = measured_kernels(hw, engine, dtype, "bf16")
    out = []
    for n, h, i, k, e, t in itertools.product(tokens, hidden, inter, topk, experts, tp):
        shape = MoeShape(h, i, k, e, tp=t)
        kt = routed_experts_roofline(hw, shape, float(n), dtype)
        tables.tally.reset()
        time_s = float(np.asarray(tables.moe_time(
            np.array([float(n)]), shape, dtype, partial(_moe_roofline_s, hw, shape, dtype),
        )).reshape(-1)[0])
        covered = tables.tally.measured.get("moe", 0) > 0
        source = (f"table {tables.moe_sources()}{_read_as_served(tables, 'moe')}" if covered
                  else f"{roofline_source(hw, 'gemm', dtype, engine)}: "
                  f"{tables.tally.why_not.get('moe', 'not covered')}")
        where = {"tokens": n, "hidden": h, "inter": i, "topk": k, "experts": e, "tp": t,
                 "dtype": dtype}
        out.append(_point(kt, time_s, where, source, covered))
    return out
