"""explorer.kernel_tables: the measured tables of the pinned aiconfigurator-core package.

Lookups are exact at measured points, interpolate in log space between them, never claim
coverage outside the measured box, and every gap is a Missing with a reason, never an exception.
"""

from __future__ import annotations

import warnings
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from explorer.kernel_tables import (
    SYSTEM_FOR_PRESET,
    GemmTable,
    GenerationAttentionTable,
    Missing,
    find_table,
    gemm_time_s,
    generation_attention_time_s,
    list_tables,
    load_gemm_table,
    load_generation_attention_table,
    newest_version,
    preset_coverage,
    resolve_system,
    table_dtype,
    versions,
)
from explorer.kernel_tables.attention import _DEFAULT_LANE, sm_version
from explorer.kernel_tables.catalog import data_root, version_key
from explorer.kernel_tables.gemm import fill_grid
from explorer.presets import hardware_presets


@cache
def h200_bf16() -> GemmTable:
    table = load_gemm_table("h200", "vllm", "bf16")
    assert isinstance(table, GemmTable), table
    return table


@cache
def h200_fp8_attention() -> GenerationAttentionTable:
    table = load_generation_attention_table("h200", "vllm", "fp8")
    assert isinstance(table, GenerationAttentionTable), table
    return table


# --- catalog -------------------------------------------------------------------------------


def test_every_hardware_preset_has_a_decision_and_mapped_systems_have_tables():
    assert set(hardware_presets()) <= set(SYSTEM_FOR_PRESET)
    shipped = {r.system for r in list_tables()}
    for slug, system in SYSTEM_FOR_PRESET.items():
        if system is None:
            assert isinstance(resolve_system(slug), Missing)
        else:
            assert system in shipped and resolve_system(slug) == system
    assert resolve_system("h200_sxm") == "h200_sxm"  # package names work too


def test_mi300x_has_no_tables_and_says_why():
    assert SYSTEM_FOR_PRESET["mi300x"] is None
    found = load_gemm_table("mi300x", "vllm", "bf16")
    assert isinstance(found, Missing) and "MI300X" in found.reason


def test_newest_version_per_engine():
    assert find_table("h200", "gemm", "vllm").version == "0.24.0"  # type: ignore[union-attr]
    assert find_table("h200", "gemm", "trtllm").version == "1.3.0rc20"  # type: ignore[union-attr]
    assert versions("b200", "generation_attention", "vllm") == ("0.22.0", "0.24.0")
    assert newest_version("b200", "generation_attention", "vllm") == "0.24.0"
    assert newest_version("h100", "gemm", "sglang") == "0.5.14"  # not 0.5.6.post2
    assert find_table("b200", "generation_attention", "vllm", "0.22.0").version == "0.22.0"  # type: ignore[union-attr]


def test_version_order():
    ordered = ["0.1.dev19262", "0.1", "0.5.6", "0.5.6.post2", "0.5.14", "1.3.0rc3",
               "1.3.0rc20", "1.3.0"]
    assert sorted(reversed(ordered), key=version_key) == ordered


def test_dtype_spellings_reach_the_package_spelling():
    assert [table_dtype(x) for x in ("bf16", "BFloat16", "fp8", "fp8-block", "fp8_block",
                                     "fp4", "nvfp4", "int8_wo")] == [
        "bfloat16", "bfloat16", "fp8", "fp8_block", "fp8_block", "nvfp4", "nvfp4", "int8_wo"]


# --- GEMM ----------------------------------------------------------------------------------


def test_known_row_of_h200_vllm_bf16():
    """A row of h200_sxm/gemm/vllm/0.24.0/gemm_perf.parquet, typed in: 64×6144×4096 bf16
    (torch.nn.functional.linear) took 0.017793777916166518 ms; 1024 tokens 0.06479199727376302."""
    hit = gemm_time_s("h200", "vllm", "bf16", [64, 1024], 6144, 4096)
    assert not isinstance(hit, Missing)
    np.testing.assert_allclose(hit.latency_s, [0.017793777916166518e-3, 0.06479199727376302e-3],
                               rtol=1e-12)
    assert hit.covered.all() and not hit.filled.any()
    assert hit.provenance.label == ("aiconfigurator-core 0.12.0, h200_sxm/gemm/vllm/0.24.0, "
                                    "bfloat16, torch.nn.functional.linear")


