"""Calibration speed on a large synthetic table, and fits of the shipped reference timings.

    .venv/bin/python benchmarks/bench_calibration.py
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from explorer.calibration import fit_kernel_efficiencies
from explorer.model.kernels import gemm_time
from explorer.presets import hardware_presets
from explorer.specs.measured import AttentionTimings, GemmTimings

# The shared reference data sits beside the checkout (../shared/reference), as in the tests.
ROOT = Path(__file__).resolve().parents[1]
REFERENCE = Path(os.environ.get("EXPLORER_SHARED_DIR", ROOT.parent / "shared")) / "reference"
GPUS = {"h100_sxm": "h100", "b200_sxm": "b200", "gb200": "gb200", "b300_sxm": "b300",
        "a100_sxm": "a100", "l40s": "l40s"}


def synthetic(rows: int = 100_000) -> None:
    hw = hardware_presets()["h200"]
    true = hw.model_copy(update={"gemm_compute_efficiency": 0.55, "gemm_memory_efficiency": 0.7,
                                 "kernel_floor_s": 8e-6})
    rng = np.random.default_rng(0)
    m = np.round(np.exp(rng.uniform(0, np.log(8192), rows)))
    n = rng.choice([1024, 2048, 4096, 8192], rows)
    k = rng.choice([1024, 2048, 4096, 8192], rows)
    t = gemm_time(true, m, n, k).time_s * (1 + 0.03 * rng.standard_normal(rows))
    start = time.perf_counter()
    cal = fit_kernel_efficiencies(hw, GemmTimings.from_columns(m, n, k, "bf16", t), None)
    print(f"{rows} synthetic GEMM rows: {time.perf_counter() - start:.3f} s — {cal.summary}")


def reference() -> None:
    if not REFERENCE.exists():
        print("no reference timings at", REFERENCE)
        return
    g = pd.read_csv(REFERENCE / "gemm_measured.csv")
    a = pd.read_csv(REFERENCE / "attention_measured.csv")
    presets = hardware_presets()
    for gpu, slug in GPUS.items():
        gg, aa = g[g.gpu == gpu], a[a.gpu == gpu]
        if not len(gg):  # the reference data does not cover every GPU listed
            print(f"{gpu}: no reference GEMM rows")
            continue
        gemm = GemmTimings.from_columns(gg.M, gg.N, gg.K, list(gg.dtype), gg.latency_ms * 1e-3)
        attn = None
        if len(aa):
            attn = AttentionTimings.from_columns(
                aa.batch, aa.kv_len_step, aa.num_q_heads, aa.num_kv_heads, aa.head_dim,
                aa.q_len, aa.latency_ms * 1e-3, list(aa.kv_dtype),
            )
        start = time.perf_counter()
        cal = fit_kernel_efficiencies(presets[slug], gemm, attn)
        print(f"{gpu}: {time.perf_counter() - start:.3f} s — {cal.summary}")
        for note in cal.notes:
            print("   ", note)


if __name__ == "__main__":
    synthetic()
    reference()
