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
from explorer.model.acceptance_source import curve_al
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
    assert "extrapolated past D=5" in res.provenance


def test_block_curve_only_at_measured_draft_lens():
    curve = AcceptanceCurve(draft_lens=(7,), acceptance_lengths=(4.1,), label="dflash")
    res = curve_al(curve, np.arange(0, 9), block=True)
    assert res.acceptance_length[7] == pytest.approx(4.1) and res.acceptance_length[0] == 1.0
    assert np.isnan(res.acceptance_length[[1, 2, 3, 4, 5, 6, 8]]).all()


def test_measured_curve_rejects_al_outside_bounds():
    with pytest.raises(ValueError, match=r"outside \[1, 1\+D\]"):
        AcceptanceCurve(draft_lens=(2,), acceptance_lengths=(3.5,))
