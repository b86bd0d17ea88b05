"""Issue 24 (speed): the charts a browser draws with plotly.js's cartesian bundle
(explorer/ui/chart_view.py): the bundle is the one static/README.md names, it registers exactly
the traces the app sends it, and a figure reaches it whole under Streamlit's chart theme."""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources
from pathlib import Path

import plotly.graph_objects as go
import pytest

from explorer import Scenario
from explorer.ui import chart_view
from explorer.ui import explorer_charts as charts

ROOT = Path(__file__).resolve().parents[2]


def bundle_text() -> str:
    return chart_view.BUNDLE.read_text(encoding="utf-8")


def test_the_bundle_is_the_one_its_readme_names():
    readme = (ROOT / "static" / "README.md").read_text()
    digest = hashlib.sha256(chart_view.BUNDLE.read_bytes()).hexdigest()
    assert digest in readme
    assert bundle_text().startswith("/**\n* plotly.js (cartesian - minified) v4.1.1")


def test_the_bundle_is_the_plotly_js_release_python_plotly_ships():
    # the same release: a figure plotly (Python) validates draws the same in the bundle
    full = resources.files("plotly") / "package_data" / "plotly.min.js"
    head = full.read_text(encoding="utf-8")[:200]
    version = re.search(r"plotly\.js v(\d+\.\d+\.\d+)", head)
    assert version is not None
    assert f"v{version.group(1)}" in bundle_text()[:200]


def test_the_cartesian_traces_are_those_the_bundle_registers():
    registered = set(re.findall(r'moduleType:"trace",name:"(\w+)"', bundle_text()))
    assert registered == set(chart_view.CARTESIAN_TRACES)


@pytest.mark.parametrize(("trace", "bundled"), [
    (go.Heatmap(z=[[1, 2]]), True), (go.Scatter(x=[1], y=[2]), True),
    (go.Bar(x=[1], y=[2]), True), (go.Contour(z=[[1, 2], [3, 4]]), True),
    (go.Scattergl(x=[1], y=[2]), False), (go.Surface(z=[[1, 2], [3, 4]]), False)])
def test_webgl_and_3d_figures_keep_streamlits_element(trace, bundled):
    spec = go.Figure([go.Scatter(x=[0], y=[0]), trace]).to_dict()
    assert chart_view.drawn_by_bundle(spec) is bundled


def test_a_figure_reaches_the_bundle_whole():
    fig = charts.chart(Scenario(), "speedup_heatmap")
    assert fig is not None
    spec = fig.to_dict()
    sent = json.loads(chart_view.figure_json(spec))
    assert [t["type"] for t in sent["data"]] == [t["type"] for t in spec["data"]]
    assert sent["layout"]["margin"] == spec["layout"]["margin"]  # its own layout, whole
    assert sent["layout"]["xaxis"]["title"] == spec["layout"]["xaxis"]["title"]
    assert "template" not in sent["layout"]  # the browser adds the page's theme
    assert sent["config"] == {"displaylogo": False}


def test_streamlits_chart_themes_light_and_dark():
    themes = chart_view.streamlit_templates()
    light, dark = themes["light"]["layout"], themes["dark"]["layout"]
    assert light["paper_bgcolor"].upper() == "#FFFFFF"
    assert dark["paper_bgcolor"] != light["paper_bgcolor"]
    rgb = [int(dark["paper_bgcolor"][i:i + 2], 16) for i in (1, 3, 5)]
    assert 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2] < 128  # dark, as the JS reads it
    for t in (light, dark):
        assert t["font"]["family"] == '"Source Sans", sans-serif'
    assert light["colorway"][0] == "#0068c9"  # Streamlit's first categorical colour


def test_the_themes_hold_no_unresolved_placeholder_colours():
    # Streamlit's Python template names its colours #000001…#000040 for its frontend to replace;
    # the ones the bundle gets must hold the colours themselves
    text = json.dumps(chart_view.streamlit_templates())
    assert not re.search(r"#0000[0-4]\d\b", text)
