"""Issue 24's chart defects at figure level: B ticks from the data across the whole axis, block
drafters' AL drawn as markers, "this scenario" first in the legend, tile boundaries where the
kernel's curve steps at the G per GPU (few labels for MLA)."""

from __future__ import annotations

import numpy as np

from explorer import Scenario
from explorer.analysis.views import al_curves, speedup_surface, tile_steps
from explorer.specs.scenario import Acceptance
from explorer.ui import figures


def test_heatmap_b_ticks_span_the_whole_drawn_range():
    s = speedup_surface(Scenario(model="llama-3.1-405b", tp=8, dtype="fp8"))
    fig = figures.speedup_heatmap(s, None, "t")
    n = int(fig.layout.xaxis.range[1] + 0.5)
    assert n > 20 and int(s.x[n - 1]) > 100  # B runs past 100
    ticks, text = list(fig.layout.xaxis.tickvals), list(fig.layout.xaxis.ticktext)
    assert ticks[0] == 0 and ticks[-1] == n - 1  # labelled to the last drawn batch (was ≤ 16)
    assert text[-1] == str(int(s.x[n - 1])) and 5 <= len(ticks) <= 9
    assert text == [str(int(s.x[i])) for i in ticks]


def test_heatmap_says_from_which_batch_nothing_fits_not_past_its_last_drawn_column():
    """70B on 2×H200 at 8K: the grid's columns stop at B = 46, but EAGLE-3 fits to B = 51 (every
    B counted); the note said "B > 46 does not fit", which 47–51 contradict."""
    from explorer import best_draft_len

    s = speedup_surface(Scenario())
    fig = figures.speedup_heatmap(s, None, "t")
    n = int(fig.layout.xaxis.range[1] + 0.5)
    limit = best_draft_len(Scenario()).max_batch_in_memory
    assert limit is not None and int(s.x[n - 1]) == 46 <= limit < int(s.x[n]) == 53
    assert fig.layout.xaxis.title.text.endswith("B ≥ 53 does not fit in memory (not drawn)")
    assert not fig.layout.annotations  # said where B is read, not in a note of its own


def _trace(fig, name):  # type: ignore[no-untyped-def]
    return next(t for t in fig.data if t.name == name)


def test_block_drafter_al_is_drawn_as_markers_not_invisible_lines():
    fig = figures.al_figure(al_curves(Scenario(mechanism="dflash", draft_len=7)), "dflash")
    for name in ("DFlash (block diffusion drafter) (prior)",
                 "DSpark (block pass + serial Markov head) (prior)"):
        t = _trace(fig, name)
        y = np.asarray(t.y, dtype=float)
        assert np.isfinite(y[[0, 7]]).all() and np.isnan(y[1:7]).all()  # data at D=0, 7 only
        assert "markers" in t.mode  # a line through NaN-separated points draws nothing
    eagle = _trace(fig, "EAGLE-3 head (prior)")
    assert eagle.mode == "lines"  # a dense prior stays a line


def test_this_scenario_heads_the_legend_for_every_acceptance_source():
    for sc in (Scenario(), Scenario(acceptance=Acceptance(kind="iid", alpha=0.7))):
        fig = figures.al_figure(al_curves(sc), sc.mechanism)
        mine = [t for t in fig.data if t.name and "(this scenario)" in t.name
                and t.showlegend is not False]
        assert len(mine) == 1
        ranks = [t.legendrank for t in fig.data if t.showlegend is not False
                 and t.legendrank is not None]
        assert mine[0].legendrank == min(ranks) == 1


def test_mla_tile_chart_uses_g_per_gpu_and_labels_few_steps():
    sc = Scenario(model="deepseek-v3", tp=8, dtype="fp8", hardware="b200", engine="trtllm")
    (curve,) = tile_steps(sc)
    assert curve.group == 16  # 128 q heads / TP 8 on one latent KV head, not 128
    assert curve.steps == [7.0, 15.0, 23.0, 31.0]
    fig = figures.tile_steps_figure([curve], 3, normalized=False)
    labels = [a.text for a in fig.layout.annotations if "G·(1+D)" in a.text]
    assert labels == [f"G·(1+D)={16 * (d + 1):g} (G=16)" for d in (7, 15, 23, 31)]


