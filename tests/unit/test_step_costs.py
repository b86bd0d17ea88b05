"""The whole-step terms fitted per engine on published step times (issue #21):
explorer/calibration/step_costs.py, data/step_cost_fit.csv, loaded by engine_profiles()."""

from __future__ import annotations

import csv
import math

import numpy as np
import pandas as pd
import pytest

from explorer import Scenario
from explorer.analysis.timing_error import timing_error
from explorer.calibration.step_costs import (
    BOUNDS,
    PRIMARY_ENGINE,
    TERMS,
    fit_step_costs,
    fit_table,
    profile_terms,
)
from explorer.model.grid import ScenarioModel, scenario_model
from explorer.model.resolve import resolve
from explorer.presets import DATA_DIR, engine_profiles
from explorer.specs.engine import FITTED_STEP_TERMS
from tests.support.paths import ROOT

SHARED = ROOT.parent / "shared"
needs_shared = pytest.mark.skipif(not (SHARED / "reference").exists(),
                                  reason="../shared/reference is not beside the checkout")
FIT_FILE = DATA_DIR / "step_cost_fit.csv"
LLAMA = dict(hardware="h100", model="llama-3.1-8b", tp=1, context=1024, engine="vllm",
             mechanism="eagle3")


def _rows() -> list[dict[str, str]]:
    with FIT_FILE.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_every_engine_has_every_term_inside_its_physical_bounds_with_its_loo_error():
    rows = _rows()
    assert {(r["engine"], r["parameter"]) for r in rows} == {
        (e, t) for e in ("vllm", "sglang", "trtllm") for t in TERMS}
    for r in rows:
        lo, hi, _ = BOUNDS[r["parameter"]]
        assert (float(r["lower"]), float(r["upper"])) == (lo, hi)
        assert lo <= float(r["value"]) <= hi, r
        assert r["fitted_on"] and r["source"]
        assert math.isfinite(float(r["loo_mape"])) and float(r["loo_log_rms"]) > 0, r
    profiles = engine_profiles()
    for (engine, term), row in ((( r["engine"], r["parameter"]), r) for r in rows):
        field, scale = FITTED_STEP_TERMS[term]
        assert getattr(profiles[engine], field) == pytest.approx(float(row["value"]) * scale)
        assert "leave-one-source-out" in profiles[engine].fitted[term]
    # the fit starts from nothing of its own: the terms at 0 are the kernels-only step
    bare = engine_profiles(fitted=False)["vllm"]
    assert bare.step_overhead_s == bare.per_sequence_s == bare.compute_overlap_loss == 0.0


def test_vllm_fits_its_four_terms_on_three_sources_and_carries_to_each_left_out():
    rows = {r["parameter"]: r for r in _rows() if r["engine"] == PRIMARY_ENGINE}
    assert all(r["source"].startswith("fit: scripts/fit_step_costs.py on") for r in rows.values())
    assert rows["step_overhead_us"]["fitted_on"].count(";") == 2  # three publications
    # each source predicted by the terms fitted on the other two: within 10% on average
    assert float(rows["step_overhead_us"]["loo_mape"]) <= 0.10
    # the step-time error the intervals start from is this engine's LOO log-RMS (since the σ
    # was calibrated on the speed-ups, the σ itself is at least it: test below)
    assert timing_error("vllm").step_log_rms == pytest.approx(
        float(rows["step_overhead_us"]["loo_log_rms"]))
    assert timing_error("sglang").step_log_rms != timing_error("vllm").step_log_rms


