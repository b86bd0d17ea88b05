"""Every preset with its source and assumptions."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.analysis.hardware_catalogue import HardwareEntry, hardware_catalogue
from explorer.analysis.roofline_check import (
    ROOFLINE_TARGET_MAPE,
    ModelVsMeasured,
    hardware_cv_errors,
    model_vs_measured,
    roofline_scores,
)
from explorer.base.dtypes import WEIGHT_DTYPES
from explorer.base.engines import SERVING_ENGINES
from explorer.kernel_tables import SYSTEM_FOR_PRESET
from explorer.presets import (
    engine_profiles,
    hardware_presets,
    mechanism_presets,
    model_presets,
)
from explorer.ui import chart_view
from explorer.ui.roofline_figures import roofline_residual_figure, roofline_vs_measured_figure
from explorer.ui.text import md_text

WIDE = st.column_config.TextColumn(width="large")


def _full_text(title: str, rows: list[tuple[str, dict[str, str]]]) -> None:
    """A table cell cuts long text: every source and assumption in full, as text."""
    with st.expander(f"{title}: every source and assumption in full"):
        for slug, texts in rows:
            st.markdown(f"**{md_text(slug)}** — " + "; ".join(
                f"*{k}*: {md_text(v)}" for k, v in texts.items() if v))


def render() -> None:
    st.title("Presets and their sources")
    st.caption("Spec-sheet numbers and fitted efficiencies per GPU, model shapes, mechanism "
               "priors. Values marked as assumptions have no published source.")
    st.subheader("Hardware")
    st.caption("Grouped as the hardware selector groups them. *kernels*: what prices the GPU's "
               "kernels — the pinned aiconfigurator-core's measured tables, or, for a GPU it "
               "never measured, the roofline from its spec sheet with that roofline's "
               "cross-validated error. *engines*: the serving engines that run on it "
               "(data/hardware.csv `engines`; only these are offered).")
    catalogue = {e.slug: e for e in _catalogue()}
    presets = hardware_presets()
    ordered = [presets[slug] for slug in catalogue]
    st.dataframe(pd.DataFrame([{
        "group": h.group, "preset": h.slug, "name": h.name, "vendor": h.vendor,
        "architecture": h.architecture, "engines": ", ".join(h.engines),
        "kernels": catalogue[h.slug].kernels,
        "BF16 TFLOP/s": h.bf16_flops_per_s / 1e12,
        "FP8 TFLOP/s": h.fp8_flops_per_s / 1e12 if h.fp8_flops_per_s else None,
        "FP6 TFLOP/s": h.fp6_flops_per_s / 1e12 if h.fp6_flops_per_s else None,
        "FP4 TFLOP/s": h.fp4_flops_per_s / 1e12 if h.fp4_flops_per_s else None,
        "HBM GB": h.hbm_bytes / 1e9, "HBM TB/s": h.hbm_bw_bytes_per_s / 1e12,
        "link GB/s (one way)": h.link_bw_bytes_per_s / 1e9,
        "η GEMM compute": h.gemm_compute_efficiency, "η GEMM memory": h.gemm_memory_efficiency,
        "η attn compute": h.attention_compute_efficiency,
        "η attn memory": h.attention_memory_efficiency, "kernel floor µs": h.kernel_floor_s * 1e6,
        "step overhead µs": h.step_overhead_s * 1e6, "spec source": h.spec_source,
        "fit source": h.fit_source, "engines source": h.engines_source,
        "assumptions": h.assumptions,
    } for h in ordered]), hide_index=True,
        column_config={k: WIDE for k in ("kernels", "spec source", "fit source",
                                         "engines source", "assumptions")})
    _full_text("Hardware", [(h.slug, {"kernels": catalogue[h.slug].kernels,
                                      "spec source": h.spec_source, "fit source": h.fit_source,
                                      "engines": f"{', '.join(h.engines)} ({h.engines_source})",
                                      "assumptions": h.assumptions})
                            for h in ordered])
    _roofline_section()
    st.subheader("Models")
    st.dataframe(pd.DataFrame([{
        "preset": m.slug, "name": m.name, "role": m.role, "layers": m.layers,
        "hidden": m.hidden, "q heads": m.q_heads, "KV heads": m.kv_heads, "G": m.group_size,
        "experts": m.n_routed_experts or None, "top-k": m.experts_per_tok or None,
        "params (B)": round(m.param_count() / 1e9, 2), "source": m.source,
        "assumptions": m.assumptions,
    } for m in model_presets().values()]), hide_index=True,
        column_config={k: WIDE for k in ("source", "assumptions")})
    _full_text("Models", [(m.slug, {"source": m.source, "assumptions": m.assumptions})
                          for m in model_presets().values()])
    st.subheader("Mechanisms")
    st.dataframe(pd.DataFrame([{
        "preset": x.slug, "name": x.name, "style": x.draft_style, "default D": x.default_draft_len,
        "max D": x.max_draft_len, "draft layers": x.draft_layers,
        "draft weights": x.draft_checkpoint or x.draft_weights.replace("_", " "),
        "fused target layers": x.fused_target_layers or None, "prior c1": x.first_rate,
        "prior decay": x.decay, "prior source": x.prior_source, "training": x.training,
        "extra memory": x.extra_memory, "assumptions": x.assumptions,
    } for x in mechanism_presets().values()]), hide_index=True,
        column_config={k: WIDE for k in ("prior source", "extra memory", "assumptions")})
    _full_text("Mechanisms", [(x.slug, {"prior source": x.prior_source,
                                        "extra memory": x.extra_memory,
                                        "assumptions": x.assumptions})
                              for x in mechanism_presets().values()])
    st.subheader("Serving engines")
    st.caption("Costs the engine adds around the kernels (data/engines.csv). The hardware "
               "table's step overhead is replaced by the engine's unless a calibration or "
               "override sets one.")
    st.dataframe(pd.DataFrame([{
        "engine": e.engine, "parameter": k,
        "value": e.value_text(k),
        "assumption": "fitted" if k in e.fitted else "yes" if k in e.assumptions else "no",
        "source": e.sources.get(k, "") + (f" — {e.fitted[k]}" if k in e.fitted else ""),
    } for e in engine_profiles().values() for k in e.sources]), hide_index=True)


@st.cache_resource(max_entries=1, show_spinner=False)
def _catalogue() -> tuple[HardwareEntry, ...]:
    return hardware_catalogue()


@st.cache_resource(max_entries=16, show_spinner=False)
def _model_vs_measured(hardware: str, engine: str, dtype: str) -> ModelVsMeasured:
    return model_vs_measured(hardware, engine, dtype)


def _cv_table(rows: list[dict[str, str]]) -> pd.DataFrame:
    """Presets as rows, one column per (kind, dtype): a cell a GPU has no table for says so
    instead of the frame's missing-value "None"."""
    table = pd.DataFrame(rows)
    errors = [c for c in table.columns if c not in ("preset", "note")]
    table[errors] = table[errors].fillna("no table")
    if "note" in table.columns:
        table["note"] = table["note"].fillna("")
    return table


