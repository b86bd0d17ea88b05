"""Compare figures and the differing-inputs table as pure functions (no server)."""

from __future__ import annotations

import numpy as np

from explorer import evaluate
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.scenario import Acceptance, Scenario
from explorer.ui import compare_figures as cf
from explorer.ui.compare_page import CompareItem, differing_inputs


def series(label: str, sc: Scenario) -> cf.CompareSeries:
    ev = evaluate(sc)
    current = (ev.tokens_per_s_per_user, ev.tokens_per_s_per_gpu)
    return cf.compare_series(label, sc, current)  # type: ignore[arg-type]


def test_speedup_overlay_marks_each_scenarios_own_point():
    a, b = Scenario(batch=8, draft_len=3), Scenario(batch=16, draft_len=7, mechanism="mtp", tp=4)
    fig = cf.speedup_overlay([series("A", a), series("B", b)])
    names = [t.name for t in fig.data]
    assert names[0] == "A (B=8)" and "B (B=16)" in names and "no speedup" in names
    marks = [t for t in fig.data if t.marker.symbol == "x"]
    assert [float(m.x[0]) for m in marks] == [3, 7]
    for m, sc in zip(marks, (a, b), strict=True):
        assert abs(float(m.y[0]) - evaluate(sc).speedup) < 1e-6  # type: ignore[operator]
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    too_big = cf.speedup_overlay([series("C", Scenario(batch=64, draft_len=7, mechanism="mtp"))])
    assert not [t for t in too_big.data if t.marker.symbol == "x"], "no point where it cannot fit"
    line = series("A", a)
    assert line.speedup[0] == 1.0 and np.nanmax(line.speedup) > 1.0


def test_pareto_and_al_overlays_have_one_group_per_scenario():
    sc = [Scenario(), Scenario(acceptance=Acceptance(kind="iid", alpha=0.5))]
    s = [series("A", sc[0]), series("B", sc[1])]
    pareto = cf.pareto_overlay(s, slo=30.0)
    assert {t.legendgroup for t in pareto.data} == {"0", "1"}
    assert pareto.layout.xaxis.type == "log" and pareto.layout.shapes
    al = cf.al_overlay(s)
    b_line = next(t for t in al.data if t.name == "B")
    d, al_b = np.asarray(b_line.x), np.asarray(b_line.y)
    assert abs(al_b[d == 3][0] - (1 - 0.5**4) / 0.5) < 1e-5


def test_user_text_in_labels_is_not_html():
    fig = cf.al_overlay([series("<b>x</b>", Scenario())])
    assert fig.data[0].name == "&lt;b&gt;x&lt;/b&gt;"


def test_differing_inputs_lists_only_what_differs_with_curves_summarised():
    curve = AcceptanceCurve(label="mine", draft_lens=(1, 2), acceptance_lengths=(1.5, 2.0))
    items = [
        CompareItem("pin:1", "one", Scenario(), {"slo": 30.0}),
        CompareItem("pin:2", "two", Scenario(draft_len=2, acceptance=Acceptance(
            kind="curve", curve=curve)), {"slo": 45.0}),
    ]
    diff = differing_inputs(items)
    assert list(diff.columns) == ["A", "B"]
    assert set(diff.index) == {"draft_len", "acceptance.kind", "acceptance.curve",
                               "target: SLO (tokens/s per user)"}
    assert diff.loc["acceptance.curve", "B"] == "mine [1:1.5, 2:2]"
    assert differing_inputs(items[:1] * 2).empty
