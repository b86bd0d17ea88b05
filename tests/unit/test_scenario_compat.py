"""Saved scenarios are an interface: JSON written before the measured types were unified (the
store holds such records) loads and evaluates to the numbers it gave then."""

from __future__ import annotations

import pytest

import explorer
from explorer import Scenario, evaluate
from explorer.interfaces.store import stored_scenario
from explorer.specs.measured import AcceptanceCurve, KernelTimings, StepTimings

# Scenario.model_dump_json() of the old MeasuredCurve / MeasuredKernels (MeasuredGemm,
# MeasuredAttention) / MeasuredSteps types, as stored.
OLD_WITH_KERNELS = (
    '{"hardware":"h100","model":"llama-3.1-8b","mechanism":"eagle3","draft_model":null,'
    '"dtype":"bf16","kv_dtype":"bf16","batch":8,"context":4096,"tp":1,"draft_len":3,'
    '"verify_width":null,"group":null,"layers":null,"rho":null,'
    '"acceptance":{"kind":"curve","alpha":null,"fixed_al":null,'
    '"curve":{"label":"bench.csv: eagle3 on llama-8b, chat","draft_lens":[1,2,3,5],'
    '"acceptance_lengths":[1.7,2.3,2.7,3.2],"source":"file bench.csv; format al_curve_csv"}},'
    '"hardware_overrides":{"gemm_compute_efficiency":null,"gemm_memory_efficiency":0.72,'
    '"attention_compute_efficiency":null,"attention_memory_efficiency":null,'
    '"kernel_floor_s":4e-6,"launch_latency_s":null,"step_overhead_s":null,'
    '"label":"calibrated on 4 GEMM + 3 attention timings"},'
    '"measured_kernels":{"gemm":{"m":[1,8,32,128],"n":[4096,4096,4096,4096],'
    '"k":[4096,4096,4096,4096],"dtype":["bfloat16","bfloat16","bfloat16","bfloat16"],'
    '"time_s":[0.000024,0.000025,0.000029,0.000041]},'
    '"attention":{"batch":[1,8,64],"context":[4096,4096,4096],"q_heads":[32,32,32],'
    '"kv_heads":[8,8,8],"head_dim":[128,128,128],"q_len":[1,1,1],'
    '"time_s":[0.000012,0.000044,0.00031]},"source":"dataset kernels.csv"},'
    '"measured_steps":null}'
)
OLD_WITH_STEPS = (
    '{"hardware":"h100","model":"llama-3.1-8b","mechanism":"eagle3","draft_model":null,'
    '"dtype":"bf16","kv_dtype":"bf16","batch":8,"context":4096,"tp":1,"draft_len":3,'
    '"verify_width":null,"group":null,"layers":null,"rho":null,'
    '"acceptance":{"kind":"curve","alpha":null,"fixed_al":null,'
    '"curve":{"label":"bench.csv: eagle3 on llama-8b, chat","draft_lens":[1,2,3,5],'
    '"acceptance_lengths":[1.7,2.3,2.7,3.2],"source":"file bench.csv; format al_curve_csv"}},'
    '"hardware_overrides":null,"measured_kernels":null,'
    '"measured_steps":{"batch":[1,8,64,1,8,64],"draft_len":[0,0,0,3,3,3],'
    '"step_time_s":[0.0061,0.0066,0.0102,0.0068,0.0074,0.0139],"includes_draft":false,'
    '"source":"file step_times.csv"}}'
)
# evaluate() of each, computed by the code that wrote them (commit 3b54dfc), then updated once
# when the serving-engine profile (data/engines.csv, issue #10) began to charge the vLLM costs
# around the kernels: 200 µs per draft forward (T_draft + 3 × 0.2 ms at D = 3, exactly) and the
# sampler's pass over the verified tokens' logits (T_verif + a few µs); and again when the step
# costs that scale with the verified tokens were added (vLLM's rejection-sampler passes and the
# elementwise traffic between the GEMMs: T_verif + 0.02-0.1 ms; EAGLE's fused FC once a round,
# its first draft forward on B·(1+D) tokens: T_draft − 0.07 ms); and again when the engines'
# whole-step terms were fitted on published step times (issue #21, data/step_cost_fit.csv:
# 934 µs per draft forward instead of 200, T_draft + 2.2 ms at D = 3; the overlap loss κ on
# the verify step); and again when SpecDecodeBench's B = 128 speed-up joined that fit (942 µs
# per draft forward, T_draft + 26 µs at D = 3; 906 µs a step and κ 0.57); and again when that
# row ran as whole requests at its published request lengths, its prefill charged (931 µs per
# draft forward, 916 µs a step, κ 0.547: T_draft − 33 µs at D = 3). The records still
# load unchanged and the measured parts still replace the model's (asserted below).
EXPECTED = {
    OLD_WITH_KERNELS: {
        "speedup": 1.8287941138124364, "acceptance_length": 2.7,
        "t_verif_base_s": 0.009149453343148138, "t_verif_spec_s": 0.009613928153762705,
        "t_draft_s": 0.0038941665190713104, "tokens_per_s_per_gpu": 1599.0412062657163,
    },
    OLD_WITH_STEPS: {
        # The measured steps fix T_verif; the draft is the model's, now with measured kernels.
        "speedup": 1.5832267324330433, "acceptance_length": 2.7,
        "t_verif_base_s": 0.0066, "t_verif_spec_s": 0.0074,
        "t_draft_s": 0.0038554946394916516, "tokens_per_s_per_gpu": 1919.0627059794463,
    },
}


