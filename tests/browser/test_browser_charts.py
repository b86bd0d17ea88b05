"""Issue 24 (speed), in a real browser: the Explorer's charts are drawn by plotly.js's cartesian
bundle (explorer/ui/chart_view.py) without Streamlit's 4.7 MB plotly.js, follow their column's
width, and a WebGL figure is drawn by Streamlit's element."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from explorer.ui import chart_view
from tests.support.st_client import settle

pytestmark = pytest.mark.browser

BUNDLED = f"[data-testid='{chart_view.TEST_ID}']"
STREAMLIT = "[data-testid='stPlotlyChart']"


def test_charts_are_drawn_by_the_cartesian_bundle_and_webgl_by_streamlit(chromium, app_url: str):
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(app_url + "/?v=2")
    settle(page)
    chart = page.locator(BUNDLED).first
    expect(chart.locator(".main-svg").first).to_be_visible(timeout=60_000)
    expect(chart).to_contain_text("Speedup over (B, D)")
    assert page.locator(STREAMLIT).count() == 0
    assert any(u.endswith(chart_view.BUNDLE_URL) for u in requested), requested
    assert not any("/PlotlyChart." in u for u in requested)  # Streamlit's plotly.js: not loaded
    # the chart follows its column: wider once the sidebar is closed
    width = chart.locator(".main-svg").first.bounding_box()["width"]
    page.get_by_test_id("stSidebarHeader").hover()  # the button shows on hover
    page.get_by_role("button", name="Collapse sidebar").click()
    page.wait_for_function(
        f"(w) => document.querySelector(\"{BUNDLED} .main-svg\").getBoundingClientRect().width"
        " > w + 100", arg=width, timeout=30_000)
    # the 3D surface needs WebGL traces, which the bundle does not hold: Streamlit's element
    page.get_by_text("Show the 3D surface (WebGL)").click()
    settle(page)
    expect(page.locator(f"{STREAMLIT} .main-svg").first).to_be_visible(timeout=60_000)
    assert any("/PlotlyChart." in u for u in requested)
    page.close()


def test_a_dark_page_draws_its_charts_in_streamlits_dark_theme(chromium, app_url: str):
    ctx = chromium.new_context(viewport={"width": 1400, "height": 1000}, color_scheme="dark")
    page = ctx.new_page()
    page.goto(app_url + "/?v=2")
    settle(page)
    chart = page.locator(BUNDLED).first
    expect(chart.locator(".main-svg").first).to_be_visible(timeout=60_000)
    paper = chart.evaluate("(c) => c._fullLayout.paper_bgcolor")
    dark = chart_view.streamlit_templates()["dark"]["layout"]["paper_bgcolor"]
    assert paper.lower() == dark.lower(), (paper, dark)
    ctx.close()
