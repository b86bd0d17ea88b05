"""The explorer page: the answer first, then the views that explain it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from explorer.analysis.evaluate import Evaluation, evaluate
from explorer.analysis.frontier import best_draft_len, pareto
from explorer.analysis.recommend import Recommendation, recommend
from explorer.analysis.views import (
    al_curves,
    gemm_efficiency,
    group_surface,
    speedup_surface,
    tile_steps,
    time_breakdown,
)
from explorer.base.errors import ScenarioError
from explorer.interfaces.view_state import scenario_from_view
from explorer.specs.hardware import HardwareOverrides
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.scenario import Scenario
from explorer.ui import data_page, export_panel, figures
from explorer.ui.text import md_text

FALLBACKS: dict[str, dict[str, Any]] = {
    "group": {"group": None}, "tp": {"tp": 1}, "draft_model": {"mechanism": "eagle3"},
    "layers": {"layers": None},
}


def build_scenario(values: dict[str, Any], uploaded: AcceptanceCurve | None = None,
                   overrides: HardwareOverrides | None = None) -> tuple[Scenario, list[str]]:
    """The scenario to show; a field the model rejects is named and reset to its default."""
    notes: list[str] = []
    if values.get("acc") == "upload" and uploaded is None:
        notes.append("AL source 'upload': no uploaded curve yet (Measured data page) — "
                     "using the mechanism prior.")
    sc = scenario_from_view(values, uploaded)
    measured = data_page.measured_updates()
    if measured:
        sc = sc.model_copy(update=measured)
    if overrides is not None:
        sc = sc.model_copy(update={"hardware_overrides": overrides})
        notes.append(f"Hardware calibrated to your timings: {overrides.label}")
    for _ in range(len(FALLBACKS) + 1):
        try:
            _evaluate(sc.model_dump_json())  # cached: render() reuses this result
            return sc, notes
        except ScenarioError as exc:
            fix = FALLBACKS.get(exc.field)
            if fix is None:
                raise
            notes.append(f"{exc.field}: {exc.message} — showing {fix} instead.")
            sc = sc.model_copy(update=fix)
    return sc, notes


@st.cache_data(max_entries=64, show_spinner=False)
def _evaluate(js: str) -> tuple[Evaluation, Recommendation]:
    sc = Scenario.model_validate_json(js)
    return evaluate(sc), recommend(sc)


@st.cache_data(max_entries=64, show_spinner=False)
def _views(js: str) -> dict[str, Any]:
    sc = Scenario.model_validate_json(js)
    with_spec, without = pareto(sc)
    return {
        "surface": speedup_surface(sc), "group": group_surface(sc),
        "best": best_draft_len(sc), "pareto": (with_spec, without),
        "tiles_current": tile_steps(sc),
        "tiles_article": tile_steps(sc, groups=(8, 32), contexts=(32768, 131072)),
        "gemm": gemm_efficiency(sc), "al": al_curves(sc), "time": time_breakdown(sc),
    }


def _fmt(x: float | None, spec: str = ".2f", unit: str = "") -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:{spec}}{unit}"


def slo_answer(with_spec: Any, without: Any, slo: float) -> tuple[str, str]:
    def best(front: Any) -> tuple[float, int, int] | None:
        user = np.asarray(front.tokens_per_s_per_user)
        ok = np.nonzero(user >= slo)[0]
        if not ok.size:
            return None
        gpu = np.asarray(front.tokens_per_s_per_gpu)
        i = ok[int(np.argmax(gpu[ok]))]
        return float(gpu[i]), int(front.batch[i]), int(front.draft_len[i])

    a, b = best(with_spec), best(without)
    spec = ("no batch reaches it" if a is None else
            f"{a[0]:,.0f} tokens/s per GPU at B={a[1]}, D={a[2]}")
    base = ("no batch reaches it" if b is None else f"{b[0]:,.0f} tokens/s per GPU at B={b[1]}")
    return spec, base


def current_scenario(values: dict[str, Any], uploaded: AcceptanceCurve | None = None,
                     overrides: HardwareOverrides | None = None) -> Scenario | None:
    try:
        return build_scenario(values, uploaded, overrides)[0]
    except (ScenarioError, ValueError):
        return None


def render(values: dict[str, Any], uploaded: AcceptanceCurve | None = None,
           overrides: HardwareOverrides | None = None) -> None:
    st.title("SpecDec Explorer")
    st.caption("Should this deployment use speculative decoding — which drafter, which D, at "
               "which batch? speedup = T_verif(B)·AL / (T_verif(B·(1+D)) + T_draft(B, D))")
    try:
        sc, notes = build_scenario(values, uploaded, overrides)
    except (ScenarioError, ValueError) as exc:
        st.error(f"This scenario cannot be evaluated: {exc}")
        return
    for n in notes:
        st.warning(n, icon=":material/warning:")
    js = sc.model_dump_json()
    ev, rec = _evaluate(js)
    v = _views(js)

    c = st.columns(5)
    c[0].metric("Speedup", _fmt(ev.speedup, ".2f", "×"),
                help="T_verif(B)·AL / (T_verif(B·(1+D)) + T_draft)")
    c[1].metric("Acceptance length", _fmt(ev.acceptance_length),
                help="tokens per target step, bonus included. Source: "
                + md_text(ev.acceptance_source))
    c[2].metric("Tokens/s per user", _fmt(ev.tokens_per_s_per_user, ",.1f"),
                delta=f"{ev.baseline_tokens_per_s_per_user:,.1f} without spec", delta_color="off")
    c[3].metric("Tokens/s per GPU", _fmt(ev.tokens_per_s_per_gpu, ",.0f"),
                delta=f"{ev.baseline_tokens_per_s_per_gpu:,.0f} without spec", delta_color="off")
    c[4].metric("Memory per GPU", f"{ev.memory_bytes / 1e9:,.0f} / {ev.hbm_bytes / 1e9:,.0f} GB",
                delta="fits" if ev.fits_in_memory else "does not fit",
                delta_color="normal" if ev.fits_in_memory else "inverse")
    if ev.acceptance_length is None:
        st.warning(f"No AL for D={sc.draft_len} from {md_text(ev.acceptance_source)}: block "
                   "drafters are valid only at measured D, and nothing is extrapolated silently.")
    elif ev.acceptance_extrapolated:
        st.info(f"AL at D={sc.draft_len} is extrapolated: {md_text(ev.acceptance_source)}")

    best = rec.best
    if best is not None:
        st.success(f"**Recommendation:** {rec.explanation}", icon=":material/check_circle:")
    else:
        st.error(rec.explanation)
    be, max_b = v["best"].break_even_batch, v["best"].max_batch_in_memory
    st.markdown(
        f"**Break-even batch** for {sc.mechanism}: "
        + (f"speculation stops paying from **B ≈ {be}**" if be else
           "speculation pays at every B from 1 to 4096")
        + (f"; at S={sc.context // 1024}K the largest batch that fits in memory is "
           f"**B = {max_b}**." if max_b else "; no batch fits in memory at this context.")
    )
    with st.container(border=True):
        st.subheader("The five guidelines, evaluated here")
        for g in rec.guidelines:
            mark = "▶" if g.applies else "·"
            st.markdown(f"{mark} **{g.id}. {g.title}** — {g.text}")

    tabs = st.tabs(["Speedup surface", "Tile steps", "GEMM efficiency", "AL vs D", "Pareto & SLO",
                    "Where the time goes", "Mechanisms", "Sources", "Export"])
    cur = (float(sc.batch), float(sc.draft_len))
    figs: dict[str, Any] = {}  # every chart built below, for the Export tab
    with tabs[0]:
        left, right = st.columns(2)
        left.plotly_chart(_keep(figs, "speedup_heatmap", figures.speedup_heatmap(
            v["surface"], cur, f"Speedup over (B, D): {sc.mechanism} on {sc.hardware}")),
            width="stretch", key="fig_surface_heatmap")
        right.plotly_chart(_keep(figs, "speedup_surface_3d", figures.speedup_surface_3d(
            v["surface"], cur, ev.speedup, "Speedup surface (3D)")), width="stretch",
            key="fig_surface_3d")
        st.plotly_chart(_keep(figs, "group_heatmap", figures.group_heatmap(
            v["group"], (ev.group, float(sc.draft_len)),
            f"Speedup over (G, D) at B={sc.batch}, S={sc.context // 1024}K")),
            width="stretch", key="fig_group")
    with tabs[1]:
        norm = st.toggle("Normalized throughput", value=True, key="tile_norm")
        st.plotly_chart(_keep(figs, "tile_steps_current", figures.tile_steps_figure(
            v["tiles_current"], sc.draft_len, norm)), width="stretch", key="fig_tiles_current")
        st.caption("The article's attention figure: G=8 vs G=32 at 32K and 128K context.")
        st.plotly_chart(_keep(figs, "tile_steps_article", figures.tile_steps_figure(
            v["tiles_article"], sc.draft_len, norm)), width="stretch", key="fig_tiles_article")
    with tabs[2]:
        curves, ridge = v["gemm"]
        m = _model_hw(sc)
        st.plotly_chart(_keep(figs, "gemm_efficiency", figures.gemm_figure(
            curves, ridge, m[0], m[1])), width="stretch", key="fig_gemm")
    with tabs[3]:
        st.plotly_chart(_keep(figs, "al_vs_d", figures.al_figure(v["al"], sc.mechanism)),
                        width="stretch", key="fig_al")
    with tabs[4]:
        with_spec, without = v["pareto"]
        slo = float(values.get("slo") or 0)
        current = None
        if ev.tokens_per_s_per_user is not None and ev.tokens_per_s_per_gpu is not None:
            current = (ev.tokens_per_s_per_user, ev.tokens_per_s_per_gpu)
        st.plotly_chart(_keep(figs, "pareto", figures.pareto_figure(
            with_spec, without, current,
            (ev.baseline_tokens_per_s_per_user, ev.baseline_tokens_per_s_per_gpu), slo)),
            width="stretch", key="fig_pareto")
        if slo > 0:
            spec, base = slo_answer(with_spec, without, slo)
            st.markdown(f"At ≥ **{slo:g} tokens/s per user**: with speculation **{spec}**; "
                        f"without: **{base}**.")
        price = float(values.get("usd") or 0)
        if price > 0 and ev.tokens_per_s_per_gpu:
            per_m = price / 3600 / ev.tokens_per_s_per_gpu * 1e6
            per_m_base = price / 3600 / ev.baseline_tokens_per_s_per_gpu * 1e6
            st.markdown(f"Cost at this point (your ${price:g}/GPU-hour): **${per_m:,.3f} per "
                        f"million tokens** with speculation, ${per_m_base:,.3f} without.")
        bd = v["best"]
        st.dataframe(pd.DataFrame({"B": bd.batch, "best D": bd.best_draft_len,
                                   "speedup": np.round(bd.best_speedup, 3),
                                   "AL": np.round(bd.acceptance_length, 2)}),
                     hide_index=True, height=220)
    with tabs[5]:
        st.plotly_chart(_keep(figs, "time_breakdown", figures.breakdown_figure(v["time"])),
                        width="stretch", key="fig_time")
        st.caption(f"Attention is {ev.attention_fraction:.0%} of T_verif without speculation.")
    with tabs[6]:
        rows = [{"mechanism": o.mechanism_name, "D": o.draft_len, "speedup ×": round(o.speedup, 3),
                 "AL": round(o.acceptance_length, 2), "T_draft (ms)": round(o.t_draft_s * 1e3, 3),
                 "draft share of step": f"{o.draft_overhead_fraction:.0%}",
                 "training": o.training,
                 "extra memory (GB/GPU)": round(o.extra_memory_bytes / 1e9, 2),
                 "fits": o.fits_in_memory} for o in _best_per_mechanism(rec)]
        st.dataframe(pd.DataFrame(rows), hide_index=True)
        for slug, why in rec.unavailable.items():
            st.caption(f"{slug}: unavailable — {why}")
    with tabs[7]:
        st.markdown("Where each number comes from:")
        for k, text in ev.sources.items():
            st.markdown(f"- **{k}**: {md_text(text)}" if text else f"- **{k}**: —")
        st.caption("Fixed modelling assumptions: 9 kernels per layer; 2 all-reduces per layer "
                   "under TP; uniform MoE routing (upper bound on experts touched); attention "
                   "tiles of 128 query rows per KV head (the article's kernels).")
    with tabs[8]:
        export_panel.render(sc, figs)


def _keep(figs: dict[str, Any], name: str, fig: Any) -> Any:
    """Remember a chart for the Export tab and pass it on."""
    figs[name] = fig
    return fig


def _best_per_mechanism(rec: Recommendation) -> list[Any]:
    seen: dict[str, Any] = {}
    for o in rec.ranking:
        seen.setdefault(o.mechanism, o)
    return list(seen.values())


def _model_hw(sc: Scenario) -> tuple[float, str]:
    from explorer.model.grid import scenario_model

    hw = scenario_model(sc).r.hardware
    return hw.peak_flops_per_s(sc.dtype) * hw.gemm_compute_efficiency / 1e12, hw.name
