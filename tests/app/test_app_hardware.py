"""Issue 26 in the app: the engine selector offers only the engines that run on the chosen
GPU, and a link asking for one that does not (TensorRT-LLM on MI355X) is named and falls back."""

from __future__ import annotations

from explorer import Scenario, evaluate
from explorer.analysis.fallbacks import with_fallbacks
from explorer.base.errors import ScenarioError
from tests.support.apptest import run_app


def test_a_link_with_tensorrt_llm_on_mi355x_warns_and_shows_vllm():
    at = run_app(hw="mi355x", eng="trtllm", v="2")
    assert at.selectbox(key="hw").value == "mi355x"
    eng = at.selectbox(key="eng")
    assert eng.value == "vllm" and list(eng.options) == ["vllm", "sglang"]
    warned = [w.value for w in at.warning if "eng=trtllm" in w.value]
    assert warned and "MI355X" in warned[0] and "vllm" in warned[0], [w.value for w in at.warning]
    assert "eng" not in at.query_params  # the link no longer says what the page does not show


def test_choosing_an_amd_gpu_with_tensorrt_llm_selected_says_so_and_switches_engine():
    at = run_app(eng="trtllm", v="2")  # H200: TensorRT-LLM runs there
    assert "trtllm" in list(at.selectbox(key="eng").options)
    at.selectbox(key="hw").set_value("mi355x").run()
    assert not at.exception
    box = at.selectbox(key="eng")
    assert box.value == "vllm" and list(box.options) == ["vllm", "sglang"]
    assert any("trtllm" in w.value and "MI355X" in w.value and "Serving engine" in w.value
               for w in at.sidebar.warning), [w.value for w in at.sidebar.warning]


def test_the_scenario_a_page_falls_back_to_names_the_engine():
    """A scenario that reaches the page some other way (a saved one) is shown on vLLM with a
    note naming the engine and the GPU (analysis.fallbacks)."""
    sc, applied = with_fallbacks(Scenario(hardware="mi355x", engine="trtllm"), evaluate)
    assert sc.engine == "vllm" and [f.field for f in applied] == ["engine"]
    assert "TensorRT-LLM does not run on MI355X" in applied[0].note
    try:
        evaluate(Scenario(hardware="mi355x", engine="trtllm"))
    except ScenarioError as exc:
        assert exc.field == "engine"
    else:  # pragma: no cover - the check must refuse it
        raise AssertionError("TensorRT-LLM on MI355X was evaluated")


def _sources_page() -> None:
    from explorer.ui import sources_page

    sources_page.render()


def test_presets_page_lists_each_gpu_with_what_is_measured_and_what_is_modelled():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_sources_page).run(timeout=120)
    assert not at.exception
    hw = next(df.value for df in at.dataframe if "kernels" in df.value.columns)
    rows = hw.set_index("preset")
    for slug in ("gb300", "rtx-pro-6000", "arc-pro-b60"):
        assert rows.loc[slug, "kernels"].startswith("measured tables: aiconfigurator-core")
    for slug in ("h100-pcie", "a100-pcie", "a30", "l4", "mi325x", "mi350x", "mi355x"):
        assert rows.loc[slug, "kernels"].startswith("no measured tables: roofline from spec "
                                                    "sheet"), slug
    assert rows.loc["mi355x", "engines"] == "vllm, sglang"
    assert rows.loc["mi355x", "FP6 TFLOP/s"] == 10100
    groups = list(dict.fromkeys(hw.group))
    assert groups == ["NVIDIA datacenter", "NVIDIA workstation/inference", "AMD", "Intel"]
