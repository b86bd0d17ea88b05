"""Measured kernel and step timings replace the analytic estimate where they match."""

from __future__ import annotations

import numpy as np
import pytest

from explorer import Scenario, evaluate
from explorer.base.engines import DEFAULT_ENGINE
from explorer.measured import validate_path
from explorer.model.grid import scenario_model
from explorer.model.kernels import attention_time, gemm_time
from explorer.model.layers import COMPONENTS
from explorer.presets import hardware_presets
from explorer.specs.measured import AttentionTimings, GemmTimings, KernelTimings, StepTimings

BASE = {"hardware": "h100", "model": "llama-3.1-8b", "tp": 1, "batch": 8, "context": 4096,
        "draft_len": 3}


@pytest.fixture(autouse=True)
def roofline_only(monkeypatch: pytest.MonkeyPatch):
    """These tests pin how an upload corrects the roofline (measured/roofline factors), so the
    package's tables, which would otherwise price the same kernels, are switched off here;
    tests/unit/test_engine_timing.py checks that an upload wins over the tables."""
    import explorer.model.grid as grid

    real = grid.measured_kernels
    monkeypatch.setattr(grid, "measured_kernels", lambda hw, engine, dtype, kv, hypothetical=False:
                        real(hw, engine, dtype, kv, hypothetical=True))
    scenario_model.cache_clear()
    yield
    scenario_model.cache_clear()


def test_measured_gemm_shape_is_returned_exactly_and_others_stay_analytic():
    hw = hardware_presets()["h100"].for_engine(DEFAULT_ENGINE)  # the scenario's roofline
    m = np.asarray([1, 8, 64, 512], dtype=float)
    # Llama-3.1-8B at TP 1: the O projection is (n=4096, k=4096).
    measured = 2.0 * gemm_time(hw, m, 4096, 4096).time_s
    sc = Scenario(**BASE, measured_kernels=KernelTimings(gemm=GemmTimings(
        m=tuple(int(x) for x in m), n=(4096,) * 4, k=(4096,) * 4, dtype=("bfloat16",) * 4,
        time_s=tuple(float(x) for x in measured)), source="test"))
    lm = scenario_model(sc).target
    assert np.allclose(lm._gemm(m, 4096, 4096), measured)
    # between measured points: the ratio (2×) is interpolated, past them it is held
    assert lm._gemm(32.0, 4096, 4096) == pytest.approx(2 * float(gemm_time(hw, 32, 4096, 4096)
                                                               .time_s))
    assert lm._gemm(4096.0, 4096, 4096) == pytest.approx(
        2 * float(gemm_time(hw, 4096, 4096, 4096).time_s))
    # an unmeasured shape keeps the roofline
    assert lm._gemm(8.0, 14336 * 2, 4096) == pytest.approx(
        float(gemm_time(hw, 8, 28672, 4096).time_s))
    ev, plain = evaluate(sc), evaluate(Scenario(**BASE))
    assert ev.breakdown["verify_base"]["gemm"] > plain.breakdown["verify_base"]["gemm"]
    assert "measured GEMM shape" in ev.sources["measured_timings"]


def test_measured_attention_replaces_the_attention_component():
    hw = hardware_presets()["h100"].for_engine(DEFAULT_ENGINE)  # the scenario's roofline
    b = np.asarray([1, 8, 64], dtype=float)
    s = np.full(3, 4096.0)
    rows = {"batch": (1, 8, 64), "context": (4096,) * 3, "q_heads": (32,) * 3,
            "kv_heads": (8,) * 3, "head_dim": (128,) * 3}
    t1 = 1.5 * attention_time(hw, b, s, 8, 4, 1, 128).time_s
    t4 = 1.5 * attention_time(hw, b, s, 8, 4, 4, 128).time_s
    att = AttentionTimings(**{k: v + v for k, v in rows.items()}, q_len=(1,) * 3 + (4,) * 3,
                            time_s=tuple(float(x) for x in np.concatenate([t1, t4])))
    sc = Scenario(**BASE, measured_kernels=KernelTimings(attention=att))
    ev, plain = evaluate(sc), evaluate(Scenario(**BASE))
    for part in ("verify_base", "verify_spec"):
        assert ev.breakdown[part]["attention"] == pytest.approx(
            1.5 * plain.breakdown[part]["attention"])
        assert ev.breakdown[part]["gemm"] == pytest.approx(plain.breakdown[part]["gemm"])


