"""Measured GEMM latency per (GPU, engine, dtype), interpolated in log space on the measured grid.

A table is the package's near-full cartesian grid of m × n × k (74 × 22 × 22 on recent GPUs).
Interpolation is trilinear in (log m, log n, log k) → log t: exact at measured points, a local
power law between them, and never outside the measured box (`covered` False, latency NaN), so
the caller falls back to the roofline and says so.

Missing grid points (74 of 35 816 on H200 vLLM bf16: the whole n = k = 65536 column) are filled
at load time, in this order, repeated until nothing changes:
1. along m, inside a column: linear in log m between the measured neighbours;
2. across (n, k) at the same m: the log-parallelogram rule t(n₁,k₁) = t(n₀,k₁)·t(n₁,k₀)/t(n₀,k₀)
   (a local power law in n and k), averaged over the neighbouring parallelograms that exist;
3. only for holes step 2 cannot reach (a whole edge line of an (n, k) plane, e.g. trtllm
   fp8_block at m = 32768), the same rule in the (m, n) and (m, k) planes.
Lookups that lean on a filled point say so (`filled`). Axis values measured for less than half
of the other axes' combinations (b300 sglang bf16 has n = 1, 8, 16 at a single k) are dropped
rather than filled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from explorer.kernel_tables._grid import (
    KNOWN,
    BoolArray,
    FloatArray,
    Grid,
    Located,
    interpolate,
    locate,
    log_axis,
    log_query,
)
from explorer.kernel_tables.catalog import (
    Missing,
    Provenance,
    TableRef,
    find_table,
    package_label,
    table_dtype,
)

_MS = 1e-3
_MAX_CURVES = 4096  # cached (n, k) curves per table: ~1 kB each
_MIN_AXIS_FILL = 0.5  # an axis value measured for less than this share of its slice is dropped


@dataclass(frozen=True)
class GemmLookup:
    """Latency of C[m,n] = A[m,k]·W[k,n] for arrays of shapes (broadcast)."""

    latency_s: FloatArray  # NaN where not covered
    covered: BoolArray  # inside the measured box, every corner used known
    filled: BoolArray  # the interpolation used a filled (not measured) grid point
    provenance: Provenance

    @property
    def all_covered(self) -> bool:
        return bool(self.covered.all())


@dataclass(frozen=True)
class GemmCurve:
    """One (n, k) shape's latency over m: the table's bilinear (n, k) slice at every m node.

    Trilinear interpolation is separable, so this gives the same numbers as `GemmTable.latency`
    for that (n, k), but each lookup is one 1-D interpolation (the explorer's hot path: a few
    fixed weight shapes, thousands of token counts)."""

    n: float
    k: float
    grid: Grid  # over log m; a node is unknown where a corner of its (n, k) cell is
    provenance: Provenance

    @property
    def covered_any(self) -> bool:
        return bool((self.grid.status & KNOWN).any())

    def latency(self, m: npt.ArrayLike) -> GemmLookup:
        x = log_query(m)
        grid = self.grid
        if grid.all_known and not grid.any_flagged:  # the common case: one np.interp
            log_m = grid.axes_log[0]
            with np.errstate(invalid="ignore"):
                ok = np.asarray((x >= log_m[0]) & (x <= log_m[-1]))
            value = np.interp(x, log_m, grid.values)
            return GemmLookup(np.where(ok, np.exp(value), np.nan), ok,
                              np.zeros(ok.shape, dtype=np.bool_), self.provenance)
        value, ok, touches = interpolate(grid, [locate(grid.axes_log[0], x)], x.shape)
        return GemmLookup(np.where(ok, np.exp(value), np.nan), ok, touches, self.provenance)


@dataclass(frozen=True)
class GemmTable:
    """One (system, engine, version, dtype) GEMM table on its regular log grid."""

    ref: TableRef
    dtype: str  # the package's spelling: bfloat16, fp8, fp8_block, nvfp4, …
    m_values: npt.NDArray[np.int64]
    n_values: npt.NDArray[np.int64]
    k_values: npt.NDArray[np.int64]
    log_latency: FloatArray  # log seconds, shape (m, n, k); NaN where neither measured nor filled
    measured: BoolArray
    rows_used: int
    rows_dropped: int  # rows on sparse axis values (see module doc)
    provenance: Provenance
    grid: Grid
    _curves: dict[tuple[float, float], GemmCurve] = field(
        default_factory=dict, compare=False, repr=False, hash=False)

    @property
    def known(self) -> BoolArray:
        return np.asarray(np.isfinite(self.log_latency))

    @property
    def filled(self) -> BoolArray:
        return np.asarray(self.known & ~self.measured)

    @property
    def box(self) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
        """(min, max) of m, n, k: outside it nothing is covered."""
        m, n, k = self.m_values, self.n_values, self.k_values
        return (int(m[0]), int(m[-1])), (int(n[0]), int(n[-1])), (int(k[0]), int(k[-1]))

    def latency(self, m: npt.ArrayLike, n: npt.ArrayLike, k: npt.ArrayLike) -> GemmLookup:
        """Vectorized lookup over broadcast arrays of m (tokens), n and k. With one (n, k) it
        goes through that shape's cached curve over m (same numbers, ~10x faster)."""
        if np.ndim(n) == 0 and np.ndim(k) == 0:
            return self.curve(float(n), float(k)).latency(m)  # type: ignore[arg-type]
        queries = [log_query(q) for q in (m, n, k)]
        shape = np.broadcast_shapes(*(q.shape for q in queries))
        axes = [locate(a, q) for a, q in zip(self.grid.axes_log, queries, strict=True)]
        value, ok, touches = interpolate(self.grid, axes, shape)
        return GemmLookup(np.where(ok, np.exp(value), np.nan), ok, touches, self.provenance)

    def curve(self, n: float, k: float) -> GemmCurve:
        """The (n, k) slice over m, computed once per shape and cached on the table."""
        key = (float(n), float(k))
        cached = self._curves.get(key)
        if cached is not None:
            return cached
        log_m = self.grid.axes_log[0]
        nodes = np.arange(log_m.size)
        # Every m node located exactly (weight 0, or 1 at the last): the same trilinear lookup
        # as `latency`, so the curve's numbers agree with it.
        at_nodes = Located(np.minimum(nodes, log_m.size - 2),
                           (nodes == log_m.size - 1).astype(np.float64),
                           np.ones(log_m.size, dtype=np.bool_))
        axes = [at_nodes, locate(self.grid.axes_log[1], np.log(np.asarray(key[0]))),
                locate(self.grid.axes_log[2], np.log(np.asarray(key[1])))]
        value, ok, touches = interpolate(self.grid, axes, (log_m.size,))
        if len(self._curves) >= _MAX_CURVES:  # bound the cache in a long-running app
            self._curves.clear()
        out = GemmCurve(key[0], key[1],
                        Grid.build([log_m], np.where(ok, value, np.nan), touches),
                        self.provenance)
        self._curves[key] = out
        return out


