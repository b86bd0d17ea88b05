"""Roofline kernel times, vectorized, for the calls no measured table covers.

Where the hardware carries the cross-GPU fit of data/roofline_fit.csv (every NVIDIA preset):
GEMM t = floor_dtype + (C^p + M^p)^(1/p) with that dtype's η_c, η_m (a smooth memory→compute
transition, chosen by leave-one-GPU-out error) and, where the fit has one, weight streaming
slower for narrow outputs (M × (1 + (n½/n)^q)), and decode attention t = floor + KV bytes /
(BW·η(bytes)) with a size-dependent η and a cost per (sequence, KV head). The fit used is
`hw.gemm_fit(dtype)`: a resolved scenario's hardware carries only its engine's fits
(HardwareSpec.for_engine); an unnarrowed preset prices on the lowest-LOO engine's. Otherwise (other
vendors, calibrated or hand-set efficiencies): t = max(flops/(F·η_c), bytes/(BW·η_m), floor).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from explorer.base.dtypes import ACT_QUANT_BYTES, BYTES_PER_ELEMENT, GEMM_OPERAND_BYTES
from explorer.specs.hardware import GemmRooflineFit, HardwareSpec

FloatArray = npt.NDArray[np.float64]
ArrayLike = npt.ArrayLike

# The article's decode-attention kernels compute query rows per KV head in tiles of 128
# ("GEMM-M = 128"): a partly filled tile costs a full one (guidelines 2 and 3).
ATTENTION_TILE_ROWS = 128


@dataclass(frozen=True)
class KernelTime:
    """Arrays of one kernel's time and the roofline terms behind it (seconds, FLOP, bytes)."""

    time_s: FloatArray
    compute_s: FloatArray
    memory_s: FloatArray
    flops: FloatArray
    bytes: FloatArray
    floor_s: FloatArray | float = 0.0  # the fixed part of time_s

    @property
    def compute_bound(self) -> npt.NDArray[np.bool_]:
        return np.asarray(self.compute_s >= self.memory_s)

    @property
    def at_floor(self) -> npt.NDArray[np.bool_]:
        """The fixed cost (kernel floor) outweighs both roofline terms."""
        return np.asarray(self.floor_s > np.maximum(self.compute_s, self.memory_s))


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def p_norm(a: FloatArray, b: FloatArray, p: float) -> FloatArray:
    """(a^p + b^p)^(1/p) for a, b ≥ 0, finite for large p (p = inf is the max)."""
    hi, lo = np.maximum(a, b), np.minimum(a, b)
    if np.isinf(p):
        return np.asarray(hi)
    ratio = lo / np.maximum(hi, 1e-300)
    return np.asarray(hi * (1.0 + ratio**p) ** (1.0 / p))


def gemm_bytes(m: FloatArray, n: FloatArray, k: FloatArray, dtype: str,
               act_quant: bool = False) -> FloatArray:
    """Bytes of C[m,n] = A[m,k]·W[k,n] at a dtype's operand sizes (weights with their scales,
    bf16 output); with `act_quant` the op also quantizes its bf16 input."""
    b_in, b_w, b_out = GEMM_OPERAND_BYTES[dtype]
    if act_quant:
        b_in = ACT_QUANT_BYTES.get(dtype, b_in)
    return np.asarray(m * k * b_in + k * n * b_w + m * n * b_out)


def width_factor(fit: GemmRooflineFit, flops: FloatArray, outputs: FloatArray,
                 width: ArrayLike | None) -> FloatArray | float:
    """The fit's weight-streaming slowdown 1 + (n½/n)^q for output width n (columns). A call
    that does not name its width (a grouped MoE GEMM) uses its mean reduction depth
    flops/(2·outputs) in its place: its matrices' widths are of that size."""
    if not fit.n_half:
        return 1.0
    if width is not None:
        n = _f(width)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            n = np.where(outputs > 0, flops / (2.0 * outputs), np.inf)
    return np.asarray(1.0 + (fit.n_half / np.maximum(n, 1.0)) ** fit.n_q)


