"""Co-design figures as pure functions (explorer/analysis/codesign.py's table in, plotly out)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explorer.ui.figures import fixed_margins, speedup_colors

NO_FIT_GREY = "#d4d4d4"
NO_FIT_NAME = "does not fit in memory"


def best_speedup_heatmap(designs: pd.DataFrame, x: str = "group", y: str = "layers",
                         title: str = "") -> go.Figure:
    """Best speedup per design over two axes (G and L_target by default), each cell labelled
    with its best D. A design that does not fit in memory is a grey cell of its own trace (out
    of the colour scale), labelled "(no fit)" with its speed-only best."""
    xs = sorted(designs[x].unique())
    ys = sorted(designs[y].unique())
    z = np.full((len(ys), len(xs)), np.nan)
    text = np.full((len(ys), len(xs)), "", dtype=object)
    no_fit = np.full((len(ys), len(xs)), np.nan)
    no_fit_text = np.full((len(ys), len(xs)), "", dtype=object)
    for _, row in designs.iterrows():
        i, j = ys.index(row[y]), xs.index(row[x])
        if bool(row["fits_in_memory"]):
            z[i, j] = row["best_speedup"]
            text[i, j] = f"D={int(row['best_draft_len'])}"
        else:
            no_fit[i, j] = row["speed_best_speedup"]
            no_fit_text[i, j] = (f"{row['speed_best_speedup']:.2f}× at "
                                 f"D={int(row['speed_best_draft_len'])} (no fit)")
    x_labels, y_labels = [str(v) for v in xs], [str(v) for v in ys]
    fig = go.Figure(go.Heatmap(
        x=x_labels, y=y_labels, z=z, text=text, name="fits",
        # Anchored at 0× with white at 1× (the explorer's speedup scale): a scale spanning
        # only the table's own range (2.70–3.0×) made a 10 % difference look like all of it.
        texttemplate="%{z:.2f}×<br>%{text}", **speedup_colors(z),
        colorbar={"title": "best speedup ×"},
        hovertemplate=f"{x}=%{{x}}<br>{y}=%{{y}}<br>speedup %{{z:.3f}}×<br>%{{text}}"
                      "<extra></extra>"))
    if np.isfinite(no_fit).any():
        fig.add_trace(go.Heatmap(
            x=x_labels, y=y_labels, z=no_fit, text=no_fit_text, name=NO_FIT_NAME,
            colorscale=[[0.0, NO_FIT_GREY], [1.0, NO_FIT_GREY]], showscale=False,
            texttemplate="%{text}", textfont={"color": "#444444"},
            hovertemplate=f"{x}=%{{x}}<br>{y}=%{{y}}<br>{NO_FIT_NAME}: speed-only best "
                          "%{text}<extra></extra>"))
    fig.update_layout(title=title or f"Best speedup over ({x}, {y})",
                      xaxis_title="G (query heads per KV head)" if x == "group" else x,
                      yaxis_title="L_target (layers)" if y == "layers" else y,
                      # one even cell per design value (numeric labels would make a linear
                      # axis: uneven cells at the midpoints between the values)
                      xaxis_type="category", yaxis_type="category",
                      margin={"l": 60, "r": 20, "t": 50, "b": 60})
    return fixed_margins(fig)
