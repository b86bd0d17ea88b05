"""Serving-engine profiles (data/engines.csv) and where the model charges them (issue #10)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer import Scenario, evaluate
from explorer.model.engine_costs import graph_shape
from explorer.model.grid import ScenarioModel
from explorer.model.layers import KERNELS_PER_LAYER, total
from explorer.model.resolve import resolve
from explorer.presets import engine_profiles, parse_sizes
from explorer.specs.engine import ENGINE_PARAMETERS
from explorer.specs.hardware import HardwareOverrides
from tests.unit.test_cli import run

ROOT = Path(__file__).resolve().parents[2]
BASE = {"hardware": "h100", "model": "llama-3.1-8b", "tp": 1, "context": 1024}


def _model(**kw: object) -> ScenarioModel:
    # uncached: tests below swap the profile on the instance
    return ScenarioModel(resolve(Scenario(**(BASE | kw))))  # type: ignore[arg-type]


def test_every_engine_has_every_parameter_with_a_source_or_an_assumption_label():
    profiles = engine_profiles()
    assert set(profiles) == {"vllm", "sglang", "trtllm"}
    for p in profiles.values():
        assert set(p.sources) == set(ENGINE_PARAMETERS)
        assert all(p.sources[k] for k in ENGINE_PARAMETERS)
        for k in p.sources:  # a cited number names a commit, a published fit or our fit
            if k in p.fitted:  # fitted on published step times, or carried from such a fit
                assert p.sources[k].startswith(("fit: scripts/fit_step_costs.py on",
                                                "vllm's fitted value carried")), (p.engine, k)
                assert "leave-one-source-out" in p.fitted[k]
            elif k not in p.assumptions and k != "cuda_graph_padding":
                assert "@" in p.sources[k] or "code-index" in p.sources[k], (p.engine, k)
    vllm = profiles["vllm"]
    # vLLM's default list: [1, 2, 4] + range(8, 256, 8) + range(256, 513, 16)
    assert vllm.capture_sizes == (1, 2, 4, *range(8, 256, 8), *range(256, 513, 16))
    assert profiles["trtllm"].capture_sizes == (*range(1, 32), 32, 64, 128)
    assert parse_sizes("1:8:1,10:32:2") == (*range(1, 9), *range(10, 33, 2))
    with pytest.raises(ValueError, match="start:stop:step"):
        parse_sizes("1:8")


def test_the_sources_tab_shows_the_engine_numbers_with_their_assumption_labels():
    text = evaluate(Scenario(**BASE, engine="sglang")).sources["engine"]  # type: ignore[arg-type]
    sglang = engine_profiles()["sglang"]
    assert text.startswith(f"sglang: step overhead {sglang.step_overhead_s * 1e6:.0f} µs "
                           "(fitted)")
    assert f"{sglang.draft_forward_overhead_s * 1e6:.0f} µs per draft forward (fitted)" in text
    trt = evaluate(Scenario(**BASE, engine="trtllm")).sources["engine"]  # type: ignore[arg-type]
    vllm_fit = engine_profiles()["vllm"]
    assert (f"{vllm_fit.draft_forward_overhead_s * 1e6:.0f} µs per draft forward (another "
            "engine's fit, carried)") in trt  # one TensorRT-LLM source does not identify it
    assert "CUDA graphs by requests up to 256" in text and "(data/engines.csv)" in text
    vllm = evaluate(Scenario(**BASE)).sources["engine"]  # type: ignore[arg-type]
    assert vllm.startswith("vllm: step overhead ") and "µs (fitted);" in vllm
    assert "09f030eaf851400a83ad3d99f730868f76df0ca7" in vllm


def test_vllm_pads_tokens_up_to_the_next_captured_size_and_runs_eager_past_512():
    m = _model()
    p = m.engine
    tokens, eager = graph_shape(p, np.array([257.0, 256.0, 512.0, 513.0]), 1.0)
    np.testing.assert_array_equal(tokens, [272, 256, 512, 513])
    np.testing.assert_array_equal(eager, [False, False, False, True])
    # 257 tokens cost the GEMMs of 272: the forward's GEMM part is the one at the padded size
    v257 = m.verify(257.0, 1.0, 1024.0, 4.0)
    f272 = m.target.forward(272.0, 1.0, 1024.0, 4.0, include_step_overhead=False)
    assert float(v257["gemm"]) == pytest.approx(float(f272["gemm"]), rel=1e-12)
    assert float(v257["gemm"]) > float(m.verify(256.0, 1.0, 1024.0, 4.0)["gemm"])
    # attention stays on the real sequences
    f257 = m.target.forward(257.0, 1.0, 1024.0, 4.0, include_step_overhead=False)
    assert float(v257["attention"]) == pytest.approx(float(f257["attention"]), rel=1e-12)
    # past the largest size: eager, each kernel launches at 5 µs instead of the 0.5 µs replay
    launch = (p.eager_launch_s - m.r.hardware.launch_latency_s) * 32 * KERNELS_PER_LAYER
    o512 = float(m.verify(64.0, 8.0, 1024.0, 4.0)["overhead"])
    o513 = float(m.verify(513.0, 1.0, 1024.0, 4.0)["overhead"])
    # the sampler: 513 sampled rows vs 64 sampled + 448 draft-position (rejection) rows
    sampler = (513 - 64) * p.sampler_bytes_per_logit - 448 * p.rejection_sampler_bytes_per_logit
    sampler *= m.r.model.vocab / (m.r.hardware.hbm_bw_bytes_per_s
                                  * m.r.hardware.gemm_memory_efficiency)
    one_token = float(m.target.elementwise(np.float64(1.0), 32.0))  # 513 vs 512 tokens
    # the fitted terms: 513 − 64 more requests, and the overlap loss on one more token
    fitted = ((513 - 64) * p.per_sequence_s + p.compute_overlap_loss
              * float(m.overlappable_s(513.0) - m.overlappable_s(512.0)))
    assert o513 - o512 == pytest.approx(launch + sampler + one_token + fitted, rel=1e-9)


def test_sglang_pads_the_batch_and_trtllm_without_padding_runs_uncaptured_batches_eager():
    sg = engine_profiles()["sglang"]
    tokens, eager = graph_shape(sg, np.array([9.0, 257.0]), 4.0)  # 9 → 10 requests; 257 > 256
    np.testing.assert_array_equal(tokens, [40, 1028])
    np.testing.assert_array_equal(eager, [False, True])
    trt = engine_profiles()["trtllm"]
    tokens, eager = graph_shape(trt, np.array([31.0, 33.0, 64.0, 129.0]), 8.0)
    np.testing.assert_array_equal(tokens, [248, 264, 512, 1032])  # never padded
    np.testing.assert_array_equal(eager, [False, True, False, True])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["vllm", "sglang", "trtllm"]), st.integers(1, 2000), st.integers(1, 17))
def test_padding_never_removes_tokens_and_the_staircase_never_falls(engine, batch, width):
    p = engine_profiles()[engine]
    t0, _ = graph_shape(p, float(batch), float(width))
    t1, _ = graph_shape(p, float(batch + 1), float(width))
    assert float(t0) >= batch * width
    if p.pads_to_capture and float(t1) <= p.max_capture * (width if p.capture_unit ==
                                                           "requests" else 1):
        assert float(t1) >= float(t0)


@pytest.mark.parametrize(("mechanism", "forwards"), [
    ("eagle3", lambda d: d), ("mtp", lambda d: d), ("external", lambda d: d),
    ("dflash", lambda d: 1.0), ("dspark", lambda d: 1.0), ("ngram", lambda d: 0.0),
])
def test_each_draft_forward_pays_the_per_forward_overhead(mechanism, forwards):
    kw: dict[str, object] = {"mechanism": mechanism}
    if mechanism == "mtp":
        kw |= {"model": "deepseek-v3", "tp": 8, "dtype": "fp8"}
    m = _model(**kw)
    d = np.array([3.0, 7.0])
    with_ovh = total(m.draft(8.0, d, 1024.0, m.r.group))
    per_forward = m.engine.draft_forward_overhead_s
    assert per_forward > 0
    m.engine = m.engine.model_copy(update={"draft_forward_overhead_s": 0.0})
    without = total(m.draft(8.0, d, 1024.0, m.r.group))
    expected = np.array([forwards(x) for x in d]) * per_forward
    np.testing.assert_allclose(with_ovh - without, expected, rtol=1e-9, atol=1e-15)


def test_a_calibrated_step_overhead_wins_over_the_engine_profile():
    m = _model(hardware_overrides=HardwareOverrides(step_overhead_s=3e-3))
    assert m.step_overhead_s == 3e-3
    assert _model().step_overhead_s == engine_profiles()["vllm"].step_overhead_s


def test_switching_engine_in_the_cli_changes_t_verif_and_t_draft():
    args = ["evaluate", "--hardware", "h100", "--model", "llama-3.1-8b", "--tp", "1",
            "--batch", "33", "--draft-len", "7", "--mechanism", "eagle3", "--json"]
    out = {}
    for engine in ("vllm", "sglang", "trtllm"):
        code, text, _ = run(*args, "--engine", engine)
        assert code == 0
        out[engine] = json.loads(text)
    # B·(1+D) = 264 tokens: vLLM pads to 272 tokens, SGLang 33 → 36 requests (288 tokens),
    # TensorRT-LLM has no graph for 33 and runs eager
    for other in ("sglang", "trtllm"):
        assert out[other]["t_verif_spec_s"] != out["vllm"]["t_verif_spec_s"]
        assert out[other]["t_draft_s"] != out["vllm"]["t_draft_s"]
        assert out[other]["speedup"] != out["vllm"]["speedup"]
    assert out["sglang"]["sources"]["engine"].startswith("sglang:")


def test_reference_names_normalise_to_presets():
    from explorer.calibration import published as v

    assert v.normalise_gpu("H100-80GB (SGLang)") == ("h100", 1, "")
    assert v.normalise_gpu("H100 SXM5") == ("h100", 1, "")
    assert v.normalise_gpu("A100-80GB x2 (TP2)") == ("a100", 2, "")
    assert v.normalise_gpu("B200 x8 (TP8)") == ("b200", 8, "")
    assert v.normalise_gpu("(not stated in quote)")[2] == "GPU not stated"
    assert v.normalise_gpu("H200 x16 (2 decode nodes)")[2] == "multi-node deployment"
    assert v.normalise_gpu("RTX 3090 24GB")[2] == "GPU not a preset"
    assert v.normalise_model("LLaMA-3.1-8B-Instruct") == "llama-3.1-8b"
    assert v.normalise_model("Llama-3.1-8B(-Instruct)") == "llama-3.1-8b"
    assert v.normalise_model("LLaMA-3.3-70B-Instruct") == "llama-3.1-70b"
    assert v.normalise_model("Llama-4-Scout-17B-16E (FP8)") == "llama-4-scout"
    assert v.normalise_model("Vicuna-13B-v1.3") is None
    assert v.normalise_engine("SGLang v0.5.9") == "sglang"
    assert v.normalise_engine("TensorRT-LLM (PyTorch backend)") == "trtllm"


def test_a_published_row_maps_and_gives_a_finite_prediction():
    from explorer.calibration import published as v

    row = pd.Series({"gpu": "H100-80GB (SGLang)", "engine": "SGLang v0.5.9",
                     "model_target": "LLaMA-3.1-8B-Instruct", "mechanism": "eagle3",
                     "batch": "1", "D": "3", "AL": "2.25", "speedup": "1.65 (vs AR)"})
    sc, why = v.map_row(row)
    assert why == "" and sc is not None
    assert (sc.hardware, sc.model, sc.engine, sc.batch, sc.draft_len) == (
        "h100", "llama-3.1-8b", "sglang", 1, 3)
    assert sc.acceptance.fixed_al == 2.25 and v.published_speedup(row) == 1.65
    pred = evaluate(sc).speedup
    assert pred is not None and math.isfinite(pred) and 1.0 < pred < 2.25
    tree = row.copy()
    tree["mechanism"] = "eagle3_dynamic_tree"
    assert v.map_row(tree) == (None, "tree verification without its width")
    tree["drafter"] = "EAGLE-3 (tree depth 3, branching 4, 21 draft tokens)"
    sc_tree, _ = v.map_row(tree)  # a tree that says its shape is verified as a tree
    assert sc_tree is not None and (sc_tree.draft_len, sc_tree.verify_width) == (3, 22)
    fp8 = row.copy()
    fp8["model_target"] = "Llama-4-Scout-17B-16E (FP8)"
    fp8["gpu"] = "B200 x8 (TP8)"
    fp8_sc, _ = v.map_row(fp8)
    assert fp8_sc is not None and (fp8_sc.model, fp8_sc.tp, fp8_sc.dtype) == (
        "llama-4-scout", 8, "fp8")
    ranged = row.copy()
    ranged["batch"] = "1..32"
    assert v.map_row(ranged)[1] == "D, batch, AL or speedup not a single number"


def test_best_d_break_even_pareto_recommendation_and_export_follow_the_engine():
    from explorer.analysis.frontier import best_draft_len, pareto
    from explorer.analysis.recommend import recommend
    from explorer.export.engine_configs import engine_configs

    batches = np.arange(1, 257)
    out = {}
    for engine in ("vllm", "trtllm"):
        sc = Scenario(**BASE, mechanism="eagle3", batch=40,  # type: ignore[arg-type]
                      engine=engine)
        out[engine] = (best_draft_len(sc, batches), recommend(sc, ["eagle3"]),
                       pareto(sc), engine_configs(sc, "eagle3", max_batch=256))
    (f_v, r_v, p_v, e_v), (f_t, r_t, p_t, e_t) = out["vllm"], out["trtllm"]
    # TensorRT-LLM replays no graph at 33…63 requests (no padding): those batches pay eager
    # launches, so speculation's speedups there differ from vLLM's
    assert not np.allclose(f_v.speed_best_speedup[32:63], f_t.speed_best_speedup[32:63])
    assert r_v.ranking[0].speedup != r_t.ranking[0].speedup
    assert p_v[0].tokens_per_s_per_gpu != p_t[0].tokens_per_s_per_gpu  # with speculation
    assert e_v.break_even_batch == f_v.break_even_batch
    assert e_t.break_even_batch == f_t.break_even_batch


# -- costs that scale with the verified tokens (issue #10, the step-cost part) ---------------
def test_llama_8b_moves_180_kb_per_token_and_layer_between_its_gemms():
    # 2 fused add+RMSNorm (4·4096·2 B each), RoPE on q and k in place (2·(4096+1024)·2 B),
    # the KV-cache write of k and v (2·1024 · (2 read + 2 written)), SiLU·mul (3·14336·2 B)
    m = _model()
    assert m.target.elementwise_bytes_per_token(14336.0) == 65536 + 20480 + 8192 + 86016
    one = float(m.target.elementwise(np.float64(1.0), 32.0))
    assert one == pytest.approx(32 * 180224 / (3.35e12 * m.r.hardware.gemm_memory_efficiency))
    # the target forward's overhead grows by exactly that per token (same padded graph size)
    f = [float(m.target.forward(n, 1.0, 1024.0, 4.0, include_step_overhead=False)["overhead"])
         for n in (300.0, 301.0)]
    assert f[1] - f[0] == pytest.approx(one, rel=1e-9)


def test_vllm_rejection_sampler_charges_its_cited_passes_on_every_draft_position_row():
    m = _model()
    p = m.engine
    assert (p.sampler_bytes_per_logit, p.rejection_sampler_bytes_per_logit) == (10.0, 30.0)
    assert "7f6fc1c5ce8d02f473b1b923debbfef3fa0b7a6a" in p.sources[
        "rejection_sampler_bytes_per_logit"]
    assert "rejection_sampler_bytes_per_logit" not in p.assumptions
    hw = m.r.hardware
    spec = float(m.verify(64.0, 8.0, 1024.0, 4.0)["overhead"])
    m.engine = p.model_copy(update={"rejection_sampler_bytes_per_logit": 0.0})
    without = float(m.verify(64.0, 8.0, 1024.0, 4.0)["overhead"])
    expected = 64 * 7 * m.r.model.vocab * 30.0 / (hw.hbm_bw_bytes_per_s
                                                  * hw.gemm_memory_efficiency)
    assert spec - without == pytest.approx(expected, rel=1e-9)
    # a plain decode step has no draft-position rows
    m.engine = p
    base = float(m.verify(64.0, 1.0, 1024.0, 4.0)["overhead"])
    m.engine = p.model_copy(update={"rejection_sampler_bytes_per_logit": 0.0})
    assert float(m.verify(64.0, 1.0, 1024.0, 4.0)["overhead"]) == base


def test_vllm_eagle_runs_its_first_draft_forward_on_all_scheduled_tokens():
    m = _model(mechanism="eagle3")
    assert m.engine.draft_first_forward == "scheduled"
    assert "008603a39fff2a383a293c62eec0c752c42199f2" in m.engine.sources["draft_first_forward"]
    g, b, d = m.r.group, 64.0, np.array([1.0, 3.0, 7.0])
    sched = total(m.draft(b, d, 1024.0, g))
    m.engine = m.engine.model_copy(update={"draft_first_forward": "batch"})
    batch = total(m.draft(b, d, 1024.0, g))
    assert np.all(sched > batch)
    # the difference is one head forward on B·(1+D) tokens (padded) instead of B, its lm_head
    # on B rows in both
    t = m.target
    head = m.r.mechanism
    for i, dd in enumerate(d):
        w = 1.0 + dd
        tokens = graph_shape(m.engine, b, w)[0]
        wide = t.head_layers(np.float64(b), np.float64(w), np.float64(1024.0), np.float64(g),
                             float(head.draft_layers), head.draft_vocab,
                             fused_target_layers=head.fused_target_layers, tokens=tokens,
                             logit_rows=b)
        narrow = t.head_layers(np.float64(b), np.float64(1.0), np.float64(1024.0), np.float64(g),
                               float(head.draft_layers), head.draft_vocab,
                               fused_target_layers=head.fused_target_layers,
                               tokens=graph_shape(m.engine, b, 1.0)[0])
        assert sched[i] - batch[i] == pytest.approx(
            float(total(wide) - total(narrow)), rel=1e-9)


def test_the_fused_target_feature_fc_runs_once_per_round_not_once_per_draft_forward():
    m = _model(mechanism="eagle3")
    m.engine = m.engine.model_copy(update={"draft_first_forward": "batch"})
    g = m.r.group
    gemm = [float(m.draft(8.0, d, 1024.0, g)["gemm"]) for d in (1.0, 2.0, 3.0)]
    fc = float(m.target._gemm(np.float64(8.0), m.r.model.hidden, 3.0 * m.r.model.hidden))
    assert gemm[2] - gemm[1] == pytest.approx(gemm[1] - gemm[0], rel=1e-9)  # same later forwards
    assert gemm[0] - (gemm[1] - gemm[0]) == pytest.approx(fc, rel=1e-9)  # first = later + FC


def _curve_scenario(engine: str, als: tuple[float, ...]) -> ScenarioModel:
    from explorer.specs.measured import AcceptanceCurve
    from explorer.specs.scenario import Acceptance
    curve = AcceptanceCurve(label="gsm8k n-gram", draft_lens=tuple(range(1, len(als) + 1)),
                            acceptance_lengths=als)
    return _model(mechanism="ngram", engine=engine,
                  acceptance=Acceptance(kind="curve", curve=curve))


def test_an_ngram_request_without_a_match_verifies_one_token_in_vllm():
    # SpecDecodeBench's vLLM n-gram curve on gsm8k (reference/al_curves.csv lines 12-14): the
    # conditional rate rises from 0.109 to 0.35, the sign of requests without a match
    m = _curve_scenario("vllm", (1.109, 1.147, 1.164))
    share = 0.109**2 / (1.147 - 1.109)
    assert m.ngram_match_share == pytest.approx(share, rel=1e-6)
    np.testing.assert_allclose(m.verify_width(np.array([0.0, 3.0])), [1.0, 1.0 + 3.0 * share])
    assert "n-gram requests with a match: 31%" in m.engine_sources()
    spec = float(total(m.verify(64.0, m.verify_width(3.0), 1024.0, m.r.group)))
    assert spec < float(total(m.verify(64.0, 4.0, 1024.0, m.r.group)))
    # SGLang's profile verifies the full width (its semantics, an assumption)
    assert _curve_scenario("sglang", (1.109, 1.147, 1.164)).verify_width(3.0) == 4.0
    # the preset prior's constant conditional rate gives no sign of unmatched requests
    assert _model(mechanism="ngram").ngram_match_share == pytest.approx(1.0, abs=1e-2)


def test_every_engine_parameter_has_a_value_text_for_the_sources_page():
    for p in engine_profiles().values():
        for k in ENGINE_PARAMETERS:
            assert p.value_text(k), (p.engine, k)
    vllm = engine_profiles()["vllm"]
    assert vllm.value_text("rejection_sampler_bytes_per_logit") == "30 B"
    assert vllm.value_text("draft_first_forward") == "all B·(1+D) scheduled tokens"
