"""Issue 24: `/explorer`, the address people type for the Explorer (the default page, served at the
app's root), opens it cleanly — not under Streamlit's "Page not found" dialog — with the link's
values; an address that is no page still gets the dialog."""

from __future__ import annotations

import pytest

from explorer import Scenario, evaluate
from tests.support.st_client import StSession


@pytest.mark.parametrize("path", ["", "explorer"])
def test_the_explorer_opens_at_its_addresses(app_url: str, path: str) -> None:
    with StSession(app_url) as s:
        run = s.rerun("d=5&b=16", page=path)
    assert run.status == 0 and not run.exceptions
    assert not run.page_not_found
    assert [h.body for h in run.of_type("heading")][:1] == ["SpecDec Explorer"]
    # the default view's (B, D) heatmap, once (the (G, D) one is drawn on request)
    assert len(run.of_type("plotly_chart")) == 1
    al = evaluate(Scenario(batch=16, draft_len=5)).acceptance_length
    assert run.headline("Acceptance length") == f"{al:.2f}"


def test_an_address_that_is_no_page_is_still_named(app_url: str) -> None:
    with StSession(app_url) as s:
        run = s.rerun(page="no-such-page")
    assert run.page_not_found
    assert [h.body for h in run.of_type("heading")][:1] == ["SpecDec Explorer"]
