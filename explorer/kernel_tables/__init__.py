"""Measured kernel tables from the pinned aiconfigurator-core package, usable by the cost model.

Data at the presets layer: NVIDIA's measured latencies per GPU, serving engine and engine version
(GEMM by dtype, decode attention by head configuration and KV dtype), interpolated in log space,
exact at measured points and never extrapolated — every lookup returns `covered` (False: fall
back to the roofline and say so) and a `Provenance` whose `label` the UI shows. A GPU, engine,
dtype or op without a table gives a `Missing` with the reason, never an exception.

    table = load_gemm_table("h200", "vllm", "bf16")       # GemmTable | Missing
    table = load_serving_gemm_table("h200", "vllm", "fp8_block")  # a stand-in where the
                                            # engine's own table was not timed as a step runs
    hit = table.latency(m, n, k)                           # .latency_s, .covered, .filled
    hit = table.curve(n, k).latency(m)                     # same numbers, fast for fixed (n, k)
    attn = load_generation_attention_table("h200", "vllm", "fp8")
    hit = attn.latency(32, 8, 128, batch, kv_len_tokens)   # AttentionLookup | Missing
    curve = find_moe_curve("h200", "vllm", MoeShape(4096, 1536, 8, 128, tp=8), "fp8")
    hit = curve.latency(tokens)                            # MoeLookup | (curve is Missing)
    mla = find_mla_config("h200", "sglang", "bf16", 16, 512, 64)  # AttentionConfig | Missing
"""

from explorer.kernel_tables.attention import (
    AttentionConfig,
    AttentionLookup,
    GenerationAttentionTable,
    generation_attention_time_s,
    load_generation_attention_table,
)
from explorer.kernel_tables.catalog import (
    ENGINES,
    PACKAGE,
    SYSTEM_FOR_PRESET,
    Engine,
    Missing,
    Provenance,
    TableRef,
    engine_versions,
    find_table,
    list_tables,
    newest_version,
    newest_versions,
    package_label,
    package_version,
    resolve_system,
    table_dtype,
    versions,
)
from explorer.kernel_tables.coverage import PresetCoverage, preset_coverage, table_dtypes
from explorer.kernel_tables.gemm import (
    GemmCurve,
    GemmLookup,
    GemmTable,
    gemm_time_s,
    load_gemm_table,
)
from explorer.kernel_tables.mla import find_mla_config
from explorer.kernel_tables.moe import MoeCurve, MoeLookup, MoeShape, find_moe_curve, moe_time_s
from explorer.kernel_tables.served import load_serving_gemm_table

__all__ = [
    "ENGINES",
    "PACKAGE",
    "SYSTEM_FOR_PRESET",
    "AttentionConfig",
    "AttentionLookup",
    "Engine",
    "GemmCurve",
    "GemmLookup",
    "GemmTable",
    "GenerationAttentionTable",
    "Missing",
    "MoeCurve",
    "MoeLookup",
    "MoeShape",
    "PresetCoverage",
    "Provenance",
    "TableRef",
    "engine_versions",
    "find_mla_config",
    "find_moe_curve",
    "find_table",
    "gemm_time_s",
    "generation_attention_time_s",
    "list_tables",
    "load_gemm_table",
    "load_generation_attention_table",
    "load_serving_gemm_table",
    "moe_time_s",
    "newest_version",
    "newest_versions",
    "package_label",
    "package_version",
    "preset_coverage",
    "resolve_system",
    "table_dtype",
    "table_dtypes",
    "versions",
]