def test_exact_at_every_measured_grid_point():
    table = h200_bf16()
    rows = pd.read_parquet(table.ref.path, filters=[("gemm_dtype", "==", "bfloat16")])
    hit = table.latency(rows["m"], rows["n"], rows["k"])
    assert hit.covered.all()
    np.testing.assert_allclose(hit.latency_s, rows["latency"].to_numpy() * 1e-3, rtol=1e-12)


def test_log_space_between_points():
    """Half-way in log m (and in log n) the time is the geometric mean of the neighbours."""
    table = h200_bf16()
    t = table.latency([513, 768, np.sqrt(513 * 768)], 4096, 4096).latency_s  # adjacent nodes
    np.testing.assert_allclose(t[2], np.sqrt(t[0] * t[1]), rtol=1e-12)
    t = table.latency(512, [4096, 5120, np.sqrt(4096 * 5120)], 8192).latency_s
    np.testing.assert_allclose(t[2], np.sqrt(t[0] * t[1]), rtol=1e-12)


def test_curve_over_m_equals_the_trilinear_lookup():
    table = h200_bf16()
    m = np.geomspace(1, 32768, 500)
    for n, k in ((6144, 4096), (14336 / 2, 4096), (57344, 8192), (65536, 60000), (100, 70000)):
        # Arrays of n and k take the general trilinear path; scalars take the curve.
        fast = table.latency(m, n, k)
        full = table.latency(m, np.full_like(m, n), np.full_like(m, k))
        np.testing.assert_array_equal(fast.covered, full.covered)
        np.testing.assert_array_equal(fast.filled, full.filled)
        np.testing.assert_allclose(fast.latency_s, full.latency_s, rtol=1e-12)
    assert table.curve(6144, 4096) is table.curve(6144.0, 4096.0)  # cached per shape


def test_monotone_in_m_within_noise_where_measured():
    """For serving shapes (n, k ≥ 1024): at tile-aligned m (multiples of 256) the measured time
    never falls more than 25% below an earlier m (kernel-selection noise), doubling m past the
    ridge costs at least 1.2×, and between two grid points the interpolant stays between them."""
    table = h200_bf16()
    aligned = table.m_values[table.m_values % 256 == 0].astype(float)
    rng = np.random.default_rng(0)
    m_nodes = table.m_values.astype(float)
    i = rng.integers(0, m_nodes.size - 1, 300)
    between = np.exp(rng.uniform(np.log(m_nodes[i]), np.log(m_nodes[i + 1])))
    for n in table.n_values[table.n_values >= 1024]:
        for k in table.k_values[table.k_values >= 1024]:
            curve = table.curve(n, k)
            t = curve.latency(aligned).latency_s
            assert (t / np.maximum.accumulate(t)).min() >= 0.75, (n, k)
            big = curve.latency([2048, 4096, 8192, 16384]).latency_s
            assert (big[1:] / big[:-1]).min() >= 1.2, (n, k)
            lo, hi, mid = (curve.latency(x).latency_s for x in (m_nodes[i], m_nodes[i + 1],
                                                                 between))
            assert (mid >= np.minimum(lo, hi) * (1 - 1e-12)).all()
            assert (mid <= np.maximum(lo, hi) * (1 + 1e-12)).all()


def test_not_covered_outside_the_measured_box():
    table = h200_bf16()
    assert table.box == ((1, 32768), (32, 65536), (32, 65536))
    m = [0.5, 40000, 64, 64, 64, np.nan, 0, -3, 64]
    n = [4096, 4096, 16, 80000, 4096, 4096, 4096, 4096, 4096]
    k = [4096, 4096, 4096, 4096, 100000, 4096, 4096, 4096, 4096]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # bad queries are quietly not covered
        hit = table.latency(m, n, k)
        scalar = table.latency(m, 4096, 4096)
    assert hit.covered.tolist() == [False] * 8 + [True]
    assert np.isnan(hit.latency_s[:8]).all() and np.isfinite(hit.latency_s[8])
    assert scalar.covered.tolist() == [False, False, True, True, True, False, False, False, True]
    assert not table.curve(16, 4096).latency([1, 64]).covered.any()