def gemm_roofline(hw: HardwareSpec, flops: ArrayLike, nbytes: ArrayLike, dtype: str,
                  kernels: int = 1, outputs: ArrayLike = 0.0,
                  width: ArrayLike | None = None) -> KernelTime:
    """The roofline of `kernels` GEMM calls doing `flops`, moving `nbytes` and writing
    `outputs` elements (`width` output columns each, where known) at a dtype: the dtype's
    cross-GPU fit where the hardware has one (with its per-output cost k0 and width term),
    else the single-η hard max."""
    fl, nb = _f(flops), _f(nbytes)
    fit = hw.gemm_fit(dtype)
    peak = hw.peak_flops_per_s(dtype)
    if fit is None:
        compute = fl / (peak * hw.gemm_compute_efficiency)
        memory = nb / (hw.hbm_bw_bytes_per_s * hw.gemm_memory_efficiency)
        time = np.maximum(np.maximum(compute, memory), kernels * hw.kernel_floor_s)
        return KernelTime(time, compute, memory, fl, nb, kernels * hw.kernel_floor_s)
    compute = (fl + 2.0 * fit.k0 * _f(outputs)) / (peak * fit.eta_c)
    memory = (nb / (hw.hbm_bw_bytes_per_s * fit.eta_m)
              * width_factor(fit, fl, _f(outputs), width))
    time = kernels * fit.floor_s + p_norm(compute, memory, fit.p)
    return KernelTime(time, compute, memory, fl, nb, kernels * fit.floor_s)


def gemm_time(
    hw: HardwareSpec, m: ArrayLike, n: ArrayLike, k: ArrayLike, dtype: str = "bf16"
) -> KernelTime:
    """C[m,n] = A[m,k]·W[k,n]: 2mnk FLOP; bytes of the operands (weights dominate at small m):
    at the kernels' operand sizes under the fitted roofline, (mk + kn + mn)·b otherwise."""
    m_, n_, k_ = _f(m), _f(n), _f(k)
    flops = 2.0 * m_ * n_ * k_
    fit = hw.gemm_fit(dtype)
    if fit is not None:
        nbytes = gemm_bytes(m_, n_, k_, dtype, fit.act_quant)
    else:
        nbytes = (m_ * k_ + k_ * n_ + m_ * n_) * BYTES_PER_ELEMENT[dtype]
    return gemm_roofline(hw, flops, nbytes, dtype, outputs=m_ * n_, width=n_)


def padded_rows(group: ArrayLike, q_len: ArrayLike) -> FloatArray:
    """Query rows per KV head G·W rounded up to whole 128-row tiles."""
    rows = _f(group) * _f(q_len)
    return np.ceil(rows / ATTENTION_TILE_ROWS - 1e-9) * ATTENTION_TILE_ROWS


def attention_time(
    hw: HardwareSpec,
    batch: ArrayLike,
    context: ArrayLike,
    kv_heads: ArrayLike,
    group: ArrayLike,
    q_len: ArrayLike,
    head_dim_qk: ArrayLike,
    head_dim_v: ArrayLike | None = None,
    kv_bytes_per_token_head: ArrayLike | None = None,
    kv_dtype: str = "bf16",
) -> KernelTime:
    """Decode/verify attention of q_len new tokens per sequence over a KV cache of `context`.

    KV bytes B·S·2·n_kv·h·b_kv do not depend on q_len; FLOP 2·B·n_kv·rows_padded·S·(h_qk+h_v)
    with rows_padded = ceil(G·W/128)·128, so runtime is flat while memory-bound and steps up at
    each multiple of 128 once compute-bound. `flops` reports the useful (unpadded) work.
    """
    b_, s_, kv_, g_, w_ = _f(batch), _f(context), _f(kv_heads), _f(group), _f(q_len)
    h_qk = _f(head_dim_qk)
    h_v = h_qk if head_dim_v is None else _f(head_dim_v)
    per_token_head = (
        2.0 * h_qk * BYTES_PER_ELEMENT[kv_dtype]
        if kv_bytes_per_token_head is None
        else _f(kv_bytes_per_token_head)
    )
    nbytes = b_ * s_ * kv_ * per_token_head
    padded_flops = 2.0 * b_ * kv_ * padded_rows(g_, w_) * s_ * (h_qk + h_v)
    useful_flops = 2.0 * b_ * kv_ * g_ * w_ * s_ * (h_qk + h_v)
    compute = padded_flops / (hw.bf16_flops_per_s * hw.attention_compute_efficiency)
    fit = hw.attention_fit(kv_dtype)
    if fit is None:
        memory = nbytes / (hw.hbm_bw_bytes_per_s * hw.attention_memory_efficiency)
        time = np.maximum(np.maximum(compute, memory), hw.kernel_floor_s)
        return KernelTime(time, compute, memory, useful_flops, nbytes, hw.kernel_floor_s)
    # Fixed cost + KV bytes at the size-dependent bandwidth; the 128-row tile steps stay a
    # hard max against compute (a partly filled tile costs a full one).
    memory = nbytes / (hw.hbm_bw_bytes_per_s * fit.efficiency(nbytes, b_ * kv_))
    fixed = (fit.floor_s + fit.per_row_s * b_ * kv_ * g_
             + fit.per_unit_s * b_ * kv_ * h_qk / 128.0)  # per (sequence, KV head) CTA
    time = fixed + np.maximum(compute, memory)
    return KernelTime(time, compute, memory, useful_flops, nbytes, fixed)
