"""The measured tables as a serving step takes them (data/SOURCES.md, "Measured tables as a
serving step sees them").

A table's collector does not always time a call as a serving step runs it; where the package's
own code says how, the table is read accordingly, and every adjusted time says so:
- a table timed another way (vLLM's eager fp8_block GEMMs) gives way to a stand-in engine's
  (catalog.NOT_AS_SERVED);
- a table whose calls carry a quantization step a served step does not run (TRT-LLM's
  dynamic-quant fp8) has that step's measured time taken off, floored at the speed of light,
  never adding time (catalog.OVERHEAD_NOT_SERVED, quantize.py);
- no call is taken faster than the DRAM read of its weights (`weight_read_s`; routed experts:
  the top-k experts every token reads, `experts_read_s`) or KV cache (`kv_read_s`): the
  collectors repeat a call on one or a few tensor copies, which where they fit in L2 (L40S:
  96 MB) run faster than a serving step ever can, whose other layers stream through L2
  between two uses of one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from explorer.base.dtypes import BYTES_PER_ELEMENT, GEMM_OPERAND_BYTES, normalize_dtype
from explorer.kernel_tables._grid import FloatArray, Grid
from explorer.kernel_tables.catalog import (
    NOT_AS_SERVED,
    OVERHEAD_NOT_SERVED,
    Missing,
    table_dtype,
)
from explorer.kernel_tables.gemm import GemmTable, load_gemm_table
from explorer.kernel_tables.moe import MoeShape
from explorer.kernel_tables.quantize import load_compute_scale_table
from explorer.specs.engine import OverheadNotServed
from explorer.specs.hardware import HardwareSpec


def weight_read_s(n: npt.ArrayLike, k: npt.ArrayLike, dtype: str,
                  dram_bytes_per_s: float) -> FloatArray:
    """The DRAM read of a GEMM's k×n weights (with their scales) at the spec-sheet bandwidth:
    no serving call is faster. The collectors repeat a call on one or a few weight copies, so
    where they fit in L2 (L40S: 96 MB) a table runs faster than this; in a serving step the
    rest of the model streams through L2 between two uses of a layer."""
    per_element = GEMM_OPERAND_BYTES[normalize_dtype(dtype)][1]
    return np.asarray(np.asarray(n, dtype=np.float64) * np.asarray(k, dtype=np.float64)
                      * per_element / dram_bytes_per_s)


def served_points(table: GemmTable, dram_bytes_per_s: float
                  ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """(m, n, k, seconds) at a table's measured grid points as a serving step takes them: never
    below the DRAM read of the weights (`weight_read_s`). Give it the served table
    (`load_serving_gemm_table`) to read it as the model does; the roofline fits and their
    checks score against these."""
    im, i_n, ik = np.nonzero(table.measured)
    m, n, k = (a.astype(np.float64) for a in (table.m_values[im], table.n_values[i_n],
                                              table.k_values[ik]))
    latency = np.maximum(np.exp(table.log_latency[im, i_n, ik]),
                         weight_read_s(n, k, table.dtype, dram_bytes_per_s))
    return m, n, k, np.asarray(latency, dtype=np.float64)


@dataclass(frozen=True)
class SpeedOfLight:
    """A GPU's spec-sheet limits no GEMM beats: the dense peak of the table's dtype and the DRAM
    bandwidth its weights stream at."""

    flops_per_s: float
    dram_bytes_per_s: float

    @classmethod
    def of(cls, hw: HardwareSpec, dtype: str) -> SpeedOfLight:
        """A hardware preset's: the dense peak of `dtype` and its DRAM bandwidth."""
        return cls(hw.peak_flops_per_s(normalize_dtype(dtype)), hw.hbm_bw_bytes_per_s)

    def gemm_time_s(self, m: npt.ArrayLike, n: npt.ArrayLike, k: npt.ArrayLike,
                    dtype: str) -> FloatArray:
        """max(2·m·n·k / peak, weight bytes / DRAM bandwidth), broadcast."""
        m_, n_, k_ = (np.asarray(a, dtype=np.float64) for a in (m, n, k))
        return np.asarray(np.maximum(2.0 * m_ * n_ * k_ / self.flops_per_s,
                                     weight_read_s(n_, k_, dtype, self.dram_bytes_per_s)))


@lru_cache(maxsize=64)
def load_serving_gemm_table(
    gpu: str, engine: str, dtype: str, speed_of_light: SpeedOfLight | None = None,
    root: Path | None = None,
) -> GemmTable | Missing:
    """The table that prices this engine's GEMMs in a serving step: its own, unless its
    collector did not time them as a step runs them (catalog.NOT_AS_SERVED); then the first
    stand-in engine's table of the same GPU and dtype, its provenance saying whose calls it
    stands in for and why. Missing (roofline) where no stand-in has a table either.

    Where the table's calls carry a quantization step a served step does not run
    (catalog.OVERHEAD_NOT_SERVED: TRT-LLM fp8), that step's measured time is taken off at every
    grid point, floored at `speed_of_light`; without it the rule cannot be applied (Missing)."""
    table = _as_served(gpu, engine, dtype, root)
    if isinstance(table, Missing):
        return table
    rule = OVERHEAD_NOT_SERVED.get((table.provenance.engine, "gemm", table.dtype))
    if rule is None:
        return table
    if speed_of_light is None:
        return Missing(f"{rule.label} needs the GPU's peak and DRAM bandwidth for its "
                       "speed-of-light floor, and none was given")
    return _less_overhead(table, rule, speed_of_light, root)


