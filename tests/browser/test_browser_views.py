"""In a real browser: the view switcher and the link, the link keeping up with quick key
presses, and vertical lines on log axes drawn where their value is (plotly.js pixels)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from playwright.sync_api import expect

from explorer import Scenario, pareto
from explorer.ui import figures
from explorer.ui.chart_view import CHART_SELECTOR
from tests.support.st_client import settle

pytestmark = pytest.mark.browser


def test_quick_key_presses_leave_the_url_with_the_view(chromium, app_url: str):
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(app_url + "/?d=3&v=2")
    settle(page)
    slider = page.get_by_role("slider", name="Draft length D")
    d = 3
    # Presses faster than, about as fast as, and a little slower than a rerun: each lands while
    # the run of the last one is under way (the issue: page D=8, URL d=7).
    for gap_ms in (40, 150, 300, 500, 800):
        slider.focus()
        for _ in range(3):
            page.keyboard.press("ArrowRight")
            d += 1
            page.wait_for_timeout(gap_ms)
        settle(page)
        page.wait_for_timeout(1000)
        settle(page)
        shown = slider.input_value()
        assert shown == str(d)
        assert re.search(rf"[?&]d={d}(&|$)", page.url), f"page shows D={shown}, URL {page.url}"
    page.reload()
    settle(page)
    assert page.get_by_role("slider", name="Draft length D").input_value() == str(d)
    page.close()


def test_the_view_is_in_the_link_and_an_old_link_opens_the_default(chromium, app_url: str):
    page = chromium.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(app_url + "/?b=8&v=1")  # an old link: no view
    settle(page)
    charts = page.locator(CHART_SELECTOR)
    expect(charts).to_have_count(1, timeout=60_000)  # (B, D); (G, D) and 3D when asked
    expect(charts).to_contain_text("Speedup over (B, D)", timeout=60_000)
    assert "vw=" not in page.url
    page.get_by_role("radio", name="Pareto & SLO", exact=True).click()
    settle(page)
    assert re.search(r"[?&]vw=pareto(&|$)", page.url) and "b=8" in page.url, page.url
    expect(charts).to_contain_text("Pareto frontier", timeout=60_000)
    other = chromium.new_page(viewport={"width": 1400, "height": 1200})
    other.goto(page.url)
    settle(other)
    expect(other.locator(CHART_SELECTOR)).to_contain_text(
        "Pareto frontier", timeout=60_000)
    page.close()
    other.close()


def test_a_vertical_line_on_a_log_axis_is_drawn_at_its_value(chromium):
    """plotly.js itself: the SLO line for 120 tokens/s sits where the x axis puts 120."""
    from plotly.offline import get_plotlyjs

    with_spec, without = pareto(Scenario())
    fig = figures.pareto_figure(with_spec, without, None, (10.0, 100.0), slo=120.0)
    page = chromium.new_page(viewport={"width": 1000, "height": 700})
    page.set_content("<div id='g' style='width:900px;height:600px'></div>")
    page.add_script_tag(content=get_plotlyjs())
    spec = json.loads(fig.to_json())
    got = page.evaluate("""async (spec) => {
        const gd = document.getElementById('g');
        await Plotly.newPlot(gd, spec.data, spec.layout);
        const xa = gd._fullLayout.xaxis;
        const line = gd.querySelector('.shapelayer path').getBoundingClientRect();
        const left = gd.getBoundingClientRect().left + xa._offset;  // the plot area's left
        const note = [...gd.querySelectorAll('.annotation')]
            .find(a => a.textContent.includes('SLO'));
        const nb = note.getBoundingClientRect();
        return {line: line.left + line.width / 2 - left, want: xa.l2p(Math.log10(120)),
                note: nb.left + nb.width / 2 - left};
    }""", spec)
    page.close()
    assert abs(got["line"] - got["want"]) < 3, got  # was at log10(120) ≈ 2 tokens/s
    assert abs(got["note"] - got["want"]) < 40, got
    assert np.isfinite(got["want"])


def test_a_d_move_leaves_the_surface_charts_drawn_unless_the_point_is_marked(chromium,
                                                                             app_url: str):
    """Unmarked, the heatmaps' plotly nodes survive a D move (their spec does not depend on D);
    marked, they carry the current point, and it moves with D."""
    page = chromium.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(app_url + "/?v=2")
    settle(page)
    page.get_by_text("Show the speedup over (G, D)").click()  # the second surface, on request
    settle(page)
    page.wait_for_function(f"() => [...document.querySelectorAll(\"{CHART_SELECTOR}\")]"
                           ".filter(c => c.querySelector('.main-svg')).length === 2",
                           timeout=60_000)
    page.wait_for_timeout(1000)  # the first drawing done
    tag = """() => document.querySelectorAll('.js-plotly-plot').forEach(
        (g, i) => { g.dataset.tag = 'drawn' + i; })"""
    tags = "() => [...document.querySelectorAll('.js-plotly-plot')].map(g => g.dataset.tag || '')"
    page.evaluate(tag)
    slider = page.get_by_role("slider", name="Draft length D")
    slider.focus()
    page.keyboard.press("ArrowRight")
    settle(page)
    assert "D = 4" in page.locator("body").inner_text()  # the caption names the point
    assert page.evaluate(tags) == ["drawn0", "drawn1"]
    # what each chart shows of the point: its last traces, shapes and notes
    shown = """() => [...document.querySelectorAll('.js-plotly-plot')].map(g => JSON.stringify(
        [g.data.length, g.data.slice(-2), g.layout.shapes || [], g.layout.annotations || []]))"""
    unmarked = page.evaluate(shown)
    page.get_by_text("Mark the current point on the charts").click()
    settle(page)
    page.wait_for_function(f"""() => {{ const now = ({shown})(), was = {json.dumps(unmarked)};
        return now.length === 2 && now.every((s, i) => s !== was[i]); }}""", timeout=30_000)
    at_d5 = page.evaluate(shown)
    slider.focus()
    page.keyboard.press("ArrowRight")
    settle(page)
    assert re.search(r"[?&]d=5(&|$)", page.url), page.url
    page.wait_for_function(f"""() => {{ const now = ({shown})(), was = {json.dumps(at_d5)};
        return now.length === 2 && now.every((s, i) => s !== was[i]); }}""", timeout=30_000)
    page.close()


# Each chart whose axes keep their margins (figures.fixed_margins): its labels in the figure, the
# axis titles clear of the tick labels (plotly.js pixels).
_LABEL_BOXES_JS = """(chart) => {
    const box = (e) => { const r = e.getBoundingClientRect();
                         return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
    const all = (sel) => [...chart.querySelectorAll(sel)].filter(e => e.textContent.trim())
                                                        .map(box);
    return {svg: box(chart.querySelector('.main-svg')), xtitle: all('.g-xtitle text'),
            ytitle: all('.g-ytitle text'), xticks: all('.xtick text'),
            yticks: all('.ytick text')};
}"""


@pytest.mark.parametrize("path", ["", "deploy", "codesign"])
def test_fixed_margins_hold_the_axis_labels(chromium, app_url: str, path: str):
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{app_url}/{path}")
    settle(page)
    chart = page.locator(CHART_SELECTOR).first
    expect(chart.locator(".main-svg").first).to_be_visible(timeout=60_000)
    b = chart.evaluate(_LABEL_BOXES_JS)
    svg = b["svg"]
    texts = b["xtitle"] + b["ytitle"] + b["xticks"] + b["yticks"]
    assert b["xtitle"] and b["ytitle"] and b["xticks"] and b["yticks"], b
    for t in texts:  # nothing cut off at the figure's edge
        assert svg["l"] - 1 <= t["l"] and t["r"] <= svg["r"] + 1, (t, svg)
        assert svg["t"] - 1 <= t["t"] and t["b"] <= svg["b"] + 1, (t, svg)
    assert max(t["r"] for t in b["ytitle"]) <= min(t["l"] for t in b["yticks"]), b
    assert min(t["t"] for t in b["xtitle"]) >= max(t["b"] for t in b["xticks"]), b
    page.close()
