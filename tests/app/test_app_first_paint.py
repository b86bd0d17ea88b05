"""Issue 24 (speed): a browser session's first Explorer run draws the answer and the first chart
without the sidebar's controls and without what lies below that chart; the report the page then
sends (its first chart drawn) reruns the app, which draws everything for the same values.
AppTest runs no script: the browser is stood in for by `first_paint.runs_scripts`, the report by
the next run (tests/browser/test_browser_first_paint.py has the real one)."""

from __future__ import annotations

import pytest

from explorer import Scenario, evaluate
from explorer.ui import first_paint
from explorer.ui.explorer_page import SHOW_G_KEY
from tests.support import headline
from tests.support.apptest import goto, run_app


def chart_keys(at) -> list[str]:  # type: ignore[no-untyped-def]
    return [c.key for c in at.get("plotly_chart")]


def toggles(at) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.key for t in at.toggle]


def loading(at) -> bool:  # type: ignore[no-untyped-def]
    return any(first_paint.LOADING_NOTE in c.value for c in at.sidebar.caption)


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(first_paint, "runs_scripts", lambda: True)


def test_the_first_paint_is_the_answer_and_the_first_chart_then_the_whole_page(browser):
    at = run_app(b="16", d="5", v="2")
    al = evaluate(Scenario(batch=16, draft_len=5)).acceptance_length
    # the first paint: the link's answer and the first chart; no controls, a note where they go
    assert headline.value(at, "Acceptance length") == f"{al:.2f}"
    assert chart_keys(at) == ["fig_speedup_heatmap"]
    assert SHOW_G_KEY not in toggles(at)  # below the first chart: the next run draws it
    assert not toggles(at) and not at.segmented_control  # controls: with the sidebar's
    assert not at.sidebar.slider and not at.sidebar.selectbox and loading(at)
    assert any("Recommendation" in s.value for s in at.success)
    # the report's rerun: everything, for the same values
    at.run()
    assert not at.exception
    assert chart_keys(at) == ["fig_speedup_heatmap"] and SHOW_G_KEY in toggles(at)
    assert "mark_point" in toggles(at) and at.segmented_control(key="vw").value == "surface"
    assert not loading(at)
    assert at.slider(key="d").value == 5 and at.select_slider(key="b").value == 16
    assert headline.value(at, "Acceptance length") == f"{al:.2f}"
    at.run()  # and every run after it is whole
    assert SHOW_G_KEY in toggles(at) and not loading(at)


def test_a_value_the_sidebar_corrects_is_corrected_when_the_controls_come(browser):
    # TensorRT-LLM does not run on MI300X: the first paint shows the link's values as read; the
    # whole page shows the sidebar's fallback (vLLM) and says why.
    at = run_app(hw="mi300x", eng="trtllm", d="5", v="2")
    assert loading(at)
    at.run()
    at.run()  # the sidebar's correction lays the page out again (explorer_page.render)
    assert not at.exception and not loading(at)
    want = evaluate(Scenario(hardware="mi300x", engine="vllm", draft_len=5))
    assert headline.value(at, "Speedup") == f"{want.speedup:.2f}×"
    assert at.selectbox(key="eng").value == "vllm"


def test_a_first_paint_interrupted_by_another_page_leaves_every_page_whole(browser):
    at = run_app(v="2")
    assert loading(at)
    at = goto(at, "deploy")  # a click on the menu before the report: that page is whole
    assert at.sidebar.selectbox and not loading(at)
    at = goto(at, "")
    assert at.sidebar.slider and not loading(at)
    assert chart_keys(at) == ["fig_speedup_heatmap"] and SHOW_G_KEY in toggles(at)


def test_without_a_browser_the_first_run_is_whole():
    at = run_app(b="16", d="5", v="2")  # AppTest, like a WebSocket client, runs no script
    assert chart_keys(at) == ["fig_speedup_heatmap"] and SHOW_G_KEY in toggles(at)
    assert at.slider(key="d").value == 5 and not loading(at)


def test_a_link_value_the_view_rejects_falls_back_when_the_controls_come(browser):
    # W=4 is ruled out by D=7 (W ≥ 1+D): the first paint prices the chain; the report's run draws
    # the widgets, the next one sets W back and takes it out of the link (controls.RESETS_KEY).
    at = run_app(w="4", d="7", v="2")
    assert loading(at)
    assert headline.value(at, "Speedup") == \
        f"{evaluate(Scenario(draft_len=7)).speedup:.2f}×"
    at.run()
    assert not at.exception and not loading(at)
    assert at.select_slider(key="w").value == 0 and at.slider(key="d").value == 7
    assert "w" not in at.query_params and at.query_params["d"] == "7"


# The kinds of element whose code is in the page's first download (Markdown, what is drawn with
# it, layout); every other kind the browser loads on first use, and a first paint that holds one
# draws its chart later (explorer/ui/headline.py: metrics and a button, ~0.07× the floor). The
# chart is the one it waits for; the report (a component) is what asks for the rest.
FIRST_BUNDLE = {"title", "subheader", "caption", "markdown", "success", "info", "warning",
                "error", "empty", "flex_container", "column", "expander"}
WAITED_FOR = {"plotly_chart", "bidi_component"}


def kinds(node) -> set[str]:  # type: ignore[no-untyped-def]
    own = {str(node.type)} if hasattr(node, "type") else set()
    return own.union(*(kinds(c) for c in getattr(node, "children", {}).values()))


@pytest.mark.parametrize("page", ["", "deploy"])
def test_a_first_paint_draws_only_what_the_page_has_loaded_and_its_chart(browser, page: str):
    at = run_app(v="2")
    if page:  # a new session that opens this page: its first run is the first paint
        at.session_state[first_paint.SHOWN_KEY] = False
        at = goto(at, page)
    assert loading(at)
    drawn = kinds(at.main) | kinds(at.sidebar)
    assert "plotly_chart" in drawn
    assert drawn <= FIRST_BUNDLE | WAITED_FOR | {"main", "sidebar"}, drawn - FIRST_BUNDLE
    at.run()  # the whole page: the controls, the Apply button, what is below the chart
    assert not loading(at) and at.sidebar.selectbox


def test_the_apply_button_and_the_guidelines_come_with_the_controls(browser):
    at = run_app(v="2")  # the default scenario: the recommendation is not the sidebar's point
    assert not at.button and not at.subheader
    assert any("Recommendation" in s.value for s in at.success)
    at.run()
    assert at.button(key="apply_recommendation").label.startswith("Apply: ")
    assert any(h.value == "The five guidelines, evaluated here" for h in at.subheader)
