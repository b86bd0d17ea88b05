"""Where a page draws a plotly figure: one home for every chart on screen.

In a browser, a figure whose traces are all cartesian (scatter, bar, heatmap, contour: every chart
of the first screens) is drawn by plotly.js's cartesian bundle (1.5 MB, `static/`, served by
Streamlit's static file serving) instead of `st.plotly_chart`, whose element loads the full
plotly.js (4.7 MB) and evaluates it in one main-thread task of 1.2–1.4 s on 2 loaded cores, the
largest single cost of a chart page (benchmarks/bench_floor.py). The cartesian bundle is the
plotly.js release the figures are built and validated for (4.1.1, which plotly 7.1 ships;
Streamlit 1.67's element carries 4.2.0), drawn with Streamlit's own chart theme
(chart_template.json). Figures with other traces (WebGL, 3D)
keep Streamlit's element; so does a client that runs no script (AppTest, the test clients), which
reads the same figure from the element.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from functools import cache
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from explorer.ui import client

STATIC_DIR = Path(__file__).resolve().parents[2] / "static"
BUNDLE = STATIC_DIR / "plotly-cartesian.min.js"
# Streamlit serves the app's ./static folder under app/static/ (.streamlit/config.toml:
# enableStaticServing); relative to the page, so it holds under a base URL path too.
BUNDLE_URL = "app/static/plotly-cartesian.min.js"
# The trace types the cartesian bundle registers (plotly.js's lib/index-cartesian.js).
CARTESIAN_TRACES = frozenset({
    "bar", "box", "contour", "heatmap", "histogram", "histogram2d", "histogram2dcontour",
    "image", "pie", "scatter", "scatterternary", "violin"})
# The attribute the drawn chart's element carries: what tests, benchmarks and the first paint's
# report look for (Streamlit's element is [data-testid='stPlotlyChart']).
TEST_ID = "explorerChart"
CHART_SELECTOR = f":is([data-testid='stPlotlyChart'], [data-testid='{TEST_ID}'])"
CONFIG = {"displaylogo": False}

_JS = """
export default function({ data, parentElement }) {
  const root = parentElement.querySelector("[data-testid='__TEST_ID__']");
  if (!root) return;
  // one load per page; a failed load is tried again by the next chart
  if (!window.__explorerPlotly) {
    window.__explorerPlotly = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = new URL(data.src, document.baseURI).href;
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => {
        window.__explorerPlotly = undefined;
        reject(new Error("plotly.js could not be loaded from " + s.src));
      };
      document.head.appendChild(s);
    });
  }
  let live = true;
  let resize = null;
  window.__explorerPlotly.then((Plotly) => {
    if (!live) return;
    const fig = JSON.parse(data.figure);
    Plotly.react(root, fig.data, fig.layout, fig.config).then(() => {
      if (!live) return;
      // the page's column changes width (sidebar, window, a tab shown): the chart follows it
      let width = root.clientWidth;
      resize = new ResizeObserver(() => {
        if (root.clientWidth === width) return;
        width = root.clientWidth;
        Plotly.Plots.resize(root);
      });
      resize.observe(root);
    });
  }).catch((e) => { root.textContent = "The chart could not be drawn: " + e.message; });
  return () => { live = false; if (resize) resize.disconnect(); };
}
""".replace("__TEST_ID__", TEST_ID)

_chart = st.components.v2.component(
    "explorer_chart", html=f"<div data-testid='{TEST_ID}'></div>", js=_JS,
    isolate_styles=False)  # plotly.js styles its modebar and hover labels from the page's head


@cache
def streamlit_template() -> dict[str, Any]:
    """Streamlit's plotly theme, resolved for its light theme (see chart_template.json)."""
    path = Path(__file__).with_name("chart_template.json")
    template: dict[str, Any] = json.loads(path.read_text())["template"]
    return template


def served() -> bool:
    """Whether the browser can fetch the bundle: the file is there and Streamlit serves static/
    (a deployment's own config may turn that off; its charts then keep Streamlit's element)."""
    return BUNDLE.is_file() and bool(st.get_option("server.enableStaticServing"))


def drawn_by_bundle(spec: dict[str, Any]) -> bool:
    """Whether the cartesian bundle draws every trace of a figure's spec."""
    return all(t.get("type", "scatter") in CARTESIAN_TRACES for t in spec.get("data", ()))


def figure_json(spec: dict[str, Any]) -> str:
    """A figure's spec as the bundle draws it: under Streamlit's chart theme, which the
    figure's own layout overrides (as Streamlit's element applies it)."""
    layout = {**spec.get("layout", {}), "template": streamlit_template()}
    return str(pio.to_json({"data": spec.get("data", []), "layout": layout, "config": CONFIG},
                           validate=False))


def show(fig: go.Figure, *, key: str, where: DeltaGenerator | None = None) -> None:
    """Draw a figure across its column, where asked (a column) or in the page's flow."""
    spec = fig.to_dict()
    if client.runs_scripts() and served() and drawn_by_bundle(spec):
        with nullcontext() if where is None else where:
            _chart(key=key, data={"figure": figure_json(spec), "src": BUNDLE_URL})
    else:
        (st if where is None else where).plotly_chart(fig, width="stretch", key=key)