def test_whole_step_table_sets_the_speedup():
    steps = StepTimings(batch=(1, 8, 64, 1, 8, 64), draft_len=(0, 0, 0, 3, 3, 3),
                          step_time_s=(0.006, 0.0064, 0.0098, 0.0075, 0.0080, 0.0150),
                          includes_draft=True, source="test")
    ev = evaluate(Scenario(**BASE, output_tokens=None, measured_steps=steps))  # decode steps
    assert ev.t_verif_base_s == pytest.approx(0.0064)
    assert ev.t_verif_spec_s + ev.t_draft_s == pytest.approx(0.0080)
    assert ev.speedup == pytest.approx(0.0064 * ev.acceptance_length / 0.0080)
    assert sum(ev.breakdown["verify_spec"][c] for c in COMPONENTS) == pytest.approx(
        ev.t_verif_spec_s)
    # over whole requests the measured steps carry the modelled prefill too
    whole = evaluate(Scenario(**BASE, measured_steps=steps))
    assert whole.t_verif_base_s == pytest.approx(0.0064) and whole.t_prefill_s > 0
    assert whole.speedup == pytest.approx(ev.speedup * whole.prefill_factor)
    # a D the table does not cover keeps the model's step
    other = evaluate(Scenario(**{**BASE, "draft_len": 5}, measured_steps=steps))
    plain = evaluate(Scenario(**{**BASE, "draft_len": 5}))
    assert other.t_verif_spec_s == pytest.approx(plain.t_verif_spec_s)


def test_verify_only_sample_keeps_the_model_draft_cost():
    result = validate_path("data/samples/step_times.csv")
    assert result.step_timings is not None
    steps = result.step_timings
    assert not steps.includes_draft
    ev = evaluate(Scenario(**BASE, measured_steps=steps))
    plain = evaluate(Scenario(**BASE))
    assert ev.t_verif_base_s == pytest.approx(0.0063756)
    assert ev.t_verif_spec_s == pytest.approx(0.0068799)
    assert ev.t_draft_s == pytest.approx(plain.t_draft_s)


def test_sample_kernel_timings_go_into_the_scenario_as_parsed_and_evaluate():
    result = validate_path("data/samples/kernel_timings.csv")
    assert result.kernel_timings is not None
    mk = result.kernel_timings
    assert mk.gemm is not None and mk.attention is not None
    ev = evaluate(Scenario(**BASE, measured_kernels=mk))
    assert ev.speedup is not None and ev.speedup > 0


def test_attention_rows_replace_attention_of_their_kv_dtype_only():
    hw = hardware_presets()["h100"].for_engine(DEFAULT_ENGINE)  # the scenario's roofline
    b = np.asarray([1, 8, 64], dtype=float)
    s = np.full(3, 4096.0)
    fp8_times = 1.5 * attention_time(hw, b, s, 8, 4, 4, 128, kv_dtype="fp8").time_s
    att = AttentionTimings(batch=(1, 8, 64), context=(4096,) * 3, q_heads=(32,) * 3,
                           kv_heads=(8,) * 3, head_dim=(128,) * 3, q_len=(4,) * 3,
                           kv_dtype=("torch.float8_e4m3fn",) * 3,
                           time_s=tuple(float(x) for x in fp8_times))
    table = KernelTimings(attention=att)
    for kv_dtype, factor in (("fp8", 1.5), ("bf16", 1.0)):  # an FP8-KV table says nothing of BF16
        ev = evaluate(Scenario(**BASE, kv_dtype=kv_dtype, measured_kernels=table))
        plain = evaluate(Scenario(**BASE, kv_dtype=kv_dtype))
        assert ev.breakdown["verify_spec"]["attention"] == pytest.approx(
            factor * plain.breakdown["verify_spec"]["attention"]), kv_dtype
