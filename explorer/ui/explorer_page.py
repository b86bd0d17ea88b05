"""The explorer page: the answer first, then the views that explain it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from explorer.analysis.evaluate import Evaluation, whole_request_speedup
from explorer.analysis.fallbacks import with_fallbacks
from explorer.analysis.frontier import break_even_text
from explorer.analysis.recommend import RankedOption, Recommendation
from explorer.analysis.targets import OperatingPoint, slo_answer, slo_cost, token_cost
from explorer.base.errors import ScenarioError
from explorer.interfaces import view_state as us
from explorer.interfaces.view_state import view_scenario
from explorer.model.grid import PREFILL_CHUNK_TOKENS
from explorer.presets import mechanism_presets
from explorer.specs.hardware import HardwareOverrides
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.scenario import DEFAULT_OUTPUT_TOKENS, Scenario, tokens_label
from explorer.specs.settings import SETTING_BY_KEY
from explorer.ui import chart_view, export_panel, first_paint, headline, state
from explorer.ui import explorer_charts as charts
from explorer.ui.text import md_text


def build_scenario(values: dict[str, Any], uploaded: AcceptanceCurve | None = None,
                   overrides: HardwareOverrides | None = None) -> tuple[Scenario, list[str]]:
    """The scenario to show; a field the model rejects is named and reset (analysis.fallbacks)."""
    notes: list[str] = []
    mech = values.get("mech")
    if values.get("acc") == "upload" and uploaded is not None and uploaded.mechanism \
            and mech and uploaded.mechanism != mech:
        # A curve measured for one drafter says nothing about another's acceptance.
        notes.append(f"AL source 'upload': your curve is for {uploaded.mechanism}, not {mech} — "
                     f"using the {mech} prior (switch back to use your curve).")
        uploaded = None
    elif values.get("acc") == "upload" and uploaded is None:
        notes.append("AL source 'upload': no uploaded curve yet (Measured data page) — "
                     "using the mechanism prior.")
    sc, rejected = view_scenario(values, uploaded)
    notes.extend(rejected)
    measured = state.measured_updates()
    if measured:
        sc = sc.model_copy(update=measured)
    if overrides is not None:
        sc = sc.model_copy(update={"hardware_overrides": overrides})
        notes.append(f"Hardware calibrated to your timings: {overrides.label}")
    # The cached evaluation is the check: render() reuses its result (the ranking is not
    # needed to tell whether a scenario can be evaluated, and comes after the first chart).
    sc, fallbacks = with_fallbacks(sc, lambda s: charts.evaluation(s))
    return sc, notes + [f.note for f in fallbacks]


def _fmt(x: float | None, spec: str = ".2f", unit: str = "") -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:{spec}}{unit}"


def prefill_note(ev: Evaluation, sc: Scenario) -> str:
    """What the headline's speedup spans: decode steps only (and what whole requests would
    give at a reference output length), or whole requests."""
    if not ev.output_tokens:
        ref = whole_request_speedup(sc)
        at = (f": with {DEFAULT_OUTPUT_TOKENS:,} output tokens per {sc.context:,}-token "
              f"prompt it is {ref:.2f}×" if ref is not None else "")
        return ("Decode steps only (the article's ratio; right where prompts are prefilled on "
                "other GPUs). A serving run that prefills on the same GPUs prefills each "
                f"request's prompt once, which speculation does not shorten{at}. Set *Output "
                "tokens per request N* (Workload) to price whole requests.")
    return (f"Whole requests: prompt S = {sc.context:,} tokens per N = {ev.output_tokens:,} "
            f"generated; each plain step also carries {ev.t_prefill_s * 1e3:.2f} ms of the "
            "prefill of the requests that replace finished ones, a speculative step AL times "
            f"that (it finishes more of them): ×{ev.prefill_factor:.2f} on the decode "
            f"steps' speedup. A prompt token is priced on {PREFILL_CHUNK_TOKENS:,}-token chunks "
            "(vLLM serve's default on ≥ 70 GiB GPUs; for other engines and GPUs an assumption); "
            "prefix caching is not modelled (a cached prompt is a shorter S). On decode steps "
            f"only (prompts prefilled on other GPUs, the article's ratio) it is "
            f"{_fmt(None if ev.speedup is None else ev.speedup / ev.prefill_factor)}×: set N "
            "to *decode only*.")


def _least_factor(o: RankedOption) -> float:
    return min(o.verify_cost_factor, o.draft_cost_factor, o.prefill_factor)


def current_scenario(values: dict[str, Any], uploaded: AcceptanceCurve | None = None,
                     overrides: HardwareOverrides | None = None) -> Scenario | None:
    try:
        return build_scenario(values, uploaded, overrides)[0]
    except (ScenarioError, ValueError):
        return None


EARLY_MISS = "_explorer_early_miss"  # the last run's early view was for values the sidebar changed


@dataclass
class Layout:
    """What `render_first` laid out: for which sidebar values, and the places filled after the
    sidebar — `top` (above the title: the link's warnings, the opened scenario), `head` (the
    notes, the headline numbers and the answer, above the views) and `foot` (the guidelines,
    below them)."""

    values: dict[str, Any]
    top: DeltaGenerator
    head: DeltaGenerator
    foot: DeltaGenerator
    scenario: Scenario | None
    notes: list[str] = field(default_factory=list)
    error: str = ""


def render_first(values: dict[str, Any], uploaded: AcceptanceCurve | None = None,
                 overrides: HardwareOverrides | None = None) -> Layout:
    """The title and the view on screen (its first chart), sent before anything else of the run:
    app.py calls this before it builds the sidebar, with the values the sidebar is about to have
    (controls.predicted_values). The browser starts loading plotly.js when the first chart
    arrives, so what comes after (sidebar, headline numbers, the answer) renders while it loads.
    The places above the view are laid out here and filled by `render`."""
    top = st.container()
    st.title("SpecDec Explorer")
    st.caption("Should this deployment use speculative decoding — which drafter, which D, at "
               "which batch? speedup = T_verif(B)·AL / (T_verif(B·(1+D)) + T_draft(B, D))")
    head = st.container()
    try:
        sc, notes = build_scenario(values, uploaded, overrides)
    except (ScenarioError, ValueError) as exc:
        return Layout(dict(values), top, head, st.container(), None, error=str(exc))
    js: charts.Key = sc  # the caches key on the frozen scenario (its hash), not on its JSON
    _view_switcher(sc, js, charts.evaluation(js), lambda: charts.recommendation(js), values)
    return Layout(dict(values), top, head, st.container(), sc, notes)


def render(values: dict[str, Any], uploaded: AcceptanceCurve | None = None,
           overrides: HardwareOverrides | None = None, early: Layout | None = None) -> Layout:
    """The whole page; `early`: what `render_first` sent before the sidebar. Where the sidebar
    then holds other values (it corrected one: a choice the others rule out), the run starts
    again, and the next one lays the page out in order, after the sidebar (app.py reads
    EARLY_MISS), so a view is never shown for values the sidebar does not show."""
    if early is None:
        early = render_first(values, uploaded, overrides)
    elif early.values != values:
        st.session_state[EARLY_MISS] = True
        st.rerun()
    with early.head:
        if early.scenario is None:
            st.error(f"This scenario cannot be evaluated: {md_text(early.error)}")
        else:
            _head(early.scenario, early.notes, values)
    if early.scenario is not None and not first_paint.now():  # below the first chart
        with early.foot:
            _guidelines(charts.recommendation(early.scenario))
    return early


def _head(sc: Scenario, notes: list[str], values: dict[str, Any]) -> None:
    """The notes, the headline numbers, the warnings about them, and the answer."""
    for n in notes:
        st.warning(n, icon=":material/warning:")
    js: charts.Key = sc
    ev = charts.evaluation(js)

    headline.show(headline_numbers(ev))
    st.caption(prefill_note(ev, sc))
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
    for flag in ev.table_flags:  # a measured table far off its siblings (analysis/table_sanity)
        st.warning(f"**Suspicious kernel table:** {md_text(flag.message)}",
                   icon=":material/rule:")

    _answer(sc, js, charts.recommendation(js), values)


def headline_numbers(ev: Evaluation) -> list[headline.Number]:
    """The five numbers at the top of the Explorer."""
    return [
        headline.Number(
            "Speedup", _fmt(ev.speedup, ".2f", "×"),
            (f"80%: {_fmt(ev.speedup_low)}–{_fmt(ev.speedup_high)}×"
             if ev.speedup is not None else None),
            help="T_verif(B)·AL / (T_verif(B·(1+D)) + T_draft). Interval: "
            + md_text(ev.acceptance_uncertainty)),
        headline.Number(
            "Acceptance length", _fmt(ev.acceptance_length),
            "model-extended" if ev.acceptance_extrapolated else None,
            help="tokens per target step, bonus included. Source: "
            + md_text(ev.acceptance_source) + ". Decoding: "
            + md_text(ev.acceptance_temperature or "not stated")),
        headline.Number("Tokens/s per user", _fmt(ev.tokens_per_s_per_user, ",.1f"),
                        f"{ev.baseline_tokens_per_s_per_user:,.1f} without spec"),
        headline.Number("Tokens/s per GPU", _fmt(ev.tokens_per_s_per_gpu, ",.0f"),
                        f"{ev.baseline_tokens_per_s_per_gpu:,.0f} without spec"),
        # the capacity goes in the note: "122 / 192 GB" does not fit a fifth of the page
        headline.Number("Memory per GPU", f"{ev.memory_bytes / 1e9:,.0f} GB",
                        (f"fits in {ev.hbm_bytes / 1e9:,.0f} GB" if ev.fits_in_memory
                         else f"does not fit in {ev.hbm_bytes / 1e9:,.0f} GB"),
                        "good" if ev.fits_in_memory else "bad"),
    ]


def _answer(sc: Scenario, js: charts.Key, rec: Recommendation, values: dict[str, Any]) -> None:
    best = rec.best
    if best is not None:
        # The explanation names the target, which a link (`cm`) or a config file may name.
        st.success(f"**Recommendation:** {md_text(rec.explanation)}",
                   icon=":material/check_circle:")
        _apply_button(values, best.mechanism, best.draft_len, best.mechanism_name)
    elif rec.best_if_trained is not None:  # only heads still to be trained fit
        st.info(f"**Recommendation:** {md_text(rec.explanation)}", icon=":material/block:")
    else:
        st.error("**No mechanism fits in memory at this operating point.**\n\n"
                 + "\n".join(f"- {md_text(h)}" for h in rec.fit_hints))
    if rec.worth_training is not None:  # a question, apart from the headline
        st.caption(md_text(rec.worth_training.text))
    st.markdown(f"**Break-even batch** for {sc.mechanism}: "
                + break_even_text(charts.best(js), f"at S={tokens_label(sc.context)}"))


def _guidelines(rec: Recommendation) -> None:
    """Why, guideline by guideline: below the view, so the answer's chart is on the first
    screen with the answer."""
    with st.container(border=True):
        st.subheader("The five guidelines, evaluated here")
        st.markdown("\n\n".join(  # one element, not five: less to send and redraw per move
            f"{'▶' if g.applies else '·'} **{g.id}. {g.title}** — {md_text(g.text)}"
            for g in rec.guidelines))


VIEW_LABELS = us.VIEW_TITLES  # each view's key (`vw`) and title: declared once there
SHOW_3D_KEY = "show_3d"
SHOW_G_KEY = "show_g_surface"
TILE_NORM_KEY = "tile_norm"


def _view_switcher(sc: Scenario, js: charts.Key, ev: Evaluation, rec: Callable[[], Recommendation],
                   values: dict[str, Any]) -> None:
    """One view at a time: only its data is computed, its charts built, sent and drawn. The
    choice is bound to the link (`vw`, explorer/interfaces/view_state.py); a link without it
    opens the default view."""
    if us.VIEW_KEY not in st.session_state:  # the session's first look at this page: the link
        linked = st.query_params.get(us.VIEW_KEY)
        st.session_state[us.VIEW_KEY] = linked if linked in us.VIEWS else us.DEFAULT_VIEW
        if linked is not None and linked not in us.VIEWS:  # named by the link's warnings
            del st.query_params[us.VIEW_KEY]
    if first_paint.now():  # the switcher comes with the other controls, in its place
        first_paint.place(first_paint.SEGMENTED_PX)
        view = st.session_state[us.VIEW_KEY]
    else:
        # Not bind="query-params": a bound widget writes its label ("Pareto & SLO") into the
        # link; the link keeps the short slug, written when the view changes (_view_to_url).
        view = st.segmented_control(
            "View", us.VIEWS, key=us.VIEW_KEY, required=True, on_change=_view_to_url,
            format_func=lambda v: VIEW_LABELS.get(v, v), label_visibility="collapsed",
            width="stretch", persist_state="session")
    view = view if view in us.VIEWS else us.DEFAULT_VIEW
    {"surface": _surface_view, "tiles": _tiles_view, "gemm": _gemm_view, "al": _al_view,
     "pareto": _pareto_view, "time": _time_view, "mechanisms": _mechanisms_view,
     "sources": _sources_view, "export": _export_view}[view](sc, js, ev, rec, values)


def _view_to_url() -> None:
    """Runs before the rerun the click starts, with the browser's query string of that moment."""
    view = st.session_state.get(us.VIEW_KEY)
    if view == us.DEFAULT_VIEW or view not in us.VIEWS:
        if us.VIEW_KEY in st.query_params:
            del st.query_params[us.VIEW_KEY]
    else:
        st.query_params[us.VIEW_KEY] = view


