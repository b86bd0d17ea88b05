"""Measured kernel tables: load time per GPU and engine, and lookup time for the explorer's grid
(2,013 (B, D) points × 10 GEMM shapes, and decode attention over the same points). Prints
figures; asserts nothing about time.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_kernel_tables.py
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.kernel_tables import (
    ENGINES,
    SYSTEM_FOR_PRESET,
    GemmTable,
    GenerationAttentionTable,
    Missing,
    load_gemm_table,
    load_generation_attention_table,
    preset_coverage,
)

BATCHES = np.unique(np.round(np.geomspace(1, 4096, 72)))  # 61 batch sizes
DRAFT_LENS = np.arange(0, 33, dtype=np.float64)
TOKENS = (BATCHES[:, None] * (1.0 + DRAFT_LENS[None, :])).ravel()  # m = B·(1+D), 2,013 points
CONTEXT_TOKENS = 8192.0
# Llama-3.1-70B at TP = 2 and Llama-3.1-8B at TP = 1: QKV, O, gate+up, down, lm_head (n, k).
SHAPES = ((5120, 8192), (8192, 4096), (28672, 8192), (8192, 14336), (64128, 8192),
          (6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (128256, 4096))


def best_ms(fn: Callable[[], object], repeat: int = 20) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def loads() -> None:
    print("load (cold, parquet → grid), ms      GEMM bf16   decode attention bf16 KV")
    for preset, system in SYSTEM_FOR_PRESET.items():
        for engine in ENGINES:
            start = time.perf_counter()
            gemm = load_gemm_table(preset, engine, "bf16")
            mid = time.perf_counter()
            attn = load_generation_attention_table(preset, engine, "bf16")
            end = time.perf_counter()
            g = "missing" if isinstance(gemm, Missing) else f"{1e3 * (mid - start):7.0f}"
            a = "missing" if isinstance(attn, Missing) else f"{1e3 * (end - mid):7.0f}"
            print(f"  {preset:7s} {system or '-':10s} {engine:7s} {g:>10s} {a:>12s}")


def lookups() -> None:
    table = load_gemm_table("h200", "vllm", "bf16")
    attn = load_generation_attention_table("h200", "vllm", "bf16")
    assert isinstance(table, GemmTable) and isinstance(attn, GenerationAttentionTable)
    points = TOKENS.size * len(SHAPES)

    def trilinear() -> None:  # arrays of n and k: the general path
        for n, k in SHAPES:
            table.latency(TOKENS, np.full_like(TOKENS, n), np.full_like(TOKENS, k))

    def curves_cold() -> None:
        table._curves.clear()  # the benchmark measures the cache's first fill
        for n, k in SHAPES:
            table.curve(n, k).latency(TOKENS)

    def curves_warm() -> None:
        for n, k in SHAPES:
            table.curve(n, k).latency(TOKENS)

    config = attn.config(64, 8, 128)  # Llama-3.1-70B per layer on one GPU
    assert not isinstance(config, Missing)
    batch = np.repeat(BATCHES, DRAFT_LENS.size)

    def attention() -> None:
        config.latency(batch, CONTEXT_TOKENS)

    print(f"\nlookup, H200 vLLM bf16, {TOKENS.size} (B, D) points × {len(SHAPES)} GEMM shapes "
          f"= {points} points (median of 20):")
    print(f"  trilinear (log m, log n, log k) arrays  {best_ms(trilinear):7.2f} ms")
    print(f"  per-(n, k) curve over m, cache cold     {best_ms(curves_cold):7.2f} ms")
    print(f"  per-(n, k) curve over m, cached         {best_ms(curves_warm):7.2f} ms"
          "   (= table.latency(m, n, k) with scalar n, k)")
    print(f"  decode attention, {batch.size} points, one config {best_ms(attention):7.2f} ms")
    covered = np.mean([table.curve(n, k).latency(TOKENS).covered.mean() for n, k in SHAPES])
    print(f"  share of GEMM points covered: {covered:.1%} (m = B·(1+D) up to "
          f"{int(TOKENS.max())} > 32768 is not)")


def coverage() -> None:
    print("\ncoverage of the hardware presets (newest version per engine):")
    for c in preset_coverage():
        if c.system is None:
            print(f"  {c.preset:7s} {c.engine:7s} none: {c.reason}")
            continue
        print(f"  {c.preset:7s} {c.engine:7s} gemm {c.gemm_version or '-':10s} "
              f"{','.join(c.gemm_dtypes) or '-':28s} attention {c.attention_version or '-':10s} "
              f"kv {','.join(c.kv_dtypes) or '-'}")


def main() -> None:
    start = time.perf_counter()
    import pandas  # noqa: F401  - the first read pays pandas/pyarrow imports; keep them apart
    import pyarrow.parquet  # noqa: F401
    print(f"imports {1e3 * (time.perf_counter() - start):.0f} ms")
    loads()
    lookups()
    coverage()


if __name__ == "__main__":
    main()
