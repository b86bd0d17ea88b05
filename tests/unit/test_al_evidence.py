"""AL within its evidence: the reproductions of issue 11 give bounded, flagged answers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from explorer import Scenario, evaluate, recommend, sweep
from explorer.analysis.views import al_curves
from explorer.presets import sample_curves
from explorer.specs.scenario import Acceptance
from explorer.ui import figures
from tests.support.paths import SAMPLES
from tests.unit.test_cli import run

SPEED_BENCH = str(SAMPLES / "speed_bench_report_D3.csv")  # AL 3.32 at D=3 (first category)
ONE_POINT = "eagle3/Llama-3.3-70B-Instruct/MT-bench"  # AL 2.88 at D=7
LLAMA8_H100 = ("--hardware", "h100", "--model", "llama-3.1-8b", "--tp", "1", "--batch", "1")


def test_cli_evaluate_of_a_d3_report_at_d10_is_model_extended_not_1_plus_d():
    code, out, _ = run("evaluate", "--al-file", SPEED_BENCH, "--draft-len", "10", "--json")
    assert code == 0
    data = json.loads(out)
    # before: AL 11.0 (= 1 + D). Now the EAGLE-3 prior's shape scaled to the one point, the
    # file's Overall 2.80 (not its first category, coding 3.32); 3.69 with the steeper EAGLE-3
    # shape SpecDecodeBench's EAGLE-1 curve gave
    assert data["acceptance_length"] == pytest.approx(3.99, abs=0.01)
    assert data["acceptance_extrapolated"] is True
    assert "measured at D ∈ {3}; model-extended elsewhere" in data["acceptance_source"]
    # bounded by what non-increasing acceptance allows past D=3: 2.80 + 7 × 1.80/3
    assert data["acceptance_length"] <= 2.80 + 7 * 1.80 / 3
    code, text, _ = run("evaluate", "--al-file", SPEED_BENCH, "--draft-len", "10")
    assert "acceptance length  3.986 (model-extended)" in text


def test_cli_recommend_with_the_d3_report_has_no_al_above_its_evidence():
    code, out, _ = run("recommend", "--al-file", SPEED_BENCH, *LLAMA8_H100, "--json")
    assert code == 0
    data = json.loads(out)
    eagle = [o for o in data["ranking"] if o["mechanism"] == "eagle3"]
    assert eagle and max(o["acceptance_length"] for o in eagle) < 4.6  # before: 33.00 at D=32
    for o in eagle:
        assert o["acceptance_model_extended"] == (o["draft_len"] != 3), o
        assert o["acceptance_length"] <= 3.32 + max(0, o["draft_len"] - 3) * 2.32 / 3 + 1e-9
    best = data["best"]
    assert best["draft_len"] < 32 and best["speedup"] < 5, best  # before: D=32, 13.97×


def test_a_one_point_sample_curve_stays_near_its_point():
    curve = sample_curves()[ONE_POINT]
    sc = Scenario(draft_len=12, acceptance=Acceptance(kind="curve", curve=curve))
    ev = evaluate(sc)
    assert ev.acceptance_length == pytest.approx(3.110, abs=0.005)  # before: 12.25, then 2.994
    assert ev.acceptance_extrapolated and ev.speedup is not None and ev.speedup < 3.0
    at7 = evaluate(sc.model_copy(update={"draft_len": 7}))
    assert at7.acceptance_length == pytest.approx(2.88) and not at7.acceptance_extrapolated
    rec = recommend(sc)
    eagle = [o for o in rec.ranking if o.mechanism == "eagle3"]
    # before: "D=31 … AL 32.00"; 3.01 with the steeper shape of SpecDecodeBench's EAGLE-1 curve
    assert max(o.acceptance_length for o in eagle) < 3.18
    assert all(o.acceptance_model_extended == (o.draft_len != 7) for o in eagle)
    best_eagle = eagle[0]
    assert best_eagle.draft_len < 31
    if rec.best is not None and rec.best.acceptance_model_extended:
        assert "model-extended" in rec.explanation


def test_the_sweep_flags_model_extended_rows():
    curve = sample_curves()[ONE_POINT]
    sc = Scenario(acceptance=Acceptance(kind="curve", curve=curve))
    df = sweep(sc, draft_len=[0, 6, 7, 8], with_breakdown=False)
    assert list(df["acceptance_model_extended"]) == [False, True, False, True]


def test_the_al_chart_draws_the_model_extended_part_dashed():
    curve = sample_curves()[ONE_POINT]
    series = al_curves(Scenario(acceptance=Acceptance(kind="curve", curve=curve)))
    fig = figures.al_figure(series, "eagle3")
    mine = [t for t in fig.data if t.legendgroup and "this scenario" in t.legendgroup]
    band, solid, dashed = mine  # the 80 % band of the model-extended part, then the line
    assert band.fill == "toself" and "80% band" in band.name
    assert solid.line.dash is None and dashed.line.dash == "dash"
    ys, yd = np.asarray(solid.y, dtype=float), np.asarray(dashed.y, dtype=float)
    assert np.isfinite(ys[[0, 7]]).all() and np.isnan(ys[[1, 8, 12]]).all()  # data at D=0, 7
    assert np.isfinite(yd[8:]).all() and yd[12] == pytest.approx(3.110, abs=0.005)
    prior = [t for t in fig.data if t.legendgroup == "EAGLE-3 head (prior)"]
    assert len(prior) == 3 and prior[0].fill == "toself"  # band, within evidence, extended
    assert np.isnan(np.asarray(prior[1].y, dtype=float)[9:]).all()  # EAGLE-3 published to D=8


# -- issue 22: foreign evidence named, the overall row by default -----------------------------
def test_a_report_measured_on_another_model_is_other_model_evidence_named_with_its_spread():
    code, out, _ = run("evaluate", "--al-file", SPEED_BENCH, *LLAMA8_H100, "--json")
    assert code == 0
    data = json.loads(out)
    # the file's Overall (mean of its 11 categories, 2.80), not its first category (3.32)
    assert data["acceptance_length"] == pytest.approx(2.80)
    assert "Overall (mean of categories)" in data["acceptance_source"]
    # measured on MiniMax-M3, applied to Llama-3.1-8B: neither "measured" nor "same model"
    assert data["acceptance_evidence"] == "other model (amd/MiniMax-M3-MXFP4)"
    assert "not on Llama-3.1-8B" in data["acceptance_source"]
    # … with the spread of EAGLE-3's published points across models, at the measured D too
    lo, hi = data["acceptance_length_low"], data["acceptance_length_high"]
    assert lo < 2.80 < hi and hi - lo > 0.5
    assert "measured on another model (amd/MiniMax-M3-MXFP4)" in data["acceptance_uncertainty"]
    # one D=3 point never reaches D=6 unlabelled
    code, out, _ = run("evaluate", "--al-file", SPEED_BENCH, *LLAMA8_H100, "--draft-len", "6",
                       "--json")
    d6 = json.loads(out)
    assert d6["acceptance_extrapolated"] is True and d6["acceptance_length"] < 4.18
    assert d6["acceptance_evidence"].startswith("other model")


def test_a_curve_measured_on_the_target_stays_measured():
    from explorer.model.acceptance_source import acceptance_length, same_model
    from explorer.presets import mechanism_presets, model_presets
    from explorer.specs.measured import AcceptanceCurve, Provenance

    llama = model_presets()["llama-3.1-8b"]
    assert same_model("meta-llama/Llama-3.1-8B-Instruct", llama)
    assert same_model("Llama-3.1-8B-Instruct-FP8", llama)
    assert not same_model("amd/MiniMax-M3-MXFP4", llama)
    assert not same_model("Llama-3.1-70B-Instruct", llama)
    curve = AcceptanceCurve(label="mine", mechanism="eagle3", draft_style="chain",
                            draft_lens=(1, 2, 3), acceptance_lengths=(1.7, 2.2, 2.5),
                            provenance=Provenance(file="x.csv", format="al_csv",
                                                  model="meta-llama/Llama-3.1-8B-Instruct"))
    res = acceptance_length(Acceptance(kind="curve", curve=curve),
                            mechanism_presets()["eagle3"], np.arange(0, 4), 3, llama)
    assert res.evidence == "measured"
    assert res.acceptance_length[3] == pytest.approx(2.5)
    lo, hi = res.interval()
    assert lo[3] == hi[3] == pytest.approx(2.5)  # no counts, same model: no spread at D=3


def test_the_default_curve_of_a_multi_category_file_is_its_overall_row():
    from explorer.measured import validate_path

    result = validate_path(SPEED_BENCH)
    i = result.default_curve_index("eagle3")
    assert i is not None and result.curves[i].acceptance_lengths == (2.80,)
    assert result.curves[0].acceptance_lengths == (3.32,)  # the first category, not chosen


def test_a_long_curve_measured_on_another_model_is_bounded_at_every_d_it_holds(tmp_path):
    # A curve measured past the draw tables' D (here to D=100) on another model: its draws are
    # bounded by 1 + D over its own length (hypothesis found the 255-position vLLM counters
    # broke the bound's broadcast).
    rows = ["mechanism,dataset,model,temperature,drafter,D,AL,source"]
    al = 1.0
    for d in range(1, 101):
        al += 0.97 ** d
        rows.append(f"eagle3,chat,some-other-model,0,head,{d},{al:.4f},a test")
    path = tmp_path / "long.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    code, out, err = run("evaluate", "--al-file", str(path), *LLAMA8_H100, "--draft-len", "7",
                         "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["acceptance_evidence"] == "other model (some-other-model)"
    assert 1.0 <= data["acceptance_length_low"] <= data["acceptance_length"] <= 8.0
    assert data["acceptance_length_high"] <= 8.0