def test_the_sigma_per_engine_is_at_least_the_loo_speedup_log_rms_the_fit_records():
    # Intervals that cover (issue 22, item 2): σ per engine is the larger of its step-time LOO
    # log-RMS and the LOO log-RMS of the published speed-ups (its own with MIN_SPEEDUP_ROWS or
    # more, else every engine's pooled). Before, vLLM carried its step-time 0.066 while the
    # speed-ups err by 0.145, and the 80 % band held 69 % of the published speed-ups.
    from explorer.analysis.timing_error import MIN_SPEEDUP_ROWS

    rows = {r["engine"]: r for r in _rows() if r["parameter"] == "step_overhead_us"}
    per_engine = {e: (float(r["loo_speedup_log_rms"]), int(r["loo_speedup_rows"]))
                  for e, r in rows.items() if int(r["loo_speedup_rows"] or 0) > 0}
    n_all = sum(n for _, n in per_engine.values())
    pooled = math.sqrt(sum(n * rms**2 for rms, n in per_engine.values()) / n_all)
    for engine, r in rows.items():
        te = timing_error(engine)
        assert te.log_rms >= float(r["loo_log_rms"]) - 1e-12, engine
        own_rms, own_n = per_engine.get(engine, (math.nan, 0))
        floor = own_rms if own_n >= MIN_SPEEDUP_ROWS else pooled
        assert te.log_rms >= floor - 1e-12, engine
        assert te.speedup_pooled == (own_n < MIN_SPEEDUP_ROWS)
        assert float(te.sigma(3)) == te.log_rms and float(te.sigma(0)) == 0.0
    # at this fit: vLLM has one held-out speed-up (SpecDecodeBench B=128), TRT-LLM two, SGLang
    # eleven; the pooled 14 give 0.142, vLLM's step times 0.072 (0.145 and 0.066 before the
    # B = 128 row ran as whole requests at its published request lengths: with its prefill it
    # no longer pulls the per-draft-forward cost up, which leaves #20780's B = 1 steps, held
    # out, 8 % under instead of 3 %)
    assert {e: n for e, (_, n) in per_engine.items()} == {"vllm": 1, "sglang": 11, "trtllm": 2}
    # Since whole requests are the default, a published row whose request lengths are not
    # published runs as 1K-prompt/1K-output requests, as a user's scenario would: the pooled
    # held-out speed-ups' log-RMS 0.142 → 0.110, SGLang's own 0.147 → 0.108
    assert timing_error("vllm").log_rms == pytest.approx(0.1101, abs=5e-4)
    assert timing_error("vllm").step_log_rms == pytest.approx(0.0718, abs=5e-4)
    assert timing_error("sglang").log_rms == pytest.approx(0.1079, abs=5e-4)
    # a step time keeps the step-time error (bench-plan's step predictions)
    assert float(timing_error("vllm").step_sigma(3)) == timing_error("vllm").step_log_rms


@needs_shared
@pytest.mark.slow
def test_the_shipped_fit_is_what_the_script_computes_from_the_published_data():
    result = fit_step_costs(SHARED)
    fresh = fit_table(result)
    shipped = pd.read_csv(FIT_FILE)
    # atol: a term the data hardly identify (vLLM's 0.043 µs a request, at its bound's edge)
    # ends 1e-5 µs apart on CPUs whose floating point differs (this fit on a new machine:
    # 0.0432814 vs the shipped 0.0432927); 1e-4 of a µs or of a share is far below any figure
    np.testing.assert_allclose(fresh.value.astype(float), shipped.value.astype(float),
                               rtol=1e-4, atol=1e-4)
    for h in result.held_out:  # LOO figures computed for every source of every engine
        assert h.published.size == h.predicted.size == h.in_fit.size > 0
        assert np.all(np.isfinite(h.predicted))
    # the speed-ups' LOO log-RMS the intervals' σ rests on is the fit's, recomputed
    for engine in ("vllm", "sglang", "trtllm"):
        rms, n = result.loo_speedup(engine)
        row = shipped[(shipped.engine == engine) & (shipped.parameter == "step_overhead_us")]
        assert int(row.loo_speedup_rows.iloc[0]) == n > 0
        assert float(row.loo_speedup_log_rms.iloc[0]) == pytest.approx(rms, abs=1e-4)


def test_the_verify_cost_growth_at_b64_is_within_10_percent_of_the_vllm_step_fit():
    # SpecDecodeBench-simulator@2fdccbd Llama8BH100 (data/samples/step_times.csv, + its 1.207 ms
    # per-step overhead): T(64, 1+3) / T(64, 1) = (13.838 + 1.207) / (9.804 + 1.207) = 1.367.
    # The kernels-only step gave 1.14 (−16%); the fitted overlap loss closes most of it.
    g = scenario_model(Scenario(**LLAMA)).grid(64.0, 3.0)  # type: ignore[arg-type]
    ratio = float(np.ravel(g.t_verif_spec_s / g.t_verif_base_s)[0])
    assert ratio == pytest.approx((13.8378 + 1.2068) / (9.8038 + 1.2068), rel=0.10)
    bare = ScenarioModel(resolve(Scenario(**LLAMA)),  # type: ignore[arg-type]
                         engine_profiles(fitted=False)["vllm"])
    gb = bare.grid(64.0, 3.0)
    assert float(np.ravel(gb.t_verif_spec_s / gb.t_verif_base_s)[0]) < ratio / 1.08


