"""Figures are pure functions: titles, units, marks where the data says."""

from __future__ import annotations

import numpy as np

from explorer import Scenario, pareto
from explorer.analysis.views import gemm_efficiency, speedup_surface, tile_boundaries, tile_steps
from explorer.ui import figures


def test_tile_boundaries_are_where_g_times_1_plus_d_hits_128k():
    assert tile_boundaries(8) == [15, 31]
    assert tile_boundaries(32) == [3, 7, 11, 15, 19, 23, 27, 31]


def test_tile_figure_draws_boundaries_and_units():
    sc = Scenario(batch=64, context=32768)
    fig = figures.tile_steps_figure(tile_steps(sc, groups=(8, 32)), 7, normalized=False)
    xs = sorted({s.x0 for s in fig.layout.shapes if s.x0 is not None})
    assert {15.0, 31.0, 3.0, 7.0} <= set(xs)
    assert "µs" in fig.layout.yaxis.title.text


def test_log_axis_lines_sit_at_their_value():
    sc = Scenario()
    curves, ridge = gemm_efficiency(sc)
    fig = figures.gemm_figure(curves, ridge, 800.0, "H200")
    assert any(np.isclose(10 ** s.x0, ridge) for s in fig.layout.shapes if s.type == "line")
    with_spec, without = pareto(sc)
    pf = figures.pareto_figure(with_spec, without, None, (10.0, 100.0), slo=30.0)
    assert any(np.isclose(10 ** s.x0, 30.0) for s in pf.layout.shapes if s.type == "line")


def test_heatmap_payload_is_compact_and_marks_the_current_point():
    sc = Scenario(batch=8, draft_len=7)
    fig = figures.speedup_heatmap(speedup_surface(sc), (8.0, 7.0), "t")
    assert fig.data[0].z.dtype == np.float32
    assert len(fig.to_json()) < 200_000
    marker = next(t for t in fig.data if t.name == "current point")
    assert list(marker.y) == [7.0]
