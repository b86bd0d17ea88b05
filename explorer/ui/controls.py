"""Sidebar controls, each bound to a short URL parameter (explorer/url_state.py)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from explorer.interfaces import view_state as us
from explorer.presets import hardware_presets, mechanism_presets, model_presets, sample_curves
from explorer.ui.text import md_text

WARNINGS_KEY = "_url_warnings"


def check_url_once() -> None:
    """Validate the link on the session's first run; bad parameters fall back to defaults."""
    if WARNINGS_KEY in st.session_state:
        return
    raw = {k: st.query_params.get_all(k) for k in st.query_params}
    view = us.decode(raw)
    st.session_state[WARNINGS_KEY] = list(view.warnings)
    for w in view.warnings:
        key = w.split("'")[1].split("=")[0] if "'" in w else ""
        if key in us.PARAM_BY_KEY:  # a bound widget ignores a bad value: start at the default
            st.session_state[key] = us.PARAM_BY_KEY[key].default


def show_url_warnings() -> None:
    for w in st.session_state.get(WARNINGS_KEY, []):  # quotes what the link says: as text
        st.warning(md_text(w), icon=":material/warning:")


def reset_overrides() -> None:
    for key in ("g", "L", "rho"):
        st.session_state[key] = us.PARAM_BY_KEY[key].default


def sidebar() -> dict[str, Any]:
    """Render the controls; return the values keyed like the URL."""
    hw, models, mechs = hardware_presets(), model_presets(), mechanism_presets()
    targets = [k for k, m in models.items() if m.role in ("target", "both")]
    drafts = ["", *[k for k, m in models.items() if m.role in ("draft", "both")]]
    v: dict[str, Any] = {}
    sb = st.sidebar
    sb.header("Scenario")
    # Bound widgets write their *displayed* option into the URL, so options are the slugs.
    v["hw"] = sb.selectbox("Hardware", list(hw), key="hw", bind="query-params",
                           index=list(hw).index("h200"))
    sb.caption(hw[v["hw"]].name)
    v["m"] = sb.selectbox("Target model", targets, key="m", bind="query-params",
                          index=targets.index("llama-3.1-70b"))
    sb.caption(models[v["m"]].name)
    v["mech"] = sb.selectbox("Draft mechanism", list(mechs), key="mech", bind="query-params",
                             index=list(mechs).index("eagle3"))
    sb.caption(mechs[v["mech"]].name)
    if v["mech"] == "external":
        v["dm"] = sb.selectbox("Draft model", drafts, key="dm", bind="query-params",
                               format_func=lambda k: k or "default for the target")
    else:
        v["dm"] = st.session_state.get("dm", "")
    model = models[v["m"]]
    sb.subheader("The article's knobs")
    v["b"] = sb.select_slider("Batch B (sequences, log scale)", us.BATCH_OPTIONS, key="b",
                              value=32, bind="query-params")
    v["d"] = sb.slider("Draft length D", 0, us.DRAFT_LEN_MAX, 3, key="d", bind="query-params")
    v["g"] = sb.select_slider(
        "Group G (query heads per KV head)", us.GROUP_OPTIONS, value=0, key="g",
        bind="query-params",
        format_func=lambda g: f"preset ({model.group_size:g})" if g == 0 else str(g))
    v["L"] = sb.select_slider(
        "L_target (layers)", us.LAYER_OPTIONS, value=0, key="L", bind="query-params",
        format_func=lambda x: f"preset ({model.layers})" if x == 0 else str(x))
    v["rho"] = sb.select_slider(
        "ρ = L_draft / L_target", us.RHO_OPTIONS, value=0.0, key="rho", bind="query-params",
        format_func=lambda x: "mechanism's own" if x == 0 else f"{x:g}")
    overridden = [n for n, k in (("G", "g"), ("L_target", "L"), ("ρ", "rho")) if v[k]]
    if overridden:
        sb.info(f"Override of the preset: {', '.join(overridden)}")
        sb.button("Reset to preset", on_click=reset_overrides, key="reset_overrides")
    sb.subheader("Workload")
    v["ctx"] = sb.select_slider("Context S (KV tokens per sequence)", us.CONTEXT_OPTIONS,
                              value=8192, key="ctx", bind="query-params")
    v["tp"] = sb.selectbox("Tensor parallel (GPUs)", us.TP_OPTIONS, index=1, key="tp",
                           bind="query-params")
    v["dt"] = sb.selectbox("Weights dtype", us.DTYPE_OPTIONS, key="dt", bind="query-params")
    v["kv"] = sb.selectbox("KV-cache dtype", us.KV_DTYPE_OPTIONS, key="kv", bind="query-params")
    sb.subheader("Acceptance")
    v["acc"] = sb.radio(
        "AL source", us.ACCEPTANCE_OPTIONS, key="acc", bind="query-params", horizontal=True,
        help="prior: the mechanism's prior fitted to published curves; alpha: i.i.d. α; "
        "sample: a shipped measured curve; upload: a curve you uploaded on the Data page")
    v["a"] = sb.slider("α (i.i.d. acceptance rate)", 0.0, 0.99, 0.7, 0.01, key="a",
                       bind="query-params", disabled=v["acc"] != "alpha")
    curves = sample_curves()
    options = ["", *[k for k, c in curves.items() if c.mechanism == v["mech"]]]
    if st.session_state.get("curve", "") not in options:
        st.session_state["curve"] = ""
    v["curve"] = sb.selectbox(
        "Sample curve (mechanism/model/dataset)", options, key="curve", bind="query-params",
        disabled=v["acc"] != "sample", format_func=lambda k: k or "— pick one —")
    if v["curve"]:
        sb.caption(curves[v["curve"]].source_text[:200])
    sb.subheader("Targets")
    v["slo"] = sb.number_input("Per-user speed target (tokens/s)", 0.0, 100000.0, 30.0, 5.0,
                               key="slo", bind="query-params")
    v["usd"] = sb.number_input("GPU price ($ per GPU-hour, yours)", 0.0, 1000.0, 0.0, 0.5,
                               key="usd", bind="query-params")
    return v
