"""Invariants of the draft-length policies over random priced states (Hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.analysis.deploy import StateGrid, evaluate_policies


@st.composite
def grids(draw: st.DrawFn) -> tuple[StateGrid, float]:
    nb, ns, nw, nd = (draw(st.integers(1, 4)) for _ in range(4))
    nd += 1
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    step = np.cumsum(rng.uniform(0.01, 1.0, size=(nb, ns, nd)), axis=-1)
    gains = rng.uniform(0.0, 1.0, size=(nw, nd))
    gains[:, 0] = 0.0
    al = 1.0 + np.cumsum(gains, axis=-1)  # 1 ≤ AL ≤ 1 + D, non-decreasing
    allowed = rng.uniform(size=(nb, ns, nw, nd)) > 0.2
    allowed[..., 0] = True
    def weights(n: int) -> np.ndarray:
        w = rng.uniform(0.0, 1.0, size=n) + 1e-3
        return np.asarray(w / w.sum())
    grid = StateGrid(
        batch=np.sort(rng.integers(1, 512, size=nb)), batch_weight=weights(nb),
        context=np.arange(1, ns + 1) * 1024, context_weight=weights(ns),
        workloads=tuple(f"w{i}" for i in range(nw)), workload_weight=weights(nw),
        draft_len=np.arange(nd), acceptance_length=al, step_s=step, allowed=allowed,
        fits_plain=np.ones((nb, ns), dtype=bool), tp=int(draw(st.sampled_from([1, 2, 8]))))
    return grid, draw(st.sampled_from([0.0, 0.01, 0.2]))


def _rate(grid: StateGrid, idx: np.ndarray, dynamic: bool, penalty: float) -> float:
    rate = grid.gpu_rate(penalty if dynamic else 0.0)
    return float((grid.weight * np.take_along_axis(rate, idx[..., None], axis=-1)[..., 0]).sum())


@settings(max_examples=80, deadline=None)
@given(grids())
def test_policy_order(case: tuple[StateGrid, float]) -> None:
    grid, penalty = case
    chosen = evaluate_policies(grid, penalty)
    r = {k: _rate(grid, idx, dyn, penalty) for k, (idx, dyn) in chosen.items()}
    tol = 1e-9 * max(r.values())
    for name, value in r.items():
        assert r["oracle"] >= value - tol, name
    assert r["batch_schedule"] >= r["static"] - tol
    assert r["batch_context_schedule"] >= r["batch_schedule"] - tol
    assert r["al_threshold"] >= r["batch_schedule"] - tol
    assert r["static"] >= r["off"] - tol
    # off is plain decoding: speedup 1, and every chosen D is allowed where it runs
    assert (chosen["off"][0] == 0).all()
    for idx, _ in chosen.values():
        assert np.take_along_axis(grid.allowed, idx[..., None], axis=-1).all()


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(mechanism=st.sampled_from(["eagle3", "mtp", "dflash", "dspark", "ngram", "external"]),
       batches=st.lists(st.integers(1, 2048), min_size=1, max_size=5, unique=True),
       median=st.sampled_from([512, 4096, 65536]), sigma=st.sampled_from([0.0, 0.5, 1.5]),
       penalty=st.sampled_from([0.0, 0.05]))
def test_policy_order_on_the_model(mechanism: str, batches: list[int], median: int,
                                   sigma: float, penalty: float) -> None:
    from explorer.analysis.deploy import POLICY_NAMES, deploy
    from explorer.specs.deployment import (
        ConcurrencyHistogram,
        ContextLogNormal,
        DeploymentProfile,
    )
    from explorer.specs.scenario import Scenario

    model = "deepseek-v3" if mechanism == "mtp" else "llama-3.1-70b"
    sc = Scenario(mechanism=mechanism, model=model, tp=8 if mechanism == "mtp" else 2)
    profile = DeploymentProfile(
        concurrency=ConcurrencyHistogram(batches=tuple(sorted(batches)),
                                         weights=(1.0,) * len(batches)),
        context=ContextLogNormal(median=median, sigma=sigma, buckets=4),
        switch_penalty=penalty)
    r = deploy(sc, profile)
    gpu = {p.name: p.tokens_per_s_per_gpu for p in r.policies}
    assert list(gpu) == list(POLICY_NAMES)
    tol = 1e-9 * gpu["oracle"]
    assert all(gpu["oracle"] >= v - tol for v in gpu.values())
    assert gpu["batch_schedule"] >= gpu["static"] - tol >= gpu["off"] - 2 * tol
    assert gpu["batch_context_schedule"] >= gpu["batch_schedule"] - tol
    assert gpu["al_threshold"] >= gpu["batch_schedule"] - tol
    assert r.policy("off").speedup == 1.0
    assert all(0.0 <= p.gap_to_oracle <= 1.0 for p in r.policies)
