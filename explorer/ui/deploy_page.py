"""Deployment: draft-length policies over a day of load, mixed contexts and a workload mix, and
the AL a drafter must reach. The profile is the `dp` view setting (URL, saved scenarios)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st
from pydantic import ValidationError

from explorer.analysis.deploy import DeployResult, deploy, simplest_within
from explorer.analysis.inverse import (
    BreakEven,
    Requirement,
    break_even,
    required_al,
    required_to_beat,
)
from explorer.base.errors import ScenarioError
from explorer.export.deploy_configs import EXPRESSIBLE, PolicyExport, export_policy
from explorer.presets import mechanism_presets, sample_curves
from explorer.specs.deployment import (
    DEFAULT_NOTES,
    SCENARIO_SOURCE,
    ConcurrencyDay,
    ContextBuckets,
    DeploymentProfile,
    profile_error,
    profile_from_url,
    url_problem,
)
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.scenario import Scenario
from explorer.specs.settings import SETTING_BY_KEY
from explorer.ui import chart_view, headline, state
from explorer.ui import deploy_figures as fig
from explorer.ui.text import md_table, md_text

PROFILE_KEY = "dp"
ERROR_KEY = "_dp_error"
# The sections below the policy are drawn only when opened (an expander that reruns on open):
# the collapsed page sends and draws one chart, not three, and no form of a dozen widgets.
EDITOR_OPEN_KEY = "dp_editor_open"
EXPORT_OPEN_KEY = "dp_export_open"
INVERSE_OPEN_KEY = "dp_inverse_open"
NOTES_OPEN_KEY = "dp_notes_open"
POLICY_LABELS = {
    "off": "off (no speculation)", "static": "static (best single D)",
    "batch_schedule": "batch schedule D*(B)", "batch_context_schedule": "batch × context D*(B, S)",
    "al_threshold": "AL threshold", "oracle": "oracle (bound)",
}


def current_profile() -> DeploymentProfile:
    text = st.session_state.get(PROFILE_KEY, SETTING_BY_KEY[PROFILE_KEY].default)
    try:
        return profile_from_url(str(text))
    except ValueError:
        return profile_from_url(str(SETTING_BY_KEY[PROFILE_KEY].default))


def uploaded_curves(mechanism: str) -> dict[str, AcceptanceCurve]:
    """This session's uploaded AL curves of the mechanism (or of none named), as workload
    sources: `upload:<file>#<n>` (characters the link form uses as separators replaced)."""
    out: dict[str, AcceptanceCurve] = {}
    for name, result in state.datasets().items():
        for i, c in enumerate(result.curves):
            if c.mechanism in (None, mechanism):
                key = re.sub(r"[|*~]", "_", f"upload:{name}#{i}")[:200]
                out[key] = c
    return out


@st.cache_data(max_entries=32, show_spinner=False)
def _deploy(scenario_json: str, profile_url: str,
            uploads: tuple[tuple[str, str], ...] = ()) -> DeployResult:
    extra = {k: AcceptanceCurve.model_validate_json(v) for k, v in uploads}
    return deploy(Scenario.model_validate_json(scenario_json), profile_from_url(profile_url),
                  extra)


@st.cache_data(max_entries=32, show_spinner=False)
def _break_even(scenario_json: str) -> BreakEven:
    return break_even(Scenario.model_validate_json(scenario_json))


def _num_list(text: str) -> list[float]:
    return [float(x) for x in text.replace(";", ",").split(",") if x.strip()]


def _pairs(text: str) -> tuple[list[float], list[float]]:
    keys, weights = [], []
    for item in text.replace(";", ",").split(","):
        if not item.strip():
            continue
        k, _, w = item.partition(":")
        keys.append(float(k))
        weights.append(float(w) if w.strip() else 1.0)
    return keys, weights


def profile_of_form(form: dict[str, Any]) -> DeploymentProfile:
    """The editor's fields as a profile (ValueError names the field)."""
    data: dict[str, Any] = {"switch_penalty": float(form["penalty_pct"]) / 100.0}
    try:
        if form["conc_kind"] == "day":
            data["concurrency"] = {"kind": "day", "per_hour": _num_list(form["day"])}
        else:
            b, w = _pairs(form["hist"])
            data["concurrency"] = {"kind": "histogram", "batches": [int(x) for x in b],
                                   "weights": w}
    except ValueError:
        raise ValueError("concurrency: numbers separated by commas (histogram: B:weight)") \
            from None
    try:
        if form["ctx_kind"] == "lognormal":
            data["context"] = {"kind": "lognormal", "median": int(form["median"]),
                               "sigma": float(form["sigma"]), "buckets": int(form["buckets"])}
        else:
            s, w = _pairs(form["ctx_buckets"])
            data["context"] = {"kind": "buckets", "contexts": [int(x) for x in s], "weights": w}
    except ValueError:
        raise ValueError("context: S:weight pairs separated by commas") from None
    sources = list(form["workloads"]) or [SCENARIO_SOURCE]
    try:
        weights = _num_list(form["workload_weights"]) or [1.0] * len(sources)
    except ValueError:
        raise ValueError("workload weights: numbers separated by commas") from None
    if len(weights) != len(sources):
        raise ValueError(f"workload weights: {len(weights)} weights for {len(sources)} "
                         "workloads")
    data["workload"] = [{"source": s, "weight": w} for s, w in zip(sources, weights,
                                                                   strict=True)]
    try:
        return DeploymentProfile.model_validate(data)
    except ValidationError as exc:
        raise ValueError(profile_error(exc)) from None


