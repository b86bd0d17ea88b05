"""Co-design sweeps (explorer/analysis/codesign.py, `sweep --design-*`, the Co-design page's
heatmap): each design is the target with its shapes changed, priced by the same model."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pandas as pd
import pytest

from explorer.analysis.codesign import codesign, design_model
from explorer.analysis.frontier import best_draft_len
from explorer.base.errors import ScenarioError
from explorer.interfaces.cli import main
from explorer.presets import model_presets
from explorer.specs.scenario import Scenario
from explorer.ui.codesign_figures import best_speedup_heatmap

SC = Scenario(model="llama-3.1-70b", tp=2, batch=16, context=8192)


def test_g_at_fixed_kv_bytes_keeps_the_kv_heads_and_at_fixed_params_the_q_heads():
    kv = codesign(SC, {"group": [2, 4, 8, 16]}, "fixed_kv")
    assert list(kv["kv_heads_total"]) == [8] * 4 and list(kv["q_heads"]) == [16, 32, 64, 128]
    assert kv["kv_bytes_per_token"].nunique() == 1
    assert kv["params_b"].is_monotonic_increasing
    par = codesign(SC, {"group": [2, 4, 8, 16]}, "fixed_params")
    assert list(par["q_heads"]) == [64] * 4 and list(par["kv_heads_total"]) == [32, 16, 8, 4]
    assert np.allclose(par["kv_bytes_per_token"] * par["group"],
                       par["kv_bytes_per_token"].iloc[0] * 2)
    # the tile boundary moves with G: one 128-row tile holds G_rank·(1+D) query rows
    g_rank = par["group_G"]  # TP=2 splits q and KV heads alike here
    assert list(par["tile_free_draft_len"]) == list((128 // g_rank - 1).astype(int))


def test_the_baseline_design_is_the_scenario():
    base = model_presets()["llama-3.1-70b"]
    df = codesign(SC, {"group": [int(base.group_size)], "layers": [base.layers]})
    best = best_draft_len(SC, batches=[SC.batch])
    assert df["best_draft_len"].iloc[0] == best.best_draft_len[0]
    assert df["best_speedup"].iloc[0] == pytest.approx(best.best_speedup[0], rel=1e-12)
    assert df["params_b"].iloc[0] == pytest.approx(base.param_count() / 1e9, rel=1e-3)


def test_more_layers_cost_more_and_deeper_drafters_draft_slower():
    layers = codesign(SC, {"layers": [20, 40, 80, 160]})
    assert layers["params_b"].is_monotonic_increasing
    drafts = codesign(SC.model_copy(update={"mechanism": "eagle3"}), {"draft_layers": [1, 2, 4]})
    assert drafts["speed_best_speedup"].is_monotonic_decreasing  # same AL, more T_draft
    rho = codesign(SC, {"rho": [0.01, 0.05, 0.2]})
    assert rho["speed_best_speedup"].is_monotonic_decreasing


def test_moe_axes_change_the_experts():
    sc = Scenario(model="qwen3-30b-a3b", tp=1, batch=16)
    df = codesign(sc, {"experts": [64, 128], "top_k": [4, 8]})
    assert len(df) == 4 and df.groupby("experts")["params_b"].nunique().eq(1).all()
    assert df["params_b"].iloc[0] < df["params_b"].iloc[-1]


@pytest.mark.parametrize(("slug", "axes", "field"), [
    ("llama-3.1-70b", {"experts": [8]}, "experts"),
    ("deepseek-v3", {"group": [4]}, "group"),  # MLA: 4 query heads cannot split over TP=8
    ("deepseek-v3", {"kv_heads": [8]}, "kv_heads"),  # MLA: one latent KV head
    ("llama-3.1-70b", {"kv_heads": [5]}, "kv_heads"),
    ("qwen3-30b-a3b", {"top_k": [512]}, "top_k"),
    ("llama-3.1-70b", {"nonsense": [1]}, "nonsense"),
])
def test_an_impossible_design_names_its_axis(slug, axes, field):
    with pytest.raises(ScenarioError) as exc:
        codesign(Scenario(model=slug, tp=8), axes)
    assert exc.value.field == field


def test_an_mla_targets_g_is_its_query_heads_at_fixed_kv_bytes():
    """DeepSeek-V3 (MLA: one latent KV head for all 128 query heads): a design's G was refused
    as "a GQA shape", so the Co-design page showed nothing for MLA targets. G is the query heads;
    the latent, and with it the KV bytes per token, stays."""
    sc = Scenario(model="deepseek-v3", tp=8, dtype="fp8")
    df = codesign(sc, {"group": [16, 32, 64, 128]})
    assert list(df["q_heads"]) == [16, 32, 64, 128] and set(df["kv_heads_total"]) == {1}
    assert df["kv_bytes_per_token"].nunique() == 1 and df["params_b"].is_monotonic_increasing
    # 128-row tiles of G/TP query rows per rank: G = 128 at TP = 8 is 16 rows, D ≤ 7
    assert list(df["tile_free_draft_len"]) == [63, 31, 15, 7]
    # the model's own G is the scenario itself
    base = best_draft_len(sc, batches=[sc.batch])
    assert df["best_speedup"].iloc[-1] == pytest.approx(base.best_speedup[0])
    # fewer query heads: a cheaper verify, a speedup no lower
    assert df["best_speedup"].is_monotonic_decreasing
    with pytest.raises(ScenarioError, match="vary G at fixed KV bytes") as exc:
        codesign(sc, {"group": [64]}, "fixed_params")
    assert exc.value.field == "group"


def test_fixed_params_g_must_divide_the_q_heads():
    with pytest.raises(ScenarioError, match="divide"):
        design_model(model_presets()["llama-3.1-70b"], {"group": 3}, "fixed_params")


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_sweep_design_axes_on_the_cli():
    code, out, err = _cli("sweep", "--model", "llama-3.1-8b", "--tp", "1", "--batch", "8",
                          "--design-group", "1,4,16", "--design-layers", "16:32:16")
    assert code == 0, err
    df = pd.read_csv(io.StringIO(out))
    assert len(df) == 6 and {"group", "layers", "best_draft_len", "best_speedup",
                             "tile_free_draft_len"} <= set(df.columns)
    code, _, err = _cli("sweep", "--model", "llama-3.1-8b", "--design-experts", "8")
    assert code == 2 and "--design-experts" in err and "dense" in err
    code, _, err = _cli("sweep", "--batch", "1,8", "--design-layers", "16")
    assert code == 2 and "one operating point" in err


def test_the_heatmap_has_one_cell_per_design_labelled_with_its_d():
    df = codesign(SC, {"group": [1, 8], "layers": [40, 80]})
    fig = best_speedup_heatmap(df)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z.shape == (2, 2) and np.isfinite(z).all()
    row = df[(df["group"] == 8) & (df["layers"] == 80)].iloc[0]
    assert bool(row["fits_in_memory"])
    assert z[1, 1] == pytest.approx(row["best_speedup"])
    assert all("D=" in t for t in np.asarray(fig.data[0].text).ravel())
    assert len(fig.data) == 1  # every design fits: no grey trace
    assert fig.layout.xaxis.type == "category" and fig.layout.yaxis.type == "category"


def test_a_design_that_does_not_fit_is_a_grey_labelled_cell_outside_the_colour_scale():
    from explorer.ui.codesign_figures import NO_FIT_GREY, NO_FIT_NAME

    df = codesign(SC, {"group": [8], "layers": [40, 200]})
    fits = dict(zip(df["layers"], df["fits_in_memory"], strict=True))
    assert fits == {40: True, 200: False}  # 70B at 200 layers is ~350 GB over 2 GPUs
    fig = best_speedup_heatmap(df)
    assert len(fig.data) == 2
    coloured, grey = fig.data
    z, g = np.asarray(coloured.z, dtype=float), np.asarray(grey.z, dtype=float)
    # rows are layers 40, 200: the coloured trace has only the fitting design, the grey one
    # only the other, with its speed-only best and the label
    assert np.isfinite(z[0, 0]) and np.isnan(z[1, 0])
    assert np.isnan(g[0, 0]) and np.isfinite(g[1, 0])
    row = df[df["layers"] == 200].iloc[0]
    assert g[1, 0] == pytest.approx(row["speed_best_speedup"])
    assert "(no fit)" in grey.text[1][0] and f"D={int(row['speed_best_draft_len'])}" in \
        grey.text[1][0]
    assert grey.name == NO_FIT_NAME and grey.showscale is False
    assert {c for _, c in grey.colorscale} == {NO_FIT_GREY}
    assert "(no fit)" not in " ".join(np.asarray(coloured.text).ravel())


def test_a_hybrid_target_keeps_its_layer_mix_when_its_depth_varies():
    from explorer.measured.hf_config import read_shipped, shipped_config_paths

    path = next(p for p in shipped_config_paths() if "Nemotron-H-56B" in p.name)
    base = read_shipped(path).model
    assert base is not None and base.mamba is not None
    half = design_model(base, {"layers": 59})
    assert (half.layers, half.n_attention_layers, half.mamba_layers, half.n_mlp_layers) == \
        (59, 5, 27, 27)
    assert half.mamba == base.mamba
    emb = 2 * base.vocab * base.hidden  # untied embedding and LM head stay
    assert half.param_count() - emb == pytest.approx((base.param_count() - emb) / 2, rel=0.03)
    sc = Scenario(model=base.slug, custom_model=base, tp=8, batch=16, context=8192)
    df = codesign(sc, {"layers": [59, 118]})
    assert df["best_speedup"].notna().all()
    assert df["kv_bytes_per_token"].iloc[1] == pytest.approx(2 * df["kv_bytes_per_token"].iloc[0])
