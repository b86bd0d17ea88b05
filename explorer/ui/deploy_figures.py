"""Figures of the Deployment page as pure functions (no Streamlit here)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from explorer.analysis.deploy import Schedule
from explorer.analysis.inverse import BreakEven
from explorer.ui.figures import fixed_margins, log_ticks, speedup_colors

_LAYOUT = {"margin": {"l": 70, "r": 20, "t": 50, "b": 60}, "hovermode": "closest"}


def schedule_heatmap(s: Schedule) -> go.Figure:
    """D*(B, S) over the profile's buckets, with the boundary where speculation is off (D = 0)."""
    z = np.asarray(s.batch_context_draft_len, dtype=np.float64).T  # rows S, columns B
    x = [str(b) for b in s.batch]
    y = [str(c) for c in s.context]
    fig = go.Figure()
    fig.add_trace(go.Heatmap(
        x=x, y=y, z=z, colorscale="Viridis", colorbar={"title": "D*"}, zmin=0,
        text=z.astype(int).astype(str), texttemplate="%{text}",
        hovertemplate="B=%{x}<br>S=%{y}<br>D*=%{z}<extra></extra>"))
    off = (z == 0).astype(np.float64)
    if off.any() and not off.all():
        fig.add_trace(go.Contour(
            x=x, y=y, z=off, contours={"start": 0.5, "end": 0.5, "coloring": "none"},
            line={"color": "white", "width": 3, "dash": "dash"}, showscale=False,
            name="speculation off beyond", hoverinfo="skip", showlegend=True))
    fig.update_layout(title="D*(B, S): the best D per concurrency and context bucket",
                      xaxis_title="concurrency B (profile buckets)",
                      yaxis_title="context S (KV tokens)", **_LAYOUT,
                      legend={"orientation": "h", "y": -0.25})
    return fixed_margins(fig)


def break_even_al_figure(be: BreakEven) -> go.Figure:
    """Speedup over (D, AL) with its 1× contour, the AL = 1+D ceiling and the scenario's AL."""
    d = np.asarray(be.draft_len)
    z = np.asarray(be.speedup_d_al, dtype=np.float64)
    fig = go.Figure()
    fig.add_trace(go.Contour(
        x=d, y=be.acceptance_length, z=z, **speedup_colors(z), colorbar={"title": "speedup ×"},
        contours={"showlabels": True}, hovertemplate="D=%{x}<br>AL=%{y:.2f}<br>"
        "speedup %{z:.2f}×<extra></extra>", name="speedup"))
    fig.add_trace(go.Scatter(x=d, y=be.break_even_al, mode="lines",
                             line={"color": "black", "width": 2, "dash": "dash"},
                             name="break-even AL (1×)"))
    fig.add_trace(go.Scatter(x=d, y=be.acceptance_length_scenario, mode="lines+markers",
                             line={"color": "orange"}, name="the scenario's AL"))
    fig.update_layout(title="Speedup over (D, AL) at the scenario's B and S",
                      xaxis_title="draft length D", yaxis_title="acceptance length AL",
                      legend={"orientation": "h", "y": -0.25}, **_LAYOUT)
    return fixed_margins(fig)


def break_even_rho_figure(be: BreakEven) -> go.Figure:
    """Speedup over (D, ρ) with the scenario's AL source, and its 1× contour."""
    z = np.asarray(be.speedup_d_rho, dtype=np.float64)
    fig = go.Figure()
    fig.add_trace(go.Contour(
        x=be.draft_len, y=be.rho, z=z, **speedup_colors(z),
        colorbar={"title": "speedup ×"}, contours={"showlabels": True},
        hovertemplate="D=%{x}<br>ρ=%{y}<br>speedup %{z:.2f}×<extra></extra>"))
    fig.add_trace(go.Contour(
        x=be.draft_len, y=be.rho, z=z, contours={"start": 1, "end": 1, "coloring": "none"},
        line={"color": "black", "width": 2, "dash": "dash"}, showscale=False,
        name="speedup = 1", hoverinfo="skip", showlegend=True))
    fig.update_layout(title="Speedup over (D, ρ = L_draft / L_target)",
                      xaxis_title="draft length D", yaxis_title="ρ",
                      yaxis={"type": "log", **log_ticks(be.rho)},
                      legend={"orientation": "h", "y": -0.25}, **_LAYOUT)
    return fixed_margins(fig)
