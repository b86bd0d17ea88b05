"""In a real browser: upload a target's config.json on the Measured data page, see the model in
the explorer (its numbers, the sidebar says so), save it and open the saved link in a fresh
browser context, and the plain link (the model packed in `cm=`) in another."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from explorer import Scenario, evaluate
from explorer.measured.hf_config import read_config_file, shipped_config_paths
from tests.support import headline
from tests.support.st_client import headline_text, settle

pytestmark = pytest.mark.browser

CONFIG = next(p for p in shipped_config_paths() if p.name == "Qwen--Qwen3-32B_config.json")



def speedup(page) -> str:  # type: ignore[no-untyped-def]
    headline.box_in_browser(page, "Speedup").wait_for(timeout=60_000)
    return headline_text(page, "Speedup")


def test_an_uploaded_config_is_the_target_and_its_saved_link_reopens_it(
        chromium, app_url: str, artifacts: Path, tmp_path: Path):
    config = tmp_path / "config.json"  # the name a checkpoint's config has
    config.write_bytes(CONFIG.read_bytes())
    ctx = chromium.new_context(viewport={"width": 1400, "height": 2600})
    page = ctx.new_page()
    page.goto(app_url + "/data")
    settle(page)
    uploader = page.get_by_test_id("stFileUploader").filter(has_text="Upload config.json")
    uploader.locator("input[type='file']").set_input_files(str(config))
    settle(page)
    page.wait_for_selector("text=Use as the target model", timeout=30_000)
    assert "64 layers" in page.locator("body").inner_text()
    page.get_by_role("button", name="Use as the target model").click()
    settle(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Explorer").click()
    settle(page)
    sidebar = page.get_by_test_id("stSidebar")
    assert "Target model: config (your config.json)" in sidebar.inner_text()
    spec = read_config_file(config, name="config").model
    assert spec is not None
    expected = evaluate(Scenario(tp=2, model=spec.slug, custom_model=spec)).speedup
    shown = speedup(page)
    assert shown == f"{expected:.2f}×"
    assert shown != f"{evaluate(Scenario(tp=2)).speedup:.2f}×"  # not the preset's answer
    plain_link = page.url  # the page writes the packed model into a plain link (`cm=`)
    assert "cm=" in plain_link

    sidebar.get_by_test_id("stExpander").filter(has_text="Save & share").locator(
        "summary").click()
    settle(page)  # the form is drawn by the run the opening starts: fill it after that run
    sidebar.get_by_label("Name").fill("my Qwen3-32B config")
    sidebar.get_by_test_id("stFormSubmitButton").get_by_role("button").click()
    settle(page)
    link = sidebar.get_by_test_id("stCode").first.inner_text().strip()
    assert re.fullmatch(r"\?s=[A-Za-z0-9_-]{22,}", link), link
    page.screenshot(path=str(artifacts / "model_config_saved.png"), full_page=True)

    other_ctx = chromium.new_context(viewport={"width": 1400, "height": 2200})
    other = other_ctx.new_page()
    other.goto(f"{app_url}/{link}")
    settle(other)
    assert speedup(other) == shown
    body = other.locator("body").inner_text()
    assert "my Qwen3-32B config" in body and "Target model: config (your config.json)" in body
    assert other.locator("[data-testid='stException']").count() == 0
    other.screenshot(path=str(artifacts / "model_config_opened.png"), full_page=True)
    linked_ctx = chromium.new_context(viewport={"width": 1400, "height": 2200})
    linked = linked_ctx.new_page()
    linked.goto(plain_link)  # no saved scenario: the link alone carries the model
    settle(linked)
    assert speedup(linked) == shown
    assert "Target model: config (your config.json)" in linked.locator("body").inner_text()
    ctx.close()
    other_ctx.close()
    linked_ctx.close()
