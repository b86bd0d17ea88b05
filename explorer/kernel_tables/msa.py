"""MiniMax Sparse Attention (MSA): the package's measured decode tables of the whole attention
module (`msa/<engine>/<version>/msa_generation_module_perf.parquet`).

aiconfigurator-core prices MiniMax-M3's attention block by one module op (sdk/models/
minimax_m3.py, sdk/operations/msa.py): the q/k/v/o projections, the block indexer (a dense
proxy pass scoring KV blocks of 128 tokens) and GQA attention over the top-16 blocks, timed as
one call on the serving path. A table is keyed by the query heads per rank, the KV-cache and GEMM
dtypes, and measured over batch × decode length (`step`; the collection notes: a row's KV
length is isl + step, isl = 1). Latencies are in ms.

A lookup interpolates log latency bilinearly over (log batch, log KV length) inside the measured
grid; a point outside it, or next to a cell the collector could not run (out of memory at large
batch × length), is not covered (the caller prices it otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
import pandas as pd

from explorer.kernel_tables.catalog import (
    Missing,
    Provenance,
    TableLookup,
    find_table,
    package_label,
    table_dtype,
)

FloatArray = npt.NDArray[np.float64]
FAMILY = "msa"
OP = "msa_generation_module"


@dataclass(frozen=True)
class MsaGrid:
    """One (heads per rank, KV dtype, GEMM dtype): log latency over log batch × log KV length."""

    log_batch: FloatArray
    log_kv: FloatArray
    log_latency: FloatArray  # (batch, kv); NaN where not measured
    provenance: Provenance

    def latency(self, batch: npt.ArrayLike, kv_len: npt.ArrayLike) -> TableLookup:
        b = np.log(np.maximum(np.asarray(batch, dtype=np.float64), 1e-9))
        s = np.log(np.maximum(np.asarray(kv_len, dtype=np.float64), 1e-9))
        b, s = np.broadcast_arrays(b, s)
        inside = ((b >= self.log_batch[0]) & (b <= self.log_batch[-1])
                  & (s >= self.log_kv[0]) & (s <= self.log_kv[-1]))
        i = np.clip(np.searchsorted(self.log_batch, b, side="right") - 1, 0,
                    self.log_batch.size - 2)
        j = np.clip(np.searchsorted(self.log_kv, s, side="right") - 1, 0, self.log_kv.size - 2)
        tb = (b - self.log_batch[i]) / (self.log_batch[i + 1] - self.log_batch[i])
        ts = (s - self.log_kv[j]) / (self.log_kv[j + 1] - self.log_kv[j])
        grid = self.log_latency
        value = ((1 - tb) * (1 - ts) * grid[i, j] + tb * (1 - ts) * grid[i + 1, j]
                 + (1 - tb) * ts * grid[i, j + 1] + tb * ts * grid[i + 1, j + 1])
        covered = inside & np.isfinite(value)
        out = np.where(covered, np.exp(np.where(covered, value, 0.0)), np.nan)
        return TableLookup(np.asarray(out, dtype=np.float64), np.asarray(covered),
                           self.provenance)


@lru_cache(maxsize=16)
def _frame(path: str) -> pd.DataFrame:
    return pd.read_parquet(path)


@lru_cache(maxsize=64)
def find_msa_grid(gpu: str, engine: str, heads_per_rank: int, kv_dtype: str,
                  gemm_dtype: str) -> MsaGrid | Missing:
    """The engine's newest MSA decode table for this shape and these dtypes on the GPU."""
    ref = find_table(gpu, OP, engine)
    if isinstance(ref, Missing):
        return ref
    df = _frame(str(ref.path))
    kv, gemm = table_dtype(kv_dtype), table_dtype(gemm_dtype)
    rows = df[(df.num_heads == heads_per_rank) & (df.kv_cache_dtype == kv)
              & (df.gemm_type == gemm)]
    if rows.empty:
        return Missing(f"no MSA row for {heads_per_rank} query heads per rank, KV {kv}, "
                       f"GEMM {gemm} in {ref.where}")
    pivot = rows.pivot_table(index="batch_size", columns="step", values="latency",
                             aggfunc="median").sort_index().sort_index(axis=1)
    isl = float(rows.isl.iloc[0]) if "isl" in rows else 1.0
    kv_len = pivot.columns.to_numpy(dtype=np.float64) + isl
    with np.errstate(divide="ignore", invalid="ignore"):
        log_lat = np.log(pivot.to_numpy(dtype=np.float64) * 1e-3)  # ms → s
    prov = Provenance(package=package_label(), system=ref.system, family=FAMILY,
                      engine=ref.engine, engine_version=ref.version, op=OP, dtype=gemm,
                      kernel_source=str(rows.kernel_source.iloc[0]),
                      detail=f"{heads_per_rank} query heads per rank, KV {kv}")
    return MsaGrid(np.log(pivot.index.to_numpy(dtype=np.float64)), np.log(kv_len), log_lat,
                   prov)
