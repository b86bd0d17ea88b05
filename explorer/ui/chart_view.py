"""Where a page draws a plotly figure: one home for every chart on screen.

In a browser, a figure whose traces are all cartesian (scatter, bar, heatmap, contour: every chart
of the first screens) is drawn by plotly.js's cartesian bundle (1.5 MB, `static/`, served by
Streamlit's static file serving) instead of `st.plotly_chart`, whose element loads the full
plotly.js (4.7 MB) and evaluates it in one main-thread task of 1.2–1.4 s on 2 loaded cores, the
largest single cost of a chart page (benchmarks/bench_floor.py). The cartesian bundle is the
plotly.js release the figures are built and validated for (4.1.1, which plotly 7.1 ships; Streamlit
1.67's element carries 4.2.0), drawn with Streamlit's own chart theme (static/chart_templates.json,
its light or its dark one as the page is). Figures with other traces (WebGL, 3D) keep Streamlit's
element; so does a client that runs no script (AppTest, the test clients), which reads the same
figure from the element.
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
TEMPLATES = STATIC_DIR / "chart_templates.json"
TEMPLATES_URL = "app/static/chart_templates.json"
# The trace types the cartesian bundle registers (plotly.js's lib/index-cartesian.js).
CARTESIAN_TRACES = frozenset({
    "bar", "box", "contour", "heatmap", "histogram", "histogram2d", "histogram2dcontour",
    "image", "pie", "scatter", "scatterternary", "violin"})
# The attribute the drawn chart's element carries: what tests, benchmarks and the first paint's
# report look for (Streamlit's element is [data-testid='stPlotlyChart']).
TEST_ID = "explorerChart"
CHART_SELECTOR = f":is([data-testid='stPlotlyChart'], [data-testid='{TEST_ID}'])"
CONFIG = {"displaylogo": False}

_JS = r"""
export default function({ data, parentElement }) {
  const root = parentElement.querySelector("[data-testid='__TEST_ID__']");
  if (!root) return;
  // one load per page (plotly.js and Streamlit's chart themes); a failed one is tried again
  if (!window.__explorerPlotly) {
    const url = (path) => new URL(path, document.baseURI).href;
    const script = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = url(data.src);
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => reject(new Error("plotly.js could not be loaded from " + s.src));
      document.head.appendChild(s);
    });
    const themes = fetch(url(data.themes)).then((r) => {
      if (!r.ok) throw new Error("the chart themes could not be loaded from " + r.url);
      return r.json();
    });
    window.__explorerPlotly = Promise.all([script, themes]).catch((e) => {
      window.__explorerPlotly = undefined;
      throw e;
    });
  }
  // the page's theme, as Streamlit's own charts follow it: dark where its background is
  const dark = () => {
    const app = document.querySelector("[data-testid='stApp']");
    const rgb = app ? getComputedStyle(app).backgroundColor.match(/[\d.]+/g) : null;
    return rgb !== null && 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2] < 128;
  };
  let live = true;
  let resize = null;
  window.__explorerPlotly.then(([Plotly, themes]) => {
    if (!live) return;
    const theme = dark() ? "dark" : "light";
    // a run that sends the chart unchanged (a D move under an unmarked heatmap) leaves it be
    const drawn = root.__figure === data.figure && root.__theme === theme ? Promise.resolve()
      : (() => {
        const fig = JSON.parse(data.figure);
        fig.layout.template = themes[theme];
        return Plotly.react(root, fig.data, fig.layout, fig.config).then(() => {
          root.__figure = data.figure;
          root.__theme = theme;
        });
      })();
    return drawn.then(() => {  // a drawing refused reaches the catch below, which says so
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
def streamlit_templates() -> dict[str, Any]:
    """Streamlit's plotly theme, resolved for its light and dark themes (what the browser
    fetches: static/chart_templates.json)."""
    templates: dict[str, Any] = json.loads(TEMPLATES.read_text())
    return {k: v for k, v in templates.items() if k in ("light", "dark")}


def served() -> bool:
    """Whether the browser can fetch the bundle: the file is there and Streamlit serves static/
    (a deployment's own config may turn that off; its charts then keep Streamlit's element)."""
    return (BUNDLE.is_file() and TEMPLATES.is_file()
            and bool(st.get_option("server.enableStaticServing")))


def drawn_by_bundle(spec: dict[str, Any]) -> bool:
    """Whether the cartesian bundle draws every trace of a figure's spec."""
    return all(t.get("type", "scatter") in CARTESIAN_TRACES for t in spec.get("data", ()))


def figure_json(spec: dict[str, Any]) -> str:
    """A figure's spec as the bundle draws it. Its template goes: a figure built where Streamlit
    is imported carries Streamlit's, with placeholder colours its element resolves; the browser
    puts the resolved one for the page's theme in its place, and the figure's own layout
    overrides it (as with Streamlit's element)."""
    layout = {k: v for k, v in spec.get("layout", {}).items() if k != "template"}
    return str(pio.to_json({"data": spec.get("data", []), "layout": layout, "config": CONFIG},
                           validate=False))


def show(fig: go.Figure, *, key: str, where: DeltaGenerator | None = None) -> None:
    """Draw a figure across its column, where asked (a column) or in the page's flow."""
    spec = fig.to_dict()
    if client.runs_scripts() and served() and drawn_by_bundle(spec):
        with nullcontext() if where is None else where:
            _chart(key=key, data={"figure": figure_json(spec), "src": BUNDLE_URL,
                                  "themes": TEMPLATES_URL})
    else:
        (st if where is None else where).plotly_chart(fig, width="stretch", key=key)