def test_tile_boundaries_only_where_the_curve_steps():
    # B=1, S=128K, G=32: memory-bound until G·(1+D) passes 384 rows; the padded tiles at
    # 128 and 256 rows cost nothing, so no boundary is drawn there.
    curves = tile_steps(Scenario(batch=1, context=131072), groups=(32,))
    fig = figures.tile_steps_figure(curves, None, normalized=False)
    xs = sorted(s.x0 for s in fig.layout.shapes)
    assert xs == [11.0, 15.0, 19.0, 23.0, 27.0, 31.0]
    t = curves[0].time_s
    assert t[4] == t[3] and t[8] == t[7] and t[12] > t[11]


def test_codesign_colour_scale_is_anchored_at_zero_and_one():
    import pandas as pd

    from explorer.ui.codesign_figures import best_speedup_heatmap

    df = pd.DataFrame({"group": [4, 8, 4, 8], "layers": [60, 60, 80, 80],
                       "fits_in_memory": [True] * 4, "best_speedup": [2.7, 2.8, 2.9, 3.0],
                       "best_draft_len": [3, 4, 5, 6], "speed_best_speedup": [2.7, 2.8, 2.9, 3.0],
                       "speed_best_draft_len": [3, 4, 5, 6]})
    h = best_speedup_heatmap(df).data[0]
    assert h.zmin == 0.0 and h.zmax >= 3.0
    # 2.7× and 3.0× sit within the top tenth of the scale, not at its two ends
    assert (3.0 - 2.7) / (h.zmax - h.zmin) <= 0.1


def test_break_even_is_the_speed_threshold_not_the_memory_limit():
    from explorer import best_draft_len
    from explorer.analysis.frontier import break_even_text

    bd = best_draft_len(Scenario())  # 70B on 2×H200 at 8K: EAGLE-3 fits to B = 51, plain to 52
    assert (bd.max_batch_in_memory, bd.max_batch_plain, bd.break_even_batch) == (51, 52, None)
    text = break_even_text(bd)
    assert "pays up to **B ≈ 51**" not in text  # the memory limit was called the break-even
    assert text.startswith("by speed, speculation pays at every B from 1 to 4096")
    # the memory limit once, exact (every B counted): not "from B ≈ 53", the grid's next B,
    # beside "the largest batch that fits in memory is B = 46", the grid's last that fits
    assert text.endswith("Memory, not speed, stops it above **B = 51**, the largest batch that "
                         "fits with its drafter at this context (plain decoding: B = 52).")
    assert "53" not in text and "46" not in text and text.count("51") == 1
    none = break_even_text(best_draft_len(Scenario(model="llama-3.1-405b", hardware="h100",
                                                   tp=1, batch=8)))
    assert none.endswith("no batch fits in memory at this context.") and "B ≈ 1:" not in none


def test_break_even_says_marginal_where_the_interval_spans_one():
    from explorer import best_draft_len
    from explorer.analysis.frontier import break_even_text

    # B = 151 before the merge of #21/#22; then B = 89 (attention past its table's box never
    # below its KV read). Since the timing σ was calibrated on the published speed-ups (issue 22,
    # item 2: vLLM's σ 0.066 → 0.145, the pooled held-out speed-ups), the n-gram's 80 % interval
    # spans 1× from B = 31 on; from B = 27 on, and not at B = 24 just before, since the AL prior's
    # σ is calibrated by leave-one-source-out (issue 22: × 1.165; the n-gram's between-model σ
    # is the widest model-based spread 0.43, its two models being too few to show their own)
    # Over whole requests (the default since issue 21: 8K prompts per 1K outputs dilute the
    # speedup) and with vLLM's σ 0.142 → 0.110: from B = 18 on (decode steps only: B = 31)
    bd = best_draft_len(Scenario(mechanism="ngram"))
    i = bd.batch.index(18)
    assert bd.speed_best_speedup[i] > 1.0 and bd.speed_best_low[i] <= 1.0 < bd.speed_best_high[i]
    assert bd.speed_best_low[i - 1] > 1.0
    assert all(lo <= 1.0 for lo in bd.speed_best_low[i:])
    text = break_even_text(bd)
    assert "**marginal** from B ≈ 18" in text
    # a case whose interval stays above 1× is not called marginal: EAGLE-3 on 405B FP8 up to
    # B = 64 (over the whole default grid, since the σ change, it spans 1× past B ≈ 645, beyond
    # what fits in memory, B = 151, and is marginal there); up to B = 32 over whole requests
    # (at B = 64 their 8K prompts' prefill pulls its low end to 0.98×)
    sure = best_draft_len(Scenario(model="llama-3.1-405b", tp=8, dtype="fp8"),
                          batches=[1, 2, 4, 8, 16, 32])
    assert min(sure.speed_best_low) > 1.0
    assert "marginal" not in break_even_text(sure)


