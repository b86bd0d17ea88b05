"""Routed experts from the package's measured MoE tables (explorer/kernel_tables/moe.py): exact at
measured token counts, the roofline (saying so) outside the table, and the provenance names it."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer import Scenario, evaluate
from explorer.kernel_tables import Missing, find_table
from explorer.kernel_tables.moe import DISTRIBUTION, MoeCurve, MoeShape, find_moe_curve
from explorer.model.grid import scenario_model
from explorer.model.layers import LayerModel
from explorer.model.measured_kernels import MeasuredKernels, measured_kernels
from explorer.presets import hardware_presets
from tests.unit.test_cli import run

# Qwen3-235B-A22B's experts at TP 8 (hidden 4096, expert width 1536, top-8 of 128).
QWEN235_TP8 = MoeShape(4096, 1536, 8, 128, tp=8, ep=1)


@cache
def _rows(engine: str, dtype: str, shape: MoeShape) -> pd.Series:
    """The table's own rows for a shape: num_tokens → latency in ms, read with pandas."""
    ref = find_table("h200", "moe", engine)
    assert not isinstance(ref, Missing)
    f = pd.read_parquet(ref.path)
    f = f[(f.moe_dtype == dtype) & (f.hidden_size == shape.hidden)
          & (f.inter_size == shape.inter) & (f.topk == shape.topk)
          & (f.num_experts == shape.num_experts) & (f.moe_tp_size == shape.tp)
          & (f.moe_ep_size == shape.ep) & (f.distribution == DISTRIBUTION)]
    return f.set_index("num_tokens")["latency"].sort_index()


def _tables(engine: str = "vllm", dtype: str = "bf16") -> MeasuredKernels:
    return measured_kernels(hardware_presets()["h200"], engine, dtype, "bf16")


def test_a_measured_shape_is_returned_exactly_from_the_table():
    rows = _rows("vllm", "bfloat16", QWEN235_TP8)
    assert rows.size == 27
    curve = find_moe_curve("h200", "vllm", QWEN235_TP8, "bf16")
    assert isinstance(curve, MoeCurve)
    hit = curve.latency(rows.index.to_numpy(np.float64))
    assert hit.all_covered
    np.testing.assert_allclose(hit.latency_s, rows.to_numpy() * 1e-3, rtol=1e-12)
    assert curve.provenance.label.startswith("aiconfigurator-core 0.12.0, h200_sxm/moe/vllm/0.24.0")
    # Between two measured counts: a power law, so between their times.
    mid = float(curve.latency(1536.0 * 1.5).latency_s)
    assert rows[1536] * 1e-3 < mid < rows[3072] * 1e-3


def test_the_model_prices_a_measured_count_at_the_table_time():
    rows = _rows("vllm", "bfloat16", QWEN235_TP8)
    tables = _tables()
    # 256 tokens: faster than every larger count (the monotone envelope keeps it).
    assert rows[256] <= rows[rows.index > 256].min()
    t = tables.moe_time(np.array([256.0]), QWEN235_TP8, "bf16", np.ones_like)
    assert float(t[0]) == pytest.approx(rows[256] * 1e-3, rel=1e-12)
    assert tables.tally.share("moe") == 1.0
    assert "h200_sxm/moe/vllm/0.24.0" in tables.describe()


def test_outside_the_measured_tokens_the_roofline_is_used_and_said():
    tables = _tables()
    n = np.array([64.0, 40000.0])
    t = tables.moe_time(n, QWEN235_TP8, "bf16", lambda nn: 1e-9 * np.asarray(nn))
    # Past 16384 tokens: the roofline's shape, anchored to the table's last time.
    last = _rows("vllm", "bfloat16", QWEN235_TP8)[16384] * 1e-3
    assert t[1] == pytest.approx(last * 40000 / 16384, rel=1e-12)
    assert tables.tally.measured["moe"] == 1 and tables.tally.total["moe"] == 2
    assert "outside the measured token range 1–16384" in tables.tally.why_not["moe"]
    assert "MoE experts 50% of calls measured (rest: outside the measured token range" in (
        tables.describe())


@pytest.mark.parametrize(("shape", "dtype", "why"), [
    (MoeShape(4096, 1536, 8, 100, tp=8), "bf16", "MoE shape not measured"),
    (QWEN235_TP8, "fp4", "no nvfp4 MoE in h200_sxm/moe/vllm/0.24.0"),
])
def test_an_unmeasured_shape_or_dtype_falls_back_to_the_roofline(shape, dtype, why):
    tables = _tables()
    t = tables.moe_time(np.array([8.0, 64.0]), shape, dtype, lambda nn: np.asarray(nn) / 2)
    assert np.array_equal(t, [4.0, 32.0])
    assert tables.tally.share("moe") == 0.0 and why in tables.tally.why_not["moe"]
    assert "MoE experts roofline (" in tables.describe()


def test_each_engine_reads_its_own_table_and_an_older_version_that_has_the_shape():
    sglang = find_moe_curve("h200", "sglang", QWEN235_TP8, "bf16")
    trtllm = find_moe_curve("h200", "trtllm", QWEN235_TP8, "bf16")
    assert isinstance(sglang, MoeCurve) and isinstance(trtllm, MoeCurve)
    assert sglang.provenance.engine == "sglang" and trtllm.provenance.engine == "trtllm"
    # trtllm's newest H200 MoE table (1.3.0rc23) measured Nemotron shapes only.
    assert trtllm.provenance.engine_version == "1.3.0rc20"
    assert find_table("h200", "moe", "trtllm").version == "1.3.0rc23"  # type: ignore[union-attr]


