"""Calibration recovers known parameters from synthetic timings made by the model itself."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.base.dtypes import normalize_dtype
from explorer.calibration import (
    back_out_draft_cost,
    fit_kernel_efficiencies,
    fit_step_overheads,
    mape,
)
from explorer.measured import parse_bytes
from explorer.model.grid import ScenarioModel, scenario_model
from explorer.model.kernels import attention_time, gemm_time
from explorer.model.layers import total
from explorer.presets import hardware_presets
from explorer.specs.hardware import HardwareOverrides, HardwareSpec
from explorer.specs.measured import AttentionTimings, GemmTimings
from explorer.specs.scenario import Scenario

NOISE = 0.03
PRESET = hardware_presets()["h200"]
TRUE = PRESET.model_copy(
    update={
        "gemm_compute_efficiency": 0.55,
        "gemm_memory_efficiency": 0.70,
        "kernel_floor_s": 8e-6,
        "attention_compute_efficiency": 0.50,
        "attention_memory_efficiency": 0.75,
        # the single-η roofline the calibration fits (the preset's cross-GPU fits set aside)
        "gemm_fits": (),
        "attention_fits": (),
    }
)
M_GRID = np.unique(np.round(np.geomspace(1, 8192, 14)))
# N, K = 4096/8192 alone never reach an 8 µs floor on H200 (a 4096² bf16 weight streams in
# ~10 µs at η_m 0.7): 1024 and 2048 add floor-bound rows so the floor is identifiable.
NK_GRID = (1024, 2048, 4096, 8192)
# q_len ≤ 16 with G ≤ 8 keeps G·q_len ≤ 128, one attention tile for every row: compute and
# memory terms then keep one ratio and only one efficiency is identifiable. q_len 32 and 64
# (256, 512 padded rows) add compute-bound rows.
Q_LEN_GRID = (1, 2, 4, 8, 16, 32, 64)


def noisy(t: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return t * (1.0 + NOISE * rng.standard_normal(t.shape))


def gemm_grid(hw: HardwareSpec, nk: tuple[int, ...] = NK_GRID, seed: int | None = 0) -> GemmTimings:
    m, n, k = (a.ravel() for a in np.meshgrid(M_GRID, nk, nk, indexing="ij"))
    t = gemm_time(hw, m, n, k, "bf16").time_s
    return GemmTimings.from_columns(m, n, k, "bf16", t if seed is None else noisy(t, seed))


def attention_grid(
    hw: HardwareSpec, q_lens: tuple[int, ...] = Q_LEN_GRID, seed: int = 1
) -> AttentionTimings:
    batch = np.array([1, 4, 16, 64, 256])
    context = np.array([1024, 4096, 16384, 65536, 131072])
    heads = np.array([(32, 8), (64, 8)])
    b, s, q, h = (
        a.ravel() for a in np.meshgrid(batch, context, q_lens, np.arange(len(heads)), indexing="ij")
    )
    qh, kvh = heads[h, 0], heads[h, 1]
    t = attention_time(hw, b, s, kvh, qh / kvh, q, 128).time_s
    return AttentionTimings.from_columns(b, s, qh, kvh, 128, q, noisy(t, seed))


def rel(a: float, b: float) -> float:
    return abs(a / b - 1.0)


# -- kernel efficiencies -----------------------------------------------------------------------


def test_gemm_fit_recovers_known_parameters() -> None:
    cal = fit_kernel_efficiencies(PRESET, gemm_grid(TRUE), None)
    hw = cal.calibrated
    assert rel(hw.gemm_compute_efficiency, 0.55) < 0.05
    assert rel(hw.gemm_memory_efficiency, 0.70) < 0.05
    assert rel(hw.kernel_floor_s, 8e-6) < 0.20
    assert cal.mape_after < cal.mape_before
    assert cal.mape_after < 5.0
    assert all(v > 0 for v in cal.binding_rows.values())
    assert cal.notes == ()
    assert cal.overrides.label == f"calibrated on {cal.n_gemm} GEMM + 0 attention timings"
    assert cal.overrides.attention_memory_efficiency is None  # untouched without attention rows
    assert set(cal.kind) == {"gemm"}
    assert "MAPE" in cal.summary and "GEMM η_c" in cal.summary


def test_gemm_without_floor_bound_rows_reports_the_floor_unidentified() -> None:
    cal = fit_kernel_efficiencies(PRESET, gemm_grid(TRUE, nk=(4096, 8192)), None)
    assert rel(cal.calibrated.gemm_compute_efficiency, 0.55) < 0.05
    assert rel(cal.calibrated.gemm_memory_efficiency, 0.70) < 0.05
    assert cal.binding_rows["gemm_floor"] == 0
    assert any("floor parameter is not identified" in n for n in cal.notes)
    assert cal.mape_after < 5.0


def test_attention_fit_recovers_known_parameters() -> None:
    cal = fit_kernel_efficiencies(PRESET, gemm_grid(TRUE), attention_grid(TRUE))
    hw = cal.calibrated
    assert rel(hw.attention_compute_efficiency, 0.50) < 0.05
    assert rel(hw.attention_memory_efficiency, 0.75) < 0.05
    assert rel(hw.gemm_compute_efficiency, 0.55) < 0.05
    assert rel(hw.kernel_floor_s, 8e-6) < 0.20
    assert cal.mape_after < cal.mape_before
    assert cal.mape_after < 5.0
    assert cal.mape_by_kind_after["attention"] < 5.0
    assert cal.binding_rows["attention_compute"] > 0 and cal.binding_rows["attention_memory"] > 0
    assert cal.n_attention == len(attention_grid(TRUE))
    assert list(cal.kind).count("attention") == cal.n_attention


def test_attention_only_fits_the_floor_too() -> None:
    cal = fit_kernel_efficiencies(PRESET, None, attention_grid(TRUE))
    assert rel(cal.calibrated.attention_compute_efficiency, 0.50) < 0.05
    assert rel(cal.calibrated.attention_memory_efficiency, 0.75) < 0.05
    assert rel(cal.calibrated.kernel_floor_s, 8e-6) < 0.20
    assert any("fitted on the attention rows" in n for n in cal.notes)
    assert cal.overrides.gemm_compute_efficiency is None


def test_attention_single_tile_grid_identifies_one_efficiency_only() -> None:
    cal = fit_kernel_efficiencies(PRESET, None, attention_grid(TRUE, q_lens=(1, 2, 4, 8, 16)))
    assert any("not identified" in n for n in cal.notes)
    assert any("only one of η_c, η_m is identified" in n for n in cal.notes)
    assert cal.mape_after < 5.0  # the times are still reproduced


def test_predictions_are_the_kernel_functions() -> None:
    g, a = gemm_grid(TRUE), attention_grid(TRUE)
    cal = fit_kernel_efficiencies(PRESET, g, a)
    before_g = gemm_time(PRESET, g.m, g.n, g.k, "bf16").time_s
    after_g = gemm_time(cal.calibrated, g.m, g.n, g.k, "bf16").time_s
    np.testing.assert_allclose(cal.predicted_before_s[: len(g)], before_g)
    np.testing.assert_allclose(cal.predicted_after_s[: len(g)], after_g)
    np.testing.assert_allclose(cal.measured_s, np.concatenate([g.time_s, a.time_s]))
    assert cal.mape_after == pytest.approx(mape(cal.predicted_after_s, cal.measured_s))


@settings(max_examples=15, deadline=None)
@given(
    eta_c=st.floats(0.3, 0.95), eta_m=st.floats(0.3, 0.95), floor_us=st.floats(3.0, 12.0)
)
def test_noise_free_gemm_fit_is_exact(eta_c: float, eta_m: float, floor_us: float) -> None:
    true = PRESET.model_copy(
        update={
            "gemm_compute_efficiency": eta_c, "gemm_memory_efficiency": eta_m,
            "kernel_floor_s": floor_us * 1e-6, "gemm_fits": (),  # the single-η form
        }
    )
    cal = fit_kernel_efficiencies(PRESET, gemm_grid(true, seed=None), None)
    assert cal.mape_after < 0.5
    assert rel(cal.calibrated.gemm_compute_efficiency, eta_c) < 0.01
    assert rel(cal.calibrated.gemm_memory_efficiency, eta_m) < 0.01
    assert rel(cal.calibrated.kernel_floor_s, floor_us * 1e-6) < 0.01


def test_dtype_spellings_and_unsupported_rows() -> None:
    assert normalize_dtype("bfloat16") == "bf16"
    assert normalize_dtype("FP8_block") == "fp8_block"  # its own kernels and tables
    assert normalize_dtype("nvfp4") == "fp4"
    g = gemm_grid(TRUE)
    n = len(g)
    dtypes = ["bfloat16"] * n + ["int4_wo"] * 3
    mixed = GemmTimings.from_columns(
        np.r_[g.m, 1, 2, 3], np.r_[g.n, 4096, 4096, 4096], np.r_[g.k, 4096, 4096, 4096],
        dtypes, np.r_[g.time_s, 1e-5, 1e-5, 1e-5],
    )
    cal = fit_kernel_efficiencies(PRESET, mixed, None)
    assert cal.n_gemm == n
    assert any("int4_wo" in note for note in cal.notes)
    np.testing.assert_array_equal(cal.source_row, np.arange(n))


def test_parsed_tables_feed_the_fit() -> None:
    g, a = gemm_grid(TRUE), attention_grid(TRUE)
    rows = [f"gemm,{m},{n},{k},torch.bfloat16,,,,,,,{t!r}"
            for m, n, k, t in zip(g.m, g.n, g.k, g.time_s, strict=True)]
    rows += [f"attention,,,,,{b},{s},{qh},{kvh},{hd},{q},{t!r}"
             for b, s, qh, kvh, hd, q, t in zip(a.batch, a.context, a.q_heads, a.kv_heads,
                                                a.head_dim, a.q_len, a.time_s, strict=True)]
    text = "kind,m,n,k,dtype,batch,context,q_heads,kv_heads,head_dim,q_len,time_s\n"
    parsed = parse_bytes("kernels.csv", ("\n".join([text.strip(), *rows]) + "\n").encode())
    assert parsed.ok and parsed.kernel_timings is not None
    table = parsed.kernel_timings
    assert table.gemm is not None and set(table.gemm.dtype) == {"bf16"}
    direct = fit_kernel_efficiencies(PRESET, g, a)
    via_file = fit_kernel_efficiencies(PRESET, table.gemm, table.attention)
    assert via_file.overrides == direct.overrides
    attention_only = fit_kernel_efficiencies(PRESET, None, table.attention)
    assert attention_only.n_gemm == 0 and attention_only.n_attention == len(a)
    with pytest.raises(ValueError):  # a table without rows does not exist: None says "none"
        GemmTimings(m=(), n=(), k=(), dtype=(), time_s=())


def test_inputs_are_validated() -> None:
    with pytest.raises(ValueError, match="different lengths"):
        GemmTimings.from_columns([1, 2], [4096] * 3, 4096, "bf16", [1e-5, 2e-5])
    with pytest.raises(ValueError, match="time_s"):
        GemmTimings.from_columns([1], [4096], [4096], "bf16", [0.0])
    with pytest.raises(ValueError, match=">= 1"):
        AttentionTimings.from_columns([0], [1024], [32], [8], [128], [1], [1e-5])
    with pytest.raises(ValueError, match="dtype"):
        GemmTimings.from_columns([1, 2], 4096, 4096, ["bf16"], [1e-5, 2e-5])
    with pytest.raises(ValueError, match="at least one"):
        fit_kernel_efficiencies(PRESET, None, None)


def test_results_are_frozen_and_read_only() -> None:
    cal = fit_kernel_efficiencies(PRESET, gemm_grid(TRUE), None)
    with pytest.raises(ValueError):
        cal.measured_s[0] = 1.0
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen-instance error
        cal.mape_after = 0.0  # type: ignore[misc]


# -- step overheads ------------------------------------------------------------------------

STEP_SCENARIO = Scenario(model="llama-3.1-8b", tp=1)


def step_models() -> tuple[ScenarioModel, ScenarioModel]:
    true = scenario_model(
        STEP_SCENARIO.model_copy(
            update={"hardware_overrides": HardwareOverrides(step_overhead_s=2e-3)}
        )
    )
    start = scenario_model(
        STEP_SCENARIO.model_copy(
            update={"hardware_overrides": HardwareOverrides(step_overhead_s=1.2e-3)}
        )
    )
    return true, start


def step_grid() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    batch = np.unique(np.round(np.geomspace(1, 256, 17)))
    b, w, s = (
        a.ravel() for a in np.meshgrid(batch, np.arange(1, 9), [1024, 4096, 16384], indexing="ij")
    )
    return b, w, s


def test_step_overhead_fit_recovers_known_overhead() -> None:
    true, start = step_models()
    b, w, s = step_grid()
    t = noisy(total(true.verify(b, w, s, true.r.group)), seed=2)
    cal = fit_step_overheads(start, b, w, s, t)
    assert rel(cal.step_overhead_s, 2e-3) < 0.05
    assert rel(cal.efficiency_scale, 1.0) < 0.05
    assert cal.step_overhead_before_s == pytest.approx(1.2e-3)
    assert cal.overrides.step_overhead_s == cal.step_overhead_s
    assert cal.mape_after < cal.mape_before
    assert cal.mape_after < 5.0
    assert "efficiency scale" in cal.summary


def test_step_fit_recovers_a_scale() -> None:
    _, start = step_models()
    b, w, s = step_grid()
    per_layer = total(start.verify(b, w, s, start.r.group)) - 1.2e-3
    t = noisy(1.25 * per_layer + 2e-3, seed=3)
    cal = fit_step_overheads(start, b, w, s, t)
    assert rel(cal.efficiency_scale, 1.25) < 0.05
    assert rel(cal.step_overhead_s, 2e-3) < 0.05
    assert cal.mape_after < 5.0 < cal.mape_before
    assert cal.mape_overhead_only > cal.mape_after  # the scale is not in the overrides


def test_step_fit_clamps_a_negative_overhead_and_handles_one_design_point() -> None:
    _, start = step_models()
    b, w, s = step_grid()
    per_layer = total(start.verify(b, w, s, start.r.group)) - 1.2e-3
    cal = fit_step_overheads(start, b, w, s, 1.1 * per_layer - 1e-3)
    assert cal.step_overhead_s == 0.0
    assert any("negative" in n for n in cal.notes)
    one = fit_step_overheads(start, [8, 8], [4, 4], 4096, [0.02, 0.021])
    assert one.efficiency_scale == 1.0
    assert any("not separable" in n for n in one.notes)
    with pytest.raises(ValueError):
        fit_step_overheads(start, [8], [4], 4096, [-1.0])


# -- draft back-out ------------------------------------------------------------------------


def test_back_out_returns_the_model_draft_cost_and_flags_negatives() -> None:
    sm = scenario_model(Scenario(model="llama-3.1-70b", mechanism="eagle3", tp=2))
    b, d = (a.ravel() for a in np.meshgrid([1, 8, 64, 256], [0, 1, 3, 5, 7], indexing="ij"))
    s, g = 8192, sm.r.group
    step = total(sm.verify(b, 1 + d, s, g)) + total(sm.draft(b, d, s, g))
    out = back_out_draft_cost(sm, b, d, s, step)
    np.testing.assert_allclose(out.t_draft_measured_s, out.t_draft_model_s, atol=1e-12)
    np.testing.assert_allclose(out.ratio[d > 0], 1.0, rtol=1e-9)
    assert np.isnan(out.ratio[d == 0]).all()
    assert out.n_negative == 0 and out.message == ""
    np.testing.assert_allclose(out.t_verif_model_s, total(sm.verify(b, 1 + d, s, g)))

    fast = back_out_draft_cost(sm, b, d, s, 0.5 * total(sm.verify(b, 1 + d, s, g)))
    assert fast.negative.all() and fast.n_negative == b.size
    assert "faster than the model's verify alone" in fast.message

    mixed = step.copy()
    mixed[0] = 0.5 * step[0]
    part = back_out_draft_cost(sm, b, d, s, mixed)
    assert part.n_negative == 1 and part.negative[0] and not part.negative[1:].any()
