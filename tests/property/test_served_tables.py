"""Invariants of reading a measured table as a serving step takes it (data/SOURCES.md): no call
faster than the DRAM read of its weights, TRT-LLM fp8 on its static path never slower than the
dynamic-quant table nor served faster than the speed of light, other tables taken as
measured."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from explorer.kernel_tables import GemmTable, load_gemm_table
from explorer.kernel_tables.served import SpeedOfLight, weight_read_s
from explorer.model.measured_kernels import MeasuredKernels, measured_kernels
from explorer.presets import hardware_presets

GPUS = ("h100", "h200", "b200", "a100", "l40s")
CASES = [(g, e, d) for g in GPUS for e in ("vllm", "sglang", "trtllm")
         for d in ("bf16", "fp8", "fp8_block")
         if isinstance(load_gemm_table(g, e, d), GemmTable)]


@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(CASES), log_m=st.floats(0.0, 12.0), i_n=st.integers(0, 21),
       i_k=st.integers(0, 21))
@example(case=("l40s", "trtllm", "bf16"), log_m=0.0, i_n=8, i_k=8)  # L2-resident when measured
@example(case=("l40s", "sglang", "fp8"), log_m=3.0, i_n=12, i_k=12)
# L40S TRT-LLM fp8, n 1536, k 65536: the dynamic-quant call timed at 1/3 of the DRAM read at
# m = 1 (L2-resident), and m = 22.6 between that node and one above the DRAM read
@example(case=("l40s", "trtllm", "fp8"), log_m=0.0, i_n=7, i_k=21)
@example(case=("l40s", "trtllm", "fp8"), log_m=4.5, i_n=7, i_k=21)
def test_a_served_gemm_is_never_faster_than_the_dram_read_of_its_weights(case, log_m, i_n, i_k):
    gpu, engine, dtype = case
    hw = hardware_presets()[gpu]
    raw = load_gemm_table(gpu, engine, dtype)
    assert isinstance(raw, GemmTable)
    n = float(raw.n_values[i_n % raw.n_values.size])
    k = float(raw.k_values[i_k % raw.k_values.size])
    m = np.array([float(np.exp2(log_m))])
    tables = measured_kernels(hw, engine, dtype, "bf16")
    t = tables.gemm_time(m, n, k, np.full(1, np.inf))
    if not np.isfinite(t[0]):  # not covered: the (infinite) stand-in roofline came back
        return
    assert t[0] >= float(weight_read_s(n, k, dtype, hw.hbm_bw_bytes_per_s)) * (1 - 1e-9)
    served = tables.gemm
    assert isinstance(served, GemmTable)
    here = served.curve(n, k).latency(m)
    if engine == "trtllm" and dtype == "fp8" and here.all_covered:
        dynamic = raw.curve(n, k).latency(m).latency_s[0]
        sol = float(SpeedOfLight.of(hw, dtype).gemm_time_s(m, n, k, dtype)[0])
        # The static rule only takes time off the dynamic-quant table ...
        assert here.latency_s[0] <= dynamic * (1 + 1e-9)
        # ... and what a step is served is never faster than the speed of light, nor slower
        # than the dynamic-quant table read the same way (monotone in m, raised to the DRAM
        # read). Both on the served time t, not on the table: where the dynamic-quant call
        # itself ran faster than the speed of light (L40S: weights L2-resident across the
        # collector's repeats) no table time lies between the speed of light and that call's.
        as_dynamic = MeasuredKernels(hw.slug, engine, raw, tables.attention,
                                     dram_bytes_per_s=hw.hbm_bw_bytes_per_s)
        dynamic_served = as_dynamic.gemm_time(m, n, k, np.full(1, np.inf))[0]
        assert sol * (1 - 1e-9) <= t[0] <= dynamic_served * (1 + 1e-9)
    elif not served.provenance.stands_in_for and here.all_covered:
        np.testing.assert_allclose(here.latency_s, raw.curve(n, k).latency(m).latency_s)
