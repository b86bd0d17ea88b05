"""Whole requests (Scenario.output_tokens N): each step carries the prompt prefill of the requests
that replace the finished ones, which speculation does not shorten (explorer/model/grid.py)."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.analysis.evaluate import evaluate
from explorer.analysis.inverse import needed_al, required_al
from explorer.analysis.recommend import recommend
from explorer.analysis.uncertainty import speedup_draws
from explorer.interfaces import view_state as us
from explorer.model.grid import al_for_speedup, scenario_model, speedup_at
from explorer.specs.scenario import Scenario

BATCHES = np.array([1.0, 16.0, 64.0, 128.0])


def _sc(**kw: object) -> Scenario:
    base: dict[str, object] = {"hardware": "h100", "model": "llama-3.1-8b", "tp": 1,
                               "mechanism": "eagle3", "draft_len": 3, "context": 1024}
    return Scenario.model_validate(base | kw)


def _grid(**kw: object):  # type: ignore[no-untyped-def]
    return scenario_model(_sc(**kw)).grid(BATCHES, 3.0)


def test_plain_decoding_stays_1x_over_whole_requests() -> None:
    # at D = 0 no drafter runs, so no drafter prefills: the plain step against itself
    g = scenario_model(_sc(output_tokens=256)).grid(BATCHES, 0.0)
    assert np.allclose(g.speedup, 1.0)


def test_whole_requests_of_1k_outputs_by_default_and_decode_steps_unchanged() -> None:
    # the default answer is over whole requests of 1,024 output tokens (InferenceX's 1K/1K and
    # 8K/1K runs); unset (0 in links and the CLI) prices decode steps only, as before
    assert _sc().output_tokens == 1024
    assert np.all(np.asarray(_grid().t_prefill_s) > 0.0)
    g = _grid(output_tokens=None)
    assert np.all(np.asarray(g.t_prefill_s) == 0.0)
    decode = g.t_verif_base_s * g.acceptance_length / (g.t_verif_spec_s + g.t_draft_s)
    assert np.allclose(g.speedup, decode)


def test_prefill_dilutes_the_speedup_more_as_the_batch_grows() -> None:
    decode, whole = _grid(output_tokens=None), _grid(output_tokens=1024)
    ratio = np.asarray(whole.speedup / decode.speedup)
    # B = 1: one prompt per 1024 tokens costs < 1 % of the decode; B = 128: the steps carry
    # 128 prompts' worth per 1024 steps, a tenth of the speedup
    assert ratio[0] > 0.99
    assert np.all(np.diff(ratio) < 0)
    assert 0.85 < ratio[-1] < 0.95
    # a plain step's prefill: B·S/N prompt tokens at a prefill token's marginal cost, which for
    # an 8B model on an H100 lies between its GEMM compute at the BF16 peak (15 µs) and 3× that
    per_token = np.asarray(whole.t_prefill_s) / (BATCHES * 1024 / 1024)
    assert np.all((per_token > 15e-6) & (per_token < 45e-6))


def test_longer_outputs_approach_the_decode_steps_and_longer_prompts_dilute_more() -> None:
    decode = float(_grid(output_tokens=None).speedup[2])
    short, long_ = (float(_grid(output_tokens=n).speedup[2]) for n in (256, 8192))
    assert short < long_ < decode
    assert 1 - long_ / decode < 0.02  # 1K prompts per 8K outputs: an eighth of the 1:1 loss
    assert float(_grid(output_tokens=256, context=8192).speedup[2]) < short


def test_speedup_at_and_its_inverse_agree_with_the_grid() -> None:
    g = _grid(output_tokens=512)
    assert np.allclose(speedup_at(g, g.acceptance_length), g.speedup)
    for x in (1.0, 1.3):
        al = al_for_speedup(g, x)
        assert np.allclose(speedup_at(g, al), x)
    # the AL the inverse questions need is higher with the prefill than without (it pays the
    # prefill of the extra requests it finishes)
    sc = _sc(output_tokens=512, batch=64)
    assert float(needed_al(sc, [3], 1.5)[0]) > float(
        needed_al(_sc(batch=64, output_tokens=None), [3], 1.5)[0])
    req = required_al(sc, 1.5, draft_len=3)
    g64 = scenario_model(sc).grid(64, 3.0)
    assert float(np.ravel(speedup_at(g64, req.acceptance_length))[0]) == pytest.approx(1.5)


def test_intervals_recommendation_and_evaluation_carry_the_prefill() -> None:
    sc = _sc(output_tokens=512, batch=64)
    m = scenario_model(sc)
    g = m.grid(64, 3.0)
    draws = speedup_draws(g, m.acceptance(3), 3, sc.engine)
    assert np.median(draws) == pytest.approx(float(g.speedup), rel=0.1)
    ev = evaluate(sc)
    assert ev.output_tokens == 512 and ev.t_prefill_s > 0
    assert ev.speedup == pytest.approx(
        ev.acceptance_length * ev.verify_cost_factor * ev.draft_cost_factor * ev.prefill_factor)
    assert ev.prefill_factor < 0.95
    assert evaluate(_sc(batch=64, output_tokens=None)).prefill_factor == pytest.approx(1.0)
    top = recommend(sc).ranking[0]
    assert top.prefill_factor < 1.0
    assert top.speedup == pytest.approx(top.acceptance_length * top.verify_cost_factor
                                        * top.draft_cost_factor * top.prefill_factor)


def test_a_link_carries_the_output_tokens_and_old_links_price_decode_steps() -> None:
    state = us.decode({"m": ["llama-3.1-8b"], "hw": ["h100"], "tp": ["1"], "out": ["2048"]})
    assert us.scenario_from_view(state.values).output_tokens == 2048
    assert us.encode(state.values)["v"] == "2"
    # a link of today's version without `out`: the default, whole requests of 1,024 tokens;
    # `out=0`: decode steps only
    new = us.decode({"v": ["2"], "m": ["llama-3.1-8b"], "hw": ["h100"], "tp": ["1"]})
    assert us.scenario_from_view(new.values).output_tokens == 1024
    zero = us.decode({"v": ["2"], "m": ["llama-3.1-8b"], "out": ["0"]})
    assert us.scenario_from_view(zero.values).output_tokens is None
    assert us.encode(zero.values)["out"] == "0"
    # a version-1 link (made when decode steps were the default) has no `out`: it keeps the
    # answer it was shared with, without a warning; one that names `out` keeps it
    old = us.decode({"v": ["1"], "m": ["llama-3.1-8b"], "hw": ["h100"], "tp": ["1"]})
    assert us.scenario_from_view(old.values).output_tokens is None and not old.warnings
    old_n = us.decode({"v": ["1"], "m": ["llama-3.1-8b"], "out": ["512"]})
    assert us.scenario_from_view(old_n.values).output_tokens == 512
    # a stored view saved before versions were stored reads as version 1
    assert us.scenario_from_view(us.decode_view({"m": "llama-3.1-8b"}).values
                                 ).output_tokens is None
    assert us.scenario_from_view(us.decode_view({"m": "llama-3.1-8b", "v": "2"}).values
                                 ).output_tokens == 1024


def test_a_deployment_prices_whole_requests_when_the_scenario_does() -> None:
    from explorer.analysis.deploy import deploy, state_grid
    from explorer.specs.deployment import DeploymentProfile

    profile = DeploymentProfile()
    decode_sc, whole_sc = _sc(output_tokens=None), _sc(output_tokens=512)
    grid = state_grid(whole_sc, profile)
    assert np.all(grid.prefill_s > 0)
    assert grid.prefill_draft_factor[0] == 1.0 and np.all(grid.prefill_draft_factor[1:] > 1.0)
    # a plain step of a state: its decode step plus the prefill it carries
    g = scenario_model(whole_sc).grid(float(grid.batch[0]), 0.0, context=float(grid.context[0]))
    rate = grid.gpu_rate()[0, 0, 0, 0]
    assert rate == pytest.approx(float(grid.batch[0]) / float(
        np.ravel(g.t_verif_base_s + g.t_prefill_s)[0]) / whole_sc.tp)
    gain = {sc.output_tokens: next(p.speedup for p in deploy(sc, profile).policies
                                   if p.name == "oracle") for sc in (decode_sc, whole_sc)}
    assert 1.0 < gain[512] < gain[None]


def test_the_split_chart_shows_the_prefill_factor_only_for_whole_requests() -> None:
    from explorer.ui.figures import speedup_split_figure

    decode = speedup_split_figure(["a"], [2.0], [0.8], [0.9])
    whole = speedup_split_figure(["a"], [2.0], [0.8], [0.9], [0.92])
    assert [t.name for t in decode.data] == ["AL gain", "verify-cost factor",
                                             "draft-cost factor", "speedup"]
    assert [t.name for t in whole.data][3:] == ["prompt-prefill factor", "speedup"]
    assert whole.data[-1].y[0] == pytest.approx(2.0 * 0.8 * 0.9 * 0.92)
    assert [t.name for t in speedup_split_figure(["a"], [2.0], [0.8], [0.9], [1.0]).data] == [
        t.name for t in decode.data]


def test_the_recommendation_says_it_is_over_whole_requests() -> None:
    text = recommend(_sc(output_tokens=1024, batch=64)).explanation
    assert "speculation pays over whole requests (1,024-token prompts, 1,024 output tokens; " \
        "their prefill ×0.9" in text
    assert "whole requests" not in recommend(_sc(batch=64, output_tokens=None)).explanation


def test_the_cli_takes_0_for_decode_steps_and_sweeps_over_output_tokens() -> None:
    import io
    from contextlib import redirect_stdout

    import pandas as pd

    from explorer.analysis.sweep import sweep
    from explorer.interfaces.cli import main

    df = sweep(_sc(batch=64), output_tokens=[None, 256, 1024])
    assert list(df["output_tokens"]) == [0, 256, 1024]
    decode, short, long_ = df["speedup"]
    assert short < long_ < decode  # shorter requests: more prefill per output token
    assert decode == pytest.approx(float(evaluate(_sc(batch=64, output_tokens=None)).speedup))
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["sweep", "--model", "llama-3.1-8b", "--hardware", "h100", "--tp", "1",
                     "--context", "1024", "--batch", "64", "--draft-len", "3",
                     "--output-tokens", "0,1024"])
    assert code == 0
    rows = pd.read_csv(io.StringIO(out.getvalue()))
    assert list(rows["output_tokens"]) == [0, 1024]
    assert rows["speedup"].iloc[0] == pytest.approx(decode)
