"""A session's first look at a chart page: the answer and its first chart before the controls.

Measured (benchmarks/bench_floor.py, Chrome's DOM timeline on 2 cores): the browser reveals the
sidebar's ~20 widgets, whose code it loads per widget kind, in the same React commit as the first
chart, after plotly.js is evaluated; the page then shows nothing new for 0.5–1 s and the chart
comes 1.4× later than in a one-chart app. Without the sidebar the headline shows while plotly.js
loads and the chart comes 1.1–1.2× later.

So a browser session's first run of the Explorer (and of Co-design and Deployment, whose one
chart the sidebar held back alike) draws the page for the values the sidebar would take
(controls.predicted_values) with a "Loading the controls…" note in the sidebar and the charts
below the first one left for later, and a few lines of script in the page report when the first
chart is drawn (or after 10 s: a chart that never draws must not keep the controls away). The
report reruns the app, which draws everything; every later run is whole. A client that runs no
script (AppTest, a WebSocket test client) could never report, so it gets the whole page at once.
"""

from __future__ import annotations

import streamlit as st

from explorer.ui.chart_view import CHART_SELECTOR
from explorer.ui.client import runs_scripts

SHOWN_KEY = "_first_paint_shown"  # the session had its first paint (or needed none)
NOW_KEY = "_first_paint_now"  # this run is the first paint
CHART_KEY = "_first_paint_chart"  # the first paint drew its chart
REPORT_KEY = "first_chart_drawn"
LOADING_NOTE = "Loading the controls…"

# Reports once the main area's first chart has drawn its SVG (plotly draws a chart in one task:
# seen from a frame's callback, it is whole; the run asked for starts while it is painted);
# where the view has no chart (none, and nothing of it still loading), at once; at worst after
# 10 s.
_REPORT_JS = """
const CHARTS = "__CHARTS__";
export default function({ setTriggerValue }) {
  const t0 = performance.now();
  let done = false;
  const report = () => {
    done = true;
    setTriggerValue('drawn', true);
  };
  const check = () => {
    if (done) return;
    const main = document.querySelector("[data-testid='stMain']");
    const charts = main ? [...main.querySelectorAll(CHARTS)] : [];
    const loading = main !== null && main.querySelector("[data-testid='stSkeleton']") !== null;
    if (charts.some(c => c.querySelector('.main-svg')) || (main && !charts.length && !loading)
        || performance.now() - t0 > 10000) report();
    else requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
}
""".replace("__CHARTS__", CHART_SELECTOR)
_report = st.components.v2.component("first_chart_drawn", js=_REPORT_JS)


def begin(chart_page: bool) -> bool:
    """Decide, once per run, whether this run is the session's first paint: the session's first
    run, of a page that opens on a chart (the Explorer, Co-design, Deployment), in a browser.
    Any other first run spends the chance: a session has one first paint, on the page it
    opened."""
    now = not st.session_state.get(SHOWN_KEY) and chart_page and runs_scripts()
    st.session_state[SHOWN_KEY] = True
    st.session_state[NOW_KEY] = now
    st.session_state[CHART_KEY] = False
    return now


def now() -> bool:
    """This run is the first paint: draw what the first screen shows, leave the rest."""
    return bool(st.session_state.get(NOW_KEY))


def draws_chart() -> bool:
    """Whether a chart is drawn in this run: in the first paint the view's first chart only
    (what is below it, the page's next run draws); otherwise every chart."""
    if not now():
        return True
    drawn, st.session_state[CHART_KEY] = st.session_state.get(CHART_KEY), True
    return not drawn


# The heights of the controls a first paint leaves a place for (px, as drawn in Chromium): the
# place holds their room, so the chart below does not move when they come.
BUTTON_PX, SEGMENTED_PX, TOGGLE_PX, NUMBER_INPUT_PX = 40, 32, 24, 68


def place(height_px: int) -> None:
    """An empty place of a control's height, where the next run draws the control."""
    st.container(height=height_px, border=False)


def report_when_drawn() -> None:
    """The sidebar of the first paint: the note, and the script that asks for the whole page."""
    with st.sidebar:
        st.caption(LOADING_NOTE)
        _report(key=REPORT_KEY, on_drawn_change=_whole_page)


def _whole_page() -> None:
    """The report's callback: the rerun it starts draws everything (SHOWN_KEY is set)."""
    st.session_state[NOW_KEY] = False
