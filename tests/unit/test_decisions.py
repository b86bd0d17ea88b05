"""Each decision has one home: the same function answers the pages, the CLI and the exports."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from explorer import Scenario, best_draft_len, recommend, sweep
from explorer.analysis.candidate import candidate
from explorer.model.grid import scenario_model
from explorer.specs.scenario import Acceptance, MeasuredCurve
from tests.support.paths import ROOT


def test_candidate_keeps_the_scenario_for_its_own_mechanism():
    sc = Scenario(rho=0.5, acceptance=Acceptance(kind="iid", alpha=0.9))
    assert candidate(sc, sc.mechanism) is sc


def test_candidate_resets_acceptance_and_rho_for_another_mechanism():
    sc = Scenario(rho=0.5, acceptance=Acceptance(kind="iid", alpha=0.9), batch=4)
    other = candidate(sc, "mtp")
    assert other.mechanism == "mtp" and other.rho is None and other.acceptance == Acceptance()
    assert other.model_copy(update={"mechanism": sc.mechanism, "rho": 0.5,
                                    "acceptance": sc.acceptance}) == sc


def test_sweep_and_recommend_evaluate_another_mechanism_as_candidate_does():
    # A ρ override of 0.5 describes EAGLE-3 here; MTP must be swept at its own ρ (1/61 layers).
    sc = Scenario(model="deepseek-v3", tp=8, rho=0.5, batch=4)  # DeepSeek-V3 ships MTP layers
    df = sweep(sc, draft_len=[3], mechanism=["eagle3", "mtp"], with_breakdown=False)
    mtp = df[df.mechanism == "mtp"].iloc[0]
    g = scenario_model(candidate(sc, "mtp")).grid(4, 3)
    assert mtp.speedup == pytest.approx(float(g.speedup))
    overridden = scenario_model(sc.model_copy(update={"mechanism": "mtp",
                                                      "acceptance": Acceptance()})).grid(4, 3)
    assert float(overridden.speedup) < float(g.speedup)  # ρ = 0.5 would make MTP's draft dearer
    rec = recommend(sc, ["mtp"])
    at3 = next(o for o in rec.ranking if o.draft_len == 3)
    assert at3.speedup == pytest.approx(float(g.speedup))


def test_best_draft_len_by_speed_alone_and_among_fitting_points():
    sc = Scenario(context=32768)  # memory binds above B = 12
    bd = best_draft_len(sc, [1, 8, 12, 13, 64])
    assert bd.max_batch_in_memory == 12
    assert bd.best_draft_len[3:] == [0, 0] and bd.best_speedup[3:] == [1.0, 1.0]
    assert all(d > 0 for d in bd.speed_best_draft_len)
    assert bd.best_draft_len[:3] == bd.speed_best_draft_len[:3]
    m = scenario_model(sc)
    d = np.arange(0, m.r.mechanism.max_draft_len + 1)
    sp = m.grid(64, d).speedup
    assert bd.speed_best_draft_len[-1] == int(d[1:][np.argmax(sp[1:])])
    assert bd.speed_best_speedup[-1] == pytest.approx(float(np.nanmax(sp[1:])))


# --- behaviour as data: no core module branches on a preset's slug ---------------------------

CORE_FILES = sorted(p for p in (ROOT / "explorer").rglob("*.py") if "ui" not in p.parts)
SLUG_BRANCH = re.compile(
    r"""\b(slug|mech|mechanism|hardware)\b\s*(==|!=|(not\s+)?in\s*[(\[{])\s*["']"""
    r"""|\.startswith\(\s*["']mi""")


def _slug_branches(path: Path) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
            if SLUG_BRANCH.search(line.split("#")[0])]


def test_the_pattern_catches_what_it_is_for():
    for line in ('extra_fc=mech.slug == "eagle3",', "if slug == 'ngram' and x:",
                 'return scenario.hardware.lower().startswith("mi")',
                 'if mech in ("dflash", "dspark"):', 'elif scenario.mechanism != "mtp":'):
        assert SLUG_BRANCH.search(line), line
    for line in ('if slug == scenario.mechanism:', 'if slug in VLLM_NOTES:',
                 'mechanism: str = Field(default="eagle3")', 'if mech.needs_draft_weights:'):
        assert not SLUG_BRANCH.search(line), line


def test_no_core_module_compares_a_mechanism_or_hardware_slug_to_a_literal():
    assert len(CORE_FILES) > 30
    found = [hit for p in CORE_FILES for hit in _slug_branches(p)]
    assert not found, "behaviour belongs in data/mechanisms.csv or hardware.csv:\n" + "\n".join(
        found)


# --- one source for every limit ---------------------------------------------------------------

DRAFT_LIMIT = re.compile(
    r"""(draft_len|d_max|max_d|d_top)\w*\s*(:\s*int\s*)?(==|<=|>=|<|>|=)\s*(32|64)\b"""
    r"""|range\([^)]*\b(33|65)\)""", re.IGNORECASE)


def test_draft_length_limits_are_declared_only_in_base_limits():
    limits = ROOT / "explorer" / "base" / "limits.py"
    assert DRAFT_LIMIT.search(limits.read_text(encoding="utf-8"))  # the pattern finds them there
    files = [*(ROOT / "explorer").rglob("*.py"), ROOT / "app.py"]
    found = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in files if p != limits
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1)
             if DRAFT_LIMIT.search(line)]
    assert not found, "\n".join(found)


