"""Curves that carry counts get an interval at their measured D: the standard error of AL from
the nested per-position counts (vLLM /metrics), or from a column of the AL CSV."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer import Scenario, evaluate
from explorer.measured import parse_bytes, validate_path
from explorer.model.acceptance import al_std_error_bound, al_std_error_from_marginals
from explorer.model.acceptance_source import curve_al
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.scenario import Acceptance
from tests.support.paths import SAMPLES


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12), st.integers(1, 10_000))
def test_the_standard_error_is_the_exact_spread_of_accepted_tokens(raw, n):
    m = np.sort(np.asarray(raw))[::-1]  # marginals P(K >= i), non-increasing
    se = al_std_error_from_marginals(m, n)
    p_at_least = np.concatenate([[1.0], m, [0.0]])  # P(K >= 0..D+1)
    p_exact = p_at_least[:-1] - p_at_least[1:]  # P(K = 0..D)
    for d in range(1, m.size + 1):
        k = np.minimum(np.arange(m.size + 1), d)  # tokens accepted of the first d
        mean = float((p_exact * k).sum())
        var = float((p_exact * (k - mean) ** 2).sum())
        assert se[d - 1] == pytest.approx(np.sqrt(var / n), abs=1e-9)
        assert se[d - 1] <= al_std_error_bound(1.0 + mean, d, n) + 1e-6


def test_vllm_counters_give_an_interval_at_the_measured_draft_lengths():
    (curve,) = validate_path(SAMPLES / "vllm_metrics.txt").curves
    assert curve.al_std_errors is not None and len(curve.al_std_errors) == 7
    assert all(0 < s < 0.1 for s in curve.al_std_errors)
    al = curve_al(curve, np.arange(1, 8), block=False)
    lo, hi = al.interval()
    assert (lo < al.acceptance_length).all() and (hi > al.acceptance_length).all()
    assert "from counts" in al.uncertainty
    sc = Scenario(model="llama-3.1-8b", tp=1, draft_len=7,
                  acceptance=Acceptance(kind="curve", curve=curve))
    ev = evaluate(sc)
    assert ev.speedup_low is not None and ev.speedup_high is not None
    assert ev.speedup_low < ev.speedup < ev.speedup_high


def test_a_curve_without_counts_keeps_its_measured_points_exact():
    curve = AcceptanceCurve(mechanism="eagle3", draft_lens=(1, 2, 3),
                            acceptance_lengths=(1.7, 2.1, 2.4))
    lo, hi = curve_al(curve, np.arange(1, 4), block=False).interval()
    assert np.allclose(lo, [1.7, 2.1, 2.4]) and np.allclose(hi, lo)


def test_the_al_csv_carries_standard_errors_and_names_bad_ones():
    good = b"mechanism,dataset,D,AL,al_std_error\neagle3,a,1,1.7,0.02\neagle3,a,3,2.4,0.05\n"
    (c,) = parse_bytes("good.csv", good).curves
    assert c.al_std_errors == (0.02, 0.05)
    lo, hi = curve_al(c, np.asarray([1, 3]), block=False).interval()
    assert hi[1] - lo[1] == pytest.approx(2 * 1.2816 * 0.05, rel=0.1)  # 80 % of a normal
    partial = b"mechanism,dataset,D,AL,al_std_error\neagle3,a,1,1.7,0.02\neagle3,a,3,2.4,\n"
    r = parse_bytes("partial.csv", partial)
    assert r.curves[0].al_std_errors is None
    assert any("al_std_error is given for 1 of 2 rows" in p.message for p in r.problems)
    bad = b"mechanism,dataset,D,AL,al_std_error\neagle3,a,1,1.7,-0.1\n"
    r = parse_bytes("bad.csv", bad)
    assert any(p.field == "al_std_error" and "must be >= 0" in p.message for p in r.problems)
    block = b"mechanism,dataset,D,AL,al_std_error\ndflash,a,7,4.1,0.1\n"
    (b,) = parse_bytes("block.csv", block).curves
    lo, hi = curve_al(b, np.asarray([7]), block=True).interval()
    assert lo[0] < 4.1 < hi[0]


def test_old_saved_curves_without_standard_errors_still_load():
    old = AcceptanceCurve.model_validate_json(
        '{"label":"x","draft_lens":[1,2],"acceptance_lengths":[1.5,1.9]}')
    assert old.al_std_errors is None
    with pytest.raises(ValueError, match="al_std_errors has 1 entries"):
        AcceptanceCurve(draft_lens=(1, 2), acceptance_lengths=(1.5, 1.9), al_std_errors=(0.1,))