def test_filled_grid_points_are_flagged_and_plausible():
    """H200 vLLM bf16 measured no n = k = 65536 column: it is filled (log-parallelogram from
    n = 51200 / k = 51200) and every lookup that uses it says so."""
    table = h200_bf16()
    assert (~table.measured).sum() == 74 and table.known.all()
    hit = table.latency([1, 4096, 4096], [65536, 65536, 51200], [65536, 65536, 51200])
    assert hit.covered.all() and hit.filled.tolist() == [True, True, False]
    lower = table.latency(4096, 51200, 65536).latency_s
    assert lower < hit.latency_s[1] < lower * 65536 / 51200 * 1.2
    assert "74 filled" in table.provenance.detail


def test_fill_rule_is_exact_on_a_power_law():
    """The fill rules assume a local power law; on one they must reproduce it exactly, in the
    interior (along m), on a whole (n, k) column and on an edge line of an (n, k) plane."""
    lm, ln, lk = (np.log(np.array(v, dtype=float)) for v in
                  ([1, 2, 8, 64, 512, 4096], [32, 256, 1024, 8192], [64, 128, 4096, 65536]))
    truth = 0.7 * lm[:, None, None] + 0.4 * ln[None, :, None] + 0.9 * lk[None, None, :] - 11.0
    holes = truth.copy()
    holes[2, 1, 1] = np.nan  # interior of a column
    holes[:, 3, 3] = np.nan  # a whole (n, k) column
    holes[-1, :, 3] = np.nan  # an edge line at the largest m
    holes[-1, 3, :] = np.nan
    np.testing.assert_allclose(fill_grid(holes, lm), truth, rtol=0, atol=1e-12)


def test_sparse_axis_values_are_dropped_not_filled():
    """b300 SGLang bf16 measured n = 1, 8, 16 at one k only: those rows are dropped."""
    table = load_gemm_table("b300", "sglang", "bf16")
    assert isinstance(table, GemmTable)
    assert table.n_values[0] == 32 and table.rows_dropped == 222
    assert "dropped" in table.provenance.detail


@pytest.mark.parametrize(("gpu", "engine", "dtype", "says"), [
    ("mi300x", "vllm", "bf16", "MI300X"),
    ("tpu-v5", "vllm", "bf16", "no aiconfigurator-core 0.12.0 tables for hardware 'tpu-v5'"),
    ("h200", "tgi", "bf16", "have: sglang, trtllm, vllm"),
    ("h200", "vllm", "fp4", "no nvfp4 GEMMs in h200_sxm/gemm/vllm/0.24.0"),
    ("a100", "vllm", "fp8", "have: bfloat16"),
])
def test_missing_tables_give_a_reason(gpu: str, engine: str, dtype: str, says: str):
    found = gemm_time_s(gpu, engine, dtype, 64, 4096, 4096)
    assert isinstance(found, Missing) and says in found.reason
    assert isinstance(find_table("h200", "gemm", "vllm", "9.9.9"), Missing)


def test_no_package_is_a_reason_too(tmp_path: Path):
    found = load_gemm_table("h200", "vllm", "bf16", root=tmp_path)
    assert isinstance(found, Missing) and "not installed" in found.reason
    assert list_tables(tmp_path) == ()


# --- decode attention ----------------------------------------------------------------------


def test_attention_exact_at_measured_points_and_known_row():
    """A row of h200_sxm/attention/vllm/0.24.0/generation_attention_perf.parquet: 32 q / 8 kv
    heads × 128, fp8 KV, batch 16, step 4095: 0.059248000383377075 ms (vllm_flash_attn_fa3)."""
    hit = generation_attention_time_s("h200", "vllm", "fp8", 32, 8, 128, 16, 4095)
    assert not isinstance(hit, Missing) and hit.all_covered
    np.testing.assert_allclose(hit.latency_s, 0.059248000383377075e-3, rtol=1e-12)
    assert hit.provenance.label == (
        "aiconfigurator-core 0.12.0, h200_sxm/attention/vllm/0.24.0/generation_attention, "
        "fp8 KV, vllm_flash_attn_fa3")
    table = h200_fp8_attention()
    rows = pd.read_parquet(table.ref.path)
    rows = rows[(rows["kv_cache_dtype"] == "fp8") & (rows["num_heads"] == 32)
                & (rows["num_key_value_heads"] == 8) & (rows["head_dim"] == 128)
                & (rows["window_size"] == 0)]
    hit = table.latency(32, 8, 128, rows["batch_size"], rows["step"])
    assert not isinstance(hit, Missing) and hit.all_covered
    np.testing.assert_allclose(hit.latency_s, rows["latency"].to_numpy() * 1e-3, rtol=1e-12)


