"""Each decision has one home: the same function answers the pages, the CLI and the exports."""

from __future__ import annotations

import numpy as np
import pytest

from explorer import Scenario, best_draft_len, recommend, sweep
from explorer.analysis.candidate import candidate
from explorer.model.grid import scenario_model
from explorer.specs.scenario import Acceptance


def test_candidate_keeps_the_scenario_for_its_own_mechanism():
    sc = Scenario(rho=0.5, acceptance=Acceptance(kind="iid", alpha=0.9))
    assert candidate(sc, sc.mechanism) is sc


def test_candidate_resets_acceptance_and_rho_for_another_mechanism():
    sc = Scenario(rho=0.5, acceptance=Acceptance(kind="iid", alpha=0.9), batch=4)
    other = candidate(sc, "mtp")
    assert other.mechanism == "mtp" and other.rho is None and other.acceptance == Acceptance()
    assert other.model_copy(update={"mechanism": sc.mechanism, "rho": 0.5,
                                    "acceptance": sc.acceptance}) == sc


def test_sweep_and_recommend_evaluate_another_mechanism_as_candidate_does():
    # A ρ override of 0.5 describes EAGLE-3 here; MTP must be swept at its own ρ (1/80 layers).
    sc = Scenario(rho=0.5, batch=4)
    df = sweep(sc, draft_len=[3], mechanism=["eagle3", "mtp"], with_breakdown=False)
    mtp = df[df.mechanism == "mtp"].iloc[0]
    g = scenario_model(candidate(sc, "mtp")).grid(4, 3)
    assert mtp.speedup == pytest.approx(float(g.speedup))
    overridden = scenario_model(sc.model_copy(update={"mechanism": "mtp",
                                                      "acceptance": Acceptance()})).grid(4, 3)
    assert float(overridden.speedup) < float(g.speedup)  # ρ = 0.5 would make MTP's draft dearer
    rec = recommend(sc, ["mtp"])
    at3 = next(o for o in rec.ranking if o.draft_len == 3)
    assert at3.speedup == pytest.approx(float(g.speedup))


def test_best_draft_len_by_speed_alone_and_among_fitting_points():
    sc = Scenario(context=32768)  # memory binds above B = 12
    bd = best_draft_len(sc, [1, 8, 12, 13, 64])
    assert bd.max_batch_in_memory == 12
    assert bd.best_draft_len[3:] == [0, 0] and bd.best_speedup[3:] == [1.0, 1.0]
    assert all(d > 0 for d in bd.speed_best_draft_len)
    assert bd.best_draft_len[:3] == bd.speed_best_draft_len[:3]
    m = scenario_model(sc)
    d = np.arange(0, m.r.mechanism.max_draft_len + 1)
    sp = m.grid(64, d).speedup
    assert bd.speed_best_draft_len[-1] == int(d[1:][np.argmax(sp[1:])])
    assert bd.speed_best_speedup[-1] == pytest.approx(float(np.nanmax(sp[1:])))
