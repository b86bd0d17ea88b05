"""Measured decode (generation) attention latency per (GPU, engine, KV-cache dtype).

One table holds many head configurations; each (query heads, KV heads, head dim, window) per
rank — the table's num_heads are what one GPU runs, so with tensor parallelism pass the heads
per rank — is a grid over batch × KV length. Interpolation is bilinear in (log batch, log KV
length) → log t, exact at measured points. Corners that were not measured (large batch × long
KV, beyond the collector's memory) are not filled: a point that needs one is not covered.

Only one query token per sequence is measured (isl = 1, the `step` column is the KV length it
attends over). Verification attends with q_len = 1 + D: that increment (the 128-row tile steps
of DESIGN.md §2.1) stays a model term on top of this time, outside this package.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow.parquet as pq

from explorer.kernel_tables._grid import (
    BoolArray,
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
    table_dtype,
)
from explorer.specs.engine import ENGINE_KINDS

_MS = 1e-3
_OP = "generation_attention"

# Which kernel an engine version runs by default on an SM, from the package's
# systems/attention_lane_defaults.yaml (0.12.0; a test checks this copy against it). Used only
# where several kernels measured the same configuration (SGLang: fa3/triton/flashinfer/trtllm_mha).
# Declared with each engine (explorer/specs/engine.py: EngineKind.attention_default_lanes).
_DEFAULT_LANE: dict[tuple[str, str], dict[int, str]] = {
    (e.slug, version): dict(lanes) for e in ENGINE_KINDS.values()
    for version, lanes in e.attention_default_lanes.items()
}
_SM_LINE = re.compile(r"^\s*sm_version:\s*(\d+)\s*$", re.MULTILINE)

ConfigKey = tuple[int, int, int, int]  # (num_heads, kv_heads, head_dim, window_tokens)


AttentionLookup = TableLookup  # one decode-attention call: one layer, one query per sequence


@dataclass(frozen=True)
class AttentionConfig:
    """One head configuration's grid over batch × KV length."""

    num_heads: int  # query heads per rank
    kv_heads: int  # KV heads per rank
    head_dim: int
    window_tokens: int  # sliding window; 0 = full attention
    batch_values: npt.NDArray[np.int64]
    kv_len_values: npt.NDArray[np.int64]
    log_latency: FloatArray  # log seconds (batch, kv_len); NaN where not measured
    provenance: Provenance
    grid: Grid

    @property
    def measured(self) -> BoolArray:
        return np.asarray(np.isfinite(self.log_latency))

    def latency(self, batch: npt.ArrayLike, kv_len_tokens: npt.ArrayLike) -> AttentionLookup:
        """Vectorized over broadcast arrays of batch (sequences) and KV length (tokens).

        A sliding window caps the KV read: past the window the time is the time at the window
        (the measured points there repeat it within noise, and at large batch the collector
        ran out of memory before reaching them), so the lookup never falls with context."""
        kv_len = np.asarray(kv_len_tokens, dtype=np.float64)
        if self.window_tokens:
            kv_len = np.minimum(kv_len, float(self.window_tokens))
        queries = [log_query(q) for q in (batch, kv_len)]
        shape = np.broadcast_shapes(*(q.shape for q in queries))
        axes = [locate(a, q) for a, q in zip(self.grid.axes_log, queries, strict=True)]
        value, ok, _ = interpolate(self.grid, axes, shape)
        return AttentionLookup(np.where(ok, np.exp(value), np.nan), ok, self.provenance)


@dataclass(frozen=True)
class GenerationAttentionTable:
    """All head configurations of one (system, engine, version, KV dtype)."""

    ref: TableRef
    kv_dtype: str  # package spelling: bfloat16, fp8
    configs: Mapping[ConfigKey, AttentionConfig]

    def config(
        self, num_heads: int, kv_heads: int, head_dim: int, window_tokens: int = 0
    ) -> AttentionConfig | Missing:
        key = (int(num_heads), int(kv_heads), int(head_dim), int(window_tokens))
        found = self.configs.get(key)
        if found is not None:
            return found
        near = sorted(self.configs, key=lambda c: (
            c[2] != key[2], c[3] != key[3], abs(np.log(c[1] / key[1])) if key[1] > 0 else 0.0,
            abs(np.log(c[0] / key[0])) if key[0] > 0 else 0.0))[:3]
        have = "; ".join(_describe(c) for c in near)
        return Missing(f"no measured {_OP} for {_describe(key)} in {self.ref.where} "
                       f"{self.kv_dtype} KV (nearest: {have})")

    def latency(
        self, num_heads: int, kv_heads: int, head_dim: int, batch: npt.ArrayLike,
        kv_len_tokens: npt.ArrayLike, window_tokens: int = 0,
    ) -> AttentionLookup | Missing:
        found = self.config(num_heads, kv_heads, head_dim, window_tokens)
        return found if isinstance(found, Missing) else found.latency(batch, kv_len_tokens)


def _describe(key: ConfigKey) -> str:
    heads, kv, dim, window = key
    text = f"{heads} q / {kv} kv heads × {dim}"
    return text + (f", window {window}" if window else "")


def sm_version(ref: TableRef) -> int | None:
    """The system's SM version from the package's <system>.yaml (one `sm_version: N` line)."""
    spec = ref.path.parents[5] / f"{ref.system}.yaml"  # systems/<system>.yaml
    try:
        match = _SM_LINE.search(spec.read_text(encoding="utf-8"))
    except OSError:
        return None
    return int(match.group(1)) if match else None