def _editor(profile: DeploymentProfile, mechanism: str,
            uploads: dict[str, AcceptanceCurve]) -> None:
    """The compact profile editor: Apply writes the profile to the session and the link."""
    c, s = profile.concurrency, profile.context
    day = c.per_hour if isinstance(c, ConcurrencyDay) else ConcurrencyDay().per_hour
    hist = ("" if isinstance(c, ConcurrencyDay) else
            ", ".join(f"{b}:{w:g}" for b, w in zip(c.batches, c.weights, strict=True)))
    lognormal = not isinstance(s, ContextBuckets)
    curves = [*uploads, *(k for k, v in sample_curves().items() if v.mechanism == mechanism)]
    chosen = [w.source for w in profile.workload]
    with st.expander("Deployment profile", key=EDITOR_OPEN_KEY, on_change="rerun") as panel:
        if panel.open:
            _form(profile, uploads, curves, chosen, day, hist, lognormal)


def _form(profile: DeploymentProfile, uploads: dict[str, AcceptanceCurve], curves: list[str],
          chosen: list[str], day: Sequence[float], hist: str, lognormal: bool) -> None:
    c, s = profile.concurrency, profile.context
    with st.form("dp_form"):
        a, b, w = st.columns(3)
        form: dict[str, Any] = {}
        form["conc_kind"] = a.radio("Concurrency", ["day", "histogram"],
                                    index=0 if isinstance(c, ConcurrencyDay) else 1,
                                    horizontal=True, key="dp_conc_kind",
                                    format_func=lambda k: {"day": "24-hour curve",
                                                           "histogram": "histogram"}[k])
        form["day"] = a.text_input("B per hour (24 values, 00…23)",
                                   ", ".join(f"{x:g}" for x in day), key="dp_day")
        form["hist"] = a.text_input("Histogram (B:weight, …)", hist or "1:1, 8:2, 64:1",
                                    key="dp_hist")
        form["ctx_kind"] = b.radio("Context", ["lognormal", "buckets"],
                                   index=0 if lognormal else 1, horizontal=True,
                                   key="dp_ctx_kind")
        ln = s if not isinstance(s, ContextBuckets) else None
        b1, b2, b3 = b.columns(3)
        form["median"] = b1.number_input("median S", 1, 2_000_000,
                                         ln.median if ln else 2048, key="dp_median")
        form["sigma"] = b2.number_input("σ (ln S)", 0.0, 5.0, ln.sigma if ln else 1.0, 0.1,
                                        key="dp_sigma")
        form["buckets"] = b3.number_input("buckets", 1, 64, ln.buckets if ln else 8,
                                          key="dp_buckets")
        form["ctx_buckets"] = b.text_input(
            "Buckets (S:weight, …)", ", ".join(f"{x}:{q:g}" for x, q in zip(
                s.contexts, s.weights, strict=True)) if isinstance(s, ContextBuckets)
            else "2048:3, 32768:1", key="dp_ctx_buckets")
        options = [SCENARIO_SOURCE, *curves, *[x for x in chosen
                                               if x not in curves and x != SCENARIO_SOURCE]]
        form["workloads"] = w.multiselect(
            "Workload mix (AL sources)", options, default=chosen, key="dp_workloads",
            format_func=lambda k: f"{k} ({uploads[k].label[:60]})" if k in uploads else k,
            help="'scenario': the scenario's own AL source; upload:…: curves you loaded on the "
            "Measured data page (a SPEED-Bench report gives one per category); the others: "
            "shipped measured curves of this mechanism (datasets, SPEED-Bench categories)")
        form["workload_weights"] = w.text_input(
            "Weights (in that order; empty: equal)",
            ", ".join(f"{x.weight:g}" for x in profile.workload), key="dp_workload_weights")
        form["penalty_pct"] = w.number_input(
            "Switching cost (% of a speculative step; assumption)", 0.0, 100.0,
            profile.switch_penalty * 100.0, 0.5, key="dp_penalty")
        if st.form_submit_button("Apply"):
            try:
                new = profile_of_form(form)
                # The profile lives in the link (`dp`): one a link cannot carry is refused here
                # with the reason, not written and then silently read as the default.
                problem = new.link_problem()
                if problem is not None:
                    raise ValueError(problem)
            except ValueError as exc:
                st.session_state[ERROR_KEY] = f"Profile not applied — {exc}"
            else:
                st.session_state.pop(ERROR_KEY, None)
                st.session_state[PROFILE_KEY] = new.to_url()
                st.rerun()
    if ERROR_KEY in st.session_state:
        st.error(md_text(st.session_state[ERROR_KEY]), icon=":material/error:")


