"""Figures are pure functions: titles, units, marks where the data says."""

from __future__ import annotations

import numpy as np
import pytest

from explorer import Acceptance, Scenario, pareto
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
    """plotly.js 3 places a shape on a log axis in data coordinates and an annotation in log10
    ones (the issue's SLO line for 120 sat at x ≈ 2 = log10(120); tests/browser checks the
    drawn pixels)."""
    sc = Scenario()
    curves, ridge = gemm_efficiency(sc)
    fig = figures.gemm_figure(curves, ridge, 800.0, "H200")
    assert any(np.isclose(s.x0, ridge) for s in fig.layout.shapes if s.type == "line")
    assert any(np.isclose(a.x, np.log10(ridge)) for a in fig.layout.annotations)
    with_spec, without = pareto(sc)
    pf = figures.pareto_figure(with_spec, without, None, (10.0, 100.0), slo=120.0)
    assert [s.x0 for s in pf.layout.shapes if s.type == "line"] == [120.0]
    assert np.isclose(pf.layout.annotations[0].x, np.log10(120.0))


def test_heatmap_payload_is_compact_and_marks_the_current_point():
    sc = Scenario(batch=8, draft_len=7)
    fig = figures.speedup_heatmap(speedup_surface(sc), (8.0, 7.0), "t")
    assert fig.data[0].z.dtype == np.float32
    assert len(fig.to_json()) < 200_000
    marker = next(t for t in fig.data if t.name == "current point")
    assert list(marker.y) == [7.0]


def _segments(xs: list[float | None], ys: list[float | None]) -> set[tuple[float, ...]]:
    pts = list(zip(xs, ys, strict=True))
    return {(a[0], a[1], b[0], b[1]) for a, b in zip(pts[::3], pts[1::3], strict=True)}


def test_break_even_line_follows_the_cells_edges_between_paying_and_not():
    # D = 0 is 1x (never judged); NaN: does not fit (borders nothing)
    z = np.array([[1.0, 1.0, 1.0],
                  [1.5, 1.2, 0.9],
                  [1.3, 0.8, 0.7],
                  [0.9, np.nan, 0.6]])
    xs, ys = figures.break_even_edges(z, np.array([0.0, 1.0, 2.0, 3.0]))
    assert xs[2::3] == [None] * (len(xs) // 3) and ys[2::3] == [None] * (len(ys) // 3)
    assert _segments(xs, ys) == {
        (0.5, 1.5, 0.5, 2.5),  # D=2: B index 0 pays, 1 does not
        (1.5, 0.5, 1.5, 1.5),  # D=1: B index 1 pays, 2 does not
        (0.5, 1.5, 1.5, 1.5),  # B index 1: D=1 pays, D=2 does not
        (-0.5, 2.5, 0.5, 2.5),  # B index 0: D=2 pays, D=3 does not
    }
    # a run of rows (or columns) is one segment
    xs, ys = figures.break_even_edges(np.array([[1.0, 1.0], [2.0, 0.5], [2.0, 0.5]]),
                                      np.array([0.0, 1.0, 2.0]))
    assert _segments(xs, ys) == {(0.5, 0.5, 0.5, 2.5)}
    assert figures.break_even_edges(np.ones((1, 3)), np.array([0.0])) == ([], [])


def test_the_heatmap_draws_its_break_even_line_as_computed():
    sc = Scenario()
    s = speedup_surface(sc)
    fig = figures.speedup_heatmap(s, None, "t")
    line = next(t for t in fig.data if t.name == "speedup = 1")
    assert line.type == "scatter" and line.showlegend  # no contour for plotly.js to trace
    xs, ys = figures.break_even_edges(s.z, s.y)
    assert list(line.x) == xs and list(line.y) == ys and len(xs) > 0
    assert not any(t.type == "contour" for t in fig.data)


def test_al_series_hold_their_curve_or_model_result():
    from explorer.analysis.views import al_curves
    from explorer.model.acceptance_source import ALResult
    from explorer.presets import sample_curves

    series = al_curves(Scenario(acceptance=Acceptance(kind="iid", alpha=0.6)))
    samples = [s for s in series if s.kind == "sample"]
    assert [s.data for s in samples] == list(sample_curves().values())
    assert all(s.data is c for s, c in zip(samples, sample_curves().values(), strict=True))
    s0 = samples[0]
    assert list(s0.draft_len) == list(s0.data.draft_lens)
    assert s0.provenance == s0.data.source_text and "al_curves.csv" in s0.provenance
    mine = next(s for s in series if s.kind == "scenario")
    assert isinstance(mine.data, ALResult) and mine.acceptance_length[2] == pytest.approx(
        1 + 0.6 + 0.36)
    fig = figures.al_figure(series, "eagle3")
    assert any("this scenario" in t.name for t in fig.data)


def test_data_page_figures_are_pure_functions_of_parsed_data_and_fits():
    from explorer.calibration import back_out_draft_cost, fit_kernel_efficiencies
    from explorer.measured import validate_path
    from explorer.model.grid import scenario_model
    from explorer.presets import hardware_presets
    from explorer.ui import data_figures
    from tests.support.paths import SAMPLES

    curves = validate_path(SAMPLES / "al_curve.csv").curves
    fig = data_figures.uploaded_curves_figure([("mine", c) for c in curves])
    assert len(fig.data) == len(curves) and fig.data[0].name.startswith("mine: ")
    assert curves[0].source_text[:60] in fig.data[0].hovertemplate

    kt = validate_path(SAMPLES / "kernel_timings.csv").kernel_timings
    assert kt is not None
    cal = fit_kernel_efficiencies(hardware_presets()["h100"], kt.gemm, kt.attention)
    fig = data_figures.calibration_figure(cal)
    assert [t.name for t in fig.data] == ["preset model", "calibrated model", "model = measured"]
    assert list(fig.data[1].y) == pytest.approx(list(np.asarray(cal.predicted_after_s) * 1e6))
    assert fig.layout.xaxis.type == "log" and "µs" in fig.layout.xaxis.title.text

    steps = validate_path(SAMPLES / "sglang_bench_speculative.jsonl").step_timings
    assert steps is not None and steps.includes_draft
    sc = Scenario(model="deepseek-v3", mechanism="mtp", tp=8)
    spec = np.asarray(steps.draft_len) > 0
    out = back_out_draft_cost(scenario_model(sc), np.asarray(steps.batch)[spec],
                              np.asarray(steps.draft_len)[spec], 65536,
                              np.asarray(steps.step_time_s)[spec])
    fig = data_figures.draft_backout_figure(out)
    assert list(fig.data[0].x) == [f"B={b:g}, D={d:g}" for b, d in zip(out.batch, out.draft_len,
                                                                        strict=True)]
    assert list(fig.data[0].y) == pytest.approx(list(np.asarray(out.t_draft_measured_s) * 1e3))
    assert fig.layout.yaxis.title.text == "T_draft (ms)"