def test_the_vllm_speedup_falls_with_batch_without_a_special_case():
    # EAGLE-3, D = 3, Llama-3.1-8B, 1×H100 at the AL vLLM #20780 published for D = 3 (2.79)
    sc = Scenario(**LLAMA, acceptance={"kind": "fixed", "fixed_al": 2.79})  # type: ignore[arg-type]
    s = scenario_model(sc).grid(np.array([1.0, 64.0, 128.0, 256.0]), 3.0).speedup
    assert s[0] == pytest.approx(1.73, rel=0.05)  # #20780: 7.07 / 4.09 ms TPOT at K = 3
    assert s[1] < s[0] and s[2] < 0.95 * s[0] and s[3] < s[2]


def test_profile_terms_swap_only_the_fitted_terms():
    p = profile_terms("sglang", {"step_overhead_us": 500.0, "compute_overlap_loss": 0.25})
    base = engine_profiles()["sglang"]
    assert p.step_overhead_s == pytest.approx(500e-6) and p.compute_overlap_loss == 0.25
    assert p.capture_sizes == base.capture_sizes
    assert p.draft_forward_overhead_s == base.draft_forward_overhead_s


@needs_shared
@pytest.mark.slow
def test_validate_holds_the_loo_speedup_bias_within_10_percent_in_every_full_bucket():
    import importlib.util

    spec = importlib.util.spec_from_file_location("validate_buckets",
                                                  ROOT / "scripts" / "validate.py")
    assert spec is not None and spec.loader is not None
    v = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(v)
    rows, _, _ = v.mapped_speedups(fit_step_costs(SHARED))
    assert {r.scenario.engine for r in rows} == {"vllm", "sglang", "trtllm"}
    full = 0
    for name, _, _ in v.BUCKETS:
        sel = [r for r in rows if r.bucket == name]
        if len(sel) >= v.BUCKET_MIN_ROWS:
            full += 1
            bias = float(np.mean([r.held_out / r.published - 1.0 for r in sel]))
            assert abs(bias) <= 0.10, (name, bias)
    assert full >= 1


def _speedup_row(**kw: str) -> dict[str, str]:
    row = {"source": "SpecDecodeBench-blog (specdecode-bench.github.io index.md)",
           "gpu": "H100-80GB x1", "engine": "vLLM v0.10.1",
           "model_target": "Llama-3.1-8B-Instruct", "drafter": "EAGLE",
           "mechanism": "eagle_chain", "dataset": "GSM8K", "batch": "128", "D": "3", "AL": "",
           "speedup": "1.21"}
    return {**row, **kw}


def test_a_speedup_without_its_al_takes_the_al_its_own_publication_measured():
    from explorer.calibration.published import carried_al, map_row, publication

    assert publication("SpecDecodeBench-blog (x)") == publication(
        "SpecDecodeBench-simulator@2fdccbd data/llama3.1-8B/combined_gsm8k.jsonl") == (
        "SpecDecodeBench")
    curves = pd.DataFrame([
        {"source": "SpecDecodeBench-simulator@2fdccbd data/llama3.1-8B/combined_gsm8k.jsonl",
         "model_target": "Llama-3.1-8B-Instruct", "mechanism": "eagle_chain",
         "dataset": "gsm8k", "D": "3", "AL": "2.391"},
        {"source": "SpecDecodeBench-simulator@2fdccbd data/llama3.1-8B/combined_gsm8k.jsonl",
         "model_target": "Llama-3.1-8B-Instruct", "mechanism": "ngram_prompt_lookup",
         "dataset": "gsm8k", "D": "3", "AL": "1.164"},
        {"source": "Another paper (Table 2)", "model_target": "Llama-3.1-8B-Instruct",
         "mechanism": "eagle_chain", "dataset": "mt-bench", "D": "3", "AL": "3.1"}])
    rows = pd.DataFrame([
        _speedup_row(),
        _speedup_row(dataset="MT-bench"),  # no curve of this publication on MT-bench
        _speedup_row(source="Another paper (Table 3)", dataset="MT-bench", batch="64"),
        _speedup_row(D="5"),  # no curve point at D = 5
    ])
    carried = carried_al(rows, curves)
    assert list(carried.values()) == [2.391, 3.1]
    sc, _ = map_row(rows.iloc[0], carried)
    assert sc is not None and sc.acceptance.fixed_al == 2.391 and sc.batch == 128
    assert map_row(rows.iloc[1], carried)[0] is None
    assert carried_al(rows) == {}  # without the curves nothing is carried (no B = 1 row)


