"""Measured activation-quantization overhead: the package's quantize/<engine>/computescale tables.

A compute-scale time is the cost of finding a per-tensor FP8 scale for an (m, k) activation at
run time: the collector times TRT-LLM's dynamic quantize op and its static one on the same
tensor and logs max(0, dynamic − static) (ai-dynamo/aiconfigurator
collector/trtllm/collect_computescale.py @dec5f4cd2, the 1.3.0rc20 data). gemm.py subtracts it
from a GEMM table that was timed on the dynamic path (catalog.OVERHEAD_NOT_SERVED).

Interpolation is bilinear in (log m, log k) on the measured grid, of the time itself, not its
log: the collector clamps the difference at 0, so 0 is a measured value (21 of 1628 points on
L40S TRT-LLM). Outside the measured box nothing is covered (NaN), never extrapolated; the
caller then subtracts nothing and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from explorer.kernel_tables._grid import (
    FloatArray,
    Grid,
    interpolate,
    locate,
    log_axis,
    log_query,
)
from explorer.kernel_tables.catalog import (
    Missing,
    Provenance,
    TableLookup,
    TableRef,
    find_table,
    package_label,
)

_MS = 1e-3
COMPUTE_SCALE_OP = "computescale"  # the file's op name: computescale_perf.parquet


@dataclass(frozen=True)
class ComputeScaleTable:
    """One (system, engine, version) compute-scale table: seconds over an (m, k) grid."""

    ref: TableRef
    quant_dtype: str  # the package's spelling: fp8
    m_values: npt.NDArray[np.int64]
    k_values: npt.NDArray[np.int64]
    latency_s: FloatArray  # shape (m, k); NaN where not measured
    provenance: Provenance
    grid: Grid  # values in seconds (not log: see module doc)

    def latency(self, m: npt.ArrayLike, k: npt.ArrayLike) -> TableLookup:
        """Vectorized lookup over broadcast arrays of m (tokens) and k (the GEMM's input
        width); NaN and `covered` False outside the measured box."""
        queries = [log_query(m), log_query(k)]
        shape = np.broadcast_shapes(*(q.shape for q in queries))
        axes = [locate(a, q) for a, q in zip(self.grid.axes_log, queries, strict=True)]
        value, ok, _ = interpolate(self.grid, axes, shape)
        return TableLookup(np.where(ok, value, np.nan), ok, self.provenance)


def _build(ref: TableRef, quant_dtype: str) -> ComputeScaleTable | Missing:
    frame = pd.read_parquet(ref.path, columns=["quant_dtype", "kernel_source", "m", "k",
                                               "latency"])
    frame = frame[(frame["quant_dtype"] == quant_dtype) & np.isfinite(frame["latency"])
                  & (frame["latency"] >= 0)]
    if frame.empty:
        return Missing(f"no {quant_dtype} rows in {ref.where}/{ref.op}")
    m_v, k_v = (np.unique(frame[c].to_numpy(np.int64)) for c in ("m", "k"))
    if min(m_v.size, k_v.size) < 2:
        return Missing(f"{ref.where}/{ref.op}: fewer than 2 grid values on an axis")
    per_point = frame.groupby(["m", "k"], sort=False)["latency"].median()
    im = np.searchsorted(m_v, per_point.index.get_level_values("m").to_numpy(np.int64))
    ik = np.searchsorted(k_v, per_point.index.get_level_values("k").to_numpy(np.int64))
    seconds = np.full((m_v.size, k_v.size), np.nan)
    seconds[im, ik] = per_point.to_numpy(np.float64) * _MS
    measured = int(np.isfinite(seconds).sum())
    kernel = " / ".join(str(s) for s in frame["kernel_source"].value_counts().index)
    prov = Provenance(package_label(), ref.system, ref.family, ref.engine, ref.version, ref.op,
                      quant_dtype, kernel, f"{measured} of {seconds.size} grid points measured")
    return ComputeScaleTable(ref, quant_dtype, m_v, k_v, seconds, prov,
                             Grid.build([log_axis(m_v), log_axis(k_v)], seconds))


@lru_cache(maxsize=32)
def load_compute_scale_table(
    gpu: str, engine: str, version: str | None = None, quant_dtype: str = "fp8",
    root: Path | None = None,
) -> ComputeScaleTable | Missing:
    """The compute-scale table of a GPU (preset slug or package system name) and engine, of
    that engine version (the newest when none is named); a Missing with the reason when none."""
    ref = find_table(gpu, COMPUTE_SCALE_OP, engine, version, root)
    if isinstance(ref, Missing):
        return ref
    try:
        return _build(ref, quant_dtype)
    except (OSError, ValueError, KeyError) as err:  # a damaged or changed file: no subtraction
        return Missing(f"could not read {ref.where}/{ref.op}: {err}")