def _chart(js: charts.Key, name: str, options: charts.Options = (), marked: bool = True) -> None:
    if not first_paint.draws_chart():  # what is below the first chart comes in the next run
        return
    fig = (charts.chart if marked else charts.unmarked)(js, name, options)
    if fig is not None:
        chart_view.show(fig, key=f"fig_{name}")


MARK_POINT_KEY = "mark_point"


@st.fragment
def _surface_view(sc: Scenario, js: charts.Key, ev: Evaluation, rec: Callable[[], Recommendation],
                  values: dict[str, Any]) -> None:
    """The heatmaps do not depend on D (the (B, D) one not on B either): left unmarked, they stay
    drawn while the sliders move; marked, they are drawn anew on every move (a fragment: the
    toggle reruns only this view)."""
    if first_paint.now():  # the toggle comes with the other controls, in its place
        first_paint.place(first_paint.TOGGLE_PX)
        mark = False
    else:
        mark = st.toggle("Mark the current point on the charts (redraws them on every move)",
                         key=MARK_POINT_KEY, value=False)
    if not mark:
        g = (f"G = {ev.group_per_gpu:g}" if ev.group_per_gpu == ev.group else
             f"G = {ev.group_per_gpu:g} per GPU ({ev.group:g} in the model, TP = {sc.tp})")
        st.caption(f"Current point: B = {sc.batch}, D = {sc.draft_len}, {g} — "
                   f"speedup {_fmt(ev.speedup, '.2f', '×')}.")
    _chart(js, "speedup_heatmap", marked=mark)
    if not first_paint.now():  # below the first chart: the next run draws it
        _surface_more(js, mark)


