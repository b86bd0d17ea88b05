"""Exports: scenario JSON (+ schema) round-trips, sweep CSV/Parquet, standalone HTML, PNG/SVG
through kaleido and the system Chromium, CSV formula-injection escaping, the Export tab."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from explorer import MeasuredCurve, Scenario, evaluate
from explorer.analysis.frontier import draft_len_range
from explorer.export.engine_configs import engine_configs
from explorer.interfaces.cli import main as cli_main
from explorer.specs.hardware import HardwareOverrides
from explorer.specs.scenario import Acceptance, scenario_json_schema
from explorer.ui.export_panel import (
    SWEEP_BATCHES,
    csv_bytes,
    default_sweep,
    escape_formulas,
    figure_html,
    figure_image,
    parquet_bytes,
    report_html,
    scenario_json,
    sweep_file,
)
from tests.support.paths import ROOT

APP = str(ROOT / "app.py")
CHROMIUM = Path("/usr/bin/chromium")

RICH = Scenario(
    hardware="h100", model="qwen3-32b", mechanism="external", draft_model="qwen3-0.6b",
    dtype="fp8", kv_dtype="fp8", batch=16, context=32768, tp=4, draft_len=5, verify_width=8,
    acceptance=Acceptance(kind="curve", curve=MeasuredCurve(
        label="mine", draft_lens=(1, 3, 5), acceptance_lengths=(1.7, 2.4, 2.8), source="bench")),
    hardware_overrides=HardwareOverrides(gemm_compute_efficiency=0.7, label="calibrated"),
)


def small_figure() -> go.Figure:
    fig = go.Figure(go.Scatter(x=[1, 2, 4], y=[1.0, 1.8, 2.5], name="speedup-trace-xyz"))
    fig.update_layout(title="Export probe 7421", xaxis_title="B", yaxis_title="speedup ×")
    return fig


@pytest.mark.parametrize("sc", [Scenario(), RICH], ids=["default", "rich"])
def test_scenario_json_round_trips_through_pydantic(sc: Scenario):
    text = scenario_json(sc)
    assert Scenario.model_validate_json(text) == sc
    schema = json.loads(scenario_json_schema())
    assert set(json.loads(text)) <= set(schema["properties"])


@pytest.mark.parametrize("sc", [Scenario(), RICH], ids=["default", "rich"])
def test_scenario_json_round_trips_through_the_cli(sc: Scenario, tmp_path: Path):
    path = tmp_path / "scenario.json"
    path.write_text(scenario_json(sc), encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["evaluate", "--scenario", str(path), "--json"]) == 0
    assert json.loads(out.getvalue()) == json.loads(json.dumps(evaluate(sc).model_dump()))


@pytest.mark.slow  # another Python: seconds, out of the quick loop
def test_scenario_json_file_works_with_python_m_explorer(tmp_path: Path):
    sc = Scenario(batch=8, draft_len=4)
    path = tmp_path / "s.json"
    path.write_text(scenario_json(sc), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "explorer", "evaluate", "--scenario", str(path),
                        "--json"], capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(r.stdout)["speedup"] == pytest.approx(evaluate(sc).speedup)


def test_default_sweep_covers_b_and_d_for_the_mechanism():
    sc = Scenario(mechanism="mtp")
    df = default_sweep(sc)
    d = list(draft_len_range(sc))
    assert len(df) == len(SWEEP_BATCHES) * len(d)
    assert sorted(df["batch"].unique()) == [2**i for i in range(13)]
    assert sorted(df["draft_len"].unique()) == d
    assert set(df["mechanism"]) == {"mtp"}
    row = df[(df["batch"] == sc.batch) & (df["draft_len"] == sc.draft_len)].iloc[0]
    assert row["speedup"] == pytest.approx(evaluate(sc).speedup)


def test_sweep_csv_and_parquet_hold_the_sweep():
    sc = Scenario()
    js = sc.model_dump_json()
    df = default_sweep(sc)
    back = pd.read_parquet(io.BytesIO(sweep_file(js, "parquet")))
    pd.testing.assert_frame_equal(back, df, check_dtype=False)
    csv = pd.read_csv(io.BytesIO(sweep_file(js, "csv")))
    assert list(csv.columns) == list(df.columns) and len(csv) == len(df)
    np.testing.assert_allclose(csv["speedup"].to_numpy(float), df["speedup"].to_numpy(float),
                               rtol=1e-12, equal_nan=True)
    assert (csv["batch"] == df["batch"]).all()


def test_csv_cells_that_look_like_formulas_are_escaped():
    df = pd.DataFrame({
        "label": ["=HYPERLINK(\"x\")", "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd", "safe",
                  "a=b"],
        "value": [-1.5, 2.0, -3.0, 4.0, 5.0, 6.0, 7.0, -8.25],
    })
    text = csv_bytes(df).decode("utf-8")
    back = pd.read_csv(io.StringIO(text), keep_default_na=False)
    assert list(back["label"]) == ["'=HYPERLINK(\"x\")", "'+1+1", "'-2+3", "'@SUM(A1)",
                                   "'\tcmd", "'\rcmd", "safe", "a=b"]
    assert list(back["value"]) == [-1.5, 2.0, -3.0, 4.0, 5.0, 6.0, 7.0, -8.25]  # numbers stay
    assert df["label"].iloc[0] == "=HYPERLINK(\"x\")"  # the frame itself is not modified
    assert escape_formulas(df)["value"].dtype == df["value"].dtype


def test_parquet_bytes_are_parquet():
    df = pd.DataFrame({"a": [1, 2], "b": ["=x", "y"]})
    data = parquet_bytes(df)
    assert data[:4] == b"PAR1"
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(data)), df, check_dtype=False)


def test_html_export_is_small_and_the_report_standalone():
    html = figure_html(small_figure())
    assert html.lstrip().lower().startswith(("<!doctype html>", "<html"))
    assert html.rstrip().endswith("</html>")
    assert "Export probe 7421" in html and "speedup-trace-xyz" in html
    assert "Plotly.newPlot" in html
    # one chart: plotly.js from the file beside it (offered once), never from the network
    assert re.findall(r"<script[^>]*src=\"([^\"]*)\"", html) == ["plotly.min.js"]
    assert len(html) < 100_000
    # the report: plotly.js inlined once, no script loaded from elsewhere
    report = report_html({"a": small_figure(), "b": small_figure()}, "probe")
    assert re.findall(r"<script[^>]*>", report) and not re.findall(r"<script[^>]*src=", report)
    assert report.count("Export probe 7421") == 2 and len(report) > 1_000_000


@pytest.mark.browser
def test_png_and_svg_exports_through_kaleido_and_system_chromium():
    if not CHROMIUM.exists():
        pytest.fail("the system Chromium (/usr/bin/chromium) is missing: run `make chromium`")
    fig = small_figure()
    png = figure_image(fig, "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1100, 650)
    svg = figure_image(fig, "svg")
    assert svg.lstrip().startswith(b"<svg") and svg.rstrip().endswith(b"</svg>")
    assert b"Export probe 7421" in svg
    with pytest.raises(ValueError, match="png or svg"):
        figure_image(fig, "gif")


def export_charts(at: AppTest) -> dict[str, object]:
    from explorer.ui import explorer_charts

    return explorer_charts.all_charts(Scenario().model_dump_json(), {})


def _run_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["vw"] = "export"  # the Export view
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_export_tab_offers_every_download_and_the_engine_configs():
    at = _run_app()
    labels = [b.label for b in at.get("download_button")]
    for label in ("Scenario (JSON)", "Scenario JSON schema", "Sweep (CSV)", "Sweep (Parquet)",
                  "vLLM speculative_config (JSON)", "SGLang launch (sh)",
                  "TensorRT-LLM config (YAML)"):
        assert label in labels, label
    # One per chart of the page (the Export view draws none; it offers every view's).
    assert labels.count("HTML") == len(export_charts(at))
    assert "PNG" not in labels  # images wait for "Prepare images"
    ec = engine_configs(Scenario())
    codes = [c.value for c in at.code]
    assert json.dumps(ec.vllm.speculative_config, indent=2) in codes
    assert ec.tensorrt_llm.yaml.strip() in [c.strip() for c in codes]
    assert any(ec.sglang.cli in c for c in codes)
    assert any(ec.vllm.cli in c for c in codes)


def test_export_tab_switches_mechanism():
    at = _run_app()
    at.selectbox(key="export_mechanism").set_value("ngram").run()
    assert not at.exception
    ec = engine_configs(Scenario(), "ngram")
    assert any(ec.sglang.cli in c.value for c in at.code)


@pytest.mark.browser
def test_prepare_images_renders_every_chart():
    if not CHROMIUM.exists():
        pytest.fail("the system Chromium (/usr/bin/chromium) is missing: run `make chromium`")
    at = _run_app()
    at.button(key="export_prepare").click().run()
    assert not at.exception and not at.warning, [w.value for w in at.warning]
    labels = [b.label for b in at.get("download_button")]
    n = len(export_charts(at))
    assert labels.count("PNG") == labels.count("SVG") == n
    images = at.session_state["export_images"]
    assert len(images) == n
    for img in images.values():
        assert img["png"][:8] == b"\x89PNG\r\n\x1a\n" and img["svg"].startswith(b"<svg")