def _cell(v: Any) -> str:
    return f"{v:,.1f}" if isinstance(v, float) else str(v)


def policy_table(result: DeployResult) -> pd.DataFrame:
    return pd.DataFrame([{
        "policy": p.name,
        "tokens/s per GPU": round(p.tokens_per_s_per_gpu, 1),
        "tokens/s per user p50": round(p.tokens_per_s_per_user_p50, 1),
        "tokens/s per user p90": round(p.tokens_per_s_per_user_p90, 1),
        "gap to oracle": f"{p.gap_to_oracle:.1%}",
        "speedup vs off": f"{p.speedup:.2f}×",
        "changes D at run time": "yes" if p.dynamic else "no",
    } for p in result.policies])


def _inverse(sc: Scenario) -> None:
    a, b, c = st.columns(3)
    target = a.number_input("Target speedup X", 1.0, 20.0, 2.0, 0.1, key="dp_target")
    at_d = b.toggle(f"At the scenario's D = {sc.draft_len}", value=False, key="dp_at_d",
                    help="off: the best D (the one needing the lowest per-token acceptance)")
    others = [m for m in mechanism_presets() if m != sc.mechanism]
    beat = c.selectbox("…or beat mechanism", ["—", *others], key="dp_beat")
    d = sc.draft_len if at_d and sc.draft_len > 0 else None
    try:
        req: Requirement = (required_to_beat(sc, beat, d) if beat != "—"
                            else required_al(sc, float(target), d))
    except ScenarioError as exc:
        st.error(md_text(f"{exc.field}: {exc.message}"))
        return
    goal = (f"to match {beat}'s best ({req.target_speedup:.2f}×)" if req.beat
            else f"for {req.target_speedup:g}×")
    alpha = (f", an i.i.d. per-token acceptance α ≥ {req.acceptance_rate:.3f}"
             if req.acceptance_rate is not None else "")
    text = (f"{goal} at B = {req.batch}, S = {req.context}: AL ≥ "
            f"{req.acceptance_length:.2f} at D = {req.draft_len}{alpha} — {req.note}.")
    (st.success if req.feasible else st.warning)(md_text(text))
    be = _break_even(sc.model_dump_json())
    left, right = st.columns(2)
    chart_view.show(fig.break_even_al_figure(be), key="dp_fig_al", where=left)
    chart_view.show(fig.break_even_rho_figure(be), key="dp_fig_rho", where=right)


