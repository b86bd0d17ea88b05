"""A measured kernel time is never taken below the DRAM read its serving call needs.

The collector repeats a call on one or a few copies of its tensors, so where they fit in L2
(L40S: 96 MB) the table ran faster than the GPU's DRAM allows; a serving step streams a layer's
weights and KV cache from DRAM (the rest of the model passes through L2 between two uses)."""

from __future__ import annotations

import numpy as np
import pytest

from explorer import Scenario, evaluate
from explorer.kernel_tables import GemmTable, load_gemm_table, load_generation_attention_table
from explorer.model.measured_kernels import measured_kernels
from explorer.presets import hardware_presets


def test_an_l2_resident_gemm_is_raised_to_the_dram_read_of_its_weights():
    hw = hardware_presets()["l40s"]
    raw = load_gemm_table("l40s", "trtllm", "bf16")
    assert isinstance(raw, GemmTable)
    n = k = 2048.0
    m = np.array([1.0, 8.0])
    table_s = raw.curve(n, k).latency(m).latency_s
    dram_s = n * k * 2.0 / hw.hbm_bw_bytes_per_s
    assert np.all(table_s < dram_s) and table_s.min() < 0.7 * dram_s  # faster than DRAM
    tables = measured_kernels(hw, "trtllm", "bf16", "bf16")
    got = tables.gemm_time(m, n, k, np.full(2, 1.0))
    np.testing.assert_allclose(got, dram_s, rtol=1e-9)
    assert tables.tally.raised["gemm"] == 2 and tables.tally.measured["gemm"] == 2


def test_gemms_that_stream_from_dram_are_taken_as_measured():
    hw = hardware_presets()["h100"]
    raw = load_gemm_table("h100", "vllm", "bf16")
    assert isinstance(raw, GemmTable)
    tables = measured_kernels(hw, "vllm", "bf16", "bf16")
    m = raw.m_values.astype(np.float64)
    for n, k in ((4096.0, 4096.0), (6144.0, 4096.0), (28672.0, 4096.0), (4096.0, 14336.0)):
        want = np.maximum.accumulate(raw.curve(n, k).latency(m).latency_s)  # monotone in m
        np.testing.assert_allclose(tables.gemm_time(m, n, k, np.ones_like(m)), want)
    assert not tables.tally.raised


def test_an_l2_resident_attention_call_is_raised_to_the_dram_read_of_its_kv():
    hw = hardware_presets()["l40s"]
    table = load_generation_attention_table("l40s", "sglang", "bf16")
    batch, kv_len = np.array([64.0]), np.array([255.0])
    cfg = table.config(4, 4, 256)
    raw = cfg.latency(batch, kv_len).latency_s  # type: ignore[union-attr]
    kv_bytes = 64 * 255 * 2 * 4 * 256 * 2.0
    assert raw[0] < 0.5 * kv_bytes / hw.hbm_bw_bytes_per_s
    tables = measured_kernels(hw, "sglang", "bf16", "bf16")
    got = tables.attention_time(batch, kv_len, 4.0, np.array([4.0]), 256, 0,
                                np.ones(1), np.ones(1))
    assert got[0] >= kv_bytes / hw.hbm_bw_bytes_per_s * (1 - 1e-9)
    assert tables.tally.raised["attention"] == 1


def test_the_sources_say_how_many_calls_were_raised_and_why():
    small = evaluate(Scenario(hardware="l40s", model="llama-3.2-1b", tp=1, engine="trtllm",
                              batch=8))
    text = small.sources["kernel_times"]
    assert "raised to the DRAM read of their weights" in text and "L2" in text
    h100 = evaluate(Scenario(hardware="h100", model="llama-3.1-8b", tp=1, batch=8))
    assert "raised" not in h100.sources["kernel_times"]


def test_routed_experts_are_never_faster_than_reading_the_top_k_experts_every_token_reads():
    from explorer.kernel_tables import MoeShape
    from explorer.kernel_tables.served import experts_read_s

    hw = hardware_presets()["l40s"]
    shape = MoeShape(hidden=2048, inter=768, topk=8, num_experts=128)  # Qwen3-30B-A3B
    floor = experts_read_s(shape, "fp8_block", hw.hbm_bw_bytes_per_s)
    assert floor == pytest.approx(8 * 3 * 2048 * 768 * (1 + 4 / 128**2) / 0.864e12)
    tables = measured_kernels(hw, "vllm", "fp8_block", "bf16")
    t = tables.moe_time(np.array([1.0, 4.0]), shape, "fp8_block", lambda n: np.full(n.shape, 1.0))
    assert t[0] == pytest.approx(floor)  # the table ran it from L2 (25 µs for 38 MB)
    assert t[1] > floor  # four tokens: as measured
    assert tables.tally.raised["moe"] == 1
    assert experts_read_s(MoeShape(2048, 768, 8, 128, ep=8), "bf16", 1e12) == 0.0  # EP: none
    h100 = measured_kernels(hardware_presets()["h100"], "vllm", "bf16", "bf16")
    h100.moe_time(np.array([1.0, 64.0]), shape, "bf16", lambda n: np.full(n.shape, 1.0))
    assert not h100.tally.raised


def test_past_the_measured_box_attention_is_never_below_the_dram_read_of_its_kv():
    """The table's edge at large batch sits at a short KV length (B=2048: 127 tokens), where the
    measured time is 0.6× the roofline's; carried out to 1K it priced the 8B's KV read on an
    H100 at 4.7 TB/s (0.71× the DRAM floor), so a wider verify looked nearly free at B ≥ 512."""
    from explorer.model.grid import scenario_model
    from explorer.model.layers import total

    sc = Scenario(model="llama-3.1-8b", hardware="h100", context=1024, tp=1)
    m = scenario_model(sc)
    b = np.array([1024.0, 2048.0, 4096.0])
    kv_floor = b * 1024 * (32 * 8 * 128 * 2 * 2.0) / m.r.hardware.hbm_bw_bytes_per_s
    attn = m.verify(b, 1.0, 1024.0, 4.0)["attention"]
    assert np.all(attn >= kv_floor * (1 - 1e-9))
    assert np.all(attn <= kv_floor * 1.02)  # memory-bound: the read itself, not more
    wide = m.verify(b, 2.0, 1024.0, 4.0)  # q_len 2: G·(1+D) = 8 rows, within the tile
    np.testing.assert_allclose(wide["attention"], attn, rtol=1e-9)
    assert np.all(total(wide) > total(m.verify(b, 1.0, 1024.0, 4.0)))
