"""The Presets & sources page's roofline figures as pure functions: the model's roofline beside
a measured GEMM table (explorer.analysis.roofline_check) in, plotly Figure out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from explorer.analysis.roofline_check import ModelVsMeasured
from explorer.ui.text import plotly_text

LEGEND_ABOVE_PLOT = {"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "left", "x": 0.0}


def _custom(d: ModelVsMeasured) -> np.ndarray:
    return np.stack([d.m, d.n, d.k, d.residual * 100], axis=1)


HOVER = ("m=%{customdata[0]:.0f} n=%{customdata[1]:.0f} k=%{customdata[2]:.0f}<br>"
         "residual %{customdata[3]:+.1f}%<extra></extra>")


def roofline_vs_measured_figure(d: ModelVsMeasured) -> go.Figure:
    """Predicted (roofline) vs measured GEMM time on log axes, coloured by log m, with y = x."""
    measured, predicted = d.measured_s * 1e6, d.predicted_s * 1e6
    fig = go.Figure()
    fig.add_trace(go.Scattergl(
        x=measured, y=predicted, mode="markers", name="measured grid points",
        marker={"size": 4, "color": np.log2(np.maximum(d.m, 1.0)), "colorscale": "Viridis",
                "colorbar": {"title": "log2 m"}, "opacity": 0.6},
        customdata=_custom(d), hovertemplate="measured %{x:.1f} µs<br>roofline %{y:.1f} µs<br>"
        + HOVER))
    if measured.size:
        lo, hi = float(min(measured.min(), predicted.min())), float(
            max(measured.max(), predicted.max()))
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="roofline = measured",
                                 line={"dash": "dot", "color": "gray"}))
    fig.update_layout(
        title=plotly_text(f"Roofline vs measured GEMM: {d.hardware}, {d.engine}, {d.dtype}"),
        xaxis={"title": "measured (µs)", "type": "log"},
        yaxis={"title": "roofline (µs)", "type": "log"},
        # The colour bar holds the right edge; a legend there covered its title.
        legend=LEGEND_ABOVE_PLOT)
    return fig


def roofline_residual_figure(d: ModelVsMeasured) -> go.Figure:
    """Residual (roofline/measured − 1) against m, per point: where along m the form errs."""
    fig = go.Figure()
    fig.add_trace(go.Scattergl(
        x=d.m, y=d.residual * 100, mode="markers", name="residual",
        marker={"size": 4, "color": np.log2(np.maximum(d.n * d.k, 1.0)),
                "colorscale": "Cividis", "colorbar": {"title": "log2 n·k"}, "opacity": 0.6},
        customdata=_custom(d), hovertemplate=HOVER))
    fig.add_hline(y=0.0, line={"dash": "dot", "color": "gray"})
    fig.update_layout(title="Residual: roofline / measured − 1",
                      xaxis={"title": "m (tokens)", "type": "log"},
                      yaxis={"title": "residual (%)"})
    return fig
