"""Co-design figures as pure functions (explorer/analysis/codesign.py's table in, plotly out)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go


def best_speedup_heatmap(designs: pd.DataFrame, x: str = "group", y: str = "layers",
                         title: str = "") -> go.Figure:
    """Best speedup per design over two axes (G and L_target by default), each cell labelled
    with its best D; a cell whose design does not fit in memory says so (its speedup is the
    speed-only best, hatched by the label)."""
    xs = sorted(designs[x].unique())
    ys = sorted(designs[y].unique())
    z = np.full((len(ys), len(xs)), np.nan)
    text = np.full((len(ys), len(xs)), "", dtype=object)
    for _, row in designs.iterrows():
        i, j = ys.index(row[y]), xs.index(row[x])
        fits = bool(row["fits_in_memory"])
        z[i, j] = row["best_speedup"] if fits else row["speed_best_speedup"]
        d = int(row["best_draft_len"] if fits else row["speed_best_draft_len"])
        text[i, j] = f"D={d}" + ("" if fits else " (no fit)")
    fig = go.Figure(go.Heatmap(
        x=[str(v) for v in xs], y=[str(v) for v in ys], z=z, text=text,
        texttemplate="%{z:.2f}×<br>%{text}", colorscale="Viridis",
        colorbar={"title": "best speedup"},
        hovertemplate=f"{x}=%{{x}}<br>{y}=%{{y}}<br>speedup %{{z:.3f}}×<br>%{{text}}"
                      "<extra></extra>"))
    fig.update_layout(title=title or f"Best speedup over ({x}, {y})",
                      xaxis_title="G (query heads per KV head)" if x == "group" else x,
                      yaxis_title="L_target (layers)" if y == "layers" else y,
                      # one even cell per design value (numeric labels would make a linear
                      # axis: uneven cells at the midpoints between the values)
                      xaxis_type="category", yaxis_type="category",
                      margin={"l": 60, "r": 20, "t": 50, "b": 60})
    return fig