@st.fragment
def _surface_more(js: charts.Key, mark: bool) -> None:
    """The article's second surface, over (G, D), and the WebGL one, each on request (a
    fragment: a toggle reruns only this): far below the first screen, a second heatmap drawn
    on every visit held the page back ~0.1× the framework floor (benchmarks/bench_floor.py)."""
    if st.toggle("Show the speedup over (G, D): the article's second surface", key=SHOW_G_KEY,
                 value=False):
        _chart(js, "group_heatmap", marked=mark)
    if st.toggle("Show the 3D surface (WebGL)", key=SHOW_3D_KEY, value=False):
        _chart(js, "speedup_surface_3d")


@st.fragment
def _tiles_view(sc: Scenario, js: charts.Key, ev: Evaluation, rec: Callable[[], Recommendation],
                values: dict[str, Any]) -> None:
    norm = st.toggle("Normalized throughput", value=True, key=TILE_NORM_KEY)
    _chart(js, "tile_steps_current", (("normalized", norm),))
    st.caption("The article's attention figure: G=8 vs G=32 at 32K and 128K context.")
    _chart(js, "tile_steps_article", (("normalized", norm),))


def _gemm_view(sc: Scenario, js: charts.Key, ev: Evaluation, rec: Callable[[], Recommendation],
               values: dict[str, Any]) -> None:
    _chart(js, "gemm_efficiency")


