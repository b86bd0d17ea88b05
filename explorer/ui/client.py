"""What the session's client is: the one place the UI tells a browser from a test client."""

from __future__ import annotations

import streamlit as st


def runs_scripts() -> bool:
    """A web browser (every one names itself "Mozilla/5.0 …"): the one client that runs a page's
    scripts (the first paint's report, the charts' plotly.js). AppTest sends no headers; the
    test clients name themselves otherwise."""
    return str(st.context.headers.get("User-Agent", "")).startswith("Mozilla/")
