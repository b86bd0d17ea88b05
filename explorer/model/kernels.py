"""Roofline kernel times: t = max(flops/(F·η_c), bytes/(BW·η_m), kernel floor), vectorized."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from explorer.base.dtypes import BYTES_PER_ELEMENT
from explorer.specs.hardware import HardwareSpec

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

    @property
    def compute_bound(self) -> npt.NDArray[np.bool_]:
        return np.asarray(self.compute_s >= self.memory_s)

    @property
    def at_floor(self) -> npt.NDArray[np.bool_]:
        return np.asarray(self.time_s > np.maximum(self.compute_s, self.memory_s))


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def gemm_time(
    hw: HardwareSpec, m: ArrayLike, n: ArrayLike, k: ArrayLike, dtype: str = "bf16"
) -> KernelTime:
    """C[m,n] = A[m,k]·W[k,n]: 2mnk FLOP; bytes = (mk + kn + mn)·b (weights dominate at small m)."""
    m_, n_, k_ = _f(m), _f(n), _f(k)
    b = BYTES_PER_ELEMENT[dtype]
    flops = 2.0 * m_ * n_ * k_
    nbytes = (m_ * k_ + k_ * n_ + m_ * n_) * b
    compute = flops / (hw.peak_flops_per_s(dtype) * hw.gemm_compute_efficiency)
    memory = nbytes / (hw.hbm_bw_bytes_per_s * hw.gemm_memory_efficiency)
    time = np.maximum(np.maximum(compute, memory), hw.kernel_floor_s)
    return KernelTime(time, compute, memory, flops, nbytes)


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
    memory = nbytes / (hw.hbm_bw_bytes_per_s * hw.attention_memory_efficiency)
    time = np.maximum(np.maximum(compute, memory), hw.kernel_floor_s)
    return KernelTime(time, compute, memory, useful_flops, nbytes)