def test_the_fusion_fc_comes_from_the_mechanism_spec():
    """EAGLE-3's draft round charges its k·h → h FC (k = fused_target_layers = 3) once, in the
    first draft forward (vLLM's combine_hidden_states runs there only, data/engines.csv
    draft_first_forward); the same head with k = 0 costs exactly one GEMM of (B, h, 3h) less, as
    the model prices that GEMM (the measured table where it covers it, else the roofline)."""
    from explorer.model.draft import draft_time
    from explorer.model.kernels import gemm_time

    m = scenario_model(Scenario(model="llama-3.1-8b", tp=1, batch=8))
    eagle3 = m.r.mechanism
    assert eagle3.fused_target_layers == 3
    plain = eagle3.model_copy(update={"fused_target_layers": 0})
    d, h = 4.0, float(m.r.model.hidden)
    with_fc = draft_time(m.target, None, eagle3, 8.0, d, 8192.0, m.r.group)["gemm"]
    without = draft_time(m.target, None, plain, 8.0, d, 8192.0, m.r.group)["gemm"]
    fc = m.target._gemm(8.0, h, 3.0 * h)
    roofline = gemm_time(m.r.hardware, 8.0, h, 3.0 * h, "bf16").time_s
    assert float(fc) != pytest.approx(float(roofline))  # the H200 table measures this shape
    assert float(with_fc - without) == pytest.approx(float(fc), rel=1e-12)


# --- decisions the pages used to make: the SLO answer, the cost, the fallbacks ----------------

def _front(user, gpu, batch, d):
    from explorer.analysis.frontier import ParetoFrontier

    return ParetoFrontier(tokens_per_s_per_user=user, tokens_per_s_per_gpu=gpu, batch=batch,
                          draft_len=d)


def test_slo_answer_is_the_most_per_gpu_among_points_fast_enough_per_user():
    from explorer.analysis.targets import OperatingPoint, best_meeting_slo, slo_answer

    spec = _front([12.0, 25.0, 40.0, 90.0], [3000.0, 2400.0, 900.0, 180.0], [256, 96, 24, 2],
                  [2, 3, 5, 7])
    plain = _front([10.0, 20.0, 50.0], [2500.0, 1600.0, 100.0], [256, 80, 2], [0, 0, 0])
    # ≥ 20 tokens/s per user: spec points 25, 40, 90 qualify → 2400/GPU at B=96, D=3 is the most;
    # plain points 20, 50 qualify (20 ≥ 20) → 1600/GPU at B=80.
    ans = slo_answer(spec, plain, 20.0)
    assert ans.with_speculation == OperatingPoint(batch=96, draft_len=3,
                                                  tokens_per_s_per_user=25.0,
                                                  tokens_per_s_per_gpu=2400.0)
    assert ans.without_speculation is not None and ans.without_speculation.batch == 80
    assert ans.without_speculation.tokens_per_s_per_gpu == 1600.0
    assert best_meeting_slo(spec, 91.0) is None  # nothing reaches it
    assert best_meeting_slo(plain, 0.0) is not None and best_meeting_slo(plain, 0.0).batch == 256


def test_slo_answer_on_a_real_frontier():
    from explorer import pareto
    from explorer.analysis.targets import slo_answer

    with_spec, without = pareto(Scenario(model="llama-3.1-8b", tp=1))
    slo = 100.0
    ans = slo_answer(with_spec, without, slo)
    assert ans.with_speculation is not None and ans.without_speculation is not None
    for front, point in ((with_spec, ans.with_speculation), (without, ans.without_speculation)):
        ok = [g for u, g in zip(front.tokens_per_s_per_user, front.tokens_per_s_per_gpu,
                                strict=True) if u >= slo]
        assert point.tokens_per_s_per_user >= slo and point.tokens_per_s_per_gpu == max(ok)
    # Speculation gives each user more speed per step, so at the same SLO it serves more per GPU.
    assert ans.with_speculation.tokens_per_s_per_gpu >= ans.without_speculation.tokens_per_s_per_gpu


