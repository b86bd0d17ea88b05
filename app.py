"""SpecDec Explorer: `make run` serves this page."""

from __future__ import annotations

import time

import streamlit as st

from explorer.ui import controls, data_page, explorer_page, sources_page

_started = time.perf_counter()
st.set_page_config(page_title="SpecDec Explorer", page_icon=":material/bolt:", layout="wide")
controls.check_url_once()
values = controls.sidebar()
st.query_params["v"] = "1"


def explorer() -> None:
    controls.show_url_warnings()
    explorer_page.render(values, data_page.active_curve(), data_page.hardware_overrides())


def data() -> None:
    data_page.render(explorer_page.current_scenario(
        values, data_page.active_curve(), data_page.hardware_overrides()))


def sources() -> None:
    sources_page.render()


page = st.navigation([
    st.Page(explorer, title="Explorer", icon=":material/bolt:", url_path="explorer", default=True),
    st.Page(data, title="Measured data", icon=":material/upload_file:", url_path="data"),
    st.Page(sources, title="Presets & sources", icon=":material/menu_book:", url_path="sources"),
])
page.run()
st.session_state["_script_run_s"] = time.perf_counter() - _started  # read by benchmarks
