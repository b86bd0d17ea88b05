"""SpecDec Explorer: `make run` serves this page."""

from __future__ import annotations

import time

import streamlit as st

from explorer.interfaces.view_state import URL_VERSION, VERSION_KEY
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.scenario import Scenario
from explorer.ui import (
    codesign_page,
    compare_page,
    controls,
    data_page,
    deploy_page,
    explorer_page,
    first_paint,
    model_upload,
    share,
    sources_page,
    state,
)

_started = time.perf_counter()
_started_cpu = time.thread_time()  # this run's own CPU (the script thread)
# The tab's icon is an emoji, which Streamlit draws in the page (an inline SVG): a Material icon
# here is fetched from fonts.gstatic.com, which a host with no internet access cannot reach.
st.set_page_config(page_title="SpecDec Explorer", page_icon="⚡", layout="wide")
controls.check_url_once()
if state.ACTIVE_CURVE in st.session_state:  # keep the chosen upload on the other pages, which
    st.session_state[state.ACTIVE_CURVE] = st.session_state[state.ACTIVE_CURVE]  # drop it
share.open_link()  # ?s=<id>: a saved scenario sets the widgets before they exist


def uploaded_curve() -> AcceptanceCurve | None:
    """This session's upload, else the one embedded in the saved scenario it opened."""
    return state.active_curve() or share.loaded_curve()


def scenario_now() -> Scenario | None:
    return explorer_page.current_scenario(values, uploaded_curve(),
                                          state.hardware_overrides())


def explorer() -> None:
    layout = explorer_page.render(values, uploaded_curve(), state.hardware_overrides(), early)
    with layout.top:
        controls.show_url_warnings()
        share.show_opened(values)


def data() -> None:
    data_page.render(explorer_page.current_scenario(
        values, uploaded_curve(), state.hardware_overrides()))


def sources() -> None:
    sources_page.render()


def compare() -> None:
    compare_page.render(scenario_now, values)


def codesign() -> None:
    codesign_page.render(scenario_now)


def deployment() -> None:
    deploy_page.render(scenario_now())


# The Explorer is the default page, at the app's root. `/explorer`, which people type (and the
# page was once linked as), opens it too: a page of its own, not in the menu; without one
# Streamlit shows the default page under a "Page not found" dialog there.
explorer_home = st.Page(explorer, title="Explorer", icon=":material/bolt:",
                        url_path="home", default=True)
explorer_alias = st.Page(explorer, title="Explorer", icon=":material/bolt:",
                         url_path="explorer", visibility="hidden")
page = st.navigation([
    explorer_home,
    explorer_alias,
    st.Page(data, title="Measured data", icon=":material/upload_file:", url_path="data"),
    st.Page(sources, title="Presets & sources", icon=":material/menu_book:", url_path="sources"),
    st.Page(compare, title="Compare", icon=":material/compare:", url_path="compare"),
    codesign_home := st.Page(codesign, title="Co-design", icon=":material/grid_on:",
                             url_path="codesign"),
    deploy_home := st.Page(deployment, title="Deployment", icon=":material/dns:",
                           url_path="deploy"),
])
# The Explorer's title and first chart go out before the sidebar (~15 widgets): the browser
# starts loading plotly.js with the chart, and draws the rest meanwhile. They are built for the
# values the sidebar is about to take; after a run where it took others, in order (render).
early = None
again = bool(st.session_state.pop(explorer_page.EARLY_MISS, False))
on_explorer = page in (explorer_home, explorer_alias)
# A session's first run of a chart page in a browser leaves the controls for the run its first
# chart, once drawn, asks for (explorer/ui/first_paint.py: drawn with it, they delay it 1.4×).
first = first_paint.begin(page in (explorer_home, explorer_alias, codesign_home, deploy_home)
                          and not again)
if on_explorer and not again:
    early = explorer_page.render_first(controls.predicted_values(), uploaded_curve(),
                                       state.hardware_overrides())
if first:  # the values the sidebar is about to take (the next run draws it, and corrects them)
    values = early.values if early is not None else controls.predicted_values()
    first_paint.report_when_drawn()
else:
    values = controls.sidebar(again)
# A write sends the whole query string as this run read it. While a session's first runs
# settle the link (values that fell back removed) that is the point; later, after quick key
# presses, it is older than the browser's and set the URL back (page D=8, URL d=7): then the
# link is written only if its version is missing.
URL_SETTLED = "_url_settled"
if st.query_params.get(VERSION_KEY) != URL_VERSION or not st.session_state.get(URL_SETTLED):
    st.query_params[VERSION_KEY] = URL_VERSION
if not first:
    model_upload.sidebar_note()  # a model from its config.json replaces the preset (Measured data)
    share.save_panel(values, scenario_now)
page.run()
if controls.RESETS_KEY not in st.session_state:
    st.session_state[URL_SETTLED] = True
st.session_state["_script_run_s"] = time.perf_counter() - _started  # read by benchmarks
st.session_state["_script_cpu_s"] = time.thread_time() - _started_cpu