def _as_served(gpu: str, engine: str, dtype: str, root: Path | None) -> GemmTable | Missing:
    key = (engine.strip().lower(), "gemm", table_dtype(dtype))
    rule = NOT_AS_SERVED.get(key)
    if rule is None:
        return _gemm_table(gpu, engine, dtype, root)
    tried = []
    for other in rule.stand_ins:
        table = _gemm_table(gpu, other, dtype, root)
        if isinstance(table, GemmTable):
            prov = replace(table.provenance, stands_in_for=key[0], stand_in_reason=rule.reason)
            # A copy with its own curve cache: the curves carry the provenance.
            return replace(table, provenance=prov, _curves={})
        tried.append(f"{other}: {table.reason}")
    return Missing(f"{key[0]}'s {key[2]} GEMM table is not used ({rule.reason}) and no stand-in "
                   f"has one ({'; '.join(tried)})")


def _gemm_table(gpu: str, engine: str, dtype: str, root: Path | None) -> GemmTable | Missing:
    # Called as everyone else calls it, so the cached table is the same object.
    if root is None:
        return load_gemm_table(gpu, engine, dtype)
    return load_gemm_table(gpu, engine, dtype, root=root)


def _less_overhead(table: GemmTable, rule: OverheadNotServed, speed_of_light: SpeedOfLight,
                   root: Path | None) -> GemmTable:
    """The table less its calls' quantization overhead at every (m, k) node the overhead table
    covers, floored at the speed of light; nodes it does not cover keep the measured time. With
    no overhead table of the same version, the measured table, its provenance saying why."""
    prov = table.provenance
    overhead = load_compute_scale_table(prov.system, prov.engine, prov.engine_version,
                                        root=root)
    if isinstance(overhead, Missing):
        note = (f"{rule.label} not applied: {overhead.reason}; the dynamic-quant times are used "
                "as measured")
        return replace(table, provenance=replace(prov, adjustment=note), _curves={})
    hit = overhead.latency(table.m_values[:, None], table.k_values[None, :])  # (m, k)
    measured_s = np.exp(table.log_latency)  # NaN stays NaN (unknown points)
    less_s = measured_s - np.where(hit.covered, hit.latency_s, 0.0)[:, None, :]
    sol_s = speed_of_light.gemm_time_s(
        table.m_values[:, None, None], table.n_values[None, :, None],
        table.k_values[None, None, :], table.dtype)
    # The rule only takes time off. Where the dynamic-quant call itself ran faster than the
    # speed of light (L40S: weights L2-resident across the collector's repeats), nothing comes
    # off and the measured time stays, to be raised to the DRAM read as every table's time is
    # (measured_kernels, served_points). Lifting such a node to the floor here would price the
    # static path above the dynamic one, at the node and between it and its neighbours.
    known = np.isfinite(measured_s)
    covered = np.broadcast_to(hit.covered[:, None, :], known.shape) & known
    below_sol = covered & (measured_s < sol_s)
    subtracted = covered & ~below_sol
    floored = subtracted & (less_s < sol_s)
    with np.errstate(invalid="ignore"):
        log_latency = np.where(subtracted, np.log(np.maximum(less_s, sol_s)), table.log_latency)
    outside = int((known & ~covered).sum())
    note = (f"{rule.label}: {overhead.provenance.system}/{overhead.provenance.family}/"
            f"{overhead.provenance.engine}/{overhead.provenance.engine_version}/"
            f"{overhead.provenance.op} subtracted at {int(subtracted.sum())} of "
            f"{int(known.sum())} grid points, {int(floored.sum())} of them floored at the speed "
            "of light (peak FLOP/s, weight bytes / DRAM bandwidth)")
    if below_sol.any():
        note += (f"; at {int(below_sol.sum())} the dynamic-quant call itself ran faster than "
                 "the speed of light (its weights L2-resident across the collector's repeats): "
                 "nothing subtracted there, the DRAM floor raises it")
    if outside:
        note += (f"; {outside} outside its measured (m, k) box or on a point it did not measure "
                 "keep the dynamic-quant time")
    grid = Grid.build(table.grid.axes_log, log_latency, table.filled)
    return replace(table, log_latency=log_latency, grid=grid,
                   provenance=replace(prov, adjustment=note), _curves={})


def experts_read_s(shape: MoeShape, dtype: str, dram_bytes_per_s: float) -> float:
    """The DRAM read every routed-expert call makes at least, per GPU: each token goes to top-k
    distinct experts, so a call reads k experts' weights (its TP shard of each) whatever the
    routing — exact for one token, a lower bound for more. With experts split over GPUs (EP)
    a GPU may hold none of a token's experts: no bound (0)."""
    if shape.ep > 1:
        return 0.0
    experts = min(shape.topk, shape.num_experts)
    per_expert = shape.mlp_matrices * shape.hidden * shape.inter / shape.tp
    return float(experts * per_expert * GEMM_OPERAND_BYTES[normalize_dtype(dtype)][1]
                 / dram_bytes_per_s)


def kv_read_s(batch: npt.ArrayLike, kv_tokens: npt.ArrayLike, elements_per_token: float,
              kv_dtype: str, dram_bytes_per_s: float) -> FloatArray:
    """The DRAM read of a decode-attention call's KV cache (batch × tokens × elements per token,
    e.g. 2·n_kv·head_dim, or the MLA latent + rope) at the spec-sheet bandwidth: no serving call
    is faster (the collector's repeats keep a small cache in L2; a serving step does not)."""
    return np.asarray(np.asarray(batch, dtype=np.float64) * np.asarray(kv_tokens, dtype=np.float64)
                      * elements_per_token * BYTES_PER_ELEMENT[normalize_dtype(kv_dtype)]
                      / dram_bytes_per_s)