def _drop_sparse_axis_values(frame: pd.DataFrame) -> pd.DataFrame:
    """Drop axis values measured on less than half of their slice, until none is left."""
    for _ in range(4):
        sizes = {c: frame[c].nunique() for c in ("m", "n", "k")}
        keep = pd.Series(True, index=frame.index)
        for c in ("m", "n", "k"):
            slice_size = sizes["m"] * sizes["n"] * sizes["k"] / sizes[c]
            share = frame.groupby(c)[c].transform("size") / slice_size
            keep &= share >= _MIN_AXIS_FILL
        if bool(keep.all()):
            return frame
        frame = frame[keep]
    return frame


def _parallelogram(grid: FloatArray, axes: tuple[int, int]) -> tuple[FloatArray, FloatArray]:
    """Sum and count of the log-parallelogram estimates t(a₁,b₁) = t(a₀,b₁)·t(a₁,b₀)/t(a₀,b₀)
    from the (up to four) neighbouring cells in the plane of `axes`."""
    pad = [(0, 0)] * grid.ndim
    for ax in axes:
        pad[ax] = (1, 1)
    padded = np.pad(grid, pad, constant_values=np.nan)

    def shifted(offsets: dict[int, int]) -> FloatArray:
        index = tuple(slice(1 + offsets.get(ax, 0), 1 + offsets.get(ax, 0) + grid.shape[ax])
                      if ax in axes else slice(None) for ax in range(grid.ndim))
        return np.asarray(padded[index])

    total = np.zeros_like(grid)
    count = np.zeros_like(grid)
    a_ax, b_ax = axes
    for da in (-1, 1):
        for db in (-1, 1):
            est = shifted({a_ax: da}) + shifted({b_ax: db}) - shifted({a_ax: da, b_ax: db})
            ok = np.isfinite(est)
            total[ok] += est[ok]
            count[ok] += 1
    return total, count


