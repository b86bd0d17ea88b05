"""The package's measured kernel tables as the cost model's default kernel times (DESIGN.md §2.1).

Order of precedence, per kernel call: the user's upload (model/corrections.py), then the pinned
aiconfigurator-core table of (hardware, engine, dtype) where it covers the point, then the
roofline. Outside a table's measured box the roofline is used and counted, never extrapolated.
`KernelTally` counts, per kind, how many evaluated points each source priced, so an evaluation
can say where its kernel times came from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from explorer.base.dtypes import LOGITS_DTYPE, normalize_dtype
from explorer.kernel_tables import (
    AttentionConfig,
    AttentionLookup,
    GemmTable,
    GenerationAttentionTable,
    Missing,
    load_generation_attention_table,
    load_serving_gemm_table,
    package_label,
    resolve_system,
)
from explorer.kernel_tables._grid import Grid
from explorer.kernel_tables.catalog import Provenance
from explorer.kernel_tables.mla import find_mla_config
from explorer.kernel_tables.moe import MoeShape, find_moe_curve
from explorer.kernel_tables.msa import find_msa_grid
from explorer.kernel_tables.served import (
    SpeedOfLight,
    experts_read_s,
    kv_read_s,
    weight_read_s,
)
from explorer.specs.hardware import HardwareSpec

FloatArray = npt.NDArray[np.float64]
MAX_MEMO_LOOKUPS = 64  # remembered attention lookups per scenario model (a few kB each)


@dataclass
class KernelTally:
    """Points priced by a measured table vs the roofline, per kernel kind ("gemm", "attention")."""

    measured: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    why_not: dict[str, str] = field(default_factory=dict)  # the reason of the last miss per kind
    # Per kind, the label of each table that priced a point (kinds whose table varies by call).
    sources: dict[str, set[str]] = field(default_factory=dict)
    # Per kind, measured points raised to the DRAM bound (see MeasuredKernels.dram_bytes_per_s).
    raised: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, covered: npt.NDArray[np.bool_] | bool, size: int,
            reason: str = "") -> None:
        n = int(np.count_nonzero(covered)) if not isinstance(covered, bool) else (
            size if covered else 0)
        self.measured[kind] = self.measured.get(kind, 0) + n
        self.total[kind] = self.total.get(kind, 0) + size
        if n < size and reason:
            self.why_not[kind] = reason

    def reset(self) -> None:
        self.measured.clear()
        self.total.clear()
        self.why_not.clear()
        self.sources.clear()
        self.raised.clear()

    def add_raised(self, kind: str, raised: npt.NDArray[np.bool_]) -> None:
        n = int(np.count_nonzero(raised))
        if n:
            self.raised[kind] = self.raised.get(kind, 0) + n

    def share(self, kind: str) -> float | None:
        t = self.total.get(kind, 0)
        return self.measured.get(kind, 0) / t if t else None


@dataclass
class MeasuredKernels:
    """The GEMM and decode-attention tables of one (hardware, engine, dtype, KV dtype)."""

    hardware: str
    engine: str
    gemm: GemmTable | Missing
    attention: GenerationAttentionTable | Missing
    tally: KernelTally = field(default_factory=KernelTally)
    # The spec-sheet DRAM bandwidth: a measured time is never taken below the DRAM read of the
    # weights (GEMM; MoE: the top-k experts every token reads) or KV cache (attention, MLA) it
    # needs (kernel_tables/served.py). The collector repeats a call on the same
    # or a few copies of its tensors, so where they fit in L2 (L40S: 96 MB) it ran faster than
    # DRAM allows (up to 3.5x on L40S GEMMs, 4.7x on its attention); in a serving step the rest
    # of the model streams through L2 between two uses of a layer, so they come from DRAM.
    # None: no bound (tables read as measured).
    dram_bytes_per_s: float | None = None
    # The table of the logits GEMM, which runs in LOGITS_DTYPE whatever the weights' dtype
    # (explorer/base/dtypes.py); None: `gemm` is that table.
    logits_gemm: GemmTable | Missing | None = None
    # Why no MoE or MLA table can price this scenario (hypothetical hardware); None: look up.
    no_tables: Missing | None = None
    _mono: dict[tuple[bool, float, float], tuple[FloatArray, FloatArray]] = field(
        default_factory=dict, repr=False)
    _mono_attention: dict[tuple[int, int, int, int], AttentionConfig | Missing] = field(
        default_factory=dict, repr=False)
    # Lookups by their exact inputs: a grid asks the same (batch, KV length) points for the
    # base verify, the speculative verify and the draft, and again on every rerun.
    _attention_lookups: dict[tuple[object, ...], AttentionLookup] = field(
        default_factory=dict, repr=False)
    # MoE: (shape, dtype) → (log tokens, monotone log latency, provenance) or why not.
    # MLA: (q heads per rank, latent, rope, KV dtype) → its monotone grid, or why not.
    _mla_configs: dict[tuple[int, int, int, str], AttentionConfig | Missing] = field(
        default_factory=dict, repr=False)
    _moe_memo: dict[tuple[object, ...], tuple[FloatArray, int, str, str, int]] = field(
        default_factory=dict, repr=False)
    _moe_curves: dict[tuple[MoeShape, str], tuple[FloatArray, FloatArray, Provenance] | Missing
                      ] = field(default_factory=dict, repr=False)
    _last_kv: dict[tuple[int, int, int, int], FloatArray] = field(default_factory=dict,
                                                                  repr=False)

    def gemm_time(self, m: FloatArray, n: npt.ArrayLike, k: npt.ArrayLike,
                  roofline: FloatArray,
                  roofline_at: Callable[[float, float, float], FloatArray] | None = None,
                  logits: bool = False) -> FloatArray:
        """Measured where covered (per-rank n, k; m = tokens), else the roofline's time;
        `logits`: the logits GEMM, from its own dtype's table (`logits_gemm`).

        Past the table's largest m (a shape it measures) the roofline is anchored to the last
        measured time, t_meas(m_max)·roof(m)/roof(m_max), so the step time does not jump down
        where the table ends; those points count as roofline, not measured."""
        shape = np.broadcast_shapes(np.shape(m), np.shape(n), np.shape(k), roofline.shape)
        size = int(np.prod(shape))
        logits = logits and self.logits_gemm is not None
        table = self.logits_gemm if logits else self.gemm
        if isinstance(table, Missing) or table is None:
            self.tally.add("gemm", False, size, table.reason if table else "no table")
            return roofline
        nn, kk = np.asarray(n, dtype=np.float64), np.asarray(k, dtype=np.float64)
        if nn.size == 1 and kk.size == 1:  # the hot path: one weight shape
            return self._gemm_shape(table, logits, m, float(nn.reshape(-1)[0]),
                                    float(kk.reshape(-1)[0]), roofline, roofline_at, shape, size)
        # A few weight shapes over the grid (G sweeps change the QKV width): one curve each.
        nb, kb = np.broadcast_to(nn, shape), np.broadcast_to(kk, shape)
        mb, rb = np.broadcast_to(m, shape), np.broadcast_to(roofline, shape)
        out = np.empty(shape, dtype=np.float64)
        for n1, k1 in {(float(a), float(b)) for a, b in zip(nb.reshape(-1), kb.reshape(-1),
                                                             strict=True)}:
            sel = (nb == n1) & (kb == k1)
            out[sel] = self._gemm_shape(table, logits, mb[sel], n1, k1, rb[sel], roofline_at,
                                        (int(sel.sum()),), int(sel.sum()))
        return out

    def _gemm_shape(self, table: GemmTable, logits: bool, m: FloatArray, n: float, k: float,
                    roofline: FloatArray,
                    roofline_at: Callable[[float, float, float], FloatArray] | None,
                    shape: tuple[int, ...], size: int) -> FloatArray:
        log_m, mono = self._monotone_curve(table, (logits, n, k))
        # Timing noise makes some measured m slower than the next: more tokens are never
        # cheaper, so the curve is its running maximum over m (exact where it already rises).
        with np.errstate(invalid="ignore", divide="ignore"):
            x = np.log(np.asarray(m, dtype=np.float64))
            value = np.exp(np.interp(x, log_m, mono))
            if np.isfinite(mono).all():  # the common case: covered = inside the m range
                hit_covered = np.asarray((x >= log_m[0]) & (x <= log_m[-1]))
            else:
                hit_covered = np.asarray(table.curve(n, k).latency(m).covered)
        if self.dram_bytes_per_s:
            floor = float(weight_read_s(n, k, table.dtype, self.dram_bytes_per_s))
            self.tally.add_raised("gemm", np.broadcast_to(hit_covered & (value < floor), shape))
            value = np.maximum(value, floor)
        latency = np.where(hit_covered, value, np.nan)
        finite = np.isfinite(mono)
        if roofline_at is not None and finite.any() and finite[-1]:
            m_max = float(np.exp(log_m[-1]))
            above = np.asarray(m > m_max)
            if above.any():
                scale = float(np.exp(mono[-1])) / float(np.asarray(roofline_at(m_max, n, k)))
                roofline = np.where(above, roofline * scale, roofline)
        covered = np.broadcast_to(hit_covered, shape)
        self.tally.add("gemm", covered, size, "outside the measured (m, n, k) box")
        out = np.where(hit_covered, latency, roofline)
        return np.asarray(np.broadcast_to(out, shape), dtype=np.float64)

    def _monotone_curve(self, table: GemmTable, key: tuple[bool, float, float]
                        ) -> tuple[FloatArray, FloatArray]:
        cached = self._mono.get(key)
        if cached is None:
            grid = table.curve(key[1], key[2]).grid
            known = (grid.status & 1).astype(bool)  # KNOWN bit (kernel_tables._grid)
            values = np.where(known, grid.values, np.nan)
            mono = np.where(known, np.fmax.accumulate(values), np.nan)
            cached = (grid.axes_log[0], mono)
            self._mono[key] = cached
        return cached

    def _monotone_config(self, q: int, kv: int, head_dim: int, window: int
                         ) -> AttentionConfig | Missing:
        """The head configuration's grid as its running maximum over batch and KV length:
        timing noise aside, more sequences or a longer cache never make attention faster."""
        key = (q, kv, head_dim, window)
        cached = self._mono_attention.get(key)
        if cached is not None:
            return cached
        assert isinstance(self.attention, GenerationAttentionTable)
        cfg = self.attention.config(q, kv, head_dim, window)
        if not isinstance(cfg, Missing):
            grid = cfg.grid
            known = (grid.status & 1).astype(bool)
            v = np.where(known, grid.values, np.nan)
            v = np.fmax.accumulate(np.fmax.accumulate(v, axis=0), axis=1)
            cfg = replace(cfg, grid=Grid.build(grid.axes_log, np.where(known, v, np.nan)))
        self._mono_attention[key] = cfg
        return cfg

    def attention_time(self, batch: FloatArray, kv_len: FloatArray, q_heads: float,
                       kv_heads: FloatArray, head_dim: int, window: int,
                       roofline: FloatArray, roofline_q1: FloatArray,
                       roofline_at: Callable[[FloatArray, FloatArray], FloatArray] | None = None,
                       ) -> FloatArray:
        """Measured q_len = 1 time × the roofline's ratio t(W)/t(1) (the 128-row tile steps of a
        verify width W are modelled, not measured), else the roofline's time."""
        shape = np.broadcast_shapes(batch.shape, kv_len.shape, kv_heads.shape, roofline.shape)
        size = int(np.prod(shape))
        if isinstance(self.attention, Missing):
            self.tally.add("attention", False, size, self.attention.reason)
            return roofline
        out = np.broadcast_to(roofline, shape).copy()
        covered_all = np.zeros(shape, dtype=np.bool_)
        reason = ""
        kv = np.broadcast_to(kv_heads, shape)
        for kv_value in np.unique(kv):  # a few head configurations (G sweeps), each one table
            q_r, kv_r = q_heads, float(kv_value)
            if q_r != round(q_r) or kv_r != round(kv_r):
                reason = f"fractional heads per rank ({q_r:g} q, {kv_r:g} kv)"
                continue
            cfg = self._monotone_config(int(q_r), int(kv_r), head_dim, window)
            if isinstance(cfg, Missing):
                reason = cfg.reason
                continue
            cfg_key = (int(q_r), int(kv_r), head_dim, window)
            hit = self._attention_lookup(cfg_key, cfg, batch, kv_len)
            ratio = roofline / roofline_q1
            mine = kv == kv_value
            sel = mine & np.broadcast_to(hit.covered, shape)
            q1 = self._dram_bound(hit.latency_s, batch, kv_len if not window else np.minimum(
                kv_len, window), 2.0 * kv_r * head_dim, self.attention.kv_dtype, sel)
            measured = np.broadcast_to(q1 * ratio, shape)
            out = np.where(sel, measured, out)
            covered_all |= sel
            if roofline_at is not None and not sel.all():
                # Past the measured batch or KV length the roofline is anchored to the table's
                # edge (t_meas(edge)·roof(x)/roof(edge)), so time does not drop where it ends.
                ax_b, ax_s = (np.exp(a) for a in cfg.grid.axes_log)
                b_c = np.clip(batch, ax_b[0], ax_b[-1])
                s_c = np.minimum(np.clip(kv_len, ax_s[0], ax_s[-1]),
                                 self._last_kv_covered(cfg_key, cfg, b_c))
                edge = self._attention_lookup(cfg_key, cfg, b_c, s_c)
                scale = np.where(edge.covered, edge.latency_s, np.nan) / roofline_at(b_c, s_c)
                anchored = self._anchored(
                    roofline, roofline_q1, np.where(np.isfinite(scale), scale, 1.0), batch,
                    kv_len if not window else np.minimum(kv_len, window),
                    2.0 * kv_r * head_dim, self.attention.kv_dtype)
                out = np.where(mine & ~sel, np.broadcast_to(anchored, shape), out)
        self.tally.add("attention", covered_all, size, reason or "outside the measured "
                       "(batch, KV length) box")
        return np.asarray(out, dtype=np.float64)

    def _dram_bound(self, latency_s: FloatArray, batch: FloatArray, kv_tokens: FloatArray,
                    elements_per_token: float, kv_dtype: str, covered: npt.NDArray[np.bool_]
                    ) -> FloatArray:
        """A measured attention time raised to the DRAM read of its KV cache, where the
        table ran faster (see `dram_bytes_per_s`); counted among the raised points."""
        if not self.dram_bytes_per_s:
            return latency_s
        floor = kv_read_s(batch, kv_tokens, elements_per_token, kv_dtype, self.dram_bytes_per_s)
        with np.errstate(invalid="ignore"):
            self.tally.add_raised("attention", covered & np.broadcast_to(latency_s < floor,
                                                                          covered.shape))
        return np.asarray(np.maximum(latency_s, floor))  # NaN (not covered) stays NaN

    def _anchored(self, roofline: FloatArray, roofline_q1: FloatArray, scale: FloatArray,
                  batch: FloatArray, kv_tokens: FloatArray, elements_per_token: float,
                  kv_dtype: str) -> FloatArray:
        """Past the measured box: the q_len = 1 roofline scaled to the table's edge, but never
        below the DRAM read of the point's own KV cache, then × the roofline's t(W)/t(1). The
        edge sits at a short KV length (the collector ran out of memory at large batch), where
        fixed per-call costs make the measured/roofline ratio small; carried out to long KV, it
        priced a memory-bound read at 0.71× the DRAM floor (4.7 TB/s on an H100: 8B at B=4096,
        1K), making the wider verify look nearly free at batches where only the KV read grows."""
        q1 = roofline_q1 * scale
        if self.dram_bytes_per_s:
            q1 = np.maximum(q1, kv_read_s(batch, kv_tokens, elements_per_token, kv_dtype,
                                          self.dram_bytes_per_s))
        return np.asarray(q1 * (roofline / roofline_q1), dtype=np.float64)

    def _last_kv_covered(self, cfg_key: tuple[int, int, int, int], cfg: AttentionConfig,
                         batch: FloatArray) -> FloatArray:
        """The longest KV length measured at each batch (between two batch rows, the shorter
        of theirs): past it, at large batch, the collector ran out of memory. Anchoring there,
        not at an unmeasured corner, keeps the time from falling where the table ends."""
        last = self._last_kv.get(cfg_key)
        if last is None:
            known = (cfg.grid.status & 1).astype(bool)
            cols = known.shape[1] - 1 - np.argmax(known[:, ::-1], axis=1)
            last = np.where(known.any(axis=1), np.exp(cfg.grid.axes_log[1][cols]), 0.0)
            self._last_kv[cfg_key] = last
        ax_b = np.exp(cfg.grid.axes_log[0])
        b = np.asarray(batch, dtype=np.float64)
        hi = np.clip(np.searchsorted(ax_b, b, side="left"), 0, ax_b.size - 1)
        lo = np.clip(np.searchsorted(ax_b, b, side="right") - 1, 0, ax_b.size - 1)
        return np.asarray(np.minimum(last[lo], last[hi]))

    def _attention_lookup(self, cfg_key: tuple[object, ...], cfg: AttentionConfig,
                          batch: npt.ArrayLike, kv_len: npt.ArrayLike) -> AttentionLookup:
        """cfg.latency, remembered by its exact inputs (decode attention and MLA alike: their
        configuration keys differ, an MLA key starts with "mla")."""
        b, s = np.asarray(batch, dtype=np.float64), np.asarray(kv_len, dtype=np.float64)
        key = (cfg_key, b.shape, b.tobytes(), s.shape, s.tobytes())
        found = self._attention_lookups.get(key)
        if found is None:
            if len(self._attention_lookups) >= MAX_MEMO_LOOKUPS:
                self._attention_lookups.clear()
            found = cfg.latency(b, s)
            self._attention_lookups[key] = found
        return found

    # -- routed experts (MoE): the package's moe_perf tables --------------------------------
    def moe_time(self, n: FloatArray, shape: MoeShape, dtype: str,
                 roofline: Callable[[FloatArray], FloatArray]) -> FloatArray:
        """One routed-expert layer for n tokens: the engine's measured MoE table where it has
        the exact (dtype, shape, TP/EP) and n lies in its measured token range, else the
        roofline (a function of n). Past the largest measured count the roofline is anchored
        to the table's last time (t_meas(n_max)·roof(n)/roof(n_max)), counted as roofline.

        Remembered by the exact inputs (a grid asks the same token counts for the base and
        speculative verify, and again on every rerun); a remembered price adds to the tally
        what its first evaluation added. The result is read-only (shared)."""
        nn = np.asarray(n, dtype=np.float64)
        key = (shape, dtype, nn.shape, nn.tobytes())
        hit = self._moe_memo.get(key)
        if hit is not None:
            out, measured, reason, label, raised = hit
            self._moe_tally(out.size, measured, reason, label, raised)
            return out
        out, measured, reason, label, raised = self._moe_priced(nn, shape, dtype, roofline)
        out.flags.writeable = False
        if len(self._moe_memo) >= MAX_MEMO_LOOKUPS:
            self._moe_memo.clear()
        self._moe_memo[key] = (out, measured, reason, label, raised)
        self._moe_tally(out.size, measured, reason, label, raised)
        return out

    def _moe_tally(self, size: int, measured: int, reason: str, label: str,
                   raised: int = 0) -> None:
        if raised:
            self.tally.raised["moe"] = self.tally.raised.get("moe", 0) + raised
        self.tally.measured["moe"] = self.tally.measured.get("moe", 0) + measured
        self.tally.total["moe"] = self.tally.total.get("moe", 0) + size
        if measured < size:
            self.tally.why_not["moe"] = reason
        if measured:
            self.tally.sources.setdefault("moe", set()).add(label)

    def _moe_priced(self, n: FloatArray, shape: MoeShape, dtype: str,
                    roofline: Callable[[FloatArray], FloatArray]
                    ) -> tuple[FloatArray, int, str, str, int]:
        """(time, points measured, reason for the rest, the table's label, points raised to
        the DRAM read of the experts every token reads)."""
        roof = np.asarray(roofline(n), dtype=np.float64)
        curve = self._moe_curve(shape, dtype)
        if isinstance(curve, Missing):
            return roof.copy(), 0, curve.reason, "", 0
        log_t, mono, prov = curve
        with np.errstate(invalid="ignore", divide="ignore"):
            x = np.log(n)
            covered = np.asarray((x >= log_t[0]) & (x <= log_t[-1]))
            value = np.exp(np.interp(x, log_t, mono))
        raised = 0
        if self.dram_bytes_per_s:
            floor = experts_read_s(shape, dtype, self.dram_bytes_per_s)
            raised = int(np.count_nonzero(covered & (value < floor)))
            value = np.maximum(value, floor)
        n_max = float(np.exp(log_t[-1]))
        above = np.asarray(n > n_max)
        if above.any():
            scale = float(np.exp(mono[-1])) / float(np.asarray(roofline(np.asarray(n_max))))
            roof = np.where(above, roof * scale, roof)
        out = np.asarray(np.where(covered, value, roof), dtype=np.float64)
        reason = (f"outside the measured token range {np.exp(log_t[0]):.0f}–{n_max:.0f} of "
                  f"{prov.system}/moe/{prov.engine}/{prov.engine_version}")
        return out, int(np.count_nonzero(covered)), reason, prov.label, raised

    def _moe_curve(self, shape: MoeShape, dtype: str
                   ) -> tuple[FloatArray, FloatArray, Provenance] | Missing:
        """The table's curve made monotone in tokens (more tokens never make the layer faster)
        from above: each count takes the least time measured at it or any larger count.

        Not the running maximum the GEMM curves use: ~4% of the package's MoE curves hold an
        isolated spike (h100 trtllm 1.3.0rc20 fp8 2048/512 top-8/256 EP 64: 1.21 ms at 160
        tokens between 0.03 ms neighbours), which a running maximum would carry to every
        larger count; timing noise only ever slows a kernel down, so the minimum over larger
        counts is the bound that survives it. Cached per (shape, dtype)."""
        key = (shape, dtype)
        cached = self._moe_curves.get(key)
        if cached is None:
            if self.no_tables is not None:
                cached = self.no_tables
            else:
                found = find_moe_curve(self.hardware, self.engine, shape, dtype)
                cached = found if isinstance(found, Missing) else (
                    found.log_tokens, np.fmin.accumulate(found.log_latency[::-1])[::-1],
                    found.provenance)
            self._moe_curves[key] = cached
        return cached

    def moe_sources(self) -> str:
        """The MoE tables that priced points since the last tally reset."""
        return "; ".join(sorted(self.tally.sources.get("moe", ())))

    # -- decode MLA attention: the package's generation_mla tables ----------------------------
    # -- MiniMax sparse attention: the measured MSA module (kernel_tables/msa.py) ------------
    def msa_module_time(self, queries: FloatArray, kv_len: FloatArray, heads_per_rank: int,
                        kv_dtype: str, gemm_dtype: str) -> FloatArray:
        """One MSA attention module (projections, block indexer, sparse attention) for
        `queries` decode queries at `kv_len`: the engine's measured table, NaN where it does
        not cover the point (the caller prices those as dense attention)."""
        q, s = np.broadcast_arrays(np.asarray(queries, dtype=np.float64),
                                   np.asarray(kv_len, dtype=np.float64))
        grid = self.no_tables or find_msa_grid(self.hardware, self.engine, heads_per_rank,
                                               kv_dtype, gemm_dtype)
        if isinstance(grid, Missing):
            self.tally.add("msa", False, q.size, grid.reason)
            return np.full(q.shape, np.nan)
        look = grid.latency(q, s)
        self.tally.add("msa", look.covered, q.size,
                       "outside the measured batch × length grid: dense attention")
        self.tally.sources.setdefault("msa", set()).add(grid.provenance.label)
        return np.asarray(look.latency_s, dtype=np.float64)

    def mla_attention_time(self, batch: FloatArray, kv_len: FloatArray, q_heads: float,
                           kv_lora_rank: int, rope_dim: int, kv_dtype: str,
                           roofline: FloatArray, roofline_q1: FloatArray,
                           roofline_at: Callable[[FloatArray, FloatArray], FloatArray] | None
                           = None) -> FloatArray:
        """Measured q_len = 1 MLA time × the roofline's ratio t(W)/t(1), where the engine's
        generation_mla table has the query heads per rank and covers (batch, KV length); else
        the roofline (anchored to the table's edge past it, counted as roofline)."""
        shape = np.broadcast_shapes(batch.shape, kv_len.shape, roofline.shape)
        size = int(np.prod(shape))
        cfg: AttentionConfig | Missing
        if self.no_tables is not None:  # hypothetical hardware: no table measured it
            cfg = self.no_tables
        elif q_heads != round(q_heads):
            cfg = Missing(f"fractional query heads per rank ({q_heads:g})")
        else:
            cfg = self._mla_config(int(q_heads), kv_lora_rank, rope_dim, kv_dtype)
        if isinstance(cfg, Missing):
            self.tally.add("attention", False, size, cfg.reason)
            return roofline
        mla_key = ("mla", int(q_heads), kv_lora_rank, rope_dim, kv_dtype)
        hit = self._attention_lookup(mla_key, cfg, batch, kv_len)
        sel = np.broadcast_to(hit.covered, shape)
        q1 = self._dram_bound(hit.latency_s, batch, kv_len, float(kv_lora_rank + rope_dim),
                              kv_dtype, sel)
        out = np.where(sel, np.broadcast_to(q1 * (roofline / roofline_q1), shape),
                       np.broadcast_to(roofline, shape))
        if roofline_at is not None and not sel.all():
            ax_b, ax_s = (np.exp(a) for a in cfg.grid.axes_log)
            b_c, s_c = np.clip(batch, ax_b[0], ax_b[-1]), np.clip(kv_len, ax_s[0], ax_s[-1])
            edge = self._attention_lookup(mla_key, cfg, b_c, s_c)
            scale = np.where(edge.covered, edge.latency_s, np.nan) / roofline_at(b_c, s_c)
            anchored = self._anchored(roofline, roofline_q1,
                                      np.where(np.isfinite(scale), scale, 1.0), batch, kv_len,
                                      float(kv_lora_rank + rope_dim), kv_dtype)
            out = np.where(sel, out, np.broadcast_to(anchored, shape))
        self.tally.add("attention", sel, size, "outside the measured (batch, KV length) box "
                       f"of {cfg.provenance.system}/mla/{cfg.provenance.engine}/"
                       f"{cfg.provenance.engine_version}")
        if sel.any():
            self.tally.sources.setdefault("attention", set()).add(cfg.provenance.label)
        return np.asarray(out, dtype=np.float64)

    def _mla_config(self, q_heads: int, kv_lora_rank: int, rope_dim: int, kv_dtype: str
                    ) -> AttentionConfig | Missing:
        """The grid made monotone from above in batch and KV length (each point the least time
        at it or any larger batch and KV length: an isolated slow measurement, e.g. h200 trtllm
        1.3.0rc20 16 heads bf16 batch 32 KV 3 at 2.2 ms among 0.015 ms, is not carried on)."""
        key = (q_heads, kv_lora_rank, rope_dim, kv_dtype)
        cached = self._mla_configs.get(key)
        if cached is None:
            found = find_mla_config(self.hardware, self.engine, kv_dtype, q_heads,
                                    kv_lora_rank, rope_dim)
            if not isinstance(found, Missing):
                known = (found.grid.status & 1).astype(bool)
                v = np.where(known, found.grid.values, np.nan)
                v = np.fmin.accumulate(v[::-1], axis=0)[::-1]
                v = np.fmin.accumulate(v[:, ::-1], axis=1)[:, ::-1]
                found = replace(found, grid=Grid.build(found.grid.axes_log,
                                                       np.where(known, v, np.nan)))
            cached = found
            self._mla_configs[key] = cached
        return cached

    def describe(self, include_attention: bool = True) -> str:
        """'aiconfigurator-core 0.12.0 vllm 0.24.0 h200_sxm: GEMM 92% of calls measured, …'."""
        head = self.label()
        parts = []
        for kind, name in (("gemm", "GEMM"), ("attention", "decode attention"),
                           ("moe", "MoE experts"), ("msa", "MSA attention module")):
            if kind == "attention" and not include_attention:
                continue
            share = self.tally.share(kind)
            if share is None:
                continue
            if share >= 1.0:
                part = f"{name} measured"
            elif share <= 0.0:
                part = f"{name} roofline ({self.tally.why_not.get(kind, 'not covered')})"
            else:
                part = (f"{name} {share:.0%} of calls measured "
                        f"(rest: {self.tally.why_not.get(kind, 'not covered')})")
            if share > 0.0:
                part += "".join(f" [{note}]" for note in self.table_notes(kind))
            if kind == "gemm" and share > 0.0 and self.logits_gemm is not None:
                part += (f" (the logits GEMM in {LOGITS_DTYPE}, as quantized checkpoints keep "
                         "lm_head: " + (f"{self.logits_gemm.provenance.dtype} table"
                                        if isinstance(self.logits_gemm, GemmTable)
                                        else f"roofline, {self.logits_gemm.reason}") + ")")
            raised = self.tally.raised.get(kind, 0)
            if raised and share > 0.0:
                part += (f" ({raised / self.tally.measured[kind]:.0%} of them "
                         f"{self.raised_note(kind, plural=True)})")
            if kind == "moe" and share > 0.0 and self.moe_sources():
                part += f" [{self.moe_sources()}]"  # its own table and version
            if kind in ("attention", "msa") and share > 0.0 and self.tally.sources.get(kind):
                part += f" [{'; '.join(sorted(self.tally.sources[kind]))}]"  # MLA, MSA
            parts.append(part)
        rest = "; roofline for the rest" if parts else ""
        return f"{head}: {', '.join(parts) or 'no kernel evaluated'}{rest}"

    def table_notes(self, kind: str) -> list[str]:
        """How the GEMM table was read for a serving step (kernel_tables/served.py): whose
        table stands in and why, and its adjustment (TRT-LLM fp8 static); none for others."""
        if kind != "gemm" or not isinstance(self.gemm, GemmTable):
            return []
        prov = self.gemm.provenance
        notes = []
        if prov.stands_in_for:
            notes.append(f"{prov.engine}'s table standing in for {prov.stands_in_for}'s own "
                         f"table: {prov.stand_in_reason}")
        if prov.adjustment:
            notes.append(prov.adjustment)
        return notes

    @staticmethod
    def raised_note(kind: str, plural: bool = False) -> str:
        """Why a measured time was raised to the DRAM floor (`dram_bytes_per_s`)."""
        what = {"gemm": "weights", "moe": "top-k experts"}.get(kind, "KV cache")
        return (f"raised to the DRAM read of {'their' if plural else 'its'} {what} at the "
                "spec-sheet bandwidth: the table ran faster, its repeated calls holding them in "
                "L2, which a serving step does not")

    def label(self) -> str:
        if isinstance(self.gemm, GemmTable) and self.gemm.provenance.stands_in_for:
            prov = self.gemm.provenance  # another engine's table prices this one's GEMMs
            version = f"(GEMM: {prov.engine} {prov.engine_version} table standing in)"
            system = prov.system
        elif isinstance(self.gemm, GemmTable):
            version, system = self.gemm.provenance.engine_version, self.gemm.provenance.system
        elif isinstance(self.attention, GenerationAttentionTable):
            version, system = self.attention.ref.version, self.attention.ref.system
        else:
            found = resolve_system(self.hardware)
            version, system = "(no tables)", found if isinstance(found, str) else self.hardware
        return f"{package_label()} {self.engine} {version} {system}"