def _roofline_section() -> None:
    """The roofline for what no table covers: its cross-validated error per preset and dtype,
    and model vs measured with residuals for one (GPU, engine, dtype)."""
    st.subheader("Roofline vs measured kernels")
    st.caption(
        "Where no measured table covers a call (hypothetical hardware, shapes outside a "
        "table), kernels are priced by a per-dtype roofline fitted across GPUs on the "
        "aiconfigurator-core tables (data/roofline_fit.csv), one fit per serving engine on "
        "that engine's tables: a scenario uses its engine's fit, or the lowest-error "
        "engine's where its engine has none at that dtype. Its error is cross-validated "
        "leave-one-GPU-out: fitted without a GPU, scored on it. Target: ≤ "
        f"{ROOFLINE_TARGET_MAPE:.0%}.")
    scores = roofline_scores()
    st.dataframe(pd.DataFrame([{
        "kernel": "GEMM" if sc.kind == "gemm" else "decode attention", "dtype": sc.dtype,
        "fitted on": f"{sc.engine} tables", "lowest": "yes" if sc.best else "", "rule": sc.rule,
        "LOO MAPE": f"{sc.loo_mape:.1%}", "LOO bias": f"{sc.loo_bias:+.1%}",
        "target": "met" if sc.meets_target else "missed", "why": sc.why,
    } for sc in scores]), hide_index=True)
    rows = []
    catalogue = {e.slug: e for e in _catalogue()}
    for slug in catalogue:
        errs = hardware_cv_errors(slug)
        row: dict[str, str] = {"preset": slug}
        for e in errs:  # one cell per (kind, dtype): each engine's error
            label = f"{'GEMM' if e.kind == 'gemm' else 'attn'} {e.dtype}"
            cell = f"{e.engine} {e.mape_serving:.1%}"
            row[label] = f"{row[label]} · {cell}" if label in row else cell
        if not errs:
            row["note"] = (catalogue[slug].kernels if not catalogue[slug].measured
                           else "measured tables, not held out (not among the GPUs fitted)")
        rows.append(row)
    st.caption("Each hardware preset's cross-validated error per engine (the roofline fitted "
               "on that engine's tables without it; "
               "GEMM on serving shapes n, k ≥ 1024; \"no table\": the package measured no "
               "such kernel on that GPU):")
    st.dataframe(_cv_table(rows), hide_index=True)
    # Below the fold and the page's heaviest part (a measured table read, two charts of
    # thousands of points): drawn on request, so the page settles at its tables.
    if not st.toggle("Show model vs measured points for one GPU (reads its measured table)",
                     key="roof_show", value=False):
        return
    with_tables = [s for s, sys in SYSTEM_FOR_PRESET.items() if sys is not None]
    c1, c2, c3 = st.columns(3)
    gpu = c1.selectbox("GPU", with_tables, key="roof_gpu")
    engine = c2.selectbox("Engine", list(SERVING_ENGINES), key="roof_engine")
    dtype = c3.selectbox("dtype", list(WEIGHT_DTYPES), key="roof_dtype")
    d = _model_vs_measured(gpu, engine, dtype)
    if not d.m.size:
        st.info(f"No measured GEMM table for {gpu}, {engine}, {dtype}: {d.table}")
        return
    st.caption(f"{d.table}: {d.n_points} measured points ({d.m.size} drawn); the model's "
               f"roofline for {gpu} ({d.fit_origin}) misses them by MAPE {d.mape:.1%}, "
               f"bias {d.bias:+.1%} "
               "(in-sample where this GPU was among those fitted; the table itself prices the "
               "calls it covers).")
    left, right = st.columns(2)
    chart_view.show(roofline_vs_measured_figure(d), key="fig_roofline", where=left)
    chart_view.show(roofline_residual_figure(d), key="fig_roofline_residual", where=right)
