"""Hypothesis: the cost model's invariants over random presets and operating points."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer import Scenario, evaluate
from explorer.model.grid import scenario_model
from explorer.model.layers import COMPONENTS
from explorer.presets import hardware_presets, mechanism_presets, model_presets

targets = [k for k, m in model_presets().items() if m.role in ("target", "both")]
scenarios = st.builds(
    Scenario,
    hardware=st.sampled_from(list(hardware_presets())),
    # Every target, sliding-window ones included: a window caps the KV read, so the measured
    # lookup is flat past the window and anchored to the last measured KV length past the
    # table's edge.
    model=st.sampled_from(targets),
    mechanism=st.sampled_from([m for m in mechanism_presets() if m != "external"]),
    batch=st.integers(1, 2048),
    context=st.sampled_from([1024, 8192, 65536]),
    tp=st.sampled_from([1, 2, 4, 8]),
    draft_len=st.integers(0, 7),
)


@settings(max_examples=40, deadline=None)
@given(scenarios)
def test_verify_time_grows_with_tokens_and_context(sc):
    m = scenario_model(sc)
    b = np.asarray([1, 2, 8, 64, 512], dtype=float)[:, None]
    w = np.arange(1, 34, dtype=float)[None, :]
    t = sum(m.verify(b, w, sc.context, m.r.group)[c] for c in COMPONENTS)
    assert np.all(np.diff(t, axis=0) >= -1e-15) and np.all(np.diff(t, axis=1) >= -1e-15)
    longer = sum(m.verify(b, w, sc.context * 2, m.r.group)[c] for c in COMPONENTS)
    assert np.all(longer >= t - 1e-15)
    assert np.all(t > 0) and np.all(np.isfinite(t))


@settings(max_examples=40, deadline=None)
@given(scenarios)
def test_evaluation_bounds_and_units(sc):
    ev = evaluate(sc)
    if ev.acceptance_length is not None:
        assert 1.0 <= ev.acceptance_length <= 1.0 + sc.draft_len + 1e-9
        assert ev.speedup is not None and ev.speedup > 0
        # T_draft ≥ 0 means the decode steps' speedup can never beat T_verif(B)·AL /
        # T_verif(B(1+D)); the prefill of whole requests, which speculation does not shorten,
        # only pulls it towards 1×
        bound = ev.t_verif_base_s * ev.acceptance_length / ev.t_verif_spec_s
        if ev.output_tokens:
            bound = max(bound, 1.0)
        assert ev.speedup <= bound + 1e-12
        assert ev.tokens_per_s_per_gpu == sc.batch * ev.tokens_per_s_per_user / sc.tp
    assert ev.t_verif_spec_s >= ev.t_verif_base_s - 1e-15
    assert ev.t_draft_s >= 0
    assert 0 <= ev.attention_fraction <= 1
    if sc.draft_len == 0:
        assert ev.speedup == 1.0 and ev.t_draft_s == 0.0
    # seconds, not ms: a decode step of any preset lies between 10 µs and 100 s
    assert 1e-5 < ev.t_verif_base_s < 100
