"""MiniMax-M3's sparse attention (MSA) priced from the package's measured MSA module tables
(explorer/kernel_tables/msa.py) instead of as dense attention (issue #21, item 4)."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.kernel_tables.catalog import Missing
from explorer.kernel_tables.msa import find_msa_grid
from explorer.measured.hf_config import read_shipped, shipped_config_paths
from explorer.model.grid import ScenarioModel
from explorer.model.resolve import resolve
from explorer.specs.scenario import Scenario

M3 = next((p for p in shipped_config_paths() if p.name == "MiniMaxAI--MiniMax-M3_config.json"),
          None)
pytestmark = pytest.mark.skipif(M3 is None, reason="the package ships no MiniMax-M3 config")


def _model(context: int, sparse: bool = True) -> ScenarioModel:
    assert M3 is not None
    spec = read_shipped(M3).model
    assert spec is not None
    if not sparse:
        spec = spec.model_copy(update={"sparse_attention": None})
    return ScenarioModel(resolve(Scenario(hardware="h200", model=spec.slug, custom_model=spec,
                                          tp=8, batch=32, context=context, mechanism="mtp")))


def test_the_m3_config_is_read_as_msa_and_says_how_it_is_priced():
    assert M3 is not None
    res = read_shipped(M3)
    assert res.model is not None and res.model.sparse_attention == "msa"
    assert "MiniMax sparse attention (MSA)" in res.model.assumptions


def test_the_measured_module_replaces_projections_and_dense_attention_at_long_context():
    sparse, dense = _model(65536), _model(65536, sparse=False)
    v_s = sparse.verify(32.0, 1.0, 65536.0, sparse.r.group)
    v_d = dense.verify(32.0, 1.0, 65536.0, dense.r.group)
    # the module holds the projections: the attention layers' GEMMs leave the gemm component
    assert float(v_s["gemm"].ravel()[0]) < 0.2 * float(v_d["gemm"].ravel()[0])
    # and the block-sparse attention reads less than the whole 64K context
    att_s = float((v_s["attention"] + v_s["gemm"]).ravel()[0])
    att_d = float((v_d["attention"] + v_d["gemm"]).ravel()[0])
    assert att_s < 0.8 * att_d
    grid = find_msa_grid("h200", "vllm", 8, "bf16", "bf16")
    assert not isinstance(grid, Missing)
    per_layer = float(grid.latency(32.0, 65536.0).latency_s.ravel()[0])
    layers = sparse.r.model.n_attention_layers
    assert float(v_s["attention"].ravel()[0]) == pytest.approx(layers * per_layer, rel=1e-9)
    sparse.tables.tally.reset()
    sparse.verify(32.0, 1.0, 65536.0, sparse.r.group)
    assert "MSA attention module measured" in sparse.tables.describe()


def test_a_point_outside_the_measured_grid_is_priced_as_dense_attention():
    grid = find_msa_grid("h200", "vllm", 8, "bf16", "bf16")
    assert not isinstance(grid, Missing)
    look = grid.latency(np.array([32.0, 32.0]), np.array([4096.0, 4.0e6]))
    assert look.covered.tolist() == [True, False] and np.isnan(look.latency_s[1])
    sparse, dense = _model(2_000_000), _model(2_000_000, sparse=False)
    a = sparse.verify(32.0, 1.0, 2.0e6, sparse.r.group)
    b = dense.verify(32.0, 1.0, 2.0e6, dense.r.group)
    assert float(a["attention"].ravel()[0]) == pytest.approx(float(b["attention"].ravel()[0]))
    assert isinstance(find_msa_grid("h200", "vllm", 3, "bf16", "bf16"), Missing)