def test_attention_coverage_follows_the_measured_staircase():
    """Large batch × long KV was not measured (a token budget: batch 2048 stops at KV 127,
    batch 1024 at 255): not covered there, and nothing is extrapolated."""
    config = h200_fp8_attention().config(32, 8, 128)
    assert not isinstance(config, Missing)
    hit = config.latency([64, 2048, 1024, 2048, 2048, 1, 1, 4096],
                         [4096, 127, 255, 255, 200, 0.5, 200_000, 64])
    assert hit.covered.tolist() == [True, True, True] + [False] * 5
    assert np.isfinite(hit.latency_s[:3]).all() and np.isnan(hit.latency_s[3:]).all()
    t = config.latency(64, [1023, 2047, 4095, 8191]).latency_s  # KV-bound: grows with KV
    assert (np.diff(t) > 0).all()


def test_attention_window_and_missing_configurations():
    table = h200_fp8_attention()
    windowed = table.config(32, 8, 128, window_tokens=128)
    assert not isinstance(windowed, Missing) and windowed.window_tokens == 128
    missing = table.config(33, 8, 128)
    assert isinstance(missing, Missing) and "nearest: 32 q / 8 kv heads × 128" in missing.reason
    assert isinstance(table.config(32, 8, 128, window_tokens=4096), Missing)
    found = load_generation_attention_table("a100", "vllm", "fp8")
    assert isinstance(found, Missing) and "have: bfloat16" in found.reason
    found = generation_attention_time_s("mi300x", "vllm", "bf16", 32, 8, 128, 1, 1024)
    assert isinstance(found, Missing)


def test_a_sliding_window_caps_the_kv_read():
    """l40s vllm 5 q / 1 kv heads × 128, window 8192: past the window the time is the time at
    the window (the collector measured it flat to KV 131071 at small batch), so it never falls
    and stays covered with a longer context; nothing unmeasured becomes covered."""
    table = load_generation_attention_table("l40s", "vllm", "bf16")
    assert isinstance(table, GenerationAttentionTable)
    config = table.config(5, 1, 128, window_tokens=8192)
    assert not isinstance(config, Missing)
    at_window = config.latency(16, 8192)
    longer = config.latency(16, [16384, 65536, 10**7])  # 10^7: past the measured KV axis
    assert at_window.all_covered and longer.all_covered
    np.testing.assert_array_equal(longer.latency_s, np.full(3, at_window.latency_s))
    below = config.latency(16, [1023, 4095, 8191])
    assert (np.diff(below.latency_s) > 0).all()  # below the window it grows with the KV read
    assert not config.latency(256, 16384).all_covered  # batch 256 was measured to KV 2047


def test_one_kernel_per_configuration_the_engines_default_lane():
    """SGLang measured some configurations with several kernels; the table uses the package's
    framework-default lane for the SM where it measured that configuration (fa3 on Hopper)."""
    table = load_generation_attention_table("h200", "sglang", "bf16")
    assert isinstance(table, GenerationAttentionTable)
    kernels = {c.provenance.kernel_source for c in table.configs.values()}
    assert "fa3" in kernels
    raw = pd.read_parquet(table.ref.path)
    raw = raw[(raw["kv_cache_dtype"] == "bfloat16")]
    keys = ["num_heads", "num_key_value_heads", "head_dim", "window_size"]
    multi = raw.groupby(keys)["kernel_source"].nunique()
    for key in multi[multi > 1].index:
        assert table.configs[tuple(int(x) for x in key)].provenance.kernel_source == "fa3"


def test_default_lane_copy_matches_the_package():
    root = data_root()
    assert root is not None
    shipped = yaml.safe_load((root.parent / "attention_lane_defaults.yaml").read_text())
    for (engine, version), lanes in _DEFAULT_LANE.items():
        assert {int(sm): str(k) for sm, k in shipped[engine][version].items()} == lanes
    for system in ("h200_sxm", "b200_sxm", "b300_sxm", "l40s", "a100_sxm"):
        ref = find_table(system, "generation_attention", "vllm")
        assert not isinstance(ref, Missing)
        spec = yaml.safe_load((root.parent / f"{system}.yaml").read_text())
        assert sm_version(ref) == spec["gpu"]["sm_version"]


