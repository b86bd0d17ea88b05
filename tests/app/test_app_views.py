"""AppTest: the Explorer page computes and draws one view at a time, chosen by a switcher bound
to the link (`vw`); old links without it open the default view."""

from __future__ import annotations

import json

import plotly.io
import pytest

from explorer.interfaces import view_state as us
from explorer.ui import explorer_charts
from tests.support.apptest import run_app

# What each view draws (3D surface: on request).
VIEW_CHARTS = {
    "surface": ["fig_speedup_heatmap"],  # (G, D) and 3D: on request
    "tiles": ["fig_tile_steps_current", "fig_tile_steps_article"],
    "gemm": ["fig_gemm_efficiency"], "al": ["fig_al_vs_d"], "pareto": ["fig_pareto"],
    "time": ["fig_time_breakdown"], "mechanisms": ["fig_speedup_bands", "fig_speedup_split"],
    "sources": [], "export": [],
}


def chart_keys(at) -> list[str]:
    return [c.key for c in at.get("plotly_chart")]


def test_a_link_without_a_view_opens_the_default_view():
    at = run_app(b="8", d="7", v="1")  # a link made before views existed
    assert at.segmented_control(key=us.VIEW_KEY).value == us.DEFAULT_VIEW
    assert chart_keys(at) == VIEW_CHARTS[us.DEFAULT_VIEW]
    assert not at.warning


@pytest.mark.parametrize("view", us.VIEWS)
def test_each_view_draws_only_its_own_charts(view: str):
    at = run_app(vw=view)
    assert at.segmented_control(key=us.VIEW_KEY).value == view
    assert chart_keys(at) == VIEW_CHARTS[view]


def test_the_switcher_changes_the_view_and_the_3d_surface_waits_for_its_toggle():
    at = run_app()
    assert "fig_speedup_surface_3d" not in chart_keys(at)
    at.toggle(key="show_3d").set_value(True).run()
    assert "fig_speedup_surface_3d" in chart_keys(at)
    at.toggle(key="show_g_surface").set_value(True).run()  # the (G, D) surface: on request too
    assert chart_keys(at) == ["fig_speedup_heatmap", "fig_group_heatmap", "fig_speedup_surface_3d"]
    at.segmented_control(key=us.VIEW_KEY).set_value("pareto").run()
    assert chart_keys(at) == ["fig_pareto"]
    assert any("best D" in str(d.value.columns.tolist()) for d in at.dataframe)


def test_a_bad_view_in_the_link_is_named_and_the_default_shown():
    state = us.decode({"vw": "nope", "v": "2"})
    assert any("'vw=nope'" in w and "surface" in w for w in state.warnings)
    assert not us.decode({"vw": "pareto", "v": "2"}).warnings


def test_every_chart_name_belongs_to_a_view_and_is_cached_per_scenario():
    assert set(explorer_charts.CHARTS.values()) <= set(us.VIEWS)
    from explorer.specs.scenario import Scenario

    js = Scenario().model_dump_json()
    first = explorer_charts.chart(js, "gemm_efficiency")
    assert explorer_charts.chart(js, "gemm_efficiency") is first  # built once
    other = Scenario(batch=64).model_dump_json()
    assert explorer_charts.chart(other, "pareto", (("slo", 10.0),)) is not \
        explorer_charts.chart(other, "pareto", (("slo", 20.0),))
    spec = json.loads(first.to_json())
    assert spec["layout"]["xaxis"]["type"] == "log"


SCENARIOS = [
    {}, {"batch": 8, "draft_len": 7, "context": 32768}, {"batch": 256, "draft_len": 1},
    {"draft_len": 5, "verify_width": 16}, {"mechanism": "mtp", "model": "deepseek-v3", "tp": 8},
    {"draft_len": 4, "acceptance": {"kind": "iid", "alpha": 0.6}},
    {"draft_len": 2, "acceptance": {"kind": "fixed", "fixed_al": 2.5}},
]


@pytest.mark.slow
@pytest.mark.parametrize("kw", SCENARIOS)
def test_cached_charts_equal_a_fresh_build_of_the_same_scenario(kw):
    """The caches reuse a result across B and D where it does not depend on them: each chart
    as sent must equal the chart built from scratch for this very scenario."""
    from explorer import Scenario, recommend

    sc = Scenario.model_validate(kw)
    js = sc.model_dump_json()
    assert explorer_charts.recommendation(js) == recommend(sc)
    for name in explorer_charts.CHARTS:
        options = (("normalized", False),) if name.startswith("tile") else ()
        got = explorer_charts.chart(js, name, options)
        fresh = explorer_charts._figure(js, name, dict(options), with_point=True)
        assert (got is None) == (fresh is None), name
        if got is not None:
            sent = json.loads(plotly.io.to_json(got.to_dict(), validate=False))
            assert sent == json.loads(fresh.to_json()), (name, kw)


def test_sources_page_shows_every_source_in_full():
    from explorer.presets import hardware_presets, mechanism_presets
    from tests.support.apptest import goto

    at = goto(run_app(), "sources")
    text = " ".join(m.value for m in at.markdown).replace("\\", "")
    for h in hardware_presets().values():
        assert h.spec_source[-60:].replace("*", "") in text.replace("*", ""), h.slug
    for x in mechanism_presets().values():
        assert x.prior_source[-60:].replace("*", "") in text.replace("*", ""), x.slug


def test_the_surface_charts_stay_the_same_while_d_moves_unless_the_point_is_marked():
    """Streamlit draws a chart anew when its spec changes: unmarked, a D move sends the same
    heatmaps (the browser keeps them); marked, they carry the current point."""
    at = run_app()
    at.toggle(key="show_g_surface").set_value(True).run()  # both heatmaps
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert len(specs) == 2
    assert "Current point: B = 32, D = 3" in " ".join(c.value for c in at.caption)
    at.slider(key="d").set_value(7).run()
    assert [c.proto.spec for c in at.get("plotly_chart")] == specs
    assert not any(t.get("name") == "current point"
                   for s in specs for t in json.loads(s)["data"])
    at.toggle(key="mark_point").set_value(True).run()
    marked = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    points = [t for s in marked for t in s["data"] if t.get("name") == "current point"]
    assert [p["y"] for p in points] == [[7.0], [7.0]]
