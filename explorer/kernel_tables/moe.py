"""Measured routed-expert (MoE) latency per (GPU, engine, expert dtype, MoE shape), over tokens.

The package's ``moe/<engine>/<version>/moe_perf.parquet`` holds one fused-MoE layer's latency
(ms, per GPU: the routed experts' gate-up and down grouped GEMMs with the activation between)
keyed by ``moe_dtype, hidden_size, inter_size, topk, num_experts, moe_tp_size, moe_ep_size,
distribution`` and measured at 27 token counts (1 … 16384). ``inter_size`` is the model's full
expert width: ``moe_tp_size`` shards it, as aiconfigurator's own models pass it
(sdk/models/deepseek.py, ops.MoE(..., self._moe_inter_size, topk, num_experts, moe_tp_size,
moe_ep_size, quant_mode, workload_distribution)).

A lookup matches the discrete keys exactly — a shape, parallelism or dtype the table did not
measure is not covered (there is no physics to interpolate between expert counts) — and
interpolates linearly in (log tokens, log latency) between measured token counts: exact at a
measured count, never outside the measured range (`covered` False, latency NaN), so the caller
falls back to the roofline and says so.

Routing: the package measures balanced routing and two power-law skews. We take
``power_law_1.01``, the distribution aiconfigurator itself prices a deployment with
(sdk/config.py ``workload_distribution = "power_law"``, sdk/models/deepseek.py
``_power_law_alpha = 1.01``): real routers are not balanced, and the slowest expert sets the
layer's time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import pandas as pd

from explorer.kernel_tables._grid import FloatArray, log_query
from explorer.kernel_tables.catalog import (
    Missing,
    Provenance,
    TableLookup,
    TableRef,
    find_table,
    list_tables,
    package_label,
    table_dtype,
    version_key,
)

_MS: Final = 1e-3
OP: Final = "moe"
DISTRIBUTION: Final = "power_law_1.01"
_KEYS: Final = ("moe_dtype", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
                "moe_ep_size")


@dataclass(frozen=True)
class MoeShape:
    """One MoE layer as the table keys it: full expert width, TP shards it, EP splits experts."""

    hidden: int
    inter: int
    topk: int
    num_experts: int
    tp: int = 1
    ep: int = 1
    # Expert weight matrices: 3 gated (SwiGLU gate, up, down), 2 not (relu²). The roofline's,
    # not a table key (a table's kernel_source says gated or not for its own shapes).
    mlp_matrices: float = 3.0

    def text(self) -> str:
        return (f"hidden {self.hidden}, inter {self.inter}, top-{self.topk} of "
                f"{self.num_experts} experts, moe_tp {self.tp}, moe_ep {self.ep}")


MoeLookup = TableLookup  # one routed-expert layer over arrays of token counts


@dataclass(frozen=True)
class MoeCurve:
    """One measured (dtype, shape): log latency over log tokens."""

    shape: MoeShape
    dtype: str  # the package's spelling: bfloat16, fp8, fp8_block, nvfp4, …
    tokens: npt.NDArray[np.float64]
    log_tokens: FloatArray
    log_latency: FloatArray  # log seconds
    provenance: Provenance

    @property
    def max_tokens(self) -> float:
        return float(self.tokens[-1])

    def latency(self, tokens: npt.ArrayLike) -> MoeLookup:
        x = log_query(tokens)
        with np.errstate(invalid="ignore"):
            ok = np.asarray((x >= self.log_tokens[0]) & (x <= self.log_tokens[-1]))
        value = np.exp(np.interp(x, self.log_tokens, self.log_latency))
        return MoeLookup(np.where(ok, value, np.nan), ok, self.provenance)


@dataclass(frozen=True)
class MoeTable:
    """One (system, engine, version) MoE table at the chosen routing; curves built on demand."""

    ref: TableRef
    keys: npt.NDArray[np.int64]  # rows × (hidden, inter, topk, experts, tp, ep)
    row_dtype: npt.NDArray[np.str_]
    num_tokens: npt.NDArray[np.float64]
    latency_ms: npt.NDArray[np.float64]
    kernel_source: npt.NDArray[np.str_]
    dtypes: tuple[str, ...]
    _curves: dict[tuple[str, MoeShape], MoeCurve | Missing] = field(
        default_factory=dict, compare=False, repr=False, hash=False)

    def curve(self, shape: MoeShape, dtype: str) -> MoeCurve | Missing:
        spelled = table_dtype(dtype)
        cached = self._curves.get((spelled, shape))
        if cached is None:
            cached = self._curve(shape, spelled)
            self._curves[(spelled, shape)] = cached
        return cached

    def _curve(self, shape: MoeShape, spelled: str) -> MoeCurve | Missing:
        if spelled not in self.dtypes:
            return Missing(f"no {spelled} MoE in {self.ref.where} (have: "
                           f"{', '.join(self.dtypes)})")
        want = np.array([shape.hidden, shape.inter, shape.topk, shape.num_experts, shape.tp,
                         shape.ep], dtype=np.int64)
        sel = (self.row_dtype == spelled) & (self.keys == want).all(axis=1)
        if not sel.any():
            other = sorted({str(d) for d in self.row_dtype[(self.keys == want).all(axis=1)]})
            also = f"; measured at {', '.join(other)}" if other else ""
            return Missing(f"MoE shape not measured in {self.ref.where} {spelled} "
                           f"({shape.text()}{also})")
        rows = pd.DataFrame({"t": self.num_tokens[sel], "ms": self.latency_ms[sel]})
        # Repeated token counts (two kernels measured for one shape) → their median.
        per_tokens = rows.groupby("t")["ms"].median().sort_index()
        if per_tokens.size < 2:
            return Missing(f"{self.ref.where} {spelled}: fewer than 2 token counts measured "
                           f"({shape.text()})")
        kernels = " / ".join(sorted({str(k) for k in self.kernel_source[sel]}))
        tokens = per_tokens.index.to_numpy(np.float64)
        ref = self.ref
        prov = Provenance(package_label(), ref.system, ref.family, ref.engine, ref.version,
                          ref.op, spelled, kernels,
                          f"{per_tokens.size} token counts {int(tokens[0])}–{int(tokens[-1])}, "
                          f"{DISTRIBUTION} routing")
        return MoeCurve(shape, spelled, tokens, np.log(tokens),
                        np.log(per_tokens.to_numpy(np.float64) * _MS), prov)


def _build(ref: TableRef) -> MoeTable:
    frame = pd.read_parquet(ref.path, columns=[*_KEYS, "distribution", "num_tokens",
                                               "kernel_source", "latency"])
    dtypes = tuple(sorted(str(d) for d in frame["moe_dtype"].unique()))
    frame = frame[(frame["distribution"] == DISTRIBUTION) & np.isfinite(frame["latency"])
                  & (frame["latency"] > 0) & (frame["num_tokens"] > 0)]
    return MoeTable(ref, frame[list(_KEYS[1:])].to_numpy(np.int64),
                    frame["moe_dtype"].to_numpy(str), frame["num_tokens"].to_numpy(np.float64),
                    frame["latency"].to_numpy(np.float64), frame["kernel_source"].to_numpy(str),
                    dtypes)


@lru_cache(maxsize=32)
def _load(ref: TableRef) -> MoeTable | Missing:
    try:
        return _build(ref)
    except (OSError, ValueError, KeyError) as err:  # a damaged or changed file: fall back
        return Missing(f"could not read {ref.where}/{ref.op}: {err}")


def load_moe_table(gpu: str, engine: str, version: str | None = None,
                   root: Path | None = None) -> MoeTable | Missing:
    """The MoE table of a GPU and engine (its newest version when none is named)."""
    ref = find_table(gpu, OP, engine, version, root)
    return ref if isinstance(ref, Missing) else _load(ref)


@lru_cache(maxsize=256)
def find_moe_curve(gpu: str, engine: str, shape: MoeShape, dtype: str,
                   root: Path | None = None) -> MoeCurve | Missing:
    """The measured curve of (shape, dtype) from the engine's newest MoE table that has it.

    Versions are tried newest first: a later collection campaign may hold only a few new
    models' shapes (trtllm 1.3.0rc23 on H200 measured Nemotron shapes only), and the
    engine's previous table is still that engine's measurement. The reason of the newest
    table's miss is returned when none has it."""
    newest = find_table(gpu, OP, engine, None, root)
    if isinstance(newest, Missing):
        return newest
    refs = sorted((r for r in list_tables(root) if r.system == newest.system
                   and r.family == newest.family and r.engine == newest.engine
                   and r.op == OP), key=lambda r: version_key(r.version), reverse=True)
    first_miss: Missing | None = None
    for ref in refs:
        table = _load(ref)
        found = table if isinstance(table, Missing) else table.curve(shape, dtype)
        if not isinstance(found, Missing):
            return found
        first_miss = first_miss or found
    return first_miss or Missing(f"no MoE table for {gpu}/{engine}")


def moe_time_s(gpu: str, engine: str, shape: MoeShape, dtype: str,
               tokens: npt.ArrayLike) -> MoeLookup | Missing:
    """One call: measured routed-expert layer latency (seconds) with coverage, or why not."""
    curve = find_moe_curve(gpu, engine, shape, dtype)
    return curve if isinstance(curve, Missing) else curve.latency(tokens)
