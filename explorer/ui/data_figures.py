"""The Measured data page's figures as pure functions: parsed data or fit results in, plotly
Figure out (no Streamlit here)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.calibration import Calibration, DraftBackOut
from explorer.specs.measured import AcceptanceCurve
from explorer.ui.text import plotly_text


def uploaded_curves_figure(curves: Sequence[tuple[str, AcceptanceCurve]]) -> go.Figure:
    """Every uploaded AL curve, named by its dataset; the hover says where it came from."""
    fig = go.Figure()
    for dataset, c in curves:
        fig.add_trace(go.Scatter(
            x=np.asarray(c.draft_lens), y=np.asarray(c.acceptance_lengths),
            mode="lines+markers", name=plotly_text(f"{dataset}: {c.label}"[:60]),
            hovertemplate="D=%{x}<br>AL=%{y:.3f}<br>"
            + plotly_text(c.source_text.replace("%", "%%")[:200])
            + "<extra></extra>"))
    fig.update_layout(title="Uploaded acceptance curves", xaxis_title="draft length D",
                      yaxis_title="AL (tokens per target step)")
    return fig


def calibration_figure(cal: Calibration) -> go.Figure:
    """Model vs measured kernel time, before and after calibration, with the y = x line."""
    measured = np.asarray(cal.measured_s) * 1e6
    fig = go.Figure()
    for label, pred in (("preset", cal.predicted_before_s), ("calibrated", cal.predicted_after_s)):
        p = np.asarray(pred) * 1e6
        fig.add_trace(go.Scatter(
            x=measured, y=p, mode="markers", name=f"{label} model",
            customdata=(p - measured) / measured * 100,
            hovertemplate="measured %{x:.1f} µs<br>model %{y:.1f} µs<br>residual "
            "%{customdata:+.1f}%<extra>" + label + "</extra>"))
    lo, hi = float(measured.min()), float(measured.max())
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="model = measured",
                             line={"dash": "dot", "color": "gray"}))
    fig.update_layout(title="Model vs measured kernel time", xaxis={"title": "measured (µs)",
                      "type": "log"}, yaxis={"title": "model (µs)", "type": "log"})
    return fig


def draft_backout_figure(out: DraftBackOut) -> go.Figure:
    """T_draft backed out of measured steps beside the model's, per (B, D), in ms."""
    labels = [f"B={b:g}, D={k:g}" for b, k in zip(out.batch, out.draft_len, strict=True)]
    fig = go.Figure([
        go.Bar(x=labels, y=np.asarray(out.t_draft_measured_s) * 1e3, name="backed out"),
        go.Bar(x=labels, y=np.asarray(out.t_draft_model_s) * 1e3, name="model T_draft"),
    ])
    fig.update_layout(title="Draft cost: measured (backed out) vs model", barmode="group",
                      yaxis_title="T_draft (ms)", xaxis_title="operating point")
    return fig
