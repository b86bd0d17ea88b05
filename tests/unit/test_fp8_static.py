"""TRT-LLM fp8 GEMMs priced on the static path: the package's fp8 table (timed with dynamic
activation quantization) less TRT-LLM's measured compute-scale time, floored at the speed of
light (aiconfigurator's fp8_static rule); other engines' fp8 tables are used as measured."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from explorer.kernel_tables import GemmTable, Missing, load_gemm_table
from explorer.kernel_tables.catalog import data_root
from explorer.kernel_tables.quantize import ComputeScaleTable, load_compute_scale_table
from explorer.kernel_tables.served import SpeedOfLight, load_serving_gemm_table
from explorer.model.measured_kernels import measured_kernels
from explorer.presets import hardware_presets

H100 = hardware_presets()["h100"]
SOL = SpeedOfLight(H100.peak_flops_per_s("fp8"), H100.hbm_bw_bytes_per_s)
_CS = "h100_sxm/quantize/trtllm/1.3.0rc20/computescale_perf.parquet"
_GEMM = "h100_sxm/gemm/trtllm/1.3.0rc20/gemm_perf.parquet"


def _served() -> GemmTable:
    table = load_serving_gemm_table("h100", "trtllm", "fp8", SOL)
    assert isinstance(table, GemmTable)
    return table


def _cs_row_s(m: int, k: int) -> float:
    root = data_root()
    assert root is not None
    frame = pd.read_parquet(root / _CS)
    row = frame[(frame["m"] == m) & (frame["k"] == k) & (frame["quant_dtype"] == "fp8")]
    assert len(row) == 1
    return float(row["latency"].iloc[0]) * 1e-3


def test_a_small_m_point_is_the_measured_time_less_the_compute_scale_time():
    raw = load_gemm_table("h100", "trtllm", "fp8")
    assert isinstance(raw, GemmTable)
    m = np.array([8.0])
    raw_s = float(raw.latency(m, 4096, 4096).latency_s[0])
    served_s = float(_served().latency(m, 4096, 4096).latency_s[0])
    cs_s = _cs_row_s(8, 4096)
    assert 5e-6 < cs_s < 1e-5  # ~7 µs: the dynamic scale's cost at decode sizes
    floor = float(SOL.gemm_time_s(8, 4096, 4096, "fp8"))
    assert served_s > floor  # not floored here, so the whole compute-scale time comes off
    assert served_s == pytest.approx(raw_s - cs_s, rel=1e-9)
    # Between the table's m nodes the reader interpolates in log m: its value at a node is the
    # row, between two nodes it lies between them.
    cs = load_compute_scale_table("h100", "trtllm")
    assert isinstance(cs, ComputeScaleTable)
    at = cs.latency(np.array([8.0, 20.0]), 4096)
    assert at.latency_s[0] == pytest.approx(cs_s, rel=1e-12)
    lo, hi = sorted((_cs_row_s(17, 4096), _cs_row_s(32, 4096)))
    assert lo <= at.latency_s[1] <= hi


def test_never_below_the_speed_of_light_and_floored_exactly_where_the_difference_is():
    raw = load_gemm_table("h100", "trtllm", "fp8")
    served = _served()
    cs = load_compute_scale_table("h100", "trtllm")
    assert isinstance(raw, GemmTable) and isinstance(cs, ComputeScaleTable)
    m, n, k = served.m_values[:, None, None], served.n_values[None, :, None], \
        served.k_values[None, None, :]
    floor = SOL.gemm_time_s(m, n, k, "fp8")
    got = np.exp(served.log_latency)
    assert np.all(got >= floor * (1 - 1e-12))
    less = np.exp(raw.log_latency) - cs.latency(served.m_values[:, None],
                                                served.k_values[None, :]).latency_s[:, None, :]
    floored = less < floor
    assert floored.sum() == 1  # h100: one grid point would fall below it
    np.testing.assert_allclose(got[floored], floor[floored], rtol=1e-12)
    np.testing.assert_allclose(got[~floored], less[~floored], rtol=1e-12)


def test_vllm_and_sglang_fp8_tables_are_used_as_measured():
    for engine in ("vllm", "sglang"):
        assert load_serving_gemm_table("h100", engine, "fp8", SOL) is load_gemm_table(
            "h100", engine, "fp8")


def test_the_sources_text_says_it():
    kernels = measured_kernels(H100, "trtllm", "fp8", "fp8")
    m = np.array([1.0, 8.0, 64.0])
    raw = load_gemm_table("h100", "trtllm", "fp8")
    assert isinstance(raw, GemmTable)
    got = kernels.gemm_time(m, 4096, 4096, np.full(3, np.inf))
    assert np.all(got < raw.latency(m, 4096, 4096).latency_s)
    text = kernels.describe()
    assert "fp8 static: the measured dynamic-quant fp8 time less TRT-LLM's measured " \
        "compute-scale time (aiconfigurator's fp8_static rule, gemm.rs @90f7fc0fc)" in text
    assert "h100_sxm/quantize/trtllm/1.3.0rc20/computescale subtracted" in text
    assert "fp8 static" not in measured_kernels(H100, "vllm", "fp8", "fp8").describe()


def _root_with(tmp_path: Path, cs_frame: pd.DataFrame | None) -> Path:
    source = data_root()
    assert source is not None
    gemm = tmp_path / Path(_GEMM).parent
    gemm.mkdir(parents=True)
    (gemm / "gemm_perf.parquet").symlink_to(source / _GEMM)
    if cs_frame is not None:
        cs = tmp_path / Path(_CS).parent
        cs.mkdir(parents=True)
        cs_frame.to_parquet(cs / "computescale_perf.parquet")
    return tmp_path


def test_without_a_compute_scale_table_the_measured_times_are_used_and_it_says_why(
        tmp_path: Path):
    root = _root_with(tmp_path, None)
    got = load_serving_gemm_table("h100", "trtllm", "fp8", SOL, root)
    raw = load_gemm_table("h100", "trtllm", "fp8")
    assert isinstance(got, GemmTable) and isinstance(raw, GemmTable)
    np.testing.assert_array_equal(got.log_latency, raw.log_latency)
    assert "fp8 static" in got.provenance.adjustment
    assert "not applied: no aiconfigurator-core" in got.provenance.adjustment
    assert "computescale table for h100_sxm" in got.provenance.adjustment
    assert "used as measured" in got.provenance.label


def test_outside_the_compute_scale_box_nothing_is_subtracted(tmp_path: Path):
    source = data_root()
    assert source is not None
    frame = pd.read_parquet(source / _CS)
    root = _root_with(tmp_path, frame[frame["k"] <= 4096])
    got = load_serving_gemm_table("h100", "trtllm", "fp8", SOL, root)
    raw = load_gemm_table("h100", "trtllm", "fp8")
    assert isinstance(got, GemmTable) and isinstance(raw, GemmTable)
    wide = raw.k_values > 4096
    np.testing.assert_array_equal(got.log_latency[:, :, wide], raw.log_latency[:, :, wide])
    assert np.all(got.log_latency[:, :, ~wide] < raw.log_latency[:, :, ~wide])
    cs = load_compute_scale_table("h100", "trtllm", root=root)
    assert isinstance(cs, ComputeScaleTable)
    hit = cs.latency(np.array([8.0, 8.0, 0.5]), np.array([4096.0, 5120.0, 4096.0]))
    assert hit.covered.tolist() == [True, False, False]
    assert np.isnan(hit.latency_s[1:]).all()
    assert "outside its measured (m, k) box" in got.provenance.adjustment


def test_a_zero_compute_scale_time_is_a_measurement():
    """The collector logs max(0, dynamic − static): a 0 is measured, and subtracts nothing."""
    cs = load_compute_scale_table("l40s", "trtllm")
    assert isinstance(cs, ComputeScaleTable)
    hit = cs.latency(16384, 2560)
    assert bool(hit.covered) and float(hit.latency_s) == 0.0


def test_no_speed_of_light_no_rule():
    got = load_serving_gemm_table("h100", "trtllm", "fp8")
    assert isinstance(got, Missing) and "speed-of-light floor" in got.reason