def render(sc: Scenario | None) -> None:
    st.title("Deployment")
    st.caption("Which draft-length policy to run over a day of load, mixed contexts and a "
               "workload mix — and the AL a drafter must reach. States (B, S, workload) are "
               "weighted by their share of serving time.")
    if sc is None:
        st.error("The sidebar's scenario cannot be evaluated: fix it on the Explorer page.")
        return
    st.caption(
        f"Over whole requests of N = {sc.output_tokens:,} output tokens per prompt of each "
        "state's S tokens: every step also carries the prefill of the requests that replace "
        "finished ones (*Output tokens per request N*, Workload)." if sc.output_tokens else
        "Over decode steps only (*Output tokens per request N* at *decode only*: prompts "
        "prefilled on other GPUs).")
    profile = current_profile()
    given = str(st.session_state.get(PROFILE_KEY, SETTING_BY_KEY[PROFILE_KEY].default))
    problem = url_problem(given)
    if problem is not None:  # named, never silently replaced
        st.warning(md_text(f"The deployment profile (dp) cannot be read — {problem}; showing "
                           "the default profile."), icon=":material/warning:")
    uploads = uploaded_curves(sc.mechanism)
    _editor(profile, sc.mechanism, uploads)
    used = {w.source for w in profile.workload}
    try:
        result = _deploy(sc.model_dump_json(), profile.to_url(), tuple(
            (k, c.model_dump_json()) for k, c in uploads.items() if k in used))
    except ScenarioError as exc:
        st.error(md_text(f"The profile cannot be evaluated — {exc.field}: {exc.message}"))
        return
    chosen = export_policy(sc, result)
    best = result.policy(chosen.policy)
    # The headline on a line of its own: as a metric in a quarter column its label was cut.
    st.subheader(f"Policy to run: {POLICY_LABELS[chosen.policy]}"
                 + (f", D = {result.schedule.static_draft_len}"
                    if chosen.policy == "static" else ""), anchor=False)
    headline.show([
        headline.Number("Tokens/s per GPU", f"{best.tokens_per_s_per_gpu:,.0f}",
                        f"{best.speedup:.2f}× vs off"),
        headline.Number("Tokens/s per user p90", f"{best.tokens_per_s_per_user_p90:,.1f}"),
        headline.Number("Gap to oracle", f"{best.gap_to_oracle:.1%}"),
    ])
    if result.memory_note:  # figures past what fits: said with them, not among the notes
        st.warning(md_text(result.memory_note), icon=":material/memory:")
    st.caption(md_text("Why this policy: the simplest within 2 % of the fastest an engine runs "
                       "— " + simplest_within(result, EXPRESSIBLE)[1]))
    # six rows: one Markdown table (text.md_table), not a data grid (whose library, loaded per
    # page like plotly's, would be a second download and parse before the page is drawn)
    st.markdown(md_table(policy_table(result), _cell))
    st.caption("p50 / p90 per user: the speed that 50 % / 90 % of user-time gets at least "
               "(1 / the 50th / 90th percentile of time per output token; each state weighted "
               "by its share of time × B). Gap: 1 − tokens/s per GPU / the oracle's. "
               f"Switching cost: +{profile.switch_penalty:.1%} on the speculative steps of a "
               "policy that changes D at run time — an assumption (why there is one: "
               "Assumptions, below).")
    chart_view.show(fig.schedule_heatmap(result.schedule), key="dp_fig_sched")
    s = result.schedule
    st.caption(md_text(
        "D*(B): " + ", ".join(f"B={b}→{d}" for b, d in zip(s.batch, s.batch_draft_len,
                                                          strict=True))
        + f"; static D = {s.static_draft_len}; AL threshold τ = {s.al_threshold:.2f}"
        + (" (never switches off)" if s.al_threshold <= 1.0 else "")))
    if len(result.per_workload) > 1:
        st.markdown("**Per workload** (under the batch schedule; per-request spread over "
                    f"categories: p50 {result.per_request_tokens_per_s_p50:.1f}, p90 "
                    f"{result.per_request_tokens_per_s_p90:.1f} tokens/s per user)")
        st.dataframe(pd.DataFrame([w.model_dump() for w in result.per_workload]),
                     hide_index=True, width="stretch", key="dp_workloads_table")
    with st.expander(f"Export: {POLICY_LABELS[chosen.policy]} as engine configs",
                     key=EXPORT_OPEN_KEY, on_change="rerun") as export:
        if export.open:
            _export(chosen)
    with st.expander("What a drafter must reach: the AL for a target speedup, and where "
                     "speculation breaks even", key=INVERSE_OPEN_KEY, on_change="rerun") as inv:
        if inv.open:
            _inverse(sc)
    with st.expander("Assumptions and the profile as JSON", key=NOTES_OPEN_KEY,
                     on_change="rerun") as notes:
        if notes.open:
            _notes(profile, result)


def _export(chosen: PolicyExport) -> None:
    st.markdown("**vLLM**")
    st.code(chosen.vllm.cli or "(no speculative config)", language="bash")
    st.markdown("**SGLang**")
    st.code(chosen.sglang.cli or "(no speculative flags)", language="bash")
    st.markdown("**TensorRT-LLM**")
    st.code(chosen.tensorrt_llm.yaml or "(no speculative_config)", language="yaml")
    for n in [*chosen.notes, *chosen.vllm.notes, *chosen.sglang.notes,
              *chosen.tensorrt_llm.notes]:
        st.caption(md_text(n))


def _notes(profile: DeploymentProfile, result: DeployResult) -> None:
    for n in [*DEFAULT_NOTES, *result.notes]:
        st.caption(md_text(n))
    js = profile.model_dump_json(indent=2)
    st.code(js, language="json")
    st.download_button("Profile JSON (for deploy --profile)", js,
                       file_name="profile.json", mime="application/json",
                       key="dp_download", on_click="ignore")