def _chosen_rows(frame: pd.DataFrame, keys: list[str], preferred: str | None) -> pd.DataFrame:
    """Rows of one kernel per configuration: the engine's default lane where it measured that
    configuration, else the kernel with the most rows (ties by name). Only SGLang tables hold
    several kernels for one configuration."""
    counts = frame.groupby([*keys, "kernel_source"]).size().rename("rows").reset_index()
    counts["default"] = counts["kernel_source"] == preferred
    counts = counts.sort_values([*keys, "default", "rows", "kernel_source"])
    chosen = counts.drop_duplicates(keys, keep="last")[[*keys, "kernel_source"]]
    return frame.merge(chosen, on=[*keys, "kernel_source"], how="inner")


_COLUMNS = ("kernel_source", "batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim",
            "beam_width", "attn_dtype", "kv_cache_dtype", "step", "window_size", "latency")


def _build(ref: TableRef, kv_dtype: str) -> GenerationAttentionTable | Missing:
    names = set(pq.ParquetFile(ref.path).schema_arrow.names)
    frame = pd.read_parquet(ref.path, columns=[c for c in _COLUMNS if c in names])
    if "window_size" not in names:  # older tables (a100) only measured full attention
        frame["window_size"] = 0
    keep = ((frame["isl"] == 1) & np.isfinite(frame["latency"]) & (frame["latency"] > 0))
    if "beam_width" in names:
        keep &= frame["beam_width"] == 1
    have = ", ".join(sorted(str(x) for x in frame.loc[keep, "kv_cache_dtype"].unique()))
    frame = frame[keep & (frame["kv_cache_dtype"] == kv_dtype)]
    if frame.empty:
        return Missing(f"no {kv_dtype} KV-cache {_OP} in {ref.where} (have: {have or 'none'})")
    sm = sm_version(ref)
    preferred = _DEFAULT_LANE.get((ref.engine, ref.version), {}).get(sm) if sm else None
    keys = ["num_heads", "num_key_value_heads", "head_dim", "window_size"]
    rows = _chosen_rows(frame, keys, preferred)
    # Repeated points (none today) are reduced to their median.
    per_point = rows.groupby([*keys, "kernel_source", "attn_dtype", "batch_size", "step"],
                             sort=True)["latency"].median().reset_index()
    cfg = per_point[keys].to_numpy(np.int64)
    batch = per_point["batch_size"].to_numpy(np.int64)
    step = per_point["step"].to_numpy(np.int64)
    log_t = np.log(per_point["latency"].to_numpy(np.float64) * _MS)
    kernels = per_point["kernel_source"].to_numpy()
    attn = per_point["attn_dtype"].to_numpy()
    starts = np.flatnonzero(np.r_[True, (cfg[1:] != cfg[:-1]).any(axis=1)])
    label = package_label()
    configs: dict[ConfigKey, AttentionConfig] = {}
    for lo, hi in zip(starts, [*starts[1:], len(cfg)], strict=True):  # load time, ~400 configs
        heads, kv, dim, window = (int(x) for x in cfg[lo])
        b_v, b_i = np.unique(batch[lo:hi], return_inverse=True)
        s_v, s_i = np.unique(step[lo:hi], return_inverse=True)
        if b_v.size < 2 or s_v.size < 2:
            continue  # a single line of points has no box to interpolate in
        grid = np.full((b_v.size, s_v.size), np.nan)
        grid[b_i, s_i] = log_t[lo:hi]
        prov = Provenance(
            label, ref.system, ref.family, ref.engine, ref.version, ref.op,
            f"{kv_dtype} KV", str(kernels[lo]),
            f"{heads}/{kv} heads × {dim}, window {window}, {attn[lo]} compute, "
            f"{int(np.isfinite(grid).sum())} of {grid.size} (batch, KV) points measured")
        configs[(heads, kv, dim, window)] = AttentionConfig(
            heads, kv, dim, window, b_v, s_v, grid, prov,
            Grid.build([log_axis(b_v), log_axis(s_v)], grid))
    if not configs:
        return Missing(f"no usable {kv_dtype} KV-cache {_OP} grid in {ref.where}")
    return GenerationAttentionTable(ref, kv_dtype, configs)


@lru_cache(maxsize=32)
def load_generation_attention_table(
    gpu: str, engine: str, kv_dtype: str = "bf16", version: str | None = None,
    root: Path | None = None,
) -> GenerationAttentionTable | Missing:
    """The decode-attention table of a GPU (preset slug or package system name), engine and
    KV-cache dtype; the engine's newest version when none is named."""
    ref = find_table(gpu, _OP, engine, version, root)
    if isinstance(ref, Missing):
        return ref
    try:
        return _build(ref, table_dtype(kv_dtype))
    except (OSError, ValueError, KeyError) as err:  # a damaged or changed file: fall back
        return Missing(f"could not read {ref.where}/{ref.op}: {err}")


def generation_attention_time_s(
    gpu: str, engine: str, kv_dtype: str, num_heads: int, kv_heads: int, head_dim: int,
    batch: npt.ArrayLike, kv_len_tokens: npt.ArrayLike, window_tokens: int = 0,
    version: str | None = None,
) -> AttentionLookup | Missing:
    """One call: measured decode-attention latency (seconds) with coverage, or why not."""
    table = load_generation_attention_table(gpu, engine, kv_dtype, version)
    if isinstance(table, Missing):
        return table
    return table.latency(num_heads, kv_heads, head_dim, batch, kv_len_tokens, window_tokens)