@pytest.mark.parametrize("old_json", [OLD_WITH_KERNELS, OLD_WITH_STEPS],
                         ids=["curve+kernels+overrides", "curve+steps"])
def test_an_old_saved_scenario_loads_and_gives_the_same_numbers(old_json: str):
    # read as the store reads a record: one without output_tokens (saved before whole requests
    # were the default) keeps pricing decode steps only, so it gives the numbers it gave then
    sc = stored_scenario(old_json)
    assert sc.output_tokens is None
    assert Scenario.model_validate_json(old_json).output_tokens == 1024  # a fresh file: default
    assert isinstance(sc.acceptance.curve, AcceptanceCurve)
    ev = evaluate(sc)
    for key, value in EXPECTED[old_json].items():
        assert getattr(ev, key) == pytest.approx(value, rel=1e-12), key
    # the measured parts matter: without them the numbers differ
    bare = evaluate(sc.model_copy(update={"measured_kernels": None, "measured_steps": None,
                                          "hardware_overrides": None}))
    assert bare.t_verif_base_s != pytest.approx(ev.t_verif_base_s, rel=1e-6)
    # and it saves again and reloads to the same scenario
    assert Scenario.model_validate_json(sc.model_dump_json()) == sc


def test_old_tables_load_as_the_new_types_with_their_source_text():
    kernels = Scenario.model_validate_json(OLD_WITH_KERNELS).measured_kernels
    steps = Scenario.model_validate_json(OLD_WITH_STEPS).measured_steps
    assert isinstance(kernels, KernelTimings) and isinstance(steps, StepTimings)
    assert kernels.gemm is not None and kernels.gemm.dtype == ("bf16",) * 4  # canonical now
    assert kernels.attention is not None and kernels.attention.kv_dtype is None
    assert kernels.provenance is None and kernels.source_text == "dataset kernels.csv"
    assert not steps.includes_draft and steps.source_text == "file step_times.csv"
    ev = evaluate(Scenario.model_validate_json(OLD_WITH_KERNELS))
    assert "dataset kernels.csv" in ev.sources["measured_timings"]
    assert "file bench.csv; format al_curve_csv" in ev.sources["acceptance_length"]


def test_measured_curve_is_still_a_public_name_of_the_curve_type():
    assert explorer.MeasuredCurve is AcceptanceCurve
    curve = explorer.MeasuredCurve(draft_lens=(1, 2), acceptance_lengths=(1.5, 2.0))
    assert curve.label == "measured" and curve.source_text == ""