@needs_shared
def test_the_vllm_fit_scores_specdecodebench_b128_speedup_with_its_own_al():
    # SpecDecodeBench's blog: EAGLE on Llama-3.1-8B, 1×H100, vLLM v0.10.1, GSM8K, D = 3: 1.21×
    # at B = 128; its simulator's per-position data gives AL 2.391 at D = 3 on GSM8K.
    from explorer.calibration.step_costs import step_evidence

    rows = [e for e in step_evidence(SHARED)
            if e.kind == "speedup" and e.engine == "vllm" and e.scenario.batch == 128]
    assert len(rows) == 1
    e = rows[0]
    assert (e.value, e.scenario.draft_len, e.scenario.acceptance.fixed_al) == (1.21, 3, 2.391)


@pytest.mark.parametrize(("draft_len", "al", "published_fall"), [(3, 3.556, 1.80 / 2.68),
                                                                 (15, 6.855, 1.20 / 2.84)])
def test_the_hybrid_speedup_falls_with_batch_as_the_sglang_card_publishes(
        draft_len: int, al: float, published_fall: float):
    # Qwen3.6-27B card (priced as Qwen3.5-27B: 48 Gated DeltaNet + 16 attention layers), MTP on
    # 2×A100, SGLang, GSM8K: 2.68× → 1.80× (D = 3) and 2.84× → 1.20× (D = 15) from B = 1 to 32.
    # Each verified token writes one recurrent state per GDN layer (SGLang's
    # intermediate_ssm_state_cache). Priced as full attention (flat in the verified width) the
    # model fell to 0.81 and 0.61 of its B = 1 speed-up.
    # Decode steps: the card does not publish its requests' lengths (over 1K/1K requests, the
    # default, the fall is 0.61 at D = 3: validate prints both)
    sc = Scenario(hardware="a100", model="qwen3.5-27b", tp=2, context=1024, engine="sglang",
                  mechanism="mtp", draft_len=draft_len, output_tokens=None,
                  acceptance={"kind": "fixed", "fixed_al": al})
    s = scenario_model(sc).grid(np.array([1.0, 32.0]), float(draft_len)).speedup
    assert float(s[1] / s[0]) == pytest.approx(published_fall, rel=0.12)


def test_sglang_copies_the_accepted_recurrent_state_after_a_verify_and_vllm_does_not():
    # SGLang (hybrid_linear_attn_backend.py @341ffe1 update_mamba_state_after_mtp_verify) copies
    # the accepted step's SSM state and conv window into the running state of each recurrent
    # layer after a verify; vLLM (gdn_attn.py @5bf4f1c) starts the next step from that slot.
    from explorer.model.layers import total

    sc = Scenario(hardware="a100", model="qwen3.5-27b", tp=2, context=1024, engine="sglang",
                  mechanism="mtp", draft_len=3)
    m = scenario_model(sc)
    assert m.engine.recurrent_state_copies == 1.0
    assert engine_profiles()["vllm"].recurrent_state_copies == 0.0
    no_copy = ScenarioModel(resolve(sc),
                            m.engine.model_copy(update={"recurrent_state_copies": 0.0}))
    b, g = np.array([1.0, 32.0]), m.r.group
    extra = total(m.verify(b, 4.0, 1024, g)) - total(no_copy.verify(b, 4.0, 1024, g))
    mb, hw = m.r.model.mamba, m.r.hardware
    assert mb is not None and m.r.model.mamba_layers == 48
    per_seq = 48 * 2 * mb.state_bytes_per_seq() / 2  # read + write, per GPU at TP2
    np.testing.assert_allclose(extra, b * per_seq / (hw.hbm_bw_bytes_per_s
                                                     * hw.attention_memory_efficiency))
    # a plain decode step commits nothing
    np.testing.assert_allclose(total(m.verify(b, 1.0, 1024, g)),
                               total(no_copy.verify(b, 1.0, 1024, g)))
