"""The per-dtype roofline fitted across GPUs (data/roofline_fit.csv): used where no table
covers a call, per dtype, with its cross-validated error; calibrated hardware keeps its own."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stdout

import numpy as np
import pytest

from explorer.analysis.roofline_check import (
    ROOFLINE_TARGET_MAPE,
    hardware_cv_errors,
    model_vs_measured,
    roofline_scores,
    why_missed,
)
from explorer.base.dtypes import GEMM_OPERAND_BYTES
from explorer.model.kernels import attention_time, gemm_roofline, gemm_time
from explorer.presets import hardware_presets, roofline_held_out
from explorer.specs.hardware import HardwareOverrides
from tests.support.paths import ROOT


def test_every_preset_carries_a_fit_per_dtype_by_its_architecture():
    hw = hardware_presets()
    for slug in hw:
        assert {f.dtype for f in hw[slug].gemm_fits} == {"bf16", "fp8", "fp8_block", "fp4"}
    # A GPU of a fitted architecture takes its architecture's fit (GB300, H100 PCIe); one
    # without a sibling with tables takes the fit on all GPUs, as the leave-one-GPU-out rule
    # `same architecture` trains a GPU without a sibling on all the others (AMD, RTX PRO 6000,
    # whose sm_120 is not the datacenter Blackwell SM).
    assert hw["gb300"].gemm_fit("bf16", "vllm").gpus == "b200 gb200 b300"
    assert hw["h100-pcie"].gemm_fit("bf16", "vllm").gpus == "h100 h200"
    for slug in ("mi300x", "mi355x", "rtx-pro-6000", "a30"):
        fit = hw[slug].gemm_fit("bf16", "vllm")
        assert fit is not None and set(fit.gpus.split()) == {
            "h100", "h200", "b200", "gb200", "b300", "a100", "l40s"}
    # A GPU without tables says which roofline prices it and its cross-validated error.
    fit = hw["mi355x"].gemm_fit("bf16")
    note = hw["mi355x"].roofline_error_note("bf16", "bf16")
    assert note.startswith("no measured tables: roofline from spec sheet")
    assert f"GEMM bf16 {fit.loo_mape:.1%}" in note and "no AMD GPU has tables" in note
    # Hopper GPUs use the fit on Hopper tables where one was recorded for their architecture.
    bf16 = hw["h100"].gemm_fit("bf16")
    assert bf16 is not None and "h100" in bf16.gpus.split()


@pytest.mark.parametrize("dtype", ["bf16", "fp8", "fp8_block", "fp4"])
def test_the_gemm_roofline_is_the_recorded_smooth_form(dtype):
    hw = hardware_presets()["b200"]
    fit = hw.gemm_fit(dtype)
    assert fit is not None
    m, n, k = np.array([1.0, 64.0, 512.0, 8192.0]), 7168.0, 4096.0
    b_in, b_w, b_out = GEMM_OPERAND_BYTES[dtype]
    if fit.act_quant:
        b_in = {"fp8": 4.0, "fp8_block": 2.0 + 2.0 * (1 + 4 / 128),
                "fp4": 2.0 + 2.0 * (0.5 + 1 / 16)}[dtype]
    c = 2 * m * n * (k + fit.k0) / (hw.peak_flops_per_s(dtype) * fit.eta_c)
    mem = (m * k * b_in + k * n * b_w + m * n * b_out) / (hw.hbm_bw_bytes_per_s * fit.eta_m)
    if fit.n_half:  # weight streaming slower for narrow outputs
        mem = mem * (1 + (fit.n_half / n) ** fit.n_q)
    want = fit.floor_s + (c**fit.p + mem**fit.p) ** (1 / fit.p)
    got = gemm_time(hw, m, n, k, dtype).time_s
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # The smooth transition charges more than the hard max near the ridge: extra verify
    # tokens are not free until it.
    assert np.all(got > fit.floor_s + np.maximum(c, mem))


def test_low_precision_gemms_use_their_own_efficiencies():
    hw = hardware_presets()["b200"]
    etas = {dt: hw.gemm_fit(dt) for dt in ("bf16", "fp4")}
    assert etas["fp4"] is not None and etas["bf16"] is not None
    assert etas["fp4"].eta_c < etas["bf16"].eta_c  # measured FP4 GEMMs reach less of the peak


def test_calibrated_or_overridden_efficiencies_replace_the_fit_they_touch():
    hw = hardware_presets()["h100"]
    gemm_only = HardwareOverrides(gemm_memory_efficiency=0.7, label="calibrated").apply(hw)
    assert gemm_only.gemm_fits == () and gemm_only.attention_fits == hw.attention_fits
    t = gemm_time(gemm_only, 8.0, 4096.0, 4096.0).time_s  # the single-η hard max
    compute = 2 * 8 * 4096 * 4096 / (hw.bf16_flops_per_s * hw.gemm_compute_efficiency)
    memory = (8 * 4096 + 4096 * 4096 + 8 * 4096) * 2 / (hw.hbm_bw_bytes_per_s * 0.7)
    assert t == pytest.approx(max(compute, memory, hw.kernel_floor_s))
    floor = HardwareOverrides(kernel_floor_s=5e-6).apply(hw)
    assert floor.gemm_fits == () and floor.attention_fits == ()
    step = HardwareOverrides(step_overhead_s=1e-3).apply(hw)
    assert step.gemm_fits == hw.gemm_fits  # a step cost does not touch the kernels' form


def test_recorded_loo_errors_are_the_mean_of_the_held_out_gpus():
    held = roofline_held_out()
    for sc in roofline_scores():
        rows = [h for h in held if (h.kind, h.dtype, h.engine) == (sc.kind, sc.dtype, sc.engine)]
        assert len(rows) >= 3
        assert sc.loo_mape == pytest.approx(np.mean([h.mape_serving for h in rows]), abs=1e-3)
        assert sc.meets_target == (sc.loo_mape <= ROOFLINE_TARGET_MAPE)
        assert bool(sc.why) == (not sc.meets_target)
    assert {h.gpu for h in hardware_cv_errors("h100")} == {"h100"}
    assert hardware_cv_errors("mi300x") == ()


def test_why_a_dtype_misses_names_the_form_or_the_transfer():
    assert why_missed(0.10, 0.30) == ""
    assert "cannot follow" in why_missed(0.20, 0.15)
    assert "do not carry between GPUs" in why_missed(0.20, 0.05)


def test_model_vs_measured_scores_the_presets_roofline_on_a_table():
    d = model_vs_measured("h100", "vllm", "bf16", max_points=500)
    assert 0 < d.m.size <= 500 < d.n_points
    assert np.all(d.measured_s > 0) and np.all(d.predicted_s > 0)
    assert d.mape is not None and 0.0 < d.mape < 0.5
    none = model_vs_measured("h100", "vllm", "fp4")  # Hopper has no FP4 tensor cores
    assert none.m.size == 0 and none.mape is None and none.table


def test_make_validate_prints_the_loo_mape_per_dtype_with_its_verdict():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import validate
    finally:
        sys.path.pop(0)
    out = io.StringIO()
    with redirect_stdout(out):
        validate.roofline_cross_validation()
    text = out.getvalue()
    for dtype in ("bf16", "fp8", "fp8_block", "fp4"):
        line = next(ln for ln in text.splitlines() if f"GEMM {dtype} " in ln)
        assert "MAPE" in line and ("meets" in line or "MISSES" in line)
    assert text.count("why:") == sum(not s.meets_target for s in roofline_scores())


def test_the_width_term_slows_narrow_outputs_and_a_grouped_gemm_uses_its_depth():
    """Where a fit has the width term, a GEMM of the same bytes streams slower with fewer
    output columns; a call without a width (the grouped MoE GEMM) uses flops/(2·outputs)."""
    hw = hardware_presets()["h100"]
    # the recorded fits where the width term matters (LOO chose it for the quantized dtypes)
    fits = [f for f in hw.gemm_fits if f.n_half and (f.n_half / 1024.0) ** f.n_q > 0.05]
    assert fits
    fit = fits[0]
    hw = hw.for_engine(fit.engine)  # the roofline of that fit's engine
    assert hw.gemm_fit(fit.dtype) == fit
    narrow = gemm_time(hw, 1.0, 1024.0, 16384.0, fit.dtype).time_s
    wide = gemm_time(hw, 1.0, 16384.0, 1024.0, fit.dtype).time_s
    assert narrow > wide
    m, n, k = 4.0, 2048.0, 2048.0
    kt = gemm_time(hw, m, n, k, fit.dtype)
    grouped = gemm_roofline(hw, kt.flops, kt.bytes, fit.dtype, outputs=m * n)  # depth k = n
    np.testing.assert_allclose(grouped.time_s, kt.time_s, rtol=1e-12)


@pytest.mark.parametrize("kv_dtype", ["bf16", "fp8"])
def test_the_attention_roofline_is_the_recorded_form(kv_dtype):
    """Fixed costs (floor, per query row, per (sequence, KV head) ∝ head dim) plus the KV bytes
    at the size-dependent bandwidth, the 128-row tile steps a max against compute."""
    hw = hardware_presets()["h100"]
    fit = hw.attention_fit(kv_dtype)
    assert fit is not None
    b, s, kv, g, h = np.array([1.0, 64.0, 512.0]), 4096.0, 8.0, 4.0, 128.0
    nbytes = b * s * kv * 2 * h * {"bf16": 2.0, "fp8": 1.0}[kv_dtype]
    memory = nbytes / (hw.hbm_bw_bytes_per_s * fit.efficiency(nbytes, b * kv))
    fixed = fit.floor_s + fit.per_row_s * b * kv * g + fit.per_unit_s * b * kv * h / 128
    got = attention_time(hw, b, s, kv, g, 1.0, h, kv_dtype=kv_dtype)
    compute = 2 * b * kv * 128 * s * 2 * h / (hw.bf16_flops_per_s * hw.attention_compute_efficiency)
    np.testing.assert_allclose(got.time_s, fixed + np.maximum(compute, memory), rtol=1e-12)
    assert np.all(np.diff(got.time_s) > 0)


@pytest.mark.parametrize("dtype", ["bf16", "fp8", "fp8_block", "fp4"])
def test_a_gpu_without_tables_is_priced_by_the_carried_fit_from_its_spec_sheet(dtype):
    """Hypothetical hardware (twice the bandwidth of an H200) keeps the cross-GPU fit: a
    weight-streaming GEMM's variable part halves, the fixed part stays."""
    hw = hardware_presets()["h200"]
    faster = hw.model_copy(update={"slug": "h200-2x", "hbm_bw_bytes_per_s":
                                   2 * hw.hbm_bw_bytes_per_s})
    assert faster.gemm_fit(dtype) == hw.gemm_fit(dtype) is not None
    fit = hw.gemm_fit(dtype)
    base = gemm_time(hw, 1.0, 8192.0, 8192.0, dtype).time_s - fit.floor_s
    fast = gemm_time(faster, 1.0, 8192.0, 8192.0, dtype).time_s - fit.floor_s
    assert 0.5 <= fast / base < 0.6  # the compute term, tiny at m = 1, does not halve
