"""Measured decode MLA attention (DeepSeek's absorbed multi-head latent attention) per (GPU,
engine, KV-cache dtype), over batch × KV length.

The package's ``mla/<engine>/<version>/generation_mla_perf.parquet`` measures the attention
kernel alone (one query token, isl = 1; ``step`` the KV length, as in generation_attention),
keyed as aiconfigurator reads it (sdk/engine_table_view.py ``_generation_mla_data``: KV dtype,
num_heads, batch, step) with num_heads the query heads per rank (sdk/models/deepseek.py
``ops.GenerationMLA(..., 128 // tp_size, kvcache_quant_mode)``). The absorbed BMMs before and
after it (``MLABmm``) are separate ops there, as they are GEMMs in our model. Its geometry is
DeepSeek-V3's: a 512-dim latent plus 64 RoPE dims per token (576), read by every query head.

vLLM 0.24.0 ships only ``mla_generation_module_perf`` (the whole attention module, projections
included): it cannot replace the kernel alone, so vLLM's MLA stays on the roofline, saying so.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Final

import numpy as np
import pandas as pd

from explorer.kernel_tables._grid import Grid, log_axis
from explorer.kernel_tables.attention import AttentionConfig
from explorer.kernel_tables.catalog import (
    Missing,
    Provenance,
    TableRef,
    find_table,
    package_label,
    table_dtype,
)

_MS: Final = 1e-3
OP: Final = "generation_mla"
# DeepSeek-V3's latent: kv_lora_rank 512 + qk_rope_dim 64, the only geometry the package measures.
KV_LORA_RANK: Final = 512
ROPE_DIM: Final = 64


def _build(ref: TableRef, kv_dtype: str) -> dict[int, AttentionConfig] | Missing:
    frame = pd.read_parquet(ref.path, columns=["kernel_source", "mla_dtype", "kv_cache_dtype",
                                               "num_heads", "batch_size", "isl", "step",
                                               "latency"])
    keep = (frame["isl"] == 1) & np.isfinite(frame["latency"]) & (frame["latency"] > 0)
    have = ", ".join(sorted(str(x) for x in frame.loc[keep, "kv_cache_dtype"].unique()))
    frame = frame[keep & (frame["kv_cache_dtype"] == kv_dtype)]
    if frame.empty:
        return Missing(f"no {kv_dtype} KV-cache {OP} in {ref.where} (have: {have or 'none'})")
    configs: dict[int, AttentionConfig] = {}
    label = package_label()
    for heads, rows in frame.groupby("num_heads"):
        # Repeated points (num_heads 128 at two tp_size values) → their median.
        per = rows.groupby(["batch_size", "step"])["latency"].median().reset_index()
        b_v, b_i = np.unique(per["batch_size"].to_numpy(np.int64), return_inverse=True)
        s_v, s_i = np.unique(per["step"].to_numpy(np.int64), return_inverse=True)
        if b_v.size < 2 or s_v.size < 2:
            continue
        grid = np.full((b_v.size, s_v.size), np.nan)
        grid[b_i, s_i] = np.log(per["latency"].to_numpy(np.float64) * _MS)
        kernels = " / ".join(sorted({str(k) for k in rows["kernel_source"]}))
        prov = Provenance(
            label, ref.system, ref.family, ref.engine, ref.version, ref.op, f"{kv_dtype} KV",
            kernels, f"{int(heads)} q heads × latent {KV_LORA_RANK}+{ROPE_DIM}, "
            f"{rows['mla_dtype'].iloc[0]} compute, {int(np.isfinite(grid).sum())} of "
            f"{grid.size} (batch, KV) points measured")
        configs[int(heads)] = AttentionConfig(
            int(heads), 1, KV_LORA_RANK + ROPE_DIM, 0, b_v, s_v, grid, prov,
            Grid.build([log_axis(b_v), log_axis(s_v)], grid))
    if not configs:
        return Missing(f"no usable {kv_dtype} KV-cache {OP} grid in {ref.where}")
    return configs


@lru_cache(maxsize=32)
def _load(ref: TableRef, kv_dtype: str) -> dict[int, AttentionConfig] | Missing:
    try:
        return _build(ref, kv_dtype)
    except (OSError, ValueError, KeyError) as err:  # a damaged or changed file: fall back
        return Missing(f"could not read {ref.where}/{ref.op}: {err}")


@lru_cache(maxsize=64)
def find_mla_config(gpu: str, engine: str, kv_dtype: str, q_heads_per_rank: int,
                    kv_lora_rank: int, rope_dim: int, root: Path | None = None
                    ) -> AttentionConfig | Missing:
    """The measured decode-MLA grid for the query heads per rank, or why there is none."""
    if (kv_lora_rank, rope_dim) != (KV_LORA_RANK, ROPE_DIM):
        return Missing(f"the {OP} tables measure DeepSeek's {KV_LORA_RANK}+{ROPE_DIM} latent "
                       f"only (this model: {kv_lora_rank}+{rope_dim})")
    ref = find_table(gpu, OP, engine, None, root)
    if isinstance(ref, Missing):
        module = find_table(gpu, "mla_generation_module", engine, None, root)
        if not isinstance(module, Missing):
            return Missing(f"{engine} publishes MLA only as a whole module (projections "
                           f"included, {module.where}), not the attention kernel alone")
        return ref
    configs = _load(ref, table_dtype(kv_dtype))
    if isinstance(configs, Missing):
        return configs
    found = configs.get(int(q_heads_per_rank))
    if found is None:
        return Missing(f"no measured {OP} for {q_heads_per_rank} query heads per rank in "
                       f"{ref.where} (have: {', '.join(str(h) for h in sorted(configs))})")
    return found
