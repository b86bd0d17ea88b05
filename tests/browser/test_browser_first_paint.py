"""Issue 24 (speed), in a real browser: a new session's Explorer draws its first chart before the
sidebar's controls (before, the browser revealed them in one commit with the chart), then becomes
the whole page by itself: the controls at the link's values, the charts below the first one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from explorer import Scenario, evaluate
from explorer.ui.chart_view import CHART_SELECTOR
from tests.support import headline
from tests.support.st_client import headline_text, settle

pytestmark = pytest.mark.browser

# When each thing first appeared, in ms since navigation (a MutationObserver from the start).
TIMELINE = """
window.__seen = {};
const WANT = {
  chart: "[data-testid='stMain'] CHARTS .main-svg",
  control: "[data-testid='stSidebar'] [data-testid='stSlider']",
  numbers: NUMBERS,
};
new MutationObserver(() => {
  for (const [k, sel] of Object.entries(WANT))
    if (!(k in window.__seen) && document.querySelector(sel)) window.__seen[k] = performance.now();
  // where the first chart was when it was drawn (the controls then come in their places)
  if ('chart' in window.__seen && !('chartTop' in window.__seen))
    window.__seen.chartTop = document.querySelector(WANT.chart).getBoundingClientRect().top;
}).observe(document, {childList: true, subtree: true});
""".replace("NUMBERS", json.dumps(headline.SELECTOR + " h3")).replace(  # the numbers' values
    "CHARTS", CHART_SELECTOR)
CHART_TOP = (f"() => document.querySelector(\"[data-testid='stMain'] {CHART_SELECTOR} "
             ".main-svg\").getBoundingClientRect().top")


def first_look(chromium, url: str, timeline: str, wanted: tuple[str, ...]):  # type: ignore[no-untyped-def]
    """A new browser context's first visit of `url`, settled, once `wanted` have been seen:
    (context, page, when each thing first appeared)."""
    ctx = chromium.new_context(viewport={"width": 1400, "height": 1000})
    ctx.add_init_script(timeline)
    page = ctx.new_page()
    page.goto(url, timeout=120_000)
    settle(page)
    page.wait_for_function(f"() => {json.dumps(list(wanted))}.every(k => k in window.__seen)",
                           timeout=60_000)
    return ctx, page, page.evaluate("() => window.__seen")


def test_the_first_chart_is_drawn_before_the_controls_then_the_page_is_whole(
        chromium, app_url: str, artifacts: Path):
    ctx, page, seen = first_look(chromium, app_url + "/?b=16&d=5&v=2", TIMELINE,
                                 ("chart", "control"))
    assert {"chart", "control", "numbers"} <= set(seen), seen
    assert seen["numbers"] <= seen["chart"] < seen["control"], seen  # the answer, its chart, then
    # …the whole page: controls at the link's values, what is below the chart, the link as it was
    assert page.get_by_role("slider", name="Draft length D").input_value() == "5"
    page.get_by_text("Show the speedup over (G, D)").wait_for(timeout=60_000)
    assert page.get_by_text("Loading the controls").count() == 0
    # the switcher, the toggle and the Apply button came in places of their height: the chart
    # the person was looking at did not move (it moved ~140 px down before)
    assert abs(page.evaluate(CHART_TOP) - seen["chartTop"]) <= 2, seen
    assert re.search(r"[?&]b=16(&|$)", page.url) and re.search(r"[?&]d=5(&|$)", page.url)
    al = evaluate(Scenario(batch=16, draft_len=5)).acceptance_length
    assert headline_text(page, "Acceptance length") == f"{al:.2f}"
    page.screenshot(path=str(artifacts / "first_paint_whole.png"))
    # a move after it reruns as ever: the controls work
    page.get_by_role("slider", name="Draft length D").focus()
    page.keyboard.press("ArrowLeft")
    settle(page)
    al4 = evaluate(Scenario(batch=16, draft_len=4)).acceptance_length
    assert headline_text(page, "Acceptance length") == f"{al4:.2f}"
    assert re.search(r"[?&]d=4(&|$)", page.url)
    ctx.close()


def test_a_pareto_link_draws_its_chart_before_its_inputs_and_table(chromium, app_url: str):
    """The Pareto view's own inputs (two number fields) and its table (a data grid, ~0.5 MB of
    code) are controls and what is below the chart: drawn in the first paint they came in the
    chart's commit. They now come with the sidebar, the inputs in a place of their height."""
    seen_js = TIMELINE.replace(
        "control: \"[data-testid='stSidebar'] [data-testid='stSlider']\"",
        "control: \"[data-testid='stMain'] [data-testid='stNumberInput']\", "
        "table: \"[data-testid='stMain'] [data-testid='stDataFrame']\"")
    assert seen_js != TIMELINE
    ctx, page, seen = first_look(chromium, app_url + "/?vw=pareto&slo=60&usd=2&v=2", seen_js,
                                 ("chart", "control", "table"))
    assert seen["chart"] < seen["control"] and seen["chart"] < seen["table"], seen
    assert abs(page.evaluate(CHART_TOP) - seen["chartTop"]) <= 2, seen  # the chart did not move
    assert page.get_by_role("spinbutton", name="Per-user speed target").input_value() == "60.00"
    ctx.close()