def test_t_verif_of_a_moe_preset_moves_from_the_roofline_to_the_table():
    sc = Scenario(model="qwen3-235b-a22b", hardware="h200", tp=8, batch=64, draft_len=3)
    model = scenario_model(sc)
    rows = _rows("vllm", "bfloat16", QWEN235_TP8)
    moe = float(model.verify(64, 1, sc.context, model.r.group)["moe"])
    # Every layer routes (no shared experts): 94 layers × the measured 64-token time (the
    # least of it and every larger count's: the curve's monotone envelope).
    assert rows[64] <= rows[rows.index > 64].min()
    expected = 94 * rows[64] * 1e-3
    assert moe == pytest.approx(expected, rel=1e-12)
    # At B = 1 the roofline prices the experts at half their measured time.
    roof = LayerModel(model.r.hardware, model.r.model, 8, sc.dtype, sc.kv_dtype)
    one = float(model.verify(1, 1, sc.context, model.r.group)["moe"])
    assert one == pytest.approx(94 * rows[1] * 1e-3, rel=1e-12)
    roof_one = float(roof.forward(1, 1, sc.context, model.r.group)["moe"])
    assert roof_one < 0.6 * one
    ev = evaluate(sc)
    assert ("MoE experts measured [aiconfigurator-core 0.12.0, h200_sxm/moe/vllm/0.24.0, bfloat16"
            in ev.sources["kernel_times"])
    assert "not used yet" not in ev.sources["kernel_times"]


def test_an_isolated_spike_does_not_raise_the_larger_counts():
    # h100 trtllm 1.3.0rc20, fp8 2048/512, top-8 of 256, EP 64: 1.21 ms at 160 tokens between
    # 0.03 ms neighbours (a timing glitch in the package's table).
    shape = MoeShape(2048, 512, 8, 256, tp=1, ep=64)
    tables = measured_kernels(hardware_presets()["h100"], "trtllm", "fp8", "bf16")
    curve = find_moe_curve("h100", "trtllm", shape, "fp8")
    assert isinstance(curve, MoeCurve) and curve.provenance.engine_version == "1.3.0rc20"
    raw = curve.latency(np.array([160.0, 192.0])).latency_s
    assert raw[0] > 20 * raw[1]
    t = tables.moe_time(np.array([160.0, 192.0, 256.0]), shape, "fp8", np.ones_like)
    assert t[0] == pytest.approx(raw[1], rel=1e-12) and t[1] == pytest.approx(raw[1], rel=1e-12)
    assert t[2] >= t[1]


def test_a_remembered_price_counts_like_the_first():
    tables = _tables()
    n = np.array([64.0, 40000.0])
    first = tables.moe_time(n, QWEN235_TP8, "bf16", np.ones_like)
    counted = (dict(tables.tally.measured), dict(tables.tally.total))
    tables.tally.reset()
    again = tables.moe_time(n, QWEN235_TP8, "bf16", np.ones_like)
    assert again is first and (dict(tables.tally.measured), dict(tables.tally.total)) == counted
    assert tables.moe_sources().startswith("aiconfigurator-core 0.12.0, h200_sxm/moe/vllm")


def test_hypothetical_hardware_prices_the_experts_by_the_roofline():
    hw = hardware_presets()["h200"]
    tables = measured_kernels(hw, "vllm", "bf16", "bf16", hypothetical=True)
    assert tables.moe_time(np.array([64.0]), QWEN235_TP8, "bf16", np.ones_like)[0] == 1.0
    assert "hypothetical" in tables.tally.why_not["moe"]


@settings(max_examples=40, deadline=None)
@given(st.floats(1.0, 60000.0), st.floats(1.0, 60000.0))
def test_more_tokens_never_make_the_routed_experts_faster(a, b):
    sc = Scenario(model="qwen3-235b-a22b", hardware="h200", tp=8)
    lm = scenario_model(sc).target
    lo, hi = sorted((a, b))
    t = lm.routed_experts(np.array([lo, hi]))
    assert t[0] <= t[1] * (1 + 1e-12)


def test_kernel_moe_prints_each_point_with_the_source_of_its_time():
    code, out, _ = run("kernel", "moe", "--tokens", "256,20000", "--hidden", "4096", "--inter",
                       "1536", "--topk", "8", "--experts", "128", "--tp", "8", "--json")
    assert code == 0
    rows = json.loads(out)
    assert rows[0]["time_s"] == pytest.approx(_rows("vllm", "bfloat16", QWEN235_TP8)[256] * 1e-3,
                                              rel=1e-12)
    assert rows[0]["source"].startswith("table aiconfigurator-core 0.12.0, h200_sxm/moe/vllm/")
    assert rows[1]["source"].startswith("roofline") and "outside the measured token range" in (
        rows[1]["source"])
    code, out, _ = run("kernel", "moe", "--tokens", "64", "--hidden", "4096", "--inter", "1536",
                       "--topk", "8", "--experts", "100", "--tp", "8")
    assert code == 0 and "MoE shape not measured" in out
