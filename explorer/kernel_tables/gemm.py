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

from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from explorer.base.dtypes import GEMM_OPERAND_BYTES, normalize_dtype
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
    NOT_AS_SERVED,
    OVERHEAD_NOT_SERVED,
    Missing,
    OverheadNotServed,
    Provenance,
    TableRef,
    find_table,
    package_label,
    table_dtype,
)
from explorer.kernel_tables.quantize import load_compute_scale_table
from explorer.specs.hardware import HardwareSpec

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
    floor_s = speed_of_light.gemm_time_s(
        table.m_values[:, None, None], table.n_values[None, :, None],
        table.k_values[None, None, :], table.dtype)
    known = np.isfinite(measured_s)
    covered = np.broadcast_to(hit.covered[:, None, :], known.shape) & known
    floored = covered & (less_s < floor_s)
    with np.errstate(invalid="ignore"):
        log_latency = np.where(covered, np.log(np.maximum(less_s, floor_s)), table.log_latency)
    outside = int((known & ~covered).sum())
    note = (f"{rule.label}: {overhead.provenance.system}/{overhead.provenance.family}/"
            f"{overhead.provenance.engine}/{overhead.provenance.engine_version}/"
            f"{overhead.provenance.op} subtracted at {int(covered.sum())} of {int(known.sum())} "
            f"grid points, {int(floored.sum())} of them floored at the speed of light "
            "(peak FLOP/s, weight bytes / DRAM bandwidth)")
    if outside:
        note += (f"; {outside} outside its measured (m, k) box or on a point it did not measure "
                 "keep the dynamic-quant time")
    grid = Grid.build(table.grid.axes_log, log_latency, table.filled)
    return replace(table, log_latency=log_latency, grid=grid,
                   provenance=replace(prov, adjustment=note), _curves={})


def gemm_time_s(
    gpu: str, engine: str, dtype: str, m: npt.ArrayLike, n: npt.ArrayLike, k: npt.ArrayLike,
    version: str | None = None,
) -> GemmLookup | Missing:
    """One call: measured GEMM latency (seconds) with coverage, or why there is none."""
    table = load_gemm_table(gpu, engine, dtype, version)
    return table if isinstance(table, Missing) else table.latency(m, n, k)
