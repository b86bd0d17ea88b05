"""The serving engine as a scenario setting, measured kernels in the cost model, engine profiles."""

from __future__ import annotations

import numpy as np
import pytest

from explorer import evaluate
from explorer.interfaces import view_state as us
from explorer.interfaces.cli.commands import build_parser
from explorer.interfaces.cli.options import scenario_from_args
from explorer.kernel_tables import (
    GemmTable,
    GenerationAttentionTable,
    Missing,
    load_gemm_table,
    load_generation_attention_table,
)
from explorer.model.grid import ScenarioModel, scenario_model
from explorer.model.kernels import attention_time, gemm_time
from explorer.presets import hardware_presets
from explorer.specs.hardware import HardwareOverrides
from explorer.specs.measured import GemmTimings, KernelTimings
from explorer.specs.scenario import Scenario


def test_engine_round_trips_url_cli_and_stored_view():
    sc = Scenario(engine="sglang")
    assert us.encode(us.view_of_scenario(sc))["eng"] == "sglang"
    state = us.decode({"eng": "trtllm"})
    assert state.warnings == () and us.scenario_from_view(state.values).engine == "trtllm"
    cli = scenario_from_args(build_parser().parse_args(["evaluate", "--engine", "trtllm"]))
    assert cli.engine == "trtllm"
    assert us.scenario_from_view(us.decode_view(us.view_of_scenario(sc)).values) == sc


def test_a_saved_scenario_without_engine_opens_as_vllm():
    old = Scenario().model_dump(mode="json")
    del old["engine"]
    assert Scenario.model_validate(old).engine == "vllm"
    assert us.decode({}).values["eng"] == "vllm"


def _model(**kw: object) -> ScenarioModel:
    base: dict[str, object] = {"hardware": "h100", "model": "llama-3.1-8b", "tp": 1,
                               "batch": 8, "context": 1024}
    return scenario_model(Scenario(**(base | kw)))  # type: ignore[arg-type]


def test_a_measured_gemm_point_comes_through_the_layer_model_exactly():
    table = load_gemm_table("h100", "vllm", "bf16")
    assert isinstance(table, GemmTable)
    lm = _model().target
    curve = table.curve(4096, 4096)  # the O projection of Llama-3.1-8B at TP 1
    m = np.exp(curve.grid.axes_log[0])
    measured = table.latency(m, 4096, 4096)
    assert measured.all_covered
    got = lm._gemm(m, 4096, 4096)
    # exact wherever the measured curve rises; a noisy dip is lifted to the running maximum
    rising = np.maximum.accumulate(measured.latency_s) == measured.latency_s
    assert rising.mean() > 0.5
    np.testing.assert_array_equal(got[rising], measured.latency_s[rising])
    np.testing.assert_allclose(got, np.maximum.accumulate(measured.latency_s), rtol=1e-12)
    assert not np.allclose(got, gemm_time(lm.hw, m, 4096, 4096, "bf16").time_s)


def test_outside_the_table_the_roofline_is_used_and_flagged():
    lm = _model().target
    assert lm.tables is not None
    lm.tables.tally.reset()
    n_big = 10.0**6  # far past the measured n box: no table covers it
    t = lm._gemm(np.asarray([8.0]), n_big, 4096)
    assert t == pytest.approx(gemm_time(lm.hw, 8.0, n_big, 4096, "bf16").time_s)
    assert lm.tables.tally.share("gemm") == 0.0
    # a GPU without tables (MI300X) and hypothetical hardware say so in the evaluation's sources
    text = evaluate(Scenario(hardware="mi300x")).sources["kernel_times"]
    assert "GEMM roofline" in text and "no MI300X" in text
    hypo = Scenario(hardware="h100",
                    hardware_overrides=HardwareOverrides(gemm_compute_efficiency=0.5))
    assert "hypothetical" in evaluate(hypo).sources["kernel_times"]


def test_every_evaluation_says_where_its_kernel_times_came_from():
    ev = evaluate(Scenario(hardware="h200", model="llama-3.1-8b", tp=1, batch=8, context=1024))
    text = ev.sources["kernel_times"]
    assert text.startswith("aiconfigurator-core 0.12.0 vllm ") and "h200_sxm" in text
    assert "decode attention measured" in text
    assert {"hardware", "efficiencies", "measured_timings", "assumptions"} <= set(ev.sources)
    sg = evaluate(Scenario(hardware="h200", model="llama-3.1-8b", tp=1, engine="sglang"))
    assert " sglang " in sg.sources["kernel_times"]


def test_vllm_fp8_block_steps_are_priced_from_a_cuda_graph_table_and_say_why():
    """vLLM's own fp8_block GEMM table was timed eagerly: priced from it, DeepSeek-V3 on 8 B200
    took ~140 ms a step at B=16; SGLang's table of the same GPU gives that engine's ~17 ms."""
    sc = Scenario(hardware="b200", model="deepseek-v3", tp=8, dtype="fp8_block", batch=16)
    vllm, sglang = evaluate(sc), evaluate(sc.model_copy(update={"engine": "sglang"}))
    assert vllm.t_verif_base_s < 1.5 * sglang.t_verif_base_s
    text = vllm.sources["kernel_times"]
    assert "sglang 0.5.14 table standing in" in text and "use_cuda_graph" in text


def test_a_user_upload_wins_over_the_package_tables():
    m = np.asarray([1, 8, 64, 512], dtype=float)
    hw = hardware_presets()["h100"]
    up = 2.0 * gemm_time(hw, m, 4096, 4096).time_s
    sc = Scenario(hardware="h100", model="llama-3.1-8b", tp=1, batch=8, context=1024,
                  measured_kernels=KernelTimings(gemm=GemmTimings(
                      m=tuple(int(x) for x in m), n=(4096,) * 4, k=(4096,) * 4,
                      dtype=("bfloat16",) * 4, time_s=tuple(float(x) for x in up)),
                      source="test"))
    np.testing.assert_allclose(scenario_model(sc).target._gemm(m, 4096, 4096), up)
    assert evaluate(sc).sources["kernel_times"].startswith("your upload for GEMM")


def test_verify_attention_is_the_measured_q1_time_times_the_modelled_tile_ratio():
    lm = _model(hardware="h200").target
    b, s = np.asarray([8.0]), np.asarray([1024.0])
    g = np.asarray([4.0])
    t1, t4 = lm.attention(b, np.asarray([1.0]), s, g), lm.attention(b, np.asarray([4.0]), s, g)
    table = load_generation_attention_table("h200", "vllm", "bf16")
    assert isinstance(table, GenerationAttentionTable)
    hit = table.latency(32, 8, 128, b, s)
    assert not isinstance(hit, Missing) and hit.all_covered
    # the measured grid, as its running maximum over batch and KV length (noise < 1% here)
    np.testing.assert_allclose(t1, hit.latency_s, rtol=1e-2)
    assert float(t1[0]) >= float(hit.latency_s[0])
    roof = [attention_time(lm.hw, b, s, 8, 4, w, 128).time_s for w in (1.0, 4.0)]
    np.testing.assert_allclose(t4 / t1, roof[1] / roof[0])


@pytest.mark.slow  # runs scripts/validate.py in another Python: seconds, out of the quick loop
def test_the_validate_script_runs_and_prints_each_group():
    import subprocess
    import sys

    from tests.support.paths import ROOT

    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "validate.py")], cwd=ROOT,
                         capture_output=True, text=True, timeout=300, check=True).stdout
    assert "1. verify-cost ratio" in out and "D=3:" in out and "D=7:" in out
    assert "2. end-to-end speedups" in out and "3. GEMM kernels" in out
