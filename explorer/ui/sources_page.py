"""Every preset with its source and assumptions."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.presets import hardware_presets, mechanism_presets, model_presets
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
    st.dataframe(pd.DataFrame([{
        "preset": h.slug, "name": h.name, "vendor": h.vendor,
        "BF16 TFLOP/s": h.bf16_flops_per_s / 1e12,
        "HBM GB": h.hbm_bytes / 1e9, "HBM TB/s": h.hbm_bw_bytes_per_s / 1e12,
        "η GEMM compute": h.gemm_compute_efficiency, "η GEMM memory": h.gemm_memory_efficiency,
        "η attn compute": h.attention_compute_efficiency,
        "η attn memory": h.attention_memory_efficiency, "kernel floor µs": h.kernel_floor_s * 1e6,
        "step overhead µs": h.step_overhead_s * 1e6, "spec source": h.spec_source,
        "fit source": h.fit_source, "assumptions": h.assumptions,
    } for h in hardware_presets().values()]), hide_index=True,
        column_config={k: WIDE for k in ("spec source", "fit source", "assumptions")})
    _full_text("Hardware", [(h.slug, {"spec source": h.spec_source, "fit source": h.fit_source,
                                      "assumptions": h.assumptions})
                            for h in hardware_presets().values()])
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
