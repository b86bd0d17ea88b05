"""`make validate`'s acceptance groups (scripts/validate_acceptance.py, issue 22): interval
coverage on the shared speedups and the AL prior's leave-one-source-out coverage."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="module")
def va():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        yield importlib.import_module("validate_acceptance")
    finally:
        sys.path.remove(str(ROOT / "scripts"))


def test_reference_rows_map_to_mechanisms_targets_and_kinds(va):  # type: ignore[no-untyped-def]
    assert va.mechanism_of("eagle3_chain (1 layer, TTT 7)", "x") == "eagle3"
    assert va.mechanism_of("eagle_chain", "yuhuili/EAGLE-LLaMA3.1-Instruct-8B (EAGLE-1)") is None
    # SpecDecodeBench's "EAGLE head" (key acc_eagle) is EAGLE-1 too: no longer scored as EAGLE-3
    assert va.mechanism_of("eagle_chain", 'EAGLE head (key acc_eagle; simulator labels it '
                           'proposer "eagle3")') is None
    assert va.mechanism_of("eagle3_dynamic_tree", "x") is None
    assert va.mechanism_of("dflash2_block_diffusion", "x") is None
    assert va.mechanism_of("dspark_semi_AR (5 layers, block 7, Markov head)", "x") == "dspark"
    assert va.target_of("Llama-3.1-8B-Instruct") == ("llama-3.1-8b", "llama-3")
    assert va.target_of("MiniMax-M3") == (None, "minimax")
    assert va.target_of("DeepSeek-V4-Pro (FP4 checkpoint)") == (None, "deepseek-v4")
    # a card about its own head is own; the same card measuring another org's head is not
    card = "HF model card nebius/EAGLE3-gpt-oss-20b (mirror)"
    assert va.kind_of(card, "EAGLE-3 + LK (nebius)") == "own card/paper"
    assert va.kind_of(card, "RedHatAI/gpt-oss-20b-speculator.eagle3") == "serving benchmark"
    assert va.kind_of("DSpark paper (Cheng et al.)", "Eagle3 (retrained)") == "own card/paper"
    assert va.kind_of("SemiAnalysisAI/InferenceX@843c625 x.yaml", "x") == "serving benchmark"


@pytest.mark.skipif(not (SHARED / "reference").exists(), reason="../shared is absent")
def test_validate_reports_interval_coverage_and_the_loso_coverage_of_the_prior(  # type: ignore[no-untyped-def]
        va, capsys):
    import validate

    shares = va.speedup_coverage(SHARED, validate.map_row, validate.published_speedup)
    out = capsys.readouterr().out
    assert "A. 80 % speedup interval" in out and "AL from published AL  n= 16" in out
    assert set(shares) == {"published AL", "prior (LOSO)"}
    assert all(0.0 <= v <= 1.0 for v in shares.values())
    al = va.al_prior_coverage(SHARED)
    out = capsys.readouterr().out
    assert "B. AL prior, leave-one-source-out" in out
    # figures at this commit: 363 held-out points (403 while SpecDecodeBench's EAGLE-1 curve was
    # scored as EAGLE-3), each publisher left out in turn: 80 % inside overall (62 % before the
    # σ calibration, the DSpark serving runs, the serving-run workload offsets and the EAGLE-1
    # fix), 80 % of the serving-benchmark points, 81 % of own cards
    assert al["all"] == pytest.approx(0.80, abs=0.02)
    assert 0.75 <= al["serving benchmark"] <= 0.85 and 0.75 <= al["own card/paper"] <= 0.85
    # the honest figure: the σ factor refitted without each scored publisher (79 %)
    assert 0.75 <= al["nested"] <= 0.85
    assert "all               n= 363  inside   80%  within 75–85%" in out
    assert "calibration shipped: σ × 1.17, calibrated by leave-one-source-out on 363" in out
    assert "refitted here: factor 1.165 on 363 points from 16 publishers" in out


@pytest.mark.skipif(not (SHARED / "reference").exists(), reason="../shared is absent")
def test_the_80_percent_speedup_interval_holds_the_published_speedups(va, capsys):  # type: ignore[no-untyped-def]
    # Intervals that cover (issue 22, item 2), recomputed on the shared speed-ups that map with
    # their published AL, so only the timing error is carried. Each row now carries its own
    # engine's σ (every row used to carry vLLM's) and σ is calibrated on the LOO speed-up
    # residuals (explorer/analysis/timing_error.py): before 69 % inside (11 of 16, 19 % below),
    # now 88 % (14 of 16: TRT-LLM's B=1 n-gram row whose speed-up exceeds its AL, and the
    # Qwen3.6 DFlash D=15 row). With the leave-one-source-out prior: 87 % → 93 % (14 of 15) →
    # 100 % (15 of 15) once the prior's level came from serving runs' workload offsets and its
    # σ was calibrated on group B's 363 points (× 1.165): these 15 rows from 5 publishers (6 of
    # one) cannot tell 80 % from 100 %, so the band's width is checked where it can be, on B.
    # A regression below 72 % (the 16 rows' sampling error around 80 % is ±10 %) fails here.
    # Since whole requests are the default and rows without published request lengths run as
    # 1K/1K requests, the engines' σ fell (vLLM's pooled 0.142 → 0.110, SGLang's 0.147 → 0.108):
    # 13 of 16 inside (81 %), the third outside being a Qwen3.6 card row (6 % below its band).
    import validate

    shares = va.speedup_coverage(SHARED, validate.map_row, validate.published_speedup)
    out = capsys.readouterr().out
    assert "AL from published AL  n= 16" in out and "AL from prior (LOSO)  n= 15" in out
    assert shares["published AL"] >= 0.72
    assert shares["published AL"] == pytest.approx(13 / 16)
    assert shares["prior (LOSO)"] >= 0.72
