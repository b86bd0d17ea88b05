"""AppTest: the controls change the numbers they should; URL → widgets; bad URLs warn."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from explorer import Scenario, evaluate
from explorer.interfaces import view_state as us
from explorer.ui.controls import OVERRIDES_OPEN_KEY
from explorer.ui.explorer_page import TARGET_INPUTS
from tests.support import headline
from tests.support.apptest import open_section, run_app


def metric(at: AppTest, label: str) -> str:
    return headline.value(at, label)


def speedup_of(**kw: object) -> str:
    ev = evaluate(Scenario(**kw))  # type: ignore[arg-type]
    assert ev.speedup is not None
    return f"{ev.speedup:.2f}×"


def test_default_page_shows_the_evaluated_default_scenario():
    at = run_app()
    assert metric(at, "Speedup") == speedup_of()
    assert any("Recommendation" in s.value for s in at.success)
    texts = " ".join(m.value for m in at.markdown)
    for i in range(1, 6):
        assert f"**{i}." in texts
    # The default view: the (B, D) heatmap; the (G, D) and 3D surfaces wait for their toggles.
    assert [c.key for c in at.get("plotly_chart")] == ["fig_speedup_heatmap"]


def test_draft_len_slider_changes_speedup_and_al():
    at = run_app()
    before = (metric(at, "Speedup"), metric(at, "Acceptance length"))
    at.slider(key="d").set_value(7).run()
    after = (metric(at, "Speedup"), metric(at, "Acceptance length"))
    assert after != before
    assert after[0] == speedup_of(draft_len=7)


def test_batch_changes_throughput_per_gpu():
    at = run_app()
    at.select_slider(key="b").set_value(4).run()
    ev = evaluate(Scenario(batch=4))
    assert metric(at, "Tokens/s per GPU") == f"{ev.tokens_per_s_per_gpu:,.0f}"


@pytest.mark.parametrize(("key", "widget", "value", "field"), [
    ("hw", "selectbox", "b200", {"hardware": "b200"}),
    ("mech", "selectbox", "mtp", {"mechanism": "mtp"}),
    ("tp", "selectbox", 4, {"tp": 4}),
    ("ctx", "select_slider", 32768, {"context": 32768}),
    ("L", "select_slider", 40, {"layers": 40}),
    ("rho", "select_slider", 0.1, {"rho": 0.1}),
])
def test_each_control_drives_the_scenario(key, widget, value, field):
    at = run_app()
    if key in ("L", "rho"):  # the preset overrides are drawn when their expander is opened
        open_section(at, OVERRIDES_OPEN_KEY)
    getattr(at, widget)(key=key).set_value(value).run()
    assert not at.exception
    assert metric(at, "Speedup") == speedup_of(**field)


def test_group_override_is_shown_and_reset():
    at = run_app()
    assert "g" not in [w.key for w in at.select_slider]  # closed: not drawn, the preset's G
    open_section(at, OVERRIDES_OPEN_KEY)
    at.select_slider(key="g").set_value(32).run()
    assert any("Override of the preset: G" in i.value for i in at.info)
    assert metric(at, "Speedup") == speedup_of(group=32)
    at.button(key="reset_overrides").click().run()
    assert at.select_slider(key="g").value == 0
    assert metric(at, "Speedup") == speedup_of()


def test_a_link_that_overrides_the_preset_opens_the_overrides_and_shows_its_value():
    at = run_app(g="32", L="40", v="2")
    assert at.select_slider(key="g").value == 32 and at.select_slider(key="L").value == 40
    assert any("Override of the preset: G, L_target" in i.value for i in at.info)
    assert metric(at, "Speedup") == speedup_of(group=32, layers=40)


def test_alpha_and_the_sample_curve_are_drawn_only_for_their_al_source():
    at = run_app()
    keys = lambda: {w.key for w in [*at.slider, *at.selectbox]}  # noqa: E731
    assert "a" not in keys() and "curve" not in keys()  # the prior: neither applies
    at.radio(key="acc").set_value("alpha").run()
    assert "a" in keys() and "curve" not in keys()
    at.radio(key="acc").set_value("sample").run()
    assert "curve" in keys() and "a" not in keys()


def test_alpha_source_uses_iid_al():
    at = run_app()
    at.radio(key="acc").set_value("alpha").run()
    at.slider(key="a").set_value(0.5).run()
    assert metric(at, "Acceptance length") == f"{(1 - 0.5**4) / 0.5:.2f}"


def test_url_parameters_set_the_widgets():
    at = run_app(b="8", d="7", m="llama-3.1-8b", tp="1", hw="h100", v="2")
    assert at.slider(key="d").value == 7
    assert at.select_slider(key="b").value == 8
    assert at.selectbox(key="m").value == "llama-3.1-8b"
    assert metric(at, "Speedup") == speedup_of(batch=8, draft_len=7, model="llama-3.1-8b", tp=1,
                                               hardware="h100")


def test_malformed_url_parameters_warn_and_fall_back():
    at = run_app(d="abc", b="5", hw="h900", zzz="1", rho="9", v="7")
    warnings = " ".join(w.value for w in at.warning)
    for needle in ("'d=abc'", "'b=5'", "'hw=h900'", "'rho=9'", "zzz", "link version"):
        assert needle in warnings, needle
    assert at.slider(key="d").value == 3
    assert metric(at, "Speedup") == speedup_of()


def test_hostile_url_values_are_text_not_markup():
    at = run_app(hw="<script>alert(1)</script>", d="9" * 5000)
    warnings = " ".join(w.value for w in at.warning)
    assert "too long" in warnings and "unknown preset" in warnings
    assert metric(at, "Speedup") == speedup_of()


def test_figures_carry_titles_and_axis_units():
    specs = []
    for view in us.VIEWS:
        at = run_app(vw=view)
        specs += [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(specs) >= 9
    titles = [s["layout"]["title"]["text"] for s in specs if "title" in s["layout"]]
    assert any("Speedup over (B, D)" in t for t in titles)
    for s in specs:
        layout = s["layout"]
        if "xaxis" in layout:
            assert layout["xaxis"].get("title", {}).get("text"), layout.get("title")


def warning_text(at: AppTest) -> str:
    return " ".join(w.value for w in at.warning).replace("\\", "")  # Markdown-escaped text


def test_verify_width_from_the_url_drives_the_evaluation():
    at = run_app(w="16", v="2")
    assert at.select_slider(key="w").value == 16
    assert speedup_of(verify_width=16) != speedup_of()
    assert metric(at, "Speedup") == speedup_of(verify_width=16)


@pytest.mark.parametrize("w", ["2", "4"])  # not an option; an option below 1+D = 8
def test_verify_width_below_1_plus_d_is_named_and_the_app_keeps_running(w: str):
    at = run_app(w=w, d="7", v="2")
    assert f"URL parameter 'w={w}' (verify width W)" in warning_text(at)
    assert at.select_slider(key="w").value == 0 and at.slider(key="d").value == 7
    assert metric(at, "Speedup") == speedup_of(draft_len=7)


def test_moving_d_past_the_verify_width_shows_the_chain_and_says_so():
    at = run_app(w="16", v="2")
    at.slider(key="d").set_value(20).run()
    assert not at.exception
    assert "verify width W (w=16): W=16 must be ≥ 1+D = 21" in warning_text(at)
    assert metric(at, "Speedup") == speedup_of(draft_len=20)
    at.slider(key="d").set_value(7).run()
    assert "verify width W" not in warning_text(at)
    assert metric(at, "Speedup") == speedup_of(draft_len=7, verify_width=16)


def widget_value(at: AppTest, key: str) -> object:
    key = TARGET_INPUTS.get(key, key)  # the targets: the Pareto view's inputs
    for kind in ("slider", "select_slider", "selectbox", "number_input", "radio"):
        found = [w for w in at.get(kind) if getattr(w, "key", None) == key]
        if found:
            return found[0].value
    raise KeyError(key)


@pytest.mark.parametrize(("params", "key", "value", "scenario"), [
    ({"d": ["7", "abc"]}, "d", 7, {"draft_len": 7}),
    ({"b": ["8", "16"]}, "b", 8, {"batch": 8}),
    ({"rho": "1e-2"}, "rho", 0.01, {"rho": 0.01}),
    ({"L": "07"}, "L", 7, {"layers": 7}),
    ({"L": "+7"}, "L", 7, {"layers": 7}),
    ({"slo": "1E2", "vw": "pareto"}, "slo", 100.0, {}),
])
def test_a_link_value_spelled_otherwise_or_repeated_is_what_the_widget_shows(
        params, key, value, scenario):
    at = run_app(**params)
    assert widget_value(at, key) == value
    if scenario:
        assert metric(at, "Speedup") == speedup_of(**scenario)
    repeated = isinstance(params[key], list)
    assert (f"URL parameter '{key}' (" in warning_text(at)) == repeated
    assert ("is given 2 times" in warning_text(at)) == repeated


@pytest.mark.parametrize(("params", "key", "needle"), [
    ({"L": "7_0"}, "L", "URL parameter 'L=7_0' (L_target): not a whole number in digits 0-9"),
    ({"b": "\u0663"}, "b", "URL parameter 'b=\u0663' (batch B): not a whole number"),
    ({"dm": "llama-3.1-70b", "mech": "external"}, "dm",
     "URL parameter 'dm=llama-3.1-70b' (draft model): not offered as a draft model"),
])
def test_a_link_value_that_is_not_plain_or_not_offered_is_named_and_the_default_shown(
        params, key, needle):
    at = run_app(**params)
    assert needle in warning_text(at)
    if us.PARAM_BY_KEY[key].setting.overrides_preset:  # fell back: no override, drawn when opened
        open_section(at, OVERRIDES_OPEN_KEY)
    assert widget_value(at, key) == us.PARAM_BY_KEY[key].default
    extra = {"mechanism": "external"} if "mech" in params else {}
    assert metric(at, "Speedup") == speedup_of(**extra)


def test_preset_selects_show_names_and_the_link_keeps_slugs():
    from explorer.presets import hardware_presets, mechanism_presets, model_presets

    at = run_app(hw="h100", m="llama-3.1-8b", v="1")  # an old link opens as it did
    hw, m, mech = at.selectbox(key="hw"), at.selectbox(key="m"), at.selectbox(key="mech")
    assert (hw.value, m.value, mech.value) == ("h100", "llama-3.1-8b", "eagle3")
    # Each GPU shows its selector group before its name (a selectbox cannot group): NVIDIA
    # datacenter, NVIDIA workstation/inference, AMD, Intel, in that order.
    assert f"NVIDIA datacenter · {hardware_presets()['h200'].name}" in hw.options
    assert "h200" not in hw.options
    groups = [o.split(" · ")[0] for o in hw.options]
    assert list(dict.fromkeys(groups)) == ["NVIDIA datacenter", "NVIDIA workstation/inference",
                                           "AMD", "Intel"]
    assert "AMD · MI355X" in hw.options and "Intel · Arc Pro B60" in hw.options
    assert model_presets()["llama-3.1-70b"].name in m.options
    assert mechanism_presets()["eagle3"].name in mech.options
    # a version-1 link priced decode steps only (whole requests are version 2's default): it
    # still does, and its link says so now
    assert metric(at, "Speedup") == speedup_of(hardware="h100", model="llama-3.1-8b",
                                               output_tokens=None)
    assert (at.query_params["v"], at.query_params["out"]) == ("2", "0")
    at.selectbox(key="hw").set_value("b200").run()
    at.selectbox(key="mech").set_value("mtp").run()
    assert (at.query_params["hw"], at.query_params["mech"]) == ("b200", "mtp")
    assert at.query_params["m"] == "llama-3.1-8b"
    at.selectbox(key="hw").set_value("h200").run()  # the default: left out, as bound widgets do
    assert "hw" not in at.query_params
    assert metric(at, "Speedup") == speedup_of(model="llama-3.1-8b", mechanism="mtp",
                                               output_tokens=None)


def test_a_bad_preset_in_the_link_falls_back_and_leaves_the_link():
    at = run_app(hw="h900", v="2")
    assert "'hw=h900'" in " ".join(w.value for w in at.warning)
    assert at.selectbox(key="hw").value == "h200" and "hw" not in at.query_params


def test_a_draft_model_link_opens_and_leaves_the_link_when_not_applicable():
    at = run_app(mech="external", dm="llama-3.2-1b", v="2")
    assert at.selectbox(key="dm").value == "llama-3.2-1b"
    assert at.query_params["dm"] == "llama-3.2-1b"
    at.selectbox(key="mech").set_value("eagle3").run()
    assert "dm" not in at.query_params and "mech" not in at.query_params
