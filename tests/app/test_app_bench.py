"""AppTest: the Export panel plans the benchmark runs (with a script to download); the Measured
data page takes their result files, shows predicted vs measured, and applies the step terms
backed out of them to the explorer."""

from __future__ import annotations

import pytest

from explorer import Scenario
from explorer.export.bench_plan import bench_plan
from explorer.specs.hardware import HardwareOverrides
from tests.support.apptest import goto, run_app
from tests.support.paths import ROOT

SAMPLES = ROOT / "data" / "samples"
LINK = {"hw": "h100", "m": "llama-3.1-8b", "tp": "1", "b": "16", "v": "2"}


def _texts(at) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(str(m.value) for m in [*at.markdown, *at.caption])


@pytest.mark.slow
def test_export_panel_shows_the_benchmark_plan_and_its_script():
    at = run_app(**LINK, vw="export")
    assert "Check it on your engine" in _texts(at)
    table = next(d.value for d in at.dataframe if "expected output tok/s" in d.value.columns)
    plan = bench_plan(Scenario(hardware="h100", model="llama-3.1-8b", tp=1, batch=16))
    assert list(table["B"]) == [r.batch for r in plan.runs]
    assert list(table["D"]) == [r.draft_len for r in plan.runs]
    assert 0 in set(table["D"]) and len(table) >= 3
    assert list(table["expected output tok/s"]) == [round(r.expected_output_tokens_per_s)
                                                   for r in plan.runs]
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Benchmark script (sh)" in labels
    # the commands carry the forced acceptance
    codes = "\n".join(c.value for c in at.code)
    assert '"rejection_sample_method":"synthetic"' in codes


@pytest.mark.slow
def test_measured_data_page_takes_a_result_file_and_applies_the_step_terms():
    at = run_app(**LINK)
    goto(at, "data")
    files = [(p.name, p.read_bytes(), "application/json")
             for p in sorted(SAMPLES.glob("bench_vllm_b*"))]
    at.file_uploader(key="bench_upload").set_value(files).run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "measured tok/s" in d.value.columns)
    assert len(table) == len(files)
    assert set(table["B"]) == {8, 16, 32} and set(table["D"]) == {0, 5}
    assert {"predicted tok/s", "measured TPOT (ms)", "measured speedup"} <= set(table.columns)
    # each run priced over whole requests of its own lengths, read from the file
    assert set(table["in / out tokens"]) == {"8064 / 256"}
    assert all(str(x).startswith("the file") for x in table["lengths from"])
    assert "MAPE" in _texts(at)
    steps = next(d.value for d in at.dataframe if "of which prefill (ms)" in d.value.columns)
    assert (steps["of which prefill (ms)"] > 0).all()
    assert (steps["of which prefill (ms)"] < steps["measured step (ms)"]).all()

    assert "hw_overrides" not in at.session_state or at.session_state["hw_overrides"] is None
    at.button(key="bench_apply").click().run()
    ov = at.session_state["hw_overrides"]
    assert isinstance(ov, HardwareOverrides) and ov.step_cost_per_token_s is not None
    assert any("step terms backed out of benchmark runs" in i.value for i in at.info)


@pytest.mark.slow
def test_a_broken_result_file_is_named_and_nothing_is_loaded():
    at = run_app(**LINK)
    goto(at, "data")
    at.file_uploader(key="bench_upload").set_value(
        [("bench_vllm_b16_d0.json", b'{"output_throughput": "fast", "date": "x"}',
          "application/json")]).run()
    assert not at.exception
    # the file and the field are named (markdown escapes the underscores)
    assert any("was not loaded" in e.value and "throughput" in e.value and "fast" in e.value
               for e in at.error), [e.value for e in at.error]
    assert not at.session_state["bench_files"]


@pytest.mark.slow
def test_a_golden_al_yaml_uploaded_with_the_results_becomes_an_al_source():
    at = run_app(**LINK)
    goto(at, "data")
    name = "inferencex_golden_al_kimik2.5_eagle3.yaml"
    at.file_uploader(key="bench_upload").set_value(
        [(name, (SAMPLES / name).read_bytes(), "application/yaml")]).run()
    assert not at.exception
    assert name in at.session_state["datasets"]
    assert at.session_state["active_curve"] == f"{name}::0"  # offered as the AL source