def _al_view(sc: Scenario, js: charts.Key, ev: Evaluation, rec: Callable[[], Recommendation],
             values: dict[str, Any]) -> None:
    _chart(js, "al_vs_d")


TARGET_INPUTS = {"slo": "slo_input", "usd": "usd_input"}  # setting → its input's widget key


def _targets(values: dict[str, Any]) -> None:
    """The Pareto view's own inputs, the per-user speed target and the GPU price: they shape its
    answer and the cost, not the scenario (settings edited here: controls.page_setting keeps
    them in the session and the link on every page)."""
    if first_paint.now():  # controls: they come with the others, in their place
        first_paint.place(first_paint.NUMBER_INPUT_PX)
        return
    for col, (key, widget) in zip(st.columns(2), TARGET_INPUTS.items(), strict=True):
        s = SETTING_BY_KEY[key]
        lo, hi = s.view_range or (0.0, 0.0)
        col.number_input(s.label, float(lo), float(hi), float(values.get(key) or 0),
                         float(s.step or 1), key=widget, help=s.help, on_change=_set_target,
                         args=(key,))


def _set_target(key: str) -> None:
    st.session_state[key] = st.session_state[TARGET_INPUTS[key]]


def _pareto_view(sc: Scenario, js: charts.Key, ev: Evaluation, rec: Callable[[], Recommendation],
                 values: dict[str, Any]) -> None:
    _targets(values)
    slo = float(values.get("slo") or 0)
    _chart(js, "pareto", (("slo", slo),))
    with_spec, without = charts.data(js, "pareto")
    usd = float(values.get("usd") or 0)
    if slo > 0:
        answer = slo_answer(with_spec, without, slo)
        st.markdown(f"At ≥ **{slo:g} tokens/s per user**: with speculation "
                    f"**{_slo_text(answer.with_speculation, True)}**; without: "
                    f"**{_slo_text(answer.without_speculation, False)}**.")
        at_slo = slo_cost(usd, answer)  # the answer's own points, not the sidebar's
        if at_slo is not None and (at_slo.with_speculation_usd_per_million_tokens is not None
                                   or at_slo.without_speculation_usd_per_million_tokens
                                   is not None):
            st.markdown(f"Cost at these SLO points (your ${usd:g}/GPU-hour): "
                        f"**{_usd(at_slo.with_speculation_usd_per_million_tokens)} per "
                        "million tokens** with speculation, "
                        f"{_usd(at_slo.without_speculation_usd_per_million_tokens)} without.")
    cost = token_cost(usd, ev)
    if cost is not None and cost.with_speculation_usd_per_million_tokens is not None:
        st.markdown(f"Cost at the sidebar's point B={sc.batch}, D={sc.draft_len} (your "
                    f"${cost.usd_per_gpu_hour:g}/GPU-hour): "
                    f"**${cost.with_speculation_usd_per_million_tokens:,.3f} per million "
                    "tokens** with speculation, "
                    f"{_usd(cost.without_speculation_usd_per_million_tokens)} without.")
    if first_paint.now():  # below the first chart (a table's code is ~0.5 MB): the next run
        return
    bd = charts.best(js)
    st.dataframe(pd.DataFrame({"B": bd.batch, "best D": bd.best_draft_len,
                               "speedup": np.round(bd.best_speedup, 3),
                               "AL": np.round(bd.acceptance_length, 2)}),
                 hide_index=True, height=220)


