"""Nothing in a config.json crashes the parser: near-valid configs with hostile values (strings,
floats, bools, nulls, huge and negative numbers, nested objects where numbers belong) are either
a model that evaluates or a refusal whose every error names a field."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.measured.hf_config import parse_config, shipped_config_paths
from explorer.model.grid import scenario_model
from explorer.model.layers import total
from explorer.specs.scenario import Scenario

pytestmark = pytest.mark.slow
BASES = [json.loads(p.read_text(encoding="utf-8")) for p in shipped_config_paths()
         if p.name.split("--")[0] in ("meta-llama", "Qwen", "deepseek-ai", "openai")][:12]
HOSTILE = st.one_of(
    st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
    st.none(), st.text(max_size=12), st.lists(st.integers(-3, 3), max_size=4),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


@st.composite
def configs(draw: st.DrawFn) -> dict[str, object]:
    cfg = dict(draw(st.sampled_from(BASES)))
    keys = sorted(cfg)
    for key in draw(st.lists(st.sampled_from(keys), max_size=4, unique=True)):
        cfg[key] = draw(HOSTILE)
    return cfg


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
def test_a_hostile_config_is_a_model_or_a_named_refusal(cfg):
    res = parse_config(json.dumps(cfg, allow_nan=True))
    if res.model is None and res.drafter is None:
        errors = [p for p in res.problems if p.severity == "error"]
        assert errors, res
        return
    if res.model is not None:
        m = res.model
        sc = Scenario(model=m.slug, custom_model=m, tp=1, batch=4, draft_len=3)
        t = total(scenario_model(sc).verify(4.0, 4.0, 4096.0, m.group_size))
        assert np.isfinite(t).all() and (t > 0).all()