def fill_grid(log_t: FloatArray, log_m: FloatArray) -> FloatArray:
    """Fill holes of a (m, n, k) log-latency grid (module doc); NaN stays where no rule applies."""
    grid = log_t.copy()
    for _ in range(sum(grid.shape)):
        holes_before = int(np.isnan(grid).sum())
        if holes_before == 0:
            break
        # 1. along m, interior holes of a column only (load time: a loop over columns is fine).
        for j, kk in np.argwhere(np.isnan(grid).any(axis=0)):
            col = grid[:, j, kk]
            have = np.isfinite(col)
            if have.sum() >= 2:
                inner = ~have & (log_m > log_m[have][0]) & (log_m < log_m[have][-1])
                col[inner] = np.interp(log_m[inner], log_m[have], col[have])
        # 2. across (n, k) at the same m; 3. only where that finds nothing (a hole on an edge
        # line of the (n, k) plane), the same rule in the (m, n) and (m, k) planes.
        planes: tuple[tuple[tuple[int, int], ...], ...] = (((1, 2),), ((0, 1), (0, 2)))
        for group in planes:
            total = np.zeros_like(grid)
            count = np.zeros_like(grid)
            for axes in group:
                t, c = _parallelogram(grid, axes)
                total += t
                count += c
            holes = np.isnan(grid) & (count > 0)
            if holes.any():
                grid[holes] = total[holes] / count[holes]
                break
        if int(np.isnan(grid).sum()) == holes_before:
            break
    return grid


def _build(ref: TableRef, dtype: str) -> GemmTable | Missing:
    frame = pd.read_parquet(ref.path, columns=["gemm_dtype", "kernel_source", "m", "n", "k",
                                               "latency"])
    frame = frame[frame["gemm_dtype"] == dtype]
    if frame.empty:
        have = ", ".join(sorted(pd.read_parquet(ref.path, columns=["gemm_dtype"])["gemm_dtype"]
                                .unique()))
        return Missing(f"no {dtype} GEMMs in {ref.where} (have: {have})")
    frame = frame[np.isfinite(frame["latency"]) & (frame["latency"] > 0)]
    kept = _drop_sparse_axis_values(frame)
    m_v, n_v, k_v = (np.unique(kept[c].to_numpy(np.int64)) for c in ("m", "n", "k"))
    if min(m_v.size, n_v.size, k_v.size) < 2:
        return Missing(f"{ref.where} {dtype}: fewer than 2 grid values on an axis")
    # Repeated shapes (none today) are reduced to their median.
    per_shape = kept.groupby(["m", "n", "k"], sort=False)["latency"].median()
    im = np.searchsorted(m_v, per_shape.index.get_level_values("m").to_numpy(np.int64))
    i_n = np.searchsorted(n_v, per_shape.index.get_level_values("n").to_numpy(np.int64))
    ik = np.searchsorted(k_v, per_shape.index.get_level_values("k").to_numpy(np.int64))
    log_t = np.full((m_v.size, n_v.size, k_v.size), np.nan)
    log_t[im, i_n, ik] = np.log(per_shape.to_numpy(np.float64) * _MS)
    measured = np.isfinite(log_t)
    filled = fill_grid(log_t, log_axis(m_v))
    n_filled = int((np.isfinite(filled) & ~measured).sum())
    n_unknown = int((~np.isfinite(filled)).sum())
    sources = kept["kernel_source"].value_counts()
    kernel = " / ".join(str(s) for s in sources.index)
    detail = f"{int(measured.sum())} of {measured.size} grid points measured"
    if n_filled:
        detail += f", {n_filled} filled"
    if n_unknown:
        detail += f", {n_unknown} unknown"
    if len(kept) < len(frame):
        detail += f"; {len(frame) - len(kept)} rows on sparse axis values dropped"
    prov = Provenance(package_label(), ref.system, ref.family, ref.engine, ref.version, ref.op,
                      dtype, kernel, detail)
    grid = Grid.build([log_axis(m_v), log_axis(n_v), log_axis(k_v)], filled,
                      np.isfinite(filled) & ~measured)
    return GemmTable(ref, dtype, m_v, n_v, k_v, filled, measured, len(kept),
                     len(frame) - len(kept), prov, grid)


@lru_cache(maxsize=64)
def load_gemm_table(
    gpu: str, engine: str, dtype: str, version: str | None = None, root: Path | None = None
) -> GemmTable | Missing:
    """The GEMM table of a GPU (preset slug or package system name), engine and dtype (any
    spelling: bf16, bfloat16, fp8, fp8-block, fp4, nvfp4); the engine's newest version when
    none is named. A Missing with the reason when there is none."""
    ref = find_table(gpu, "gemm", engine, version, root)
    if isinstance(ref, Missing):
        return ref
    try:
        return _build(ref, table_dtype(dtype))
    except (OSError, ValueError, KeyError) as err:  # a damaged or changed file: fall back
        return Missing(f"could not read {ref.where}/{ref.op}: {err}")


def gemm_time_s(
    gpu: str, engine: str, dtype: str, m: npt.ArrayLike, n: npt.ArrayLike, k: npt.ArrayLike,
    version: str | None = None,
) -> GemmLookup | Missing:
    """One call: measured GEMM latency (seconds) with coverage, or why there is none."""
    table = load_gemm_table(gpu, engine, dtype, version)
    return table if isinstance(table, Missing) else table.latency(m, n, k)
