"""The Presets & sources page lists every engine number with its source and assumption label."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _page() -> None:
    from explorer.ui import sources_page

    sources_page.render()


def test_presets_page_shows_each_engine_parameter_with_its_assumption_label():
    at = AppTest.from_function(_page).run(timeout=60)
    assert not at.exception
    assert "Serving engines" in [s.value for s in at.subheader]
    engines = next(df.value for df in at.dataframe if "engine" in df.value.columns)
    assert set(engines.engine) == {"vllm", "sglang", "trtllm"}
    assert (engines.value != "").all(), engines[engines.value == ""]  # every parameter shown
    first = engines[(engines.engine == "vllm") & (engines.parameter == "draft_first_forward")]
    assert first.value.item() == "all B·(1+D) scheduled tokens"
    row = engines[(engines.engine == "vllm") & (engines.parameter == "draft_forward_overhead_us")]
    assert row.assumption.item() == "fitted" and row.value.item().endswith(" µs")
    assert "leave-one-source-out" in row.source.item() and "fit_step_costs" in row.source.item()
    kappa = engines[(engines.engine == "vllm") & (engines.parameter == "compute_overlap_loss")]
    assert kappa.value.item().startswith("κ = ")
    sizes = engines[(engines.engine == "vllm") & (engines.parameter == "cuda_graph_sizes")]
    assert sizes.assumption.item() == "no" and "@09f030e" in sizes.source.item()
    assert sizes.value.item() == "51 sizes by tokens, 1…512"