def _time_view(sc: Scenario, js: charts.Key, ev: Evaluation, rec: Callable[[], Recommendation],
               values: dict[str, Any]) -> None:
    _chart(js, "time_breakdown")
    st.caption(f"Attention is {ev.attention_fraction:.0%} of T_verif without speculation.")


def _mechanisms_view(sc: Scenario, js: charts.Key, ev: Evaluation,
                     rec: Callable[[], Recommendation],
                     values: dict[str, Any]) -> None:
    rec_ = rec()
    best_each = charts.best_per_mechanism(rec_)
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
             **({"prompt-prefill ×": round(o.prefill_factor, 3)}
                if sc.output_tokens else {}),
             "costs most": o.limiting_term,
             "draft share of step": f"{o.draft_overhead_fraction:.0%}",
             "training": o.training,
             "extra memory (GB/GPU)": round(o.extra_memory_bytes / 1e9, 2),
             "fits": o.fits_in_memory} for o in best_each]
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    _chart(js, "speedup_bands")
    if best_each:
        _chart(js, "speedup_split")
        st.caption("speedup = AL × T_verif(B)/T_verif(B·(1+D)) × T_verif(B·(1+D)) / "
                   "(T_verif(B·(1+D)) + T_draft): the AL gain, what verifying 1+D tokens "
                   "per sequence costs, and what drafting costs"
                   + (" — and, with whole requests priced (N output tokens), the prompt "
                      "prefill each step carries, which speculation does not shorten. "
                      if sc.output_tokens else ". ")
                   + " ".join(f"{md_text(o.mechanism_name)}: {o.limiting_term} weighs most "
                              f"(×{_least_factor(o):.2f})."
                              for o in best_each))
    for o in best_each:
        st.caption(f"**{md_text(o.mechanism_name)}** — {md_text(o.availability_detail)}")
    for slug, why in rec_.unavailable.items():
        st.caption(f"**{md_text(_mechanism_name(slug))}: unavailable, not ranked** — "
                   f"{md_text(why)}")