@lru_cache(maxsize=64)
def _tables(hardware: str, engine: str, dtype: str, kv_dtype: str, speed_of_light: SpeedOfLight
            ) -> tuple[GemmTable | Missing, GenerationAttentionTable | Missing]:
    return (load_serving_gemm_table(hardware, engine, dtype, speed_of_light),
            load_generation_attention_table(hardware, engine, kv_dtype))


def measured_kernels(hw: HardwareSpec, engine: str, dtype: str, kv_dtype: str,
                     hypothetical: bool = False) -> MeasuredKernels:
    """The tables for a hardware preset; none for hypothetical (overridden) hardware, whose
    kernels no table measured."""
    if hypothetical:
        why = Missing(f"{hw.slug} with overridden specs is hypothetical hardware: no table "
                      "measured it")
        return MeasuredKernels(hw.slug, engine, why, why, no_tables=why)
    # The floor of a GEMM table the package's times are adjusted on (TRT-LLM fp8 static).
    speed_of_light = SpeedOfLight.of(hw, dtype)
    gemm, attention = _tables(hw.slug, engine, dtype, kv_dtype, speed_of_light)
    logits = None
    if normalize_dtype(dtype) != LOGITS_DTYPE:
        logits = _tables(hw.slug, engine, LOGITS_DTYPE, kv_dtype,
                         SpeedOfLight.of(hw, LOGITS_DTYPE))[0]
    return MeasuredKernels(hw.slug, engine, gemm, attention,
                           dram_bytes_per_s=hw.hbm_bw_bytes_per_s, logits_gemm=logits)
