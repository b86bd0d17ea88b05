"""AL bounds, conversions and interpolation (DESIGN.md §2.3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer.model.acceptance import (
    al_decaying,
    al_from_conditional,
    al_from_marginal,
    al_iid,
    conditional_from_marginal,
    marginal_from_al,
    marginal_from_conditional,
)
from explorer.model.acceptance_source import curve_al, prior_al
from explorer.presets import mechanism_presets, sample_curves
from explorer.specs.measured import AcceptanceCurve

# Rates are 0 or ≥ 1e-6: products of subnormals underflow, which no measurement produces.
rates = st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 1.0)), min_size=1, max_size=40)


@given(st.floats(0.0, 1.0), st.integers(0, 64))
def test_iid_al_within_bounds(alpha, d):
    al = float(al_iid(alpha, d))
    assert 1.0 - 1e-12 <= al <= 1.0 + d + 1e-9


@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_decaying_al_bounded_and_monotone(c1, decay):
    al = al_decaying(c1, decay, np.arange(0, 33))
    assert np.all(al >= 1.0) and np.all(al <= 1.0 + np.arange(0, 33) + 1e-12)
    assert np.all(np.diff(al) >= -1e-12)


@given(rates)
def test_conditional_marginal_al_round_trip(c):
    m = marginal_from_conditional(c)
    al = al_from_marginal(m)
    assert np.allclose(al_from_conditional(c), al)
    assert np.allclose(marginal_from_al(al), m)
    back = conditional_from_marginal(m)
    nonzero_prev = np.concatenate([[1.0], m[:-1]]) > 0
    assert np.allclose(back[nonzero_prev], np.asarray(c)[nonzero_prev])


def test_iid_closed_form_matches_sum():
    c = np.full(7, 0.8)
    assert float(al_iid(0.8, 7)) == pytest.approx(float(al_from_conditional(c)[-1]))


def test_curve_interpolation_is_monotone_and_flags_extrapolation():
    curve = AcceptanceCurve(draft_lens=(1, 3, 5), acceptance_lengths=(1.7, 2.4, 2.7), label="x")
    res = curve_al(curve, np.arange(0, 9), block=False)
    assert res.acceptance_length[0] == 1.0 and res.acceptance_length[3] == pytest.approx(2.4)
    assert np.all(np.diff(res.acceptance_length) >= 0)
    assert list(res.extrapolated) == [False] * 6 + [True] * 3
    assert "measured at D ∈ {1, 3, 5}; model-extended elsewhere" in res.provenance


def test_block_curve_only_at_measured_draft_lens():
    curve = AcceptanceCurve(draft_lens=(7,), acceptance_lengths=(4.1,), label="dflash")
    res = curve_al(curve, np.arange(0, 9), block=True)
    assert res.acceptance_length[7] == pytest.approx(4.1) and res.acceptance_length[0] == 1.0
    assert np.isnan(res.acceptance_length[[1, 2, 3, 4, 5, 6, 8]]).all()


def test_measured_curve_rejects_al_outside_bounds():
    with pytest.raises(ValueError, match=r"outside \[1, 1\+D\]"):
        AcceptanceCurve(draft_lens=(2,), acceptance_lengths=(3.5,))


def test_a_single_point_fixes_the_level_only():
    """The issue's reproduction: one point (AL 2.88 at D=7) once gave AL 12.25 at D=12."""
    curve = sample_curves()["eagle3/Llama-3.3-70B-Instruct/MT-bench"]
    assert curve.draft_lens == (7,) and curve.acceptance_lengths == (2.88,)
    eagle3 = mechanism_presets()["eagle3"]
    res = curve_al(curve, np.arange(0, 33), block=False, shape=eagle3)
    al = res.acceptance_length
    assert al[7] == pytest.approx(2.88, abs=1e-6) and not res.extrapolated[7]
    assert res.extrapolated[[1, 6, 8, 12, 32]].all() and not res.extrapolated[0]
    # the EAGLE-3 prior's shape scaled by 0.693 = 1.88 / 2.7118 (prior AL(7) − 1; 0.762 before
    # SpecDecodeBench's EAGLE-1 curve left the EAGLE-3 shape fit: decay 0.979 → 0.998)
    prior_al7 = float(al_decaying(eagle3.first_rate, eagle3.decay, 7))
    assert "×0.693" in res.provenance and (2.88 - 1) / (prior_al7 - 1) == pytest.approx(0.693,
                                                                                      abs=5e-4)
    # 2.994 and 3.004 with the old, steeper shape
    assert al[12] == pytest.approx(3.110, abs=0.005) and al[32] == pytest.approx(3.178, abs=0.005)
    # below the point: between the chord from (0, 1) (concavity) and the point itself
    assert np.all(al[1:7] >= 1 + np.arange(1, 7) * 1.88 / 7 - 1e-9) and np.all(al[1:7] < 2.88)


def test_a_fitted_decay_extends_a_multi_point_curve_below_the_last_segment():
    curve = sample_curves()["eagle3/Llama-3.1-8B-Instruct/gsm8k"]  # D = 1..10
    res = curve_al(curve, np.arange(0, 33), block=False)
    al = res.acceptance_length
    np.testing.assert_allclose(al[1:11], curve.acceptance_lengths, atol=1e-9)
    assert not res.extrapolated[:11].any() and res.extrapolated[11:].all()
    slope = curve.acceptance_lengths[-1] - curve.acceptance_lengths[-2]  # 0.004 per token
    assert np.all(np.diff(al[10:]) <= slope + 1e-12)
    assert al[32] < curve.acceptance_lengths[-1] + 0.01
    assert "per-position decay fitted to the curve's 10 points" in res.provenance


def test_block_priors_exist_only_at_their_published_block_size():
    for slug in ("dflash", "dspark"):
        res = prior_al(mechanism_presets()[slug], np.arange(0, 9))
        assert np.isfinite(res.acceptance_length[[0, 7]]).all(), slug
        assert np.isnan(res.acceptance_length[[1, 2, 3, 4, 5, 6, 8]]).all(), slug
        assert not res.extrapolated.any()


def test_chain_priors_are_model_extended_past_their_published_draft_lengths():
    eagle3 = prior_al(mechanism_presets()["eagle3"], np.arange(0, 33))
    # D ≤ 8 (InferenceX; D ≤ 10 while SpecDecodeBench's EAGLE-1 curve was counted as EAGLE-3)
    assert not eagle3.extrapolated[:9].any() and eagle3.extrapolated[9:].all()
    mtp = prior_al(mechanism_presets()["mtp"], np.arange(0, 33))
    assert not mtp.extrapolated[:9].any() and mtp.extrapolated[9:].all()  # InferenceX D ≤ 8
    external = prior_al(mechanism_presets()["external"], np.arange(0, 9))
    assert external.extrapolated[1:].all() and "assumption at every D" in external.provenance


def test_a_vanishing_marginal_gives_finite_levels_without_nan_warnings():
    import warnings

    from explorer.model.acceptance import fit_level, level_through, saturating_level

    # a position accepted with probability 1e-320 (subnormal): 1/m would overflow to inf
    marginal = np.array([0.8, 0.5, 1e-320, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert saturating_level(marginal) == pytest.approx(1 / 0.5)
        r = level_through(marginal, 4, np.array([0.5, 1.3, 2.5]))
        level = fit_level(marginal, np.array([1, 2]), np.array([1.8, 2.3]))
    assert np.isfinite(r).all() and np.isfinite(level)
    # an unreachable gain gets the level that saturates every usable position
    assert r[-1] == pytest.approx(2.0)
    assert level == pytest.approx(1.0, rel=0.02)
