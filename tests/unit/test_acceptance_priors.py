"""Issue 22: priors whose level comes from independent serving benchmarks, with a workload
axis, and a leave-one-source-out switch for validation."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.model.acceptance import scaled_al
from explorer.model.acceptance_evidence import (
    DEFAULT_MIX,
    OWN,
    SERVING,
    card_discount,
    evidence,
    prior_marginal,
    run_source,
    workload_offsets,
)
from explorer.model.acceptance_source import prior_al
from explorer.presets import mechanism_presets, model_presets, published_al_points


def _al(mechanism: str, level: float, d: int) -> float:
    return float(scaled_al(prior_marginal(mechanism_presets()[mechanism]), level)[d])


def test_own_cards_sit_above_serving_benchmarks_and_are_discounted_by_the_data():
    factor, sd, pairs = card_discount()
    # gpt-oss-20b, Llama-3.3-70B, Qwen3-235B: nebius's own heads vs the public heads the same
    # card (or the vLLM P-EAGLE blog) measured — own cards are ~26% higher in AL − 1 terms
    # (0.715 while the workload offsets pooled own cards and papers)
    assert pairs == 3
    assert factor == pytest.approx(0.744, abs=0.01) and 0.1 < sd < 0.3


def test_the_level_comes_from_serving_benchmarks_where_any_exist():
    ev = evidence("eagle3", "llama-3.1-70b", "llama-3")
    assert ev.closeness == "same model" and ev.kind == SERVING
    assert all(p.kind == SERVING for p in ev.points)
    assert ev.set_aside == 7  # nebius KL, LK and card heads
    assert ev.level == pytest.approx(0.844, abs=0.005)
    # AL 2.51 at D=3 (issue 22: the held-out runs imply 2.38; the cards' average gave 2.74; 2.55
    # with the shape SpecDecodeBench's EAGLE-1 curve gave and the offsets of own papers)
    assert _al("eagle3", ev.level, 3) == pytest.approx(2.51, abs=0.01)
    assert "level from 6 points of independent serving benchmarks" in ev.describe(None)
    assert "(7 points of the drafters' own cards/papers set aside)" in ev.describe(None)


def test_an_own_paper_sets_the_level_only_scaled_by_the_card_discount():
    ev = evidence("eagle3", "qwen3-8b", "qwen3")  # the DSpark paper's retrained heads only
    assert ev.kind == OWN and ev.card_discount == pytest.approx(card_discount()[0])
    assert ev.level == pytest.approx(0.79, abs=0.01)
    # D=3: 2.41 (issue 22: 2.93 before, the measurements imply 2.25; 2.39 with the EAGLE-1 shape
    # and the own papers' workload offsets)
    assert _al("eagle3", ev.level, 3) == pytest.approx(2.41, abs=0.01)
    assert "card discount 0.17 over 3 pairs" in ev.spread_from
    assert "× the card discount 0.74" in ev.describe(None)


def test_the_workload_axis_orders_math_over_coding_over_chat_and_the_mix_is_neutral():
    off = workload_offsets("eagle3")
    assert set(off) == set(DEFAULT_MIX)
    # from the serving runs that cover several categories (nebius's card measuring public heads,
    # the P-EAGLE and AMD blogs); the own cards and papers put chat −0.37 and math +0.32 (and
    # with SpecDecodeBench's EAGLE-1 runs pooled in: −0.30 / +0.22). Summarisation rests on the
    # AMD blog's 2 points.
    assert off["math/reasoning"] > off["coding"] > off["chat"]
    assert off["chat"] == pytest.approx(-0.19, abs=0.01)
    assert off["math/reasoning"] == pytest.approx(0.09, abs=0.01)
    assert sum(DEFAULT_MIX[w] * off[w] for w in off) == pytest.approx(0.0, abs=1e-12)
    # a lookup drafter has its own axis: copies in code edits, little in free-form math
    ngram = workload_offsets("ngram")
    assert ngram["coding"] > 0.9 and ngram["math/reasoning"] < -0.8
    ev = evidence("eagle3", "llama-3.1-70b", "llama-3")
    assert ev.workload_level("chat") < ev.level < ev.workload_level("math/reasoning")


def test_prior_draws_span_the_workloads_of_the_mix():
    llama70 = model_presets()["llama-3.1-70b"]
    res = prior_al(mechanism_presets()["eagle3"], np.arange(0, 8), llama70)
    lo, hi = res.interval()
    ev = evidence("eagle3", "llama-3.1-70b", "llama-3")
    chat = _al("eagle3", ev.workload_level("chat"), 3)
    math = _al("eagle3", ev.workload_level("math/reasoning"), 3)
    assert lo[3] < chat < math < hi[3]  # the 80 % band holds both workloads
    assert "default mix: equal shares" in res.uncertainty


def test_leaving_a_source_out_changes_the_level_it_set():
    src = "github.com/vllm-project/vllm/issues/20780"
    assert any(run_source(p.source) == src for p in published_al_points())
    full = evidence("eagle3", "llama-3.1-8b", "llama-3")
    held = evidence("eagle3", "llama-3.1-8b", "llama-3", exclude_source=src)
    assert not any(run_source(p.source) == src for p in held.points)
    assert held.level < full.level - 0.1  # its MT-bench runs sit above SpecDecodeBench's


def test_each_workload_has_its_own_spread_shown_with_its_level():
    from explorer.model.acceptance_evidence import workload_spreads

    sp = workload_spreads("eagle3")
    assert set(sp) == set(DEFAULT_MIX)
    assert sp["chat"] == pytest.approx(0.25, abs=0.01)  # chat benchmarks differ the most
    assert sp["coding"] == pytest.approx(0.17, abs=0.01)
    text = evidence("eagle3", "gpt-oss-20b", "gpt-oss").describe(model_presets()["gpt-oss-20b"])
    assert "per workload chat ×0.595 σ 0.25, coding ×0.728 σ 0.17" in text
    assert "summarisation/RAG ×0.772 σ 0.09 (offset only)" in text  # no such point on it