def test_cost_per_million_tokens_by_hand():
    from explorer.analysis.targets import usd_per_million_tokens

    # $3.60 per GPU-hour = $0.001 per second; at 1000 tokens/s: $1e-6 per token = $1 per million.
    assert usd_per_million_tokens(3.6, 1000.0) == pytest.approx(1.0)
    # $2 per GPU-hour at 250 tokens/s: 2 / 3600 / 250 · 1e6 = $2.2222 per million.
    assert usd_per_million_tokens(2.0, 250.0) == pytest.approx(2.0 / 0.9, rel=1e-12)
    for speed in (None, 0.0, -5.0, float("nan"), float("inf")):
        assert usd_per_million_tokens(2.0, speed) is None


def test_token_cost_of_an_evaluated_point():
    from explorer import evaluate
    from explorer.analysis.targets import token_cost

    ev = evaluate(Scenario())
    assert token_cost(0.0, ev) is None  # no price set: nothing to show
    cost = token_cost(7.2, ev)
    assert cost is not None and ev.tokens_per_s_per_gpu is not None
    assert cost.with_speculation_usd_per_million_tokens == pytest.approx(
        7.2 / 3600 / ev.tokens_per_s_per_gpu * 1e6)
    assert cost.without_speculation_usd_per_million_tokens == pytest.approx(
        7.2 / 3600 / ev.baseline_tokens_per_s_per_gpu * 1e6)
    assert ev.speedup is not None and ev.speedup > 1
    assert (cost.with_speculation_usd_per_million_tokens
            < cost.without_speculation_usd_per_million_tokens)  # faster per GPU is cheaper


def test_operating_point_is_none_without_a_speedup():
    from explorer import evaluate
    from explorer.analysis.targets import operating_point

    ev = evaluate(Scenario())
    assert operating_point(ev) == (ev.tokens_per_s_per_user, ev.tokens_per_s_per_gpu)
    # A block drafter's measured AL holds only at its measured D: none at D = 3.
    curve = MeasuredCurve(label="block 7", draft_lens=(7,), acceptance_lengths=(4.5,))
    block = evaluate(Scenario(mechanism="dflash", draft_len=3,
                              acceptance=Acceptance(kind="curve", curve=curve)))
    assert block.speedup is None and operating_point(block) is None


def test_fallbacks_reset_each_rejected_setting_and_name_it():
    from explorer.analysis.fallbacks import with_fallbacks

    bad = Scenario(model="llama-3.1-8b", tp=1, group=3)  # G = 3 does not divide 32 q heads
    shown, applied = with_fallbacks(bad)
    assert shown == bad.model_copy(update={"group": None})
    assert [f.field for f in applied] == ["group"]
    assert applied[0].note.startswith("group: ") and "showing {'group': None} instead" in (
        applied[0].note)
    # Two bad settings: both are reset, in the order the model finds them.
    worse = Scenario(model="llama-3.1-8b", group=3, tp=64)
    shown, applied = with_fallbacks(worse)
    assert {f.field for f in applied} == {"group", "tp"} and shown.tp == 1 and shown.group is None
    ok = Scenario()
    assert with_fallbacks(ok) == (ok, [])


def test_fallback_for_a_missing_draft_model_is_the_default_mechanism():
    from explorer.analysis.fallbacks import with_fallbacks

    sc = Scenario(model="deepseek-v3", mechanism="external", tp=8)  # no tokenizer-compatible draft
    shown, applied = with_fallbacks(sc)
    assert [f.field for f in applied] == ["draft_model"]
    assert shown.mechanism == Scenario().mechanism


def test_a_setting_without_a_fallback_still_raises():
    from explorer.analysis.fallbacks import with_fallbacks
    from explorer.base.errors import ScenarioError

    with pytest.raises(ScenarioError, match="hardware"):
        with_fallbacks(Scenario(hardware="tpu-v9"))
    calls: list[Scenario] = []

    def stubborn(sc: Scenario) -> None:  # rejects G whatever it is: the fix cannot help twice
        calls.append(sc)
        raise ScenarioError("group", "never")

    with pytest.raises(ScenarioError, match="never"):
        with_fallbacks(Scenario(group=4), stubborn)
    assert len(calls) == 2
