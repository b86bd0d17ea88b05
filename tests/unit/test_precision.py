"""Precision per component: the MoE expert dtype (its own setting), block-scaled FP8 weights,
and attention at the KV dtype."""

from __future__ import annotations

import json

import pytest

from explorer import Scenario, evaluate
from explorer.interfaces import view_state as us
from explorer.model.grid import scenario_model
from tests.unit.test_cli import run

MOE = dict(hardware="b200", model="qwen3-30b-a3b", tp=1, batch=16, draft_len=3,
           context=4096)
DENSE = dict(hardware="b200", model="llama-3.1-8b", tp=1, batch=16, draft_len=3,
             context=4096)


def _eval(**kw: object) -> tuple[float, float, float]:
    sc = Scenario.model_validate(kw)
    ev = evaluate(sc)
    mem = float(scenario_model(sc).memory_bytes(sc.batch, sc.context, 4.0))
    return ev.t_verif_spec_s, ev.t_verif_base_s, mem


def test_fp4_experts_with_bf16_weights_need_less_memory_and_change_t_verif():
    t_spec, t_base, mem = _eval(**MOE, dtype="bf16")
    t_spec4, t_base4, mem4 = _eval(**MOE, dtype="bf16", moe_dtype="fp4")
    assert mem4 < mem
    # Qwen3-30B-A3B: 128 experts × 48 layers × 3·2048·768 ≈ 29 B of its 30.5 B parameters are
    # routed experts; at 0.5 instead of 2 bytes the weights shrink by about 44 GB.
    assert mem - mem4 == pytest.approx(1.5 * 128 * 48 * 3 * 2048 * 768, rel=1e-9)
    assert t_spec4 != t_spec and t_base4 != t_base
    # Weight streaming dominates a decode step at B = 16: lighter experts are faster.
    assert t_base4 < t_base


def test_moe_dtype_equal_to_the_weights_dtype_changes_nothing():
    assert _eval(**MOE, dtype="fp8") == _eval(**MOE, dtype="fp8", moe_dtype="fp8")


def test_a_dense_model_is_unchanged_by_the_moe_dtype():
    assert _eval(**DENSE, dtype="bf16") == _eval(**DENSE, dtype="bf16", moe_dtype="fp4")


def test_old_scenarios_and_links_without_the_moe_dtype_open_with_the_same_numbers():
    sc = Scenario.model_validate(dict(MOE, dtype="fp8"))
    old_json = sc.model_dump_json(exclude={"moe_dtype"})
    assert "moe_dtype" not in old_json
    reopened = Scenario.model_validate_json(old_json)
    assert reopened.moe_dtype is None and reopened.expert_dtype == "fp8"
    assert evaluate(reopened) == evaluate(sc)
    state = us.decode({"hw": "b200", "m": "qwen3-30b-a3b", "dt": "fp8", "tp": "1", "v": "2"})
    assert state.warnings == ()
    assert us.scenario_from_view(state.values).moe_dtype is None


def test_the_moe_dtype_round_trips_through_a_link():
    sc = Scenario.model_validate(dict(MOE, dtype="bf16", moe_dtype="fp4"))
    view = us.view_of_scenario(sc)
    assert view["moe"] == "fp4"
    assert us.scenario_from_view(us.decode({k: str(v) for k, v in view.items()}).values) == sc


def test_cli_reads_dtype_spellings_and_the_moe_flag():
    code, out, _ = run("evaluate", "--hardware", "b200", "--model", "qwen3-30b-a3b", "--tp", "1",
                       "--dtype", "fp8-block", "--moe-dtype", "nvfp4", "--json")
    assert code == 0
    want = evaluate(Scenario.model_validate(dict(MOE, batch=32, draft_len=3, context=8192,
                                                 dtype="fp8_block", moe_dtype="fp4")))
    assert json.loads(out)["memory_bytes"] == want.memory_bytes
    assert json.loads(out)["t_verif_spec_s"] == want.t_verif_spec_s
    code, _, err = run("evaluate", "--moe-dtype", "int3")
    assert code == 2 and "--moe-dtype" in err


def test_attention_runs_at_the_kv_dtype():
    """FP8 KV halves the bytes decode attention reads: at 32K context it is faster, and the
    weights dtype does not change attention."""
    base = dict(DENSE, context=32768, batch=64)
    sc16 = Scenario.model_validate(dict(base, dtype="bf16", kv_dtype="bf16"))
    sc8 = Scenario.model_validate(dict(base, dtype="bf16", kv_dtype="fp8"))
    scw = Scenario.model_validate(dict(base, dtype="fp8", kv_dtype="bf16"))

    def attention(sc: Scenario) -> float:
        g = scenario_model(sc).grid(sc.batch, sc.draft_len, with_breakdowns=True)
        return float(g.verify_spec["attention"])

    assert attention(sc8) < attention(sc16)
    assert attention(scw) == attention(sc16)


def test_a_dtype_without_its_tensor_cores_is_said_to_run_at_a_wider_peak():
    h100_fp4 = evaluate(Scenario(hardware="h100", model="llama-3.1-8b", tp=1, dtype="fp4"))
    assert "H100 SXM has no fp4 tensor cores: fp4 weights are priced at its fp8 peak" in (
        h100_fp4.sources["assumptions"])
    a100_experts = evaluate(Scenario(hardware="a100", model="qwen3-30b-a3b", tp=1,
                                     dtype="bf16", moe_dtype="fp8"))
    assert "has no fp8 tensor cores: fp8 weights are priced at its bf16 peak" in (
        a100_experts.sources["assumptions"])
    native = evaluate(Scenario(hardware="b200", model="llama-3.1-8b", tp=1, dtype="fp4"))
    assert "tensor cores" not in native.sources["assumptions"]
