"""The article's statements (seeds/) hold in the model, as numbers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from explorer import Scenario, evaluate
from explorer.analysis.guidelines import (
    attention_start_draft_len,
    guidelines,
    tile_aligned_draft_lens,
)
from explorer.model.acceptance import al_iid
from explorer.model.acceptance_source import ALResult
from explorer.model.grid import scenario_model
from explorer.model.kernels import attention_time, gemm_time
from explorer.model.layers import unique_experts
from explorer.presets import hardware_presets
from explorer.specs.scenario import Acceptance


def test_guideline_2_start_draft_len_from_group():
    assert attention_start_draft_len(8) == 15
    assert attention_start_draft_len(32) == 3
    assert attention_start_draft_len(4) == 31
    assert attention_start_draft_len(128) == 0


def test_guideline_3_tile_aligned_draft_lens():
    assert tile_aligned_draft_lens(8, 48) == [15, 31, 47]
    assert tile_aligned_draft_lens(32, 12) == [3, 7, 11]


@pytest.mark.parametrize("group", [8, 32])
@pytest.mark.parametrize("context", [32 * 1024, 128 * 1024])
def test_attention_flat_then_steps_at_each_128_rows(group, context):
    hw = hardware_presets()["h200"]
    d = np.arange(0, 40)
    kv_heads = 64 // group
    t = attention_time(hw, 64, context, kv_heads, group, 1 + d, 128).time_s
    rows = group * (1 + d)
    flat = t[rows <= 128]
    assert np.ptp(flat) == 0.0, "runtime must be flat while G·(1+D) ≤ 128"
    tiles = np.ceil(rows / 128)
    for k in np.unique(tiles):
        assert np.ptp(t[tiles == k]) == 0.0, "constant between tile boundaries"
    steps = [t[tiles == k][0] for k in np.unique(tiles)]
    assert all(b > a for a, b in itertools.pairwise(steps)), "steps up each crossing"
    assert steps[-1] > steps[0]


def test_gemm_6144_d7_compute_bound_at_one_eighth_the_batch():
    hw = hardware_presets()["h200"]
    b = np.arange(1, 4097)

    def first_compute_bound(d: int) -> int:
        kt = gemm_time(hw, b * (1 + d), 6144, 6144)
        return int(b[np.argmax(kt.compute_bound)])

    b0, b7 = first_compute_bound(0), first_compute_bound(7)
    assert b0 / b7 == pytest.approx(8.0, rel=0.05)


def test_gemm_ridge_about_206_tokens_on_h200():
    hw = hardware_presets()["h200"]
    assert hw.gemm_ridge_tokens("bf16") == pytest.approx(206, abs=1)
    assert hw.gemm_ridge_tokens("fp8") == pytest.approx(206, abs=1)


def test_launch_bound_overheads_mtp_and_dflash():
    mtp = scenario_model(Scenario(mechanism="mtp", draft_len=11))
    layers = mtp.r.layers
    assert float(mtp.draft_overhead_launch_bound(11)) == pytest.approx(11 / layers)
    dflash = scenario_model(Scenario(mechanism="dflash", draft_len=7))
    for d in (1, 4, 7):
        assert float(dflash.draft_overhead_launch_bound(d)) == pytest.approx(5 / layers)
    ev = evaluate(Scenario(mechanism="mtp", draft_len=11, acceptance=Acceptance(
        kind="fixed", fixed_al=4.0)))
    assert ev.speedup_launch_bound == pytest.approx(4.0 / (1 + 11 / layers))


def test_speculation_loses_when_verify_ratio_reaches_al():
    sc = Scenario(model="llama-3.1-8b", tp=1, mechanism="ngram", batch=8, context=1024)
    m = scenario_model(sc)
    b = np.asarray([1, 8, 64, 512, 4096], dtype=float)[:, None]
    d = np.arange(1, 17, dtype=float)[None, :]
    seen_losing = seen_winning = 0
    for alpha in (0.3, 0.6, 0.9):
        al = al_iid(alpha, d)
        g = m.grid(b, d, al=ALResult(al, np.zeros_like(al, dtype=bool), "test"))
        ratio = g.t_verif_spec_s / g.t_verif_base_s
        losing = ratio >= g.acceptance_length
        seen_losing += int(losing.sum())
        seen_winning += int((g.speedup > 1).sum())
        assert np.all(g.speedup[losing] <= 1.0 + 1e-12)
    assert seen_losing > 10 and seen_winning > 10


def test_moe_unique_experts_grow_with_verified_tokens():
    n = np.arange(1, 5000)
    u = unique_experts(n, 128, 8)
    assert np.all(np.diff(u[:300]) > 0) and np.all(np.diff(u) >= 0)
    assert u[-1] <= 128 and u[0] == pytest.approx(8.0)
    m = scenario_model(Scenario(model="qwen3-235b-a22b", tp=8, batch=4))
    moe = [float(m.verify(4, 1 + d, 8192, m.r.group)["moe"]) for d in (0, 3, 7, 15)]
    assert all(b > a for a, b in itertools.pairwise(moe))


def test_guidelines_text_carries_numbers():
    gl = guidelines(Scenario(model="llama-3.1-70b", batch=256, context=131072, draft_len=3))
    g2 = next(g for g in gl if g.id == 2)
    assert g2.value == 15 and "G=8" in g2.text and "D = 128/G − 1 = 15" in g2.text
    assert g2.applies, "at B=256, S=128K attention dominates a 70B model's decode"


@pytest.mark.parametrize("sc", [
    Scenario(model="llama-3.1-70b", batch=256, context=131072, draft_len=3),
    Scenario(batch=1, draft_len=0), Scenario(batch=64, context=32768, draft_len=15),
])
def test_guidelines_from_the_evaluations_attention_share_are_the_same(sc):
    """The page passes Evaluation.attention_fraction instead of evaluating the grid again."""
    assert guidelines(sc, evaluate(sc).attention_fraction) == guidelines(sc)
