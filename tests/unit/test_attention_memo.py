"""The measured attention lookups are remembered per scenario model by their exact inputs: the
same numbers as a fresh lookup, and a bounded memory."""

from __future__ import annotations

import numpy as np

from explorer import Scenario
from explorer.model.grid import scenario_model
from explorer.model.measured_kernels import MAX_MEMO_LOOKUPS


def test_remembered_lookups_give_the_fresh_numbers_and_stay_bounded():
    batches = np.unique(np.geomspace(1, 4096, 40).round())[:, None]
    d = np.arange(0, 9)[None, :]
    warm = scenario_model(Scenario(model="llama-3.1-8b", tp=1))
    first = warm.grid(batches, d).speedup
    again = warm.grid(batches, d).speedup  # served from the memo
    fresh = scenario_model(Scenario(model="llama-3.1-8b", tp=1)).grid(batches, d).speedup
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, fresh)
    mk = warm.tables
    assert 0 < len(mk._attention_lookups) <= MAX_MEMO_LOOKUPS
    for ctx in range(2 * MAX_MEMO_LOOKUPS):  # many distinct contexts: the memo is cleared
        warm.grid(batches, d, context=1024 + ctx)
    assert len(mk._attention_lookups) <= MAX_MEMO_LOOKUPS
    # another context after all that: the warm model answers like a fresh one
    other = scenario_model(Scenario(model="llama-3.1-8b", tp=1)).grid(batches, d, context=32768)
    np.testing.assert_array_equal(warm.grid(batches, d, context=32768).speedup, other.speedup)


def test_remembered_gemm_prices_match_a_fresh_model_and_keep_the_provenance_counts():
    from explorer.model.grid import ScenarioModel
    from explorer.model.layers import MAX_GEMM_MEMO
    from explorer.model.resolve import resolve

    batches = np.unique(np.geomspace(1, 4096, 40).round())[:, None]
    d = np.arange(0, 9)[None, :]
    sc = Scenario(model="llama-3.1-8b", tp=1, mechanism="eagle3")
    warm = ScenarioModel(resolve(sc))
    tally = warm.tables.tally
    tally.reset()
    first = warm.grid(batches, d)
    counted = (dict(tally.measured), dict(tally.total), dict(tally.why_not))
    tally.reset()
    again = warm.grid(batches, d)  # every GEMM price from the memo
    assert (dict(tally.measured), dict(tally.total), dict(tally.why_not)) == counted
    assert counted[1]["gemm"] > counted[0]["gemm"] > 0  # both sources were used and counted
    fresh = ScenarioModel(resolve(sc))
    fresh.target._gemm_memo.clear()
    for res in (again, fresh.grid(batches, d)):
        np.testing.assert_array_equal(first.speedup, res.speedup)
        np.testing.assert_array_equal(first.t_draft_s, res.t_draft_s)
    assert 0 < len(warm.target._gemm_memo) <= MAX_GEMM_MEMO
    for ctx in range(MAX_GEMM_MEMO):  # many distinct batches: the memo is cleared, stays bounded
        warm.grid(batches + ctx, d)
    assert len(warm.target._gemm_memo) <= MAX_GEMM_MEMO
    price = next(iter(warm.target._gemm_memo.values()))[0]
    assert not price.flags.writeable  # shared between callers: read-only


def test_past_the_measured_edge_attention_is_anchored_where_it_was_measured():
    """Llama-4-Scout on l40s at TP 8 (5 q / 1 kv heads per rank, 8K window on most layers):
    batch 512 is measured to KV 1023 only. A longer context beyond that edge is the roofline
    anchored at the last measured KV length, so it never comes out cheaper than the shorter."""
    m = scenario_model(Scenario(hardware="l40s", model="llama-4-scout", tp=8))
    b = np.asarray([[64.0], [512.0]])
    w = np.asarray([[1.0, 8.0, 30.0]])
    short = m.verify(b, w, 1024, m.r.group)["attention"]
    long = m.verify(b, w, 2048, m.r.group)["attention"]
    assert (long >= short).all() and (long[1] > short[1]).all()
