"""In a real browser (system Chromium): sliders move the URL and the answer; links reproduce."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from explorer.ui.chart_view import CHART_SELECTOR
from tests.support.paths import SAMPLES
from tests.support.st_client import data_upload_input, headline_text, settle

pytestmark = pytest.mark.browser




def recommendation(page) -> str:  # type: ignore[no-untyped-def]
    alert = page.locator("[data-testid='stAlert']").filter(has_text="Recommendation:").first
    return str(alert.inner_text())


def test_sliders_url_recommendation_and_shared_link(chromium, app_url: str, artifacts: Path):
    ctx = chromium.new_context(viewport={"width": 1400, "height": 3000})
    page = ctx.new_page()
    page.goto(app_url)
    settle(page)
    speedup0 = headline_text(page, "Speedup")
    rec0 = recommendation(page)

    d = page.get_by_role("slider", name="Draft length D")
    d.focus()
    for _ in range(4):
        page.keyboard.press("ArrowRight")
        settle(page)
    assert re.search(r"[?&]d=7", page.url), page.url
    speedup1 = headline_text(page, "Speedup")
    assert speedup1 != speedup0

    b = page.get_by_role("slider", name="Batch B (sequences, log scale)")
    b.focus()
    for _ in range(6):
        page.keyboard.press("ArrowLeft")
        settle(page)
    assert re.search(r"[?&]b=4(&|$)", page.url), page.url
    rec1 = recommendation(page)
    assert rec1 != rec0, "the recommendation follows B"
    page.screenshot(path=str(artifacts / "explorer_full.png"), full_page=True)

    shared = page.url
    assert len(shared) < 2048
    other_ctx = chromium.new_context(viewport={"width": 1400, "height": 3000})
    other = other_ctx.new_page()
    other.goto(shared)
    settle(other)
    assert headline_text(other, "Speedup") == headline_text(page, "Speedup")
    assert headline_text(other, "Tokens/s per GPU") == headline_text(page, "Tokens/s per GPU")
    assert recommendation(other) == rec1
    assert other.get_by_role("slider", name="Draft length D").input_value() == "7"

    for view, slug_in_url in (("Tile steps", "tiles"), ("GEMM efficiency", "gemm"),
                              ("AL vs D", "al"), ("Pareto & SLO", "pareto"),
                              ("Where the time goes", "time"), ("Mechanisms", "mechanisms")):
        other.get_by_role("radio", name=view, exact=True).click()
        settle(other)
        slug = view.lower().replace(" ", "_").replace("&", "and")
        other.screenshot(path=str(artifacts / f"view_{slug}.png"), full_page=True)
        assert other.locator("[data-testid='stException']").count() == 0
        assert re.search(rf"[?&]vw={slug_in_url}(&|$)", other.url), other.url
        assert other.locator(CHART_SELECTOR).count() >= 1
    ctx.close()
    other_ctx.close()


PAGES = ("", "data", "sources", "compare", "codesign", "deploy", "?v=al", "?v=pareto",
         "?v=tiles", "?v=gemm", "?v=time", "?v=mechanisms", "?v=sources", "?v=export")


def test_every_page_asks_only_its_own_host(chromium, app_url: str):
    """A deployment with no internet access (a lab's own network) loads every page whole: no
    font, icon or script comes from elsewhere (the tab's icon once came from fonts.gstatic.com)."""
    page = chromium.new_page()
    elsewhere: list[str] = []
    page.on("request", lambda r: None if r.url.split(":", 1)[0] in ("data", "blob")
            or r.url.startswith(app_url) else elsewhere.append(r.url))
    for path in PAGES:
        page.goto(f"{app_url}/{path}")
        settle(page)
    page.wait_for_timeout(500)  # the icon is set after the script run
    assert elsewhere == [], elsewhere
    page.close()


def test_bad_link_warns_in_the_page(chromium, app_url: str):
    page = chromium.new_page()
    page.goto(app_url + "/?d=99&hw=nope&v=2")
    settle(page)
    body = page.locator("body").inner_text()
    assert "URL parameter 'd=99'" in body and "URL parameter 'hw=nope'" in body
    assert headline_text(page, "Speedup").endswith("×")
    page.close()


def test_verify_width_widget_moves_the_url_and_a_bad_w_falls_back(chromium, app_url: str):
    from explorer import Scenario, evaluate

    page = chromium.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(app_url)
    settle(page)
    w = page.get_by_role("slider", name="Verify width W (tokens per sequence, trees)")
    w.focus()
    for _ in range(3):  # chain → 4 → 8 → 16
        page.keyboard.press("ArrowRight")
        settle(page)
    assert re.search(r"[?&]w=16(&|$)", page.url), page.url
    assert headline_text(page, "Speedup") == f"{evaluate(Scenario(verify_width=16)).speedup:.2f}×"

    page.goto(app_url + "/?w=4&d=7&v=2")  # W = 4 < 1+D = 8: named, and the chain is shown
    settle(page)
    body = page.locator("body").inner_text()
    assert "URL parameter 'w=4' (verify width W)" in body, body[:2000]
    assert not re.search(r"[?&]w=", page.url) and re.search(r"[?&]d=7", page.url), page.url
    assert headline_text(page, "Speedup") == f"{evaluate(Scenario(draft_len=7)).speedup:.2f}×"
    page.close()


def test_upload_curve_then_broken_file_keeps_the_old_curve(chromium, app_url: str,
                                                           artifacts: Path, tmp_path: Path):
    page = chromium.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(app_url + "/data")
    settle(page)
    upload = data_upload_input(page)
    sample = SAMPLES / "al_curve.csv"
    upload.set_input_files(str(sample))
    settle(page)
    page.wait_for_selector("text=Loaded datasets", timeout=30_000)
    assert page.locator(CHART_SELECTOR).count() >= 1
    assert "al_curve.csv" in page.locator("body").inner_text()

    broken = tmp_path / "broken.csv"
    broken.write_text("mechanism,dataset,D,AL\neagle3,gsm8k,2,3.9\nmedusa,gsm8k,x,1.2\n")
    upload.set_input_files(str(broken))
    settle(page)
    body = page.locator("body").inner_text()
    assert "broken.csv" in body and "was not loaded" in body
    assert "row 1" in body and "row 2" in body, body[:2000]
    assert "al_curve.csv" in body, "the earlier dataset is still loaded"
    assert page.locator(CHART_SELECTOR).count() >= 1
    page.screenshot(path=str(artifacts / "data_upload.png"), full_page=True)

    page.goto(app_url + "/?acc=upload&v=2")  # same session? no: a fresh page has no upload
    settle(page)
    assert "no uploaded curve yet" in page.locator("body").inner_text()
    page.close()


def test_measured_step_times_replace_the_model_in_the_explorer(chromium, app_url: str):
    page = chromium.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(app_url + "/?m=llama-3.1-8b&tp=1&b=8&v=2")
    settle(page)
    before = headline_text(page, "Speedup")
    page.get_by_role("link", name="Measured data").click()
    settle(page)
    sample = SAMPLES / "step_times.csv"
    data_upload_input(page).set_input_files(
        str(sample))
    settle(page)
    page.get_by_role("button", name="Use these step times in the explorer").click()
    settle(page)
    assert "uses your measured step times" in page.locator("body").inner_text()
    page.get_by_role("link", name="Explorer").click()
    settle(page)
    assert headline_text(page, "Speedup") != before
    page.get_by_role("radio", name="Sources", exact=True).click()
    settle(page)
    assert "measured verify step times" in page.locator("body").inner_text()
    page.close()


def test_a_repeated_or_respelled_parameter_is_named_shown_and_the_url_made_plain(
        chromium, app_url: str):
    from explorer import Scenario, evaluate

    page = chromium.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(app_url + "/?d=7&d=abc&rho=1e-2&L=%2B07&v=2")  # %2B: '+' itself means a space
    settle(page)
    body = page.locator("body").inner_text()
    assert "URL parameter 'd' (draft length D) is given 2 times" in body, body[:2000]
    assert page.get_by_role("slider", name="Draft length D").input_value() == "7"
    assert len(re.findall(r"[?&]d=", page.url)) == 1 and re.search(r"[?&]d=7(&|$)", page.url)
    assert re.search(r"[?&]rho=0\.01(&|$)", page.url), page.url
    assert re.search(r"[?&]L=7(&|$)", page.url), page.url
    assert headline_text(page, "Speedup") == (
        f"{evaluate(Scenario(draft_len=7, rho=0.01, layers=7)).speedup:.2f}×")
    page.close()


def test_apply_recommendation_moves_the_sidebar_the_metrics_and_the_url(chromium, app_url: str):
    from explorer import Scenario, recommend

    sc = Scenario(batch=4)
    best = recommend(sc).best
    assert best is not None and (best.mechanism, best.draft_len) != (sc.mechanism, sc.draft_len)
    page = chromium.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(app_url + "/?b=4&v=2")
    settle(page)
    page.get_by_role("button", name=re.compile(r"^Apply: ")).click()
    settle(page)
    if best.mechanism != sc.mechanism:
        assert re.search(rf"[?&]mech={best.mechanism}(&|$)", page.url), page.url
    assert re.search(rf"[?&]d={best.draft_len}(&|$)", page.url), page.url
    assert headline_text(page, "Speedup") == f"{best.speedup:.2f}×"
    assert page.get_by_role("slider", name="Draft length D").input_value() == str(best.draft_len)
    body = page.locator("body").inner_text()
    assert "The sidebar is at the recommendation." in body
    reopened = chromium.new_page(viewport={"width": 1400, "height": 2400})
    reopened.goto(page.url)  # the link carries the applied choice
    settle(reopened)
    assert headline_text(reopened, "Speedup") == f"{best.speedup:.2f}×"
    page.close()
    reopened.close()


def test_preset_selects_show_names_and_write_slugs_into_the_link(chromium, app_url: str):
    page = chromium.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(app_url + "/?hw=h100&v=1")  # a link from before names were shown
    settle(page)
    box = page.get_by_role("combobox", name="Hardware")
    assert box.input_value() == "NVIDIA datacenter · H100 SXM"  # its selector group first
    box.click()
    page.get_by_role("option", name="NVIDIA datacenter · B200 HGX (1000 W)").click()
    settle(page)
    assert re.search(r"[?&]hw=b200(&|$)", page.url), page.url
    assert "B200" not in page.url
    speedup = headline_text(page, "Speedup")
    page.reload()
    settle(page)
    assert box.input_value() == "NVIDIA datacenter · B200 HGX (1000 W)"
    assert headline_text(page, "Speedup") == speedup
    page.close()
