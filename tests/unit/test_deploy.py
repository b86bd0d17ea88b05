"""Deployment profiles and draft-length policies: hand-computed small cases and the defaults."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.analysis.deploy import (
    POLICY_NAMES,
    StateGrid,
    deploy,
    evaluate_policies,
    policy_al_threshold,
    weighted_quantile,
)
from explorer.base.errors import ScenarioError
from explorer.specs.deployment import (
    DEFAULT_PROFILE,
    DEFAULT_PROFILE_URL,
    ConcurrencyHistogram,
    ContextBuckets,
    DeploymentProfile,
    WorkloadShare,
    profile_from_url,
    url_problem,
)
from explorer.specs.scenario import Scenario


def hand_grid(allowed: np.ndarray | None = None) -> StateGrid:
    """2 batches × 1 context × 2 workloads × D ∈ {0, 1, 2}; TP 1.

    Step times (s): B=1: D0 1, D1 1, D2 1 (launch-bound: drafting is free);
                    B=2: D0 1, D1 2, D2 4 (compute-bound: verify cost grows with 1+D).
    AL: workload a: 1, 1.9, 2.7; workload b: 1, 1.1, 1.15. All states weight 1/4.
    """
    step = np.array([[[1.0, 1.0, 1.0]], [[1.0, 2.0, 4.0]]])
    al = np.array([[1.0, 1.9, 2.7], [1.0, 1.1, 1.15]])
    ok = np.ones((2, 1, 2, 3), dtype=bool) if allowed is None else allowed
    return StateGrid(
        batch=np.array([1, 2]), batch_weight=np.array([0.5, 0.5]),
        context=np.array([1024]), context_weight=np.array([1.0]),
        workloads=("a", "b"), workload_weight=np.array([0.5, 0.5]),
        draft_len=np.array([0, 1, 2]), acceptance_length=al, step_s=step, allowed=ok,
        fits_plain=np.ones((2, 1), dtype=bool), tp=1)


def expected(grid: StateGrid, idx: np.ndarray, penalty: float = 0.0) -> float:
    rate = grid.gpu_rate(penalty)
    chosen = np.take_along_axis(rate, idx[..., None], axis=-1)[..., 0]
    return float((grid.weight * chosen).sum())


def test_policies_on_a_hand_case() -> None:
    # Rates B·AL/step, tokens/s per GPU (TP 1):
    #   B=1: a: 1, 1.9, 2.7   b: 1, 1.1, 1.15
    #   B=2: a: 2, 1.9, 1.35  b: 2, 1.1, 0.575
    # static: E[D0] = (1+1+2+2)/4 = 1.5; E[D1] = (1.9+1.1+1.9+1.1)/4 = 1.5; E[D2] =
    #   (2.7+1.15+1.35+0.575)/4 = 1.44375 → D0 (tie with D1: the smaller D).
    # batch: B=1 → D2 (2.7+1.15 = 3.85 > 3.0 > 2); B=2 → D0 → E = (3.85 + 4)/4 = 1.9625.
    # oracle: B=1: a D2 (2.7), b D2 (1.15); B=2: D0, D0 → same as batch: 1.9625.
    g = hand_grid()
    chosen = evaluate_policies(g, penalty=0.0)
    idx = {k: v for k, (v, _) in chosen.items()}
    assert (idx["off"] == 0).all()
    assert (idx["static"] == 0).all()
    assert idx["batch_schedule"][:, 0, 0].tolist() == [2, 0]
    assert idx["oracle"][:, 0, :].tolist() == [[2, 2], [0, 0]]
    assert expected(g, idx["static"]) == pytest.approx(1.5)
    assert expected(g, idx["batch_schedule"]) == pytest.approx(1.9625)
    assert expected(g, idx["oracle"]) == pytest.approx(1.9625)
    # the threshold never pays here (at B=1, b's AL 1.15 at D2 still beats plain's 1)
    thr, tau = policy_al_threshold(g, 0.0)
    assert tau == 1.0 and (thr == idx["batch_schedule"]).all()


def test_threshold_switches_off_a_poor_workload() -> None:
    # Make b's drafts cost: at B=1 step grows with D only for… the AL of b at D2 is 0.9 of a
    # step's worth: set b's AL below what pays. With step 1 at B=1, any AL ≥ 1 pays, so use a
    # step of 1.2 at D ≥ 1 at B=1: a: 1, 1.583, 2.25; b: 1, 0.917, 0.958 → b is better off.
    g = hand_grid()
    step = g.step_s.copy()
    step[0, 0, 1:] = 1.2
    g = StateGrid(**{**g.__dict__, "step_s": step})
    thr, tau = policy_al_threshold(g, 0.0)
    assert thr[0, 0, :].tolist() == [2, 0]  # a keeps D2, b is switched off
    assert 1.15 < tau <= 2.7
    # batch: B=1 → D2 (2.25 + 0.958 = 3.208 > 2), B=2 → D0: E = (3.208 + 4)/4
    # threshold: (2.25 + 1 + 4)/4 = 1.8125 > 1.802
    assert expected(g, thr) == pytest.approx((2.7 / 1.2 + 1 + 4) / 4)
    oracle = evaluate_policies(g, 0.0)["oracle"][0]
    assert expected(g, oracle) >= expected(g, thr) - 1e-12


def test_switch_penalty_keeps_the_simpler_policy_when_it_wins() -> None:
    # With a 100 % penalty the batch schedule's B=1 gain (3.85/2 = 1.925 vs static D0 1) becomes
    # (2.7 + 1.15)/2/2 = 0.9625 < 1: keep the static D.
    g = hand_grid()
    idx, dyn = evaluate_policies(g, penalty=1.0)["batch_schedule"]
    assert (idx == 0).all() and not dyn


def test_a_d_that_does_not_fit_runs_plain() -> None:
    ok = np.ones((2, 1, 2, 3), dtype=bool)
    ok[0, :, :, 2] = False  # D2 does not fit at B=1
    g = hand_grid(ok)
    idx = evaluate_policies(g, 0.0)["oracle"][0]
    assert idx[0, 0, :].tolist() == [1, 1]


def test_weighted_quantile() -> None:
    v = np.array([3.0, 1.0, 2.0])
    w = np.array([1.0, 1.0, 2.0])
    assert weighted_quantile(v, w, 0.5) == 2.0
    assert weighted_quantile(v, w, 0.9) == 3.0
    assert weighted_quantile(v, w, 0.25) == 1.0


def test_default_scenario_and_profile() -> None:
    r = deploy(Scenario(), DEFAULT_PROFILE)
    names = [p.name for p in r.policies]
    assert names == list(POLICY_NAMES)
    gpu = {p.name: p.tokens_per_s_per_gpu for p in r.policies}
    for name in names:
        assert gpu["oracle"] >= gpu[name] - 1e-9
    assert gpu["batch_schedule"] >= gpu["static"] - 1e-9
    assert gpu["batch_context_schedule"] >= gpu["batch_schedule"] - 1e-9
    assert gpu["al_threshold"] >= gpu["batch_schedule"] - 1e-9
    assert r.policy("off").speedup == 1.0
    assert r.policy("oracle").gap_to_oracle == 0.0
    assert gpu["static"] > gpu["off"]  # EAGLE-3 pays on Llama-3.1-70B at B ≤ 64
    for p in r.policies:  # p90 is the slower tail: at most the median speed
        assert p.tokens_per_s_per_user_p90 <= p.tokens_per_s_per_user_p50
    # the schedule is one D per bucket of B, non-increasing from the smallest to the largest B
    d = r.schedule.batch_draft_len
    assert len(d) == len(r.schedule.batch) and d[0] >= d[-1]


def test_per_category_spread() -> None:
    profile = DeploymentProfile(workload=(
        WorkloadShare(source="eagle3/Llama-3.3-70B-Instruct/MT-bench", weight=1),
        WorkloadShare(source="eagle3/Llama-3.3-70B-Instruct/HumanEval", weight=1),
    ))
    r = deploy(Scenario(), profile)
    assert [w.name for w in r.per_workload] == [s.source for s in profile.workload]
    by = {w.name: w.tokens_per_s_per_user_mean for w in r.per_workload}
    # HumanEval (code) is accepted more than MT-bench (chat): its users are faster
    assert by["eagle3/Llama-3.3-70B-Instruct/HumanEval"] > by[
        "eagle3/Llama-3.3-70B-Instruct/MT-bench"]
    assert r.per_request_tokens_per_s_p90 <= r.per_request_tokens_per_s_p50


def test_unknown_workload_is_named() -> None:
    profile = DeploymentProfile(workload=(WorkloadShare(source="nope", weight=1),))
    with pytest.raises(ScenarioError) as exc:
        deploy(Scenario(), profile)
    assert "workload.0.source" in str(exc.value)


# --- the profile type ------------------------------------------------------------------------

def test_url_round_trip() -> None:
    p = DeploymentProfile(
        concurrency=ConcurrencyHistogram(batches=(1, 8, 64), weights=(1, 2, 1)),
        context=ContextBuckets(contexts=(2048, 32768), weights=(3, 1)),
        workload=(WorkloadShare(source="eagle3/Llama-3.3-70B-Instruct/MT-bench", weight=2),
                  WorkloadShare(source="scenario", weight=1)),
        switch_penalty=0.05)
    assert profile_from_url(p.to_url()) == p
    assert profile_from_url(DEFAULT_PROFILE_URL) == DEFAULT_PROFILE
    assert DEFAULT_PROFILE_URL.endswith("~s")


@pytest.mark.parametrize(("text", "named"), [
    ("h1-1_8~s~s", "concurrency"),
    ("h0-1~l2048-1-8~s", "concurrency.batches.0"),
    ("h1-1~b2048-1_4096~s", "context"),
    ("h1-1~l2048-1-8~x", "workload"),
    ("d1_2~l2048-1-8~s", "concurrency.per_hour"),
    ("h1-1~l2048-9-8~s", "context.sigma"),
    ("h1-0~l2048-1-8~s", "concurrency.weights"),
])
def test_bad_url_names_the_field(text: str, named: str) -> None:
    problem = url_problem(text)
    assert problem is not None and problem.startswith(named)


def test_buckets() -> None:
    p = DeploymentProfile(concurrency=ConcurrencyHistogram(batches=(8, 1, 8), weights=(1, 1, 2)))
    b, w = p.batch_buckets()
    assert b.tolist() == [1, 8] and w.tolist() == pytest.approx([0.25, 0.75])
    s, ws = DEFAULT_PROFILE.context_buckets()
    assert len(s) == 8 and ws.sum() == pytest.approx(1.0)
    assert np.sqrt(s[3] * s[4]) == pytest.approx(2048, rel=0.01)  # median in the middle
    b, w = DEFAULT_PROFILE.batch_buckets()
    assert b.min() == 4 and b.max() == 64 and w.sum() == pytest.approx(1.0)


def test_a_saved_scenario_carries_its_profile(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from explorer.interfaces import view_state as us
    from explorer.interfaces.store import ScenarioStore

    link = "h1-1_64-3~b4096-1~s~p0.05"
    view = {**us.DEFAULT_VALUES, "dp": link}
    store = ScenarioStore(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    record = store.get(store.save(Scenario(), view).id)
    state = us.decode_view(record.view)
    assert state.warnings == () and state.values["dp"] == link
    assert us.encode(state.values)["dp"] == link  # and the link it opens carries it
    bad = us.decode_view({**view, "dp": "h1-1"})
    assert bad.values["dp"] == us.DEFAULT_VALUES["dp"] and "dp" in bad.fell_back


def test_the_memory_note_names_the_share_and_where_states_stop_fitting() -> None:
    from explorer.analysis.deploy import memory_note

    grid = hand_grid()
    assert memory_note(grid, 0.0) == ""
    grid.fits_plain[1, 0] = False  # B = 2 at S = 1K does not fit
    note = memory_note(grid, 0.5)
    assert note.startswith("50% of the time is in states where even plain decoding does not "
                           "fit in memory (B ≥ 2 at S = 1K): they are priced as if it did")
    assert "…" not in note  # one context: said once
    wide = StateGrid(**{**grid.__dict__, "context": np.array([512, 8192]),
                        "context_weight": np.array([0.5, 0.5]),
                        "fits_plain": np.array([[True, True], [False, False]]),
                        "step_s": np.repeat(grid.step_s, 2, axis=1),
                        "allowed": np.repeat(grid.allowed, 2, axis=1)})
    assert "(B ≥ 2 at S = 512 … B ≥ 2 at S = 8K)" in memory_note(wide, 0.5)
    assert deploy(Scenario(hardware="h100"), DEFAULT_PROFILE).memory_note.startswith("39% ")
    assert deploy(Scenario(model="llama-3.1-405b", tp=8, dtype="fp8"),
                  DEFAULT_PROFILE).memory_note == ""
