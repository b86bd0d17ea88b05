"""Issue 24 (speed): the Explorer sends its title and first chart before the sidebar, so the
browser starts loading plotly.js first and draws the ~20 sidebar widgets meanwhile — built for
the values the sidebar then shows; where the sidebar corrects a link's value, the page is laid
out again in order, never a chart for other values than the sidebar's."""

from __future__ import annotations

from explorer import Scenario, evaluate
from tests.support.st_client import Run, StSession

MAIN, SIDEBAR = 0, 1


def _first(run: Run, where: int, kind: str | None = None) -> int:
    return next(i for i, (p, e) in enumerate(zip(run.paths, run.elements, strict=True))
                if p[0] == where and (kind is None or e.WhichOneof("type") == kind))


def test_the_first_chart_goes_out_before_the_sidebar(app_url: str) -> None:
    with StSession(app_url) as s:
        run = s.rerun("d=5&b=16")
    assert run.status == 0 and not run.exceptions
    chart, sidebar = _first(run, MAIN, "plotly_chart"), _first(run, SIDEBAR)
    assert chart < sidebar, (chart, sidebar)
    assert _first(run, MAIN, "heading") < chart  # the title first
    # …and the numbers above it are this link's: B=16, D=5
    al = evaluate(Scenario(batch=16, draft_len=5)).acceptance_length
    assert run.headline("Acceptance length") == f"{al:.2f}"
    assert [c.id.rsplit("-", 1)[-1] for c in run.of_type("plotly_chart")] == [
        "fig_speedup_heatmap"]


def test_a_value_the_sidebar_corrects_lays_the_page_out_again_for_its_value(app_url: str) -> None:
    # TensorRT-LLM does not run on MI300X: the engine selector falls back to vLLM. The page
    # must show vLLM's numbers, as the sidebar does.
    with StSession(app_url) as s:
        run = s.rerun("hw=mi300x&eng=trtllm&d=5")
    assert run.status == 0 and not run.exceptions
    want = evaluate(Scenario(hardware="mi300x", engine="vllm", draft_len=5))
    assert run.headline("Speedup") == f"{want.speedup:.2f}×"
    assert any("eng=trtllm" in a for a in run.alerts())
    assert len(run.of_type("plotly_chart")) == 1  # the view once, not twice