def _sources_view(sc: Scenario, js: charts.Key, ev: Evaluation, rec: Callable[[], Recommendation],
                  values: dict[str, Any]) -> None:
    st.markdown("Where each number comes from:")
    st.markdown(f"- **AL evidence**: {md_text(ev.acceptance_evidence)}; decoding "
                f"(temperature): {md_text(ev.acceptance_temperature or 'not stated')}; "
                f"interval: {md_text(ev.acceptance_uncertainty)}")
    for k, text in ev.sources.items():
        st.markdown(f"- **{k}**: {md_text(text)}" if text else f"- **{k}**: —")
    st.caption("Fixed modelling assumptions: 9 kernels per layer; 2 all-reduces per layer "
               "under TP; uniform MoE routing (upper bound on experts touched); attention "
               "tiles of 128 query rows per KV head (the article's kernels).")


def _export_view(sc: Scenario, js: charts.Key, ev: Evaluation, rec: Callable[[], Recommendation],
                 values: dict[str, Any]) -> None:
    current = {"normalized": bool(st.session_state.get(TILE_NORM_KEY, True)),
               "slo": float(values.get("slo") or 0)}
    options = {name: charts.chart_options(name, current) for name in charts.CHARTS}
    export_panel.render(sc, charts.all_charts(js, options))


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
    if first_paint.now():  # a control: it comes with the others, in its place
        first_paint.place(first_paint.BUTTON_PX)
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


def _mechanism_name(slug: str) -> str:
    mech = mechanism_presets().get(slug)
    return mech.name if mech is not None else slug


