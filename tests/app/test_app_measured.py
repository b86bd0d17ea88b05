"""AppTest: measured kernel times uploaded on the Data page drive the explorer, and a table's
dtype may be spelled any way the parsers accept: the explorer shows the canonical numbers."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from explorer import Scenario, evaluate
from explorer.measured import parse_bytes
from explorer.model.layers import COMPONENTS
from tests.support import headline
from tests.support.apptest import goto, run_app
from tests.support.kernel_tables import HARDWARE_FOR, MODEL, TP, kernel_timings_csv, spellings

BATCH, DRAFT_LEN = 8, 3
BREAKDOWN_TITLE = "Where the time goes"
EXPLORER = ""  # the default page has no url path of its own


def metric(at: AppTest, label: str) -> str:
    return headline.value(at, label)


def shown(at: AppTest) -> tuple[str, dict[str, list[float]]]:
    """The Speedup metric and the time-breakdown bars (ms per component) on the Explorer."""
    chart = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                 if json.loads(c.proto.spec)["layout"]["title"]["text"].startswith(
                     BREAKDOWN_TITLE))
    return metric(at, "Speedup"), {t["name"]: t["x"] for t in chart["data"]}


def use_kernel_table(at: AppTest, name: str, data: bytes) -> AppTest:
    """Data page: upload, then "Use these kernel times where shapes match"; back to Explorer."""
    goto(at, "data")
    at.file_uploader(key="upload").set_value((name, data, "text/csv")).run()
    assert not at.exception and not at.session_state["upload_errors"], "the upload is valid"
    at.button(key="use_kernels").click().run()
    assert any("uses your measured kernel times" in i.value for i in at.info)
    return goto(at, EXPLORER)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_any_dtype_spelling_of_a_kernel_table_shows_the_canonical_numbers(dtype: str):
    hw = HARDWARE_FOR[dtype]  # has an FP8 peak
    at = run_app(hw=hw, m=MODEL, tp=str(TP), b=str(BATCH), d=str(DRAFT_LEN), dt=dtype, v="2",
                 vw="time")  # the time-breakdown view
    without_table = shown(at)
    canonical = shown(use_kernel_table(at, "canonical.csv", kernel_timings_csv(dtype, dtype)))
    assert canonical != without_table, "the kernel table changes the explorer"

    # The explorer shows exactly what the core computes from the parsed canonical table.
    table = parse_bytes("canonical.csv", kernel_timings_csv(dtype, dtype)).kernel_timings
    ev = evaluate(Scenario(hardware=hw, model=MODEL, tp=TP, batch=BATCH, draft_len=DRAFT_LEN,
                           dtype=dtype, measured_kernels=table))
    assert canonical[0] == f"{ev.speedup:.2f}×"
    for i, part in enumerate(("verify_base", "verify_spec")):
        for c in COMPONENTS:
            assert canonical[1][c][i] == pytest.approx(ev.breakdown[part][c] * 1e3, rel=1e-12)

    for i, spelling in enumerate(spellings(dtype)[1:]):
        assert use_kernel_table(at, f"spelled_{i}.csv",
                                kernel_timings_csv(spelling, dtype)) is at
        assert shown(at) == canonical, spelling
