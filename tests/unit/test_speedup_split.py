"""Why, per mechanism (issue 11, item 4): speedup = AL gain × verify-cost factor × draft-cost
factor, and which term decides."""

from __future__ import annotations

import numpy as np
import pytest

from explorer import Scenario, evaluate, recommend
from explorer.ui import figures


def test_the_three_factors_multiply_to_the_speedup():
    rec = recommend(Scenario(output_tokens=None))  # decode steps: the article's three factors
    assert rec.ranking
    for o in rec.ranking:
        assert o.acceptance_length * o.verify_cost_factor * o.draft_cost_factor == pytest.approx(
            o.speedup, rel=1e-12)
        assert 0 < o.verify_cost_factor <= 1 and 0 < o.draft_cost_factor <= 1
        assert o.prefill_factor == pytest.approx(1.0)
        worst = min(o.verify_cost_factor, o.draft_cost_factor)
        assert o.limiting_term == ("verify cost" if worst == o.verify_cost_factor
                                   else "draft cost")
    ev = evaluate(Scenario(output_tokens=None))
    assert ev.speedup == pytest.approx(
        ev.acceptance_length * ev.verify_cost_factor * ev.draft_cost_factor)  # type: ignore[operator]
    # over whole requests (the default) a fourth factor, the prompt prefill's; at the default
    # 70B, B = 32 and 8K-token prompts per 1K outputs it weighs most
    for o in recommend(Scenario()).ranking:
        assert o.acceptance_length * o.verify_cost_factor * o.draft_cost_factor \
            * o.prefill_factor == pytest.approx(o.speedup, rel=1e-12)
        worst = min(o.verify_cost_factor, o.draft_cost_factor, o.prefill_factor)
        assert o.limiting_term == {o.verify_cost_factor: "verify cost",
                                   o.draft_cost_factor: "draft cost",
                                   o.prefill_factor: "prompt prefill"}[worst]
    assert recommend(Scenario()).ranking[0].limiting_term == "prompt prefill"


def test_which_term_decides_follows_the_operating_point():
    # B=1, 8B target, 3B external draft: drafting D small-model steps dominates
    small = recommend(Scenario(model="llama-3.1-8b", tp=1, batch=1, mechanism="external",
                               draft_model="llama-3.2-3b"), ["external"])
    assert small.ranking[0].limiting_term == "draft cost"
    assert small.ranking[0].draft_cost_factor < 0.7
    # B=1024: verifying 1+D tokens per sequence is compute-bound, verify cost decides
    big = recommend(Scenario(model="llama-3.1-8b", tp=1, batch=1024, context=1024), ["eagle3"])
    assert big.ranking[0].limiting_term == "verify cost"
    assert big.ranking[0].verify_cost_factor < big.ranking[0].draft_cost_factor


def test_split_figure_bars_are_the_factors_and_their_product():
    fig = figures.speedup_split_figure(["a", "b"], [3.0, 2.0], [0.5, 0.9], [0.8, 0.5])
    assert [t.name for t in fig.data] == ["AL gain", "verify-cost factor", "draft-cost factor",
                                          "speedup"]
    np.testing.assert_allclose(np.asarray(fig.data[3].y, dtype=float), [1.2, 0.9])
    assert fig.layout.yaxis.type == "log"