def test_preset_coverage_per_engine_and_dtype():
    rows = {(c.preset, c.engine): c for c in preset_coverage()}
    assert set(rows) == {(p, e) for p in SYSTEM_FOR_PRESET for e in ("vllm", "sglang", "trtllm")}
    h200 = rows[("h200", "vllm")]
    assert (h200.gemm_version, h200.gemm_dtypes, h200.kv_dtypes) == (
        "0.24.0", ("bf16", "fp8", "fp8_block"), ("bf16", "fp8"))
    assert "fp4" in rows[("b200", "trtllm")].gemm_dtypes
    assert rows[("a100", "vllm")].gemm_dtypes == ("bf16",)
    mi300x = rows[("mi300x", "sglang")]
    assert mi300x.system is None and mi300x.gemm_dtypes == () and "MI300X" in mi300x.reason


def test_a_damaged_table_is_a_reason_not_an_exception(tmp_path: Path):
    gemm = tmp_path / "h200_sxm" / "gemm" / "vllm" / "0.24.0"
    attention = tmp_path / "h200_sxm" / "attention" / "vllm" / "0.24.0"
    gemm.mkdir(parents=True)
    attention.mkdir(parents=True)
    (gemm / "gemm_perf.parquet").write_bytes(b"not parquet")
    pd.DataFrame({"latency": [1.0]}).to_parquet(attention / "generation_attention_perf.parquet")
    found = load_gemm_table("h200", "vllm", "bf16", root=tmp_path)
    assert isinstance(found, Missing) and "could not read h200_sxm/gemm/vllm/0.24.0" in found.reason
    found = load_generation_attention_table("h200", "vllm", "bf16", root=tmp_path)
    assert isinstance(found, Missing) and "could not read" in found.reason


# --- tables that do not price a serving step -----------------------------------------------


def test_vllm_fp8_block_gemms_are_priced_by_a_table_timed_under_cuda_graphs():
    """vLLM's fp8_block table was timed eagerly (60-290 µs a call at any shape); SGLang's
    table of the same GPU prices vLLM's fp8_block GEMMs instead, and says so."""
    from explorer.kernel_tables import load_serving_gemm_table

    raw = load_gemm_table("b200", "vllm", "fp8_block")
    served = load_serving_gemm_table("b200", "vllm", "fp8_block")
    sglang = load_gemm_table("b200", "sglang", "fp8_block")
    assert isinstance(raw, GemmTable) and isinstance(served, GemmTable)
    assert isinstance(sglang, GemmTable)
    assert served.provenance.engine == "sglang"
    assert served.provenance.stands_in_for == "vllm"
    assert "standing in for vllm's own table" in served.provenance.label
    assert "use_cuda_graph" in served.provenance.stand_in_reason  # the collector's own words
    m = np.array([1.0, 8.0, 64.0])
    got = served.curve(7168, 16384).latency(m)
    assert got.provenance.stands_in_for  # the curve carries the stand-in's provenance
    np.testing.assert_allclose(got.latency_s, sglang.curve(7168, 16384).latency(m).latency_s)
    # The eager table is the artefact it is said to be: several times slower at small m.
    assert np.all(raw.curve(7168, 16384).latency(m).latency_s > 5 * got.latency_s)
    # The raw table keeps its own provenance (validate and the fits read it as measured).
    assert not raw.curve(7168, 16384).provenance.stands_in_for


def test_other_tables_price_their_own_engine():
    from explorer.kernel_tables import load_serving_gemm_table

    for engine, dtype in (("vllm", "bf16"), ("vllm", "fp8"), ("sglang", "fp8_block"),
                          ("trtllm", "fp8_block")):
        assert load_serving_gemm_table("h100", engine, dtype) is load_gemm_table(
            "h100", engine, dtype)


def test_no_stand_in_is_a_reason(monkeypatch: pytest.MonkeyPatch):
    from explorer.kernel_tables import served
    from explorer.kernel_tables.catalog import NotAsServed

    monkeypatch.setitem(served.NOT_AS_SERVED, ("vllm", "gemm", "bfloat16"),
                        NotAsServed(("nosuchengine",), "timed some other way"))
    served.load_serving_gemm_table.cache_clear()
    try:
        got = served.load_serving_gemm_table("h100", "vllm", "bf16")
        assert isinstance(got, Missing)
        assert "timed some other way" in got.reason and "nosuchengine" in got.reason
    finally:
        served.load_serving_gemm_table.cache_clear()