def test_one_verdict_rule_pays_marginal_loses():
    from explorer.analysis.uncertainty import LOSES, MARGINAL, PAYS, verdict

    assert verdict(1.0, 0.9) == LOSES and verdict(0.97, None) == LOSES
    assert verdict(1.07, 0.91) == MARGINAL and verdict(1.07, 1.0) == MARGINAL
    assert verdict(1.07, 1.01) == PAYS and verdict(1.07, None) == PAYS


def test_the_recommendation_calls_a_speedup_whose_interval_spans_one_marginal():
    """405B FP8 on 8×H200 at B = 64: the n-gram's 1.07× [0.91–1.27] was "speculation pays", while
    the break-even line calls such a point marginal; the default (1.37× [1.15–1.62]) pays."""
    from explorer.analysis.recommend import recommend

    rec = recommend(Scenario(model="llama-3.1-405b", tp=8, dtype="fp8", batch=64))
    assert rec.best is not None and rec.best.speedup_low <= 1.0 < rec.best.speedup
    text = rec.explanation
    assert "speculation is marginal over whole requests (" in text
    assert "): its 80 % interval spans 1×." in text and "speculation pays" not in text
    sure = recommend(Scenario())
    assert sure.best is not None and sure.best.speedup_low > 1.0
    assert "speculation pays over whole requests" in sure.explanation
    assert "marginal" not in sure.explanation


def test_a_lookup_drafters_step_is_said_in_whole_tokens():
    """The n-gram's verify width is an expectation (it proposes fewer tokens where it finds no
    match): its cliff read "B·(1+D) goes from 127.941 to 191.882 tokens"."""
    from explorer.analysis.recommend import recommend

    text = recommend(Scenario(model="llama-3.1-405b", tp=8, dtype="fp8", batch=64)).explanation
    assert "Not D=2: 0.98× — B·(1+D) goes from ≈128 to ≈192 tokens, across a step of the " \
        "measured FP8 GEMM table" in text
    assert "127.9" not in text


def test_context_lengths_are_labelled_as_the_field_writes_them():
    """`S={context // 1024}K` labelled a 512-token context "0K" and 1.5K "1K"."""
    from explorer.specs.scenario import tokens_label

    assert [tokens_label(n) for n in (512, 1024, 1536, 8192, 131072, 1048576)] == [
        "512", "1K", "1.5K", "8K", "128K", "1M"]
    curves = tile_steps(Scenario(context=512))
    assert curves[0].label.endswith(", S=512") and "0K" not in curves[0].label


def test_heatmap_axes_keep_their_margins_and_are_not_drawn_twice():
    """Streamlit's chart theme fits each axis's margin to its labels (`automargin`): plotly draws
    the chart, measures the labels and draws it again, ~50 ms of the page's first chart. The
    heatmap's labels are short (B and D ticks), its margins fixed (figures._LAYOUT)."""
    fig = figures.speedup_heatmap(speedup_surface(Scenario()), None, "t")
    assert fig.layout.xaxis.automargin is False and fig.layout.yaxis.automargin is False
    assert fig.layout.margin.l >= 60 and fig.layout.margin.b >= 60
