"""Decode MLA attention from the package's generation_mla tables (explorer/kernel_tables/mla.py):
exact at measured points, the roofline (saying so) where no table has the kernel alone."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from explorer import Scenario, evaluate
from explorer.kernel_tables import Missing, find_table
from explorer.kernel_tables.attention import AttentionConfig
from explorer.kernel_tables.mla import find_mla_config
from explorer.model.grid import scenario_model
from explorer.model.measured_kernels import measured_kernels
from explorer.presets import hardware_presets


def _rows(engine: str, heads: int, kv: str = "bfloat16") -> pd.DataFrame:
    ref = find_table("h200", "generation_mla", engine)
    assert not isinstance(ref, Missing)
    f = pd.read_parquet(ref.path)
    f = f[(f.num_heads == heads) & (f.kv_cache_dtype == kv) & (f.isl == 1)]
    return f.groupby(["batch_size", "step"])["latency"].median().unstack()


def test_a_measured_point_is_returned_exactly():
    grid = _rows("sglang", 16)
    cfg = find_mla_config("h200", "sglang", "bf16", 16, 512, 64)
    assert isinstance(cfg, AttentionConfig)
    hit = cfg.latency(np.array([64.0]), np.array([8191.0]))
    assert hit.all_covered
    assert float(hit.latency_s[0]) == pytest.approx(grid.loc[64, 8191] * 1e-3, rel=1e-12)
    assert cfg.provenance.label.startswith(
        "aiconfigurator-core 0.12.0, h200_sxm/mla/sglang/0.5.14/generation_mla")


def test_the_model_uses_the_table_time_at_a_measured_point():
    grid = _rows("sglang", 16)
    # (64, 8191) is no slower than any larger batch or KV length: the monotone envelope keeps it.
    assert grid.loc[64, 8191] <= np.nanmin(grid.loc[64:, 8191:].to_numpy())
    tables = measured_kernels(hardware_presets()["h200"], "sglang", "bf16", "bf16")
    one = np.array([1.0])
    t = tables.mla_attention_time(np.array([64.0]), np.array([8191.0]), 16.0, 512, 64, "bf16",
                                  one, one)
    assert float(t[0]) == pytest.approx(grid.loc[64, 8191] * 1e-3, rel=1e-12)
    assert tables.tally.share("attention") == 1.0
    assert "h200_sxm/mla/sglang/0.5.14" in tables.describe()


def test_an_isolated_slow_point_is_not_carried_to_larger_batches():
    grid = _rows("trtllm", 16)
    assert grid.loc[32, 3] > 50 * grid.loc[32, 1]  # a glitch in the package's table
    tables = measured_kernels(hardware_presets()["h200"], "trtllm", "bf16", "bf16")
    one = np.ones(2)
    t = tables.mla_attention_time(np.array([32.0, 64.0]), np.array([3.0, 7.0]), 16.0, 512, 64,
                                  "bf16", one, one)
    assert np.all(t < 1e-4)


@pytest.mark.parametrize(("engine", "heads", "latent", "why"), [
    ("vllm", 16, 512, "publishes MLA only as a whole module"),
    ("sglang", 12, 512, "no measured generation_mla for 12 query heads per rank"),
    ("sglang", 16, 256, "measure DeepSeek's 512+64 latent only"),
])
def test_no_table_falls_back_to_the_roofline_and_says_why(engine, heads, latent, why):
    tables = measured_kernels(hardware_presets()["h200"], engine, "bf16", "bf16")
    roofline = np.array([5.0])
    t = tables.mla_attention_time(np.array([8.0]), np.array([1024.0]), float(heads), latent, 64,
                                  "bf16", roofline, roofline)
    assert t[0] == 5.0 and why in tables.tally.why_not["attention"]


def test_deepseek_v3_decode_attention_moves_to_the_table_with_sglang():
    sc = Scenario(model="deepseek-v3", hardware="h200", tp=8, batch=64, draft_len=3,
                  engine="sglang")
    model = scenario_model(sc)
    grid = _rows("sglang", 16)
    ctx = float(sc.context)
    b = 64.0
    cfg = find_mla_config("h200", "sglang", "bf16", 16, 512, 64)
    assert isinstance(cfg, AttentionConfig)
    t = float(model.verify(b, 1, sc.context, model.r.group)["attention"])
    assert t == pytest.approx(61 * float(cfg.latency(b, ctx).latency_s), rel=1e-9)
    assert grid.loc[64].notna().sum() > 10
    ev = evaluate(sc)
    assert "decode attention measured [aiconfigurator-core 0.12.0, h200_sxm/mla/sglang/0.5.14" in (
        ev.sources["kernel_times"])
    assert "MLA tables not used yet" not in ev.sources["kernel_times"]
