"""Inverse questions: the AL a drafter needs; break-even contours."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.analysis.evaluate import evaluate
from explorer.analysis.inverse import alpha_for_al, break_even, required_al, required_to_beat
from explorer.model.acceptance import al_iid
from explorer.specs.scenario import Acceptance, Scenario


@pytest.mark.parametrize(("batch", "target", "d"), [(8, 2.0, None), (32, 1.5, 3), (1, 2.5, 5),
                                                     (256, 1.2, None)])
def test_inverse_fed_back_reproduces_the_target(batch: int, target: float, d: int | None
                                                ) -> None:
    sc = Scenario(batch=batch)
    req = required_al(sc, target, d)
    assert req.feasible
    back = sc.model_copy(update={
        "draft_len": req.draft_len,
        "acceptance": Acceptance(kind="fixed", fixed_al=max(req.acceptance_length, 1.0))})
    speedup = evaluate(Scenario.model_validate(back.model_dump())).speedup
    assert speedup == pytest.approx(target, rel=0.01)


def test_infeasible_when_al_exceeds_one_plus_d() -> None:
    req = required_al(Scenario(batch=4096), 6.0, 2)
    assert not req.feasible and req.acceptance_length > 3 and req.acceptance_rate is None


def test_best_d_needs_the_lowest_alpha() -> None:
    req = required_al(Scenario(batch=8), 2.0)
    alphas = alpha_for_al(req.acceptance_lengths, req.draft_lens)
    ok = np.asarray(req.feasible_at)
    assert req.acceptance_rate == pytest.approx(float(np.nanmin(np.where(ok, alphas, np.nan))))


def test_alpha_inverts_the_iid_al() -> None:
    d = np.array([1, 3, 7])
    a = np.array([0.3, 0.7, 0.9])
    assert alpha_for_al(al_iid(a, d), d) == pytest.approx(a, abs=1e-9)
    assert np.isnan(alpha_for_al(5.0, 3)).all()


def test_beat_another_mechanism() -> None:
    req = required_to_beat(Scenario(batch=8), "ngram")
    assert req.beat == "ngram" and req.target_speedup >= 1.0


def test_break_even_contours() -> None:
    # decode steps: the speedup is linear in AL (whole requests: below, with the prefill)
    be = break_even(Scenario(batch=32, output_tokens=None))
    sp = np.asarray(be.speedup_d_al, dtype=float)
    # speedup = AL / break-even AL of its D, and NaN where AL > 1 + D
    al = np.asarray(be.acceptance_length)[:, None]
    expect = al / np.asarray(be.break_even_al)[None, :]
    valid = al <= 1 + np.asarray(be.draft_len)[None, :]
    assert np.allclose(sp[valid], np.broadcast_to(expect, sp.shape)[valid])
    assert np.isnan(sp[~valid]).all() and (~valid).any()
    assert np.nanmax(sp) > 1.0 > np.nanmin(sp)
    # more draft layers (larger ρ) never speed a chain drafter up
    rho = np.asarray(be.speedup_d_rho)
    assert (np.diff(rho, axis=0) <= 1e-12).all()
    # whole requests (the default): the same contours, the speedup diluted towards 1 and the
    # break-even AL where speculation's speedup over them is 1
    whole = break_even(Scenario(batch=32))
    sw = np.asarray(whole.speedup_d_al, dtype=float)
    dec, whl = sp[valid], sw[valid]
    assert np.all(whl[dec <= 1.0] <= 1.0)  # what does not pay on decode steps does not here
    big = dec >= 1.2  # what pays well stays above 1×, by less (the drafter prefills too)
    assert big.any() and np.all((whl[big] > 1.0) & (whl[big] < dec[big]))
    ok = np.isfinite(np.asarray(whole.break_even_al, dtype=float))
    assert ok.any() and np.all(np.asarray(whole.break_even_al)[ok]
                               >= np.asarray(be.break_even_al)[ok] - 1e-9)


def test_break_even_contours_colour_from_zero_with_white_at_one() -> None:
    """#12's colour-bar defect on the Deployment page: `zmid=1` mirrored the range around 1, so
    the bars ran to negative speedups (−5× on the (D, AL) chart)."""
    from explorer.ui.deploy_figures import break_even_al_figure, break_even_rho_figure

    be = break_even(Scenario())
    for fig in (break_even_al_figure(be), break_even_rho_figure(be)):
        trace = fig.data[0]
        assert trace.zmin == 0.0 and trace.zmax >= 1.0
        white_at = [stop for stop, colour in trace.colorscale if colour == "#f7f7f7"]
        assert white_at == [pytest.approx(1.0 / trace.zmax)]
    rho_axis = break_even_rho_figure(be).layout.yaxis
    assert rho_axis.type == "log" and rho_axis.tickvals is not None
