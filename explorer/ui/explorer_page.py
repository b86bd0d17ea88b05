"""The explorer page: the answer first, then the views that explain it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from explorer.analysis.evaluate import Evaluation, evaluate
from explorer.analysis.fallbacks import with_fallbacks
from explorer.analysis.frontier import best_draft_len, pareto
from explorer.analysis.recommend import Recommendation, recommend
from explorer.analysis.targets import OperatingPoint, operating_point, slo_answer, token_cost
from explorer.analysis.views import (
    al_curves,
    gemm_efficiency,
    group_surface,
    speedup_surface,
    tile_steps,
    time_breakdown,
)
from explorer.base.errors import ScenarioError
from explorer.interfaces.view_state import view_scenario
from explorer.presets import mechanism_presets
from explorer.specs.hardware import HardwareOverrides
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.scenario import Scenario
from explorer.ui import data_page, export_panel, figures
from explorer.ui.text import md_text


def build_scenario(values: dict[str, Any], uploaded: AcceptanceCurve | None = None,
                   overrides: HardwareOverrides | None = None) -> tuple[Scenario, list[str]]:
    """The scenario to show; a field the model rejects is named and reset (analysis.fallbacks)."""
    notes: list[str] = []
    if values.get("acc") == "upload" and uploaded is None:
        notes.append("AL source 'upload': no uploaded curve yet (Measured data page) — "
                     "using the mechanism prior.")
    sc, rejected = view_scenario(values, uploaded)
    notes.extend(rejected)
    measured = data_page.measured_updates()
    if measured:
        sc = sc.model_copy(update=measured)
    if overrides is not None:
        sc = sc.model_copy(update={"hardware_overrides": overrides})
        notes.append(f"Hardware calibrated to your timings: {overrides.label}")
    # The cached evaluation is the check: render() reuses its result.
    sc, fallbacks = with_fallbacks(sc, lambda s: _evaluate(s.model_dump_json()))
    return sc, notes + [f.note for f in fallbacks]


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
    band = (f"80%: {_fmt(ev.speedup_low)}–{_fmt(ev.speedup_high)}×"
            if ev.speedup is not None else None)
    c[0].metric("Speedup", _fmt(ev.speedup, ".2f", "×"), delta=band, delta_color="off",
                help="T_verif(B)·AL / (T_verif(B·(1+D)) + T_draft). Interval: "
                + md_text(ev.acceptance_uncertainty))
    c[1].metric("Acceptance length", _fmt(ev.acceptance_length),
                delta="model-extended" if ev.acceptance_extrapolated else None,
                delta_color="off",
                help="tokens per target step, bonus included. Source: "
                + md_text(ev.acceptance_source) + ". Decoding: "
                + md_text(ev.acceptance_temperature or "not stated"))
    c[2].metric("Tokens/s per user", _fmt(ev.tokens_per_s_per_user, ",.1f"),
                delta=f"{ev.baseline_tokens_per_s_per_user:,.1f} without spec", delta_color="off")
    c[3].metric("Tokens/s per GPU", _fmt(ev.tokens_per_s_per_gpu, ",.0f"),
                delta=f"{ev.baseline_tokens_per_s_per_gpu:,.0f} without spec", delta_color="off")
    c[4].metric("Memory per GPU", f"{ev.memory_bytes / 1e9:,.0f} / {ev.hbm_bytes / 1e9:,.0f} GB",
                delta="fits" if ev.fits_in_memory else "does not fit",
                delta_color="normal" if ev.fits_in_memory else "inverse")
    if not ev.mechanism_available:
        name = md_text(_mechanism_name(sc.mechanism))
        st.warning(f"**{name} is unavailable for this target** — {md_text(ev.availability)}. "
                   "The numbers here are a hypothetical, and the recommendation does not rank it.",
                   icon=":material/block:")
    if ev.acceptance_length is None:
        st.warning(f"No AL for D={sc.draft_len} from {md_text(ev.acceptance_source)}: block "
                   "drafters are valid only at measured D, and nothing is extrapolated silently.")
    elif ev.acceptance_extrapolated:
        st.warning(f"AL at D={sc.draft_len} is **model-extended**: no published or measured point "
                   f"backs it; an acceptance model anchored on the points gives it — "
                   f"{md_text(ev.acceptance_source)}", icon=":material/timeline:")

    best = rec.best
    if best is not None:
        st.success(f"**Recommendation:** {rec.explanation}", icon=":material/check_circle:")
        _apply_button(values, best.mechanism, best.draft_len, best.mechanism_name)
    else:
        st.error("**No mechanism fits in memory at this operating point.**\n\n"
                 + "\n".join(f"- {md_text(h)}" for h in rec.fit_hints))
    bd = v["best"]
    be, max_b = bd.break_even_batch, bd.max_batch_in_memory
    st.markdown(
        f"**Break-even batch** for {sc.mechanism}: "
        + (f"speculation stops paying from **B ≈ {be}**" if be else
           f"speculation pays at every B from {bd.batch[0]} to {bd.batch[-1]}")
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
        st.plotly_chart(_keep(figs, "pareto", figures.pareto_figure(
            with_spec, without, operating_point(ev),
            (ev.baseline_tokens_per_s_per_user, ev.baseline_tokens_per_s_per_gpu), slo)),
            width="stretch", key="fig_pareto")
        if slo > 0:
            answer = slo_answer(with_spec, without, slo)
            st.markdown(f"At ≥ **{slo:g} tokens/s per user**: with speculation "
                        f"**{_slo_text(answer.with_speculation, True)}**; without: "
                        f"**{_slo_text(answer.without_speculation, False)}**.")
        cost = token_cost(float(values.get("usd") or 0), ev)
        if cost is not None and cost.with_speculation_usd_per_million_tokens is not None:
            st.markdown(f"Cost at this point (your ${cost.usd_per_gpu_hour:g}/GPU-hour): "
                        f"**${cost.with_speculation_usd_per_million_tokens:,.3f} per million "
                        "tokens** with speculation, "
                        f"{_usd(cost.without_speculation_usd_per_million_tokens)} without.")
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
                 "80% band": f"{_fmt(o.speedup_low)}–{_fmt(o.speedup_high)}",
                 "wins in (draws)": f"{o.win_share:.0%}",
                 "AL": round(o.acceptance_length, 2),
                 "AL model-extended": o.acceptance_model_extended,
                 "AL evidence": o.acceptance_evidence,
                 "drafter": o.availability,
                 "T_draft (ms)": round(o.t_draft_s * 1e3, 3),
                 "AL gain ×": round(o.acceptance_length, 3),
                 "verify-cost ×": round(o.verify_cost_factor, 3),
                 "draft-cost ×": round(o.draft_cost_factor, 3),
                 "costs most": o.limiting_term,
                 "draft share of step": f"{o.draft_overhead_fraction:.0%}",
                 "training": o.training,
                 "extra memory (GB/GPU)": round(o.extra_memory_bytes / 1e9, 2),
                 "fits": o.fits_in_memory} for o in _best_per_mechanism(rec)]
        st.dataframe(pd.DataFrame(rows), hide_index=True)
        best_each = _best_per_mechanism(rec)
        if rec.ranking:
            st.plotly_chart(_keep(figs, "speedup_bands", figures.speedup_band_figure(
                _band_series(rec), sc.batch)), width="stretch", key="fig_bands")
        if best_each:
            st.plotly_chart(_keep(figs, "speedup_split", figures.speedup_split_figure(
                [o.mechanism_name for o in best_each], [o.acceptance_length for o in best_each],
                [o.verify_cost_factor for o in best_each],
                [o.draft_cost_factor for o in best_each])), width="stretch", key="fig_split")
            st.caption("speedup = AL × T_verif(B)/T_verif(B·(1+D)) × T_verif(B·(1+D)) / "
                       "(T_verif(B·(1+D)) + T_draft): the AL gain, what verifying 1+D tokens "
                       "per sequence costs, and what drafting costs. "
                       + " ".join(f"{md_text(o.mechanism_name)}: {o.limiting_term} costs most "
                                  f"(×{min(o.verify_cost_factor, o.draft_cost_factor):.2f})."
                                  for o in best_each))
        for o in best_each:
            st.caption(f"**{md_text(o.mechanism_name)}** — {md_text(o.availability_detail)}")
        for slug, why in rec.unavailable.items():
            st.caption(f"**{md_text(_mechanism_name(slug))}: unavailable, not ranked** — "
                       f"{md_text(why)}")
    with tabs[7]:
        st.markdown("Where each number comes from:")
        st.markdown(f"- **AL evidence**: {md_text(ev.acceptance_evidence)}; decoding "
                    f"(temperature): {md_text(ev.acceptance_temperature or 'not stated')}; "
                    f"interval: {md_text(ev.acceptance_uncertainty)}")
        for k, text in ev.sources.items():
            st.markdown(f"- **{k}**: {md_text(text)}" if text else f"- **{k}**: —")
        st.caption("Fixed modelling assumptions: 9 kernels per layer; 2 all-reduces per layer "
                   "under TP; uniform MoE routing (upper bound on experts touched); attention "
                   "tiles of 128 query rows per KV head (the article's kernels).")
    with tabs[8]:
        export_panel.render(sc, figs)


APPLY_KEY = "apply_recommendation"


def apply_recommendation(values: dict[str, Any], mechanism: str, draft_len: int) -> None:
    """Set the sidebar to the recommended mechanism and D (an on_click callback: it runs before
    the widgets of the next run exist, so they — and the URL they are bound to — take it).

    Another mechanism is ranked on its own prior AL and native ρ (analysis.candidate), so those
    follow it; a tree width W below the new 1+D goes back to the chain."""
    state: dict[str, Any] = {"mech": mechanism, "d": draft_len}
    if mechanism != values.get("mech"):
        state.update({"acc": "prior", "curve": "", "rho": 0.0})
    w = values.get("w") or 0
    if w and w < 1 + draft_len:
        state["w"] = 0
    st.session_state.update(state)


def _apply_button(values: dict[str, Any], mechanism: str, draft_len: int, name: str) -> None:
    if values.get("mech") == mechanism and values.get("d") == draft_len:
        st.caption("The sidebar is at the recommendation.")
        return
    st.button(f"Apply: {name}, D = {draft_len}", key=APPLY_KEY, icon=":material/done_all:",
              on_click=apply_recommendation, args=(values, mechanism, draft_len),
              help="Sets the sidebar (and the link) to the recommended mechanism and D.")


def _slo_text(point: OperatingPoint | None, with_draft_len: bool) -> str:
    if point is None:
        return "no batch reaches it"
    where = f"B={point.batch}, D={point.draft_len}" if with_draft_len else f"B={point.batch}"
    return f"{point.tokens_per_s_per_gpu:,.0f} tokens/s per GPU at {where}"


def _usd(x: float | None) -> str:
    return "n/a" if x is None else f"${x:,.3f}"


def _keep(figs: dict[str, Any], name: str, fig: Any) -> Any:
    """Remember a chart for the Export tab and pass it on."""
    figs[name] = fig
    return fig


def _best_per_mechanism(rec: Recommendation) -> list[Any]:
    seen: dict[str, Any] = {}
    for o in rec.ranking:
        seen.setdefault(o.mechanism, o)
    return list(seen.values())


def _band_series(rec: Recommendation) -> list[Any]:
    """Per ranked mechanism: D, speedup and its 80 % band, in D order."""
    by_mech: dict[str, list[Any]] = {}
    for o in rec.ranking:
        by_mech.setdefault(o.mechanism, []).append(o)
    out = []
    for slug, opts in by_mech.items():
        opts.sort(key=lambda o: o.draft_len)
        out.append((slug, opts[0].mechanism_name, [o.draft_len for o in opts],
                    [o.speedup for o in opts],
                    [o.speedup_low if o.speedup_low is not None else o.speedup for o in opts],
                    [o.speedup_high if o.speedup_high is not None else o.speedup for o in opts]))
    return out


def _mechanism_name(slug: str) -> str:
    mech = mechanism_presets().get(slug)
    return mech.name if mech is not None else slug


def _model_hw(sc: Scenario) -> tuple[float, str]:
    from explorer.model.grid import scenario_model

    hw = scenario_model(sc).r.hardware
    achievable = hw.peak_flops_per_s(sc.dtype) * hw.gemm_compute_efficiency_for(sc.dtype)
    return achievable / 1e12, hw.name
