"""AppTest: the MoE expert dtype widget drives the scenario, a link sets it, and it is offered
for MoE targets only (a dense model has no experts to quantize); the Presets &
sources page shows the roofline's cross-validated error and model vs measured with residuals."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from explorer import Scenario, evaluate
from explorer.presets import model_presets
from explorer.specs.compact import pack
from explorer.ui import explorer_page
from tests.support import headline
from tests.support.apptest import goto, run_app


def _speedup(**kw: object) -> str:
    ev = evaluate(Scenario.model_validate(kw))
    assert ev.speedup is not None
    return f"{ev.speedup:.2f}×"


def test_the_moe_dtype_widget_drives_the_scenario():
    at = run_app(m="qwen3-30b-a3b", tp="1")
    before = headline.value(at, "Speedup")
    assert before == _speedup(model="qwen3-30b-a3b", tp=1)
    at.selectbox(key="moe").set_value("fp4").run()
    assert not at.exception
    after = headline.value(at, "Speedup")
    assert after == _speedup(model="qwen3-30b-a3b", tp=1, moe_dtype="fp4")


def test_a_link_with_a_moe_dtype_opens_with_it():
    at = run_app(m="qwen3-30b-a3b", tp="1", moe="fp8", v="2")
    assert at.selectbox(key="moe").value == "fp8"


def _keys(at: AppTest) -> set[str]:
    """The sidebar's selectboxes."""
    return {w.key for w in at.sidebar.selectbox}


def test_the_moe_dtype_is_offered_for_moe_targets_only():
    at = run_app()  # Llama-3.1-70B: dense
    assert "moe" not in _keys(at) and "kv" in _keys(at)
    at.selectbox(key="m").set_value("qwen3-30b-a3b").run()
    assert not at.exception and "moe" in _keys(at)
    at.selectbox(key="m").set_value("llama-3.1-8b").run()
    assert not at.exception and "moe" not in _keys(at)


def test_a_custom_moe_target_offers_the_expert_dtype():
    moe = model_presets()["qwen3-30b-a3b"].model_copy(update={"slug": "hf-moe-00000000"})
    at = run_app(cm=pack(moe), tp="1")  # the preset beside it (Llama-3.1-70B) is dense
    assert not at.exception and "moe" in _keys(at)


def test_a_link_with_a_moe_dtype_on_a_dense_model_opens_without_it():
    at = run_app(moe="fp8", v="2")  # the dense default: the setting changes nothing there
    assert not at.exception and not at.warning
    assert "moe" not in _keys(at)
    assert headline.value(at, "Speedup") == _speedup(model="llama-3.1-70b", tp=2)
    assert at.query_params["moe"] == "fp8"  # kept: an MoE target takes it
    at.selectbox(key="m").set_value("qwen3-30b-a3b").run()
    assert at.selectbox(key="moe").value == "fp8"


def test_a_hidden_moe_dtype_does_not_lay_the_explorer_out_twice(monkeypatch: pytest.MonkeyPatch):
    """The sidebar's value of a setting it does not draw is the one the early view predicted:
    else every run on a dense model with `moe` in its link is laid out twice (EARLY_MISS)."""
    at = run_app(moe="fp8", v="2")
    calls: list[object] = []
    first = explorer_page.render_first
    monkeypatch.setattr(explorer_page, "render_first",
                        lambda *a, **k: calls.append(a) or first(*a, **k))
    at.slider(key="d").set_value(4).run()
    assert not at.exception and len(calls) == 1


def test_presets_page_shows_roofline_errors_and_model_vs_measured():
    at = goto(run_app(), "sources")
    text = " ".join(c.value for c in at.caption)
    assert "leave-one-GPU-out" in text
    frames = [df.value for df in at.dataframe]
    summary = next(f for f in frames if "LOO MAPE" in f.columns)
    assert {"bf16", "fp8", "fp4"} <= set(summary["dtype"])
    per_hw = next(f for f in frames if "preset" in f.columns and "GEMM bf16" in f.columns)
    assert per_hw.set_index("preset").loc["h100", "GEMM bf16"].endswith("%")
    assert "mi300x" in set(per_hw["preset"])
    # Every cell says something: a GPU without a table for a dtype reads "no table", never None.
    assert not per_hw.isna().any().any()
    assert per_hw.set_index("preset").loc["a100", "GEMM fp4"] == "no table"
    assert not [b for b in at.selectbox if b.key == "roof_gpu"]  # deferred: on request
    at.toggle(key="roof_show").set_value(True).run()
    at.selectbox(key="roof_gpu").set_value("b200").run()
    at.selectbox(key="roof_dtype").set_value("fp4").run()
    assert not at.exception
    assert any("b200" in c.value and "measured points" in c.value and "MAPE" in c.value
               for c in at.caption)


def test_a_measured_table_far_off_its_siblings_is_flagged_on_the_explorer():
    """Issue #21: vLLM's FP8 MoE table makes Qwen3-235B-A22B FP8 on 8×H200 3× slower than any
    other engine or dtype; the page says so and names the sibling to switch to."""
    at = run_app(hw="h200", m="qwen3-235b-a22b", tp="8", b="64", dt="fp8", v="2")
    text = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "Suspicious kernel table" in text and "routed-expert (MoE)" in text
    assert "engine=" in text or "dtype=bf16" in text
