"""AL past a measured curve never exceeds what non-increasing per-position acceptance allows.

For any valid curve (1 ≤ AL ≤ 1 + D at strictly increasing D), a chain drafter's AL beyond the
last point D_n stays within [AL_n, AL_n + (D − D_n)·s], s the last segment's mean marginal (the
most any later position can be accepted when marginals do not increase), never above 1 + D,
with marginals that shrink strictly (per-position acceptance below 1) wherever they are positive.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.base.limits import MAX_DRAFT_LEN
from explorer.model.acceptance_source import curve_al
from explorer.presets import mechanism_presets
from explorer.specs.measured import AcceptanceCurve

CHAIN = ("eagle3", "mtp", "external", "ngram")


@st.composite
def curves(draw: st.DrawFn) -> AcceptanceCurve:
    ds = sorted(draw(st.sets(st.integers(1, 32), min_size=1, max_size=8)))
    als = [1.0 + draw(st.floats(0.0, 1.0)) * d for d in ds]  # anywhere in [1, 1 + D]
    return AcceptanceCurve(draft_lens=tuple(ds), acceptance_lengths=tuple(als), label="any")


@settings(max_examples=200, deadline=None)
@given(curves(), st.sampled_from(CHAIN))
def test_al_beyond_the_data_is_bounded_by_non_increasing_acceptance(curve: AcceptanceCurve,
                                                                    slug: str) -> None:
    d = np.arange(0, MAX_DRAFT_LEN + 1, dtype=np.float64)
    res = curve_al(curve, d, block=False, shape=mechanism_presets()[slug])
    al = res.acceptance_length
    xs = np.asarray(curve.draft_lens, dtype=np.float64)
    ys = np.maximum.accumulate(np.asarray(curve.acceptance_lengths))  # the curve as it is held
    last, al_last = int(xs[-1]), float(ys[-1])
    if len(xs) == 1:
        slope = (al_last - 1.0) / last
    else:
        slope = min(1.0, float((ys[-1] - ys[-2]) / (xs[-1] - xs[-2])))
    beyond = d > last
    assert res.extrapolated[beyond].all()
    assert np.all(al[beyond] >= al_last - 1e-9)
    assert np.all(al[beyond] <= al_last + (d[beyond] - last) * slope + 1e-9)
    assert np.all(al <= 1.0 + d + 1e-9) and np.all(al >= 1.0)
    marginals = np.diff(al[last:])  # positions last+1 …
    assert np.all(np.diff(marginals) <= 1e-12), "marginals past the data never increase"
    positive = marginals[:-1] > 1e-12
    assert np.all(marginals[1:][positive] < marginals[:-1][positive]), "acceptance 1 past data"
