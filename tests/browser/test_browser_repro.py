"""Every file of the shared reproductions, uploaded in a real browser on the Measured data page:
a refused one is named with its problem, a used one is listed; the page keeps running, what was
loaded before stays, and no raw control character reaches the screen."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support import headline
from tests.support.paths import SAMPLES
from tests.support.st_client import data_upload_input, settle
from tests.unit.test_repro import EXPECTED, repro_files

pytestmark = pytest.mark.browser


def test_every_reproduction_is_refused_by_name_or_used_in_the_browser(chromium, app_url: str):
    page = chromium.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(app_url + "/data")
    settle(page)
    upload = data_upload_input(page)
    upload.set_input_files(str(SAMPLES / "al_curve.csv"))
    settle(page)
    page.wait_for_selector("text=Loaded datasets", timeout=30_000)
    for path in repro_files():
        upload.set_input_files(str(path))
        settle(page)
        used, _ = EXPECTED[path.name]
        said = page.get_by_test_id("stAlert").filter(has_text=path.name) if not used else (
            page.locator("body"))
        expect(said.first).to_contain_text("was not loaded" if not used else path.name,
                                           timeout=30_000)
        body = page.locator("body").inner_text()
        assert "al_curve.csv" in body, f"{path.name}: the earlier dataset is gone"
        assert "\x1b" not in body and "\x07" not in body, path.name
        assert page.get_by_test_id("stException").count() == 0, path.name
    page.goto(app_url + "/?v=2")  # the Explorer still answers
    settle(page)
    # a fresh page load: the run may start after settle() saw the empty page idle
    expect(headline.box_in_browser(page, "Speedup")).to_have_count(1, timeout=60_000)
    page.close()
